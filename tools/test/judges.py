"""The judges of `make test`: one per kind of configuration
(tools/test/configs.py), each saying what its kind boots and what passes.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import time
from pathlib import Path

from tools import ROOT
from tools.bench import bench
from tools.run import boot
from tools.test import check_screendump, results_screen
from tools.test.configs import TestConfig
from tools.test.ktap import Result, clean_lines, has_failure, ktap_results
from tools.test.pool import Outcome, rel, tail

# Screendump configurations run the default job (the benchmarks) and show
# its results screen once, each page this many seconds: time enough for
# the screendump the page's announcement on serial asks for.
SCREEN_PAGE_SECONDS = 3
FONT = ROOT / "build" / "console" / "font.psf"


def did_not_start(name: str, e: Exception, log: str, show_tail: bool = True) -> Outcome:
    message = str(e).strip()
    why = (message.splitlines() or [repr(e)])[-1][:300]
    return Outcome([Result(name, "FAIL", why, log)], tail(message) if show_tail else "",
                   "did not start")


class Judge:
    """One boot of a configuration, judged by its kind: the kernel options
    the kind adds (options), how it boots (start) and what passes (judge)."""

    def __init__(self, tc: TestConfig, run_dir: Path) -> None:
        self.tc, self.run_dir, self.log = tc, run_dir, rel(run_dir / "serial.log")
        self.err = ""          # why the boot did not do what the kind needs

    def options(self, words: list[str]) -> list[str]:
        return list(words)

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        return boot.run(s, kernel, self.run_dir), ""

    def run(self, kernel: str) -> Outcome:
        s = dataclasses.replace(self.tc.settings, cmdline=self.options(self.tc.settings.cmdline))
        try:
            self.result, self.err = self.start(s, kernel)
        except (boot.ConfigError, RuntimeError, OSError) as e:
            return did_not_start(self.tc.name, e, self.log)
        return self.judge()

    @functools.cached_property
    def missing(self) -> list[str]:
        """The `expect` strings the serial log lacks."""
        text = "\n".join(clean_lines(self.result.serial))
        return [e for e in self.tc.expect if e not in text]

    @property
    def summary(self) -> str:
        r = self.result
        return (f"{r.duration:.1f} s, "
                + ("timed out" if r.timed_out else f"exit status {r.status}")
                + (", shutdown" if r.ending is boot.Ending.SHUTDOWN else ""))

    def ok(self, name: str, summary: str = "") -> Outcome:
        return Outcome([Result(name, "ok")], "", summary or self.summary)

    def fail(self, name: str, why: str, show_tail: bool = True, log: str = "") -> Outcome:
        # Whatever else went wrong, a run that timed out says so, and where
        # its CPUs were (boot.run's error).
        r = self.result
        if r.timed_out and r.error not in why:
            why = f"{why}; {r.error}"
        return Outcome([Result(name, "FAIL", why, log or self.log)],
                       tail(self.result.serial) if show_tail else "", self.summary)

    def expect_all(self, name: str) -> Outcome:
        """ok if the boot went as the kind needs and the serial log holds
        every string of `expect`."""
        if self.err or self.missing:
            return self.fail(name, self.err or f"serial log lacks {self.missing[0]!r}")
        return self.ok(name)


class KtapJudge(Judge):
    """"ktap": boot with test=all (unless the options choose the suites) and
    judge the KTAP on serial, one result per case; the way the run ended
    must agree with it (no panic after the last case, say)."""

    def options(self, words: list[str]) -> list[str]:
        return list(words) if any(w.startswith("test=") for w in words) else ["test=all", *words]

    def judge(self) -> Outcome:
        name, r = self.tc.name, self.result
        results, complete = ktap_results(name, r.serial, self.log)
        results += [Result(f"{name}/(serial)", "FAIL", f"serial log lacks {text!r}", self.log)
                    for text in self.missing]
        if not results:
            return self.fail(name, r.error or f"no KTAP output on serial ({r.note()})")
        passed, end, show_tail = not has_failure(results), None, not complete
        if r.timed_out:
            end = Result(f"{name}/(run)", "FAIL", r.error, self.log)
        elif not r.backend.verdict_in_status:
            if not r.clean and complete:
                end = Result(f"{name}/(exit)", "FAIL", r.note(), rel(r.emulator_log))
        elif passed and not r.clean:
            end = Result(f"{name}/(exit)", "FAIL", f"{r.note()}; expected {boot.EXIT_SUCCESS}",
                         self.log)
        elif not passed and r.clean:
            results.append(Result(f"{name}/(exit)", "FAIL", "cases failed but the kernel "
                                  "exited with success (33)", self.log))
        if end:
            results.append(end)
            show_tail = True
        return Outcome(results, tail(r.serial) if show_tail else "", self.summary)


class ExitJudge(Judge):
    """"exit": the way the run ended alone (a clean end passes), for machines
    without a serial port: one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/exit", self.result
        if r.clean:
            return self.ok(name)
        why = r.error or f"{r.note()}; expected {boot.EXIT_SUCCESS}"
        return Outcome([Result(name, "FAIL", why, rel(r.emulator_log))],
                       tail(boot.read(r.emulator_log)), self.summary)


class ScreendumpJudge(Judge):
    """"screendump": the default job with its results screen shown once
    (results_screen=once, bench/screen.c), a screendump of the summary, of
    every page of rows and of every QR code as the kernel announces each on
    serial; tools/test/results_screen.py checks them against the serial log: the
    summary's sentences, every row on a page, the codes decoding (zbarimg) to
    the serial log's results JSON. Three results."""

    def options(self, words: list[str]) -> list[str]:
        return ["results_screen=once", f"page_seconds={SCREEN_PAGE_SECONDS}", *words]

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        self.shots: dict[str, Path] = {}

        def shot(line: str) -> Path | None:
            name = results_screen.shot_name(line)
            # The summary comes back last, as QEMU ends: the first one counts.
            if name is None or name in self.shots:
                return None
            self.shots[name] = self.run_dir / f"{name}.ppm"
            return self.shots[name]

        for old in self.run_dir.glob("*.ppm"):
            old.unlink()
        result, problems = boot.screendumps(s, kernel, self.run_dir, shot)
        return result, "; ".join(problems) or result.error

    def judge(self) -> Outcome:
        if self.err or not self.result.clean:
            return self.fail(f"{self.tc.name}/summary", self.err or self.result.note())
        if not shutil.which("zbarimg"):
            verdicts = [(n, ok, why) for n, ok, why in results_screen.verdicts(
                self.result.serial, self.shots, FONT) if n != "qr"]
            skip = [Result(f"{self.tc.name}/qr", "SKIP", "zbarimg is missing (make deps)")]
        else:
            verdicts = results_screen.verdicts(self.result.serial, self.shots, FONT)
            skip = []
        results = [Result(f"{self.tc.name}/{name}", "ok" if ok else "FAIL", why[:300], self.log)
                   for name, ok, why in verdicts] + skip
        return Outcome(results, "", self.summary)


class CrashJudge(Judge):
    """"crash": the options make the kernel crash or inject a bug: the run
    must end with the failure status (35) or time out, and the serial log
    hold every string of `expect` (the proof that tests can fail): one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/crash", self.result
        if not r.timed_out and r.ending not in (boot.Ending.FAILURE, boot.Ending.PANIC):
            return self.fail(name, f"{r.note()}; expected the failure status {boot.EXIT_FAILURE}")
        return self.expect_all(name)


class MessageJudge(Judge):
    """"message": the kernel cannot start (e.g. no long mode) and halts: the
    first string of `expect` must appear on serial, then the run is stopped:
    one result."""

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        result = boot.run(s, kernel, self.run_dir, wait_for=self.tc.expect[0],
                          on_seen=lambda proc, text: proc.kill())
        return result, result.error

    def judge(self) -> Outcome:
        return self.expect_all(f"{self.tc.name}/message")


class BenchBugJudge(MessageJudge):
    """"bench-bug": a benchmark that checks itself (tlb_flush2) under an
    injected protocol bug: the first string of `expect`, the benchmark's
    FAILED line, must appear on serial, then the run is stopped: one result
    ("bug caught"; a run that ends without it missed the bug)."""

    def judge(self) -> Outcome:
        return self.expect_all(f"{self.tc.name}/bug")


class PanicScreenJudge(Judge):
    """"panic-screen": the options make the kernel panic early (boot_bug=),
    with done=halt: when serial says the panic halted, a screendump, then the
    run is stopped. Every string of `expect` must be on serial; the first
    names the screen as the boot line must (its size, its font scale), and
    the others must be on the screen too, in our font
    (tools/test/check_screendump.py) at the scale the boot line gives
    (", font x2"; 1 if none): one result."""
    HALTED = "PANIC: system halted"
    FONT_SCALE = re.compile(r"^boot: serial .*, screen framebuffer \d+x\d+, font x(\d+)", re.M)

    def options(self, words: list[str]) -> list[str]:
        return ["done=halt", *words]

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        self.shot = (self.run_dir / "panic.ppm").resolve()
        self.shot.unlink(missing_ok=True)
        problems = []
        with boot.monitor_socket() as sock:
            def on_seen(proc, text: str) -> None:
                try:
                    boot._monitor(sock, [f"screendump {self.shot}"], quit_after=False)
                except OSError as e:
                    problems.append(f"monitor: {e}")
                proc.kill()

            result = boot.run(s, kernel, self.run_dir, wait_for=self.HALTED,
                              on_seen=on_seen, monitor=sock)
        return result, "; ".join(problems)

    def judge(self) -> Outcome:
        name = f"{self.tc.name}/screen"
        if self.err:
            return self.fail(name, self.err)
        if self.missing:
            return self.fail(name, f"serial log lacks {self.missing[0]!r}")
        if not self.shot.is_file() or not self.shot.stat().st_size:
            return self.fail(name, f"no screendump: serial never said {self.HALTED!r}")
        font, screen = check_screendump.Font(FONT), check_screendump.Screen(self.shot)
        scale = self.FONT_SCALE.search("\n".join(clean_lines(self.result.serial)))
        scales = (int(scale.group(1)),) if scale else (1,)
        absent = [e for e in self.tc.expect[1:]
                  if not check_screendump.find_text(screen, font, e, scales)]
        if absent:
            return self.fail(name, f"the screen lacks {absent[0]!r} at font scale {scales[0]} (python3 -m "
                             f"tools.test.check_screendump --list {rel(self.shot)} {rel(FONT)})",
                             show_tail=False)
        return self.ok(name, f"{self.summary}; on screen: {len(self.tc.expect) - 1} strings")


# A TLB-protocol case (test=tlb, test=revoke, test=pending) that reported a
# failure ("not ok 3 TLB0003 ..."); a case cut short by a hang does not count.
FAILED_TLB_CASE = re.compile(r"^\s*not ok \d+ ((?:TLB|RVK|PND|USER)\d+)\b", re.M)


class BugJudge(Judge):
    """"bug": test=tlb (or test=revoke, test=pending, test=user) with an injected
    protocol bug (tlb_bug=, ipc_bug=): passes ("bug caught") only if a case of it fails or the
    kernel panics, fails ("bug missed") if the suite passes: one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/bug", self.result
        text = "\n".join(clean_lines(r.serial))
        failed, panicked = FAILED_TLB_CASE.findall(text), boot.panicked(text)
        if self.missing:
            return self.fail(name, f"serial log lacks {self.missing[0]!r}")
        if failed or panicked:
            how = ", ".join(failed) + (" and a panic" if failed and panicked else "")
            return self.ok(name, f"{self.summary}; bug caught by {how or 'a panic'}")
        if ktap_results(self.tc.name, r.serial, self.log)[1] and not r.timed_out:
            bug = next((w for w in self.tc.settings.cmdline
                        if w.startswith(("tlb_bug=", "ipc_bug="))), "?")
            return self.fail(name, f"bug missed: the suite passed with {bug}",
                             show_tail=False)
        return self.fail(name, r.error or f"no verdict: the tlb suite did not end ({r.note()})")


class BenchJudge(Judge):
    """"bench": boot with bench=all: every benchmark must run to its end and
    print results that parse (tools/bench/bench.py), and the kernel end the run
    cleanly: one result per benchmark."""
    log_dir = ""

    def verdicts(self, kernel: str) -> list[tuple[str, bool, str]]:
        return bench.test_run(self.tc.settings, kernel, self.run_dir)

    def run(self, kernel: str) -> Outcome:
        log = rel(self.run_dir / self.log_dir / "serial.log")
        started = time.monotonic()
        try:
            verdicts = self.verdicts(kernel)
        except (boot.ConfigError, RuntimeError, OSError) as e:
            return did_not_start(self.tc.name, e, log, show_tail=False)
        results = [Result(f"{self.tc.name}/{name}", "ok" if ok else "FAIL", why[:300], log)
                   for name, ok, why in verdicts]
        serial = boot.read(self.run_dir / "serial.log")
        return Outcome(results, tail(serial) if has_failure(results) else "",
                       f"{time.monotonic() - started:.1f} s")


class BenchCompareJudge(BenchJudge):
    """"bench-compare": boots A and B with the options of `compare` added;
    the side-by-side table (make bench-compare) must have both columns: one
    result."""
    log_dir = "A"

    def verdicts(self, kernel: str) -> list[tuple[str, bool, str]]:
        return bench.test_compare(self.tc.settings, kernel, self.run_dir, *self.tc.compare)


JUDGES: dict[str, type[Judge]] = {
    "ktap": KtapJudge, "exit": ExitJudge, "screendump": ScreendumpJudge, "crash": CrashJudge,
    "message": MessageJudge, "bug": BugJudge, "bench": BenchJudge,
    "bench-bug": BenchBugJudge,
    "panic-screen": PanicScreenJudge,
    "bench-compare": BenchCompareJudge,
}
