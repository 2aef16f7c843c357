#!/usr/bin/env python3
"""Run every test: host unit-test binaries, then the kernel in each machine
configuration of CONFIGS. Prints one line per result and ends with exactly
`N passed, N failed` (skips count as passed); exits 1 if anything failed.

    tools/run-tests.py <kernel.elf> [host test binaries...]

Both the host binaries and the kernel (booted with test=...) print KTAP
version 1, the format Linux KUnit prints. With the TLB simulator among the
host binaries, tools/mutants.py checks that every mutant in tests/mutants/
applies (host/mutants/check) and that a few are killed (host/mutants/<name>). Every leaf test case is one
result: host/<binary>/<case> and <config>/<suite>.<case>. A suite that
stops midway (a crash) counts its missing cases as failed; a run without
KTAP fails as a whole, with the tail of its serial log.

Setting any of EMU SMP MEM ACCEL CPU FIRMWARE MACHINE CMDLINE QEMU_ARGS ICOUNT
runs one configuration, `custom`, built from them (test=all plus CMDLINE)
instead of the table. TIMEOUT changes every configuration's time limit.
Logs: build/test/<config>/ (serial.log, cmd, emulator logs) and
build/test/host/<binary>.log.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import boot  # noqa: E402  (tools/boot.py)
import bench  # noqa: E402  (tools/bench.py)

ROOT = boot.ROOT
TEST_DIR = ROOT / "build" / "test"
CHECK_SCREENDUMP = ROOT / "tools" / "check-screendump.py"
# Screendump configurations run the default job (the benchmarks) with
# done=halt: once it has ended on serial, its closing line must be on the
# screen, where a user without a serial port reads the results.
SCREEN_WAIT_FOR = "shootdown: done"
SCREEN_TEXT = "bench: end benchmarks="
FONT = ROOT / "build" / "kernel" / "font.psf"
HOST_TIMEOUT = 120  # seconds for one host test binary
# The TLB simulator searches for minutes (about 2.5 under ASan on an idle
# 2-core host, more beside the emulator runs): its own limit.
HOST_TIMEOUTS = {"tlb_sim": 1200}
MUTANTS = ROOT / "tools" / "mutants.py"
# With the simulator's host test: every mutant in tests/mutants/ must apply
# (mutants.py --check), and these, quick to kill, must be killed, to show the
# machinery works (make mutants runs them all): a shootdown that does not
# wait, a batch that frees before its flush, a PCID that collides with the
# kernel's.
TEST_MUTANTS = ["no-wait", "batch-free-before-flush", "pcid-equals-asid"]
MUTANTS_TIMEOUT = 300  # seconds for the check and for the named mutants
PARALLEL = 2        # QEMU runs at once (the machine has 2 cores)


# --- The configurations ---------------------------------------------------------

@dataclasses.dataclass
class TestConfig:
    """One way to boot the kernel for testing.

    kind: "ktap"       boot with test=all, judge the KTAP on serial
          "exit"       judge the exit status alone (33 passes): one result
          "screendump" boot with done=halt, screendump once the default job
                       has ended on serial, check its closing line is on
                       the screen: one result
          "crash"      the command line makes the kernel crash or injects a
                       bug: the exit status must say failure (35) and the
                       serial log must hold every string of `expect`: one
                       result (the proof that the tests can fail)
          "message"    the kernel cannot start (e.g. no long mode): the
                       first string of `expect` must appear on serial, then
                       the run is stopped: one result
          "bench"      boot with bench=all: every benchmark must run to its
                       end and print results that parse (tools/bench.py),
                       and the kernel must end with success: one result per
                       benchmark
          "bench-compare"  two boots with the kernel options of `compare`
                       added: the side-by-side table must have both
                       columns (make bench-compare): one result
          "bug"        test=tlb with an injected protocol bug (tlb_bug=):
                       passes ("bug caught") only if a tlb case reports a
                       failure or the kernel panics, fails ("bug missed")
                       if the suite passes: one result
    needs: "kvm" = run only where KVM is hardware virtualization.
    expect: strings the serial log must contain (every kind).
    """
    name: str
    kind: str
    settings: boot.Settings
    needs: str = ""
    expect: tuple[str, ...] = ()
    compare: tuple[str, str] = ("", "")  # kind "bench-compare": A and B


def cfg(name: str, kind: str = "ktap", needs: str = "", expect: tuple[str, ...] = (),
        **settings) -> TestConfig:
    # The boot summary must count exactly the CPUs the machine has.
    if kind == "ktap" and isinstance(settings.get("smp"), int):
        expect = (f"boot: cpus={settings['smp']} ", *expect)
    return TestConfig(name, kind, boot.Settings(**settings), needs, expect)


TCG = dict(accel="tcg", cpu="max")
# Many vCPUs on a 2-core host spin on each other: give them room.
SMP_TIMEOUT = 300
CRASH_REPORT = ("PANIC: ", "rip=", "backtrace:", "<kmain+")


# One line per configuration. Settings fields: see boot.Settings.
CONFIGS = [
    cfg("tcg-bios", accel="tcg", cpu="max", firmware="bios", mem_mib=128, smp=1),
    cfg("tcg-uefi", accel="tcg", cpu="max", firmware="uefi", mem_mib=128, smp=1),
    cfg("tcg-5g", accel="tcg", cpu="max", mem_mib=5 * 1024, smp=1),
    cfg("tcg-q35", accel="tcg", cpu="max", machine="q35", mem_mib=256, smp=1),
    cfg("tcg-serial-none", "exit", accel="tcg", mem_mib=128, smp=1, serial="none"),
    cfg("tcg-screendump", "screendump", accel="tcg", mem_mib=128, smp=1),
    cfg("tcg-uefi-screendump", "screendump", accel="tcg", firmware="uefi", mem_mib=128, smp=1),
    cfg("tcg-smp2", **TCG, mem_mib=128, smp=2),
    cfg("tcg-smp3", **TCG, mem_mib=128, smp=3, timeout=SMP_TIMEOUT),
    cfg("tcg-smp4", **TCG, mem_mib=128, smp=4, timeout=SMP_TIMEOUT),
    cfg("tcg-smp8", **TCG, mem_mib=128, smp=8, timeout=SMP_TIMEOUT),
    cfg("tcg-smp16", **TCG, mem_mib=256, smp=16, timeout=SMP_TIMEOUT),
    # APIC IDs 0,1,2,4,5,6: gaps in the ID space.
    cfg("tcg-smp6-gaps", **TCG, mem_mib=128, smp=6, topology="sockets=2,cores=3,threads=1",
        timeout=SMP_TIMEOUT),
    # The MADT lists 4 CPUs, 2 of them not enabled (absent).
    cfg("tcg-smp2-max4", **TCG, mem_mib=128, smp=2, topology="maxcpus=4",
        expect=("absent (not enabled in the MADT)",)),
    cfg("tcg-uefi-smp4", **TCG, firmware="uefi", mem_mib=256, smp=4,
        timeout=SMP_TIMEOUT),
    cfg("tcg-x2apic-typo", **TCG, mem_mib=128, smp=2, cmdline=["x2apic=maybe"],
        expect=("cmdline: warning: option x2apic: bad value 'maybe'",)),
    cfg("tcg-crash-panic", "crash", **TCG, mem_mib=128, smp=2, cmdline=["crash=panic"],
        expect=CRASH_REPORT + ("crash=panic: a deliberate panic",)),
    cfg("tcg-crash-pagefault", "crash", **TCG, mem_mib=128, smp=1,
        cmdline=["crash=pagefault"],
        expect=CRASH_REPORT + ("#PF page fault (vector 14)", "cr2=0xbadbad")),
    cfg("tcg-crash-stack", "crash", **TCG, mem_mib=128, smp=1, cmdline=["crash=stack"],
        expect=CRASH_REPORT + ("#DF double fault", "stack's guard page")),
    # Bugs injected into the cross-CPU call protocol must be caught.
    cfg("tcg-smp4-call-bug-drop", "crash", **TCG, mem_mib=128, smp=4,
        cmdline=["test=smp", "call_bug=drop"], timeout=SMP_TIMEOUT,
        expect=("not ok 4 SMP0004",)),
    cfg("tcg-smp2-call-bug-no-ipi", "crash", **TCG, mem_mib=128, smp=2,
        cmdline=["test=smp", "call_bug=no-ipi"], timeout=SMP_TIMEOUT,
        expect=("has not looked at a call from CPU", "it is dead or an IPI was lost")),
    cfg("tcg-no-long-mode", "message", accel="tcg", cpu="qemu32", mem_mib=128, smp=1,
        timeout=60, expect=("shootdown: this CPU has no 64-bit long mode",)),
    cfg("bochs", emu="bochs", cpu="corei7_skylake_x", mem_mib=128, smp=1),
    cfg("bochs-smp2", emu="bochs", cpu="corei7_skylake_x", mem_mib=128, smp=2,
        expect=("apic: x2apic",)),
    cfg("bochs-smp4", emu="bochs", cpu="corei7_skylake_x", mem_mib=128, smp=4,
        expect=("apic: x2apic", "timer=tsc-deadline")),
    cfg("bochs-xapic", emu="bochs", cpu="corei7_skylake_x", mem_mib=128, smp=2,
        cmdline=["x2apic=off"], expect=("apic: xapic",)),
    cfg("kvm", needs="kvm", accel="kvm", cpu="host", mem_mib=256, smp=2),
    # Every benchmark, with a tenth of the samples (no timing thresholds).
    cfg("bench-tcg", "bench", **TCG, mem_mib=128, smp=2, cmdline=["bench_scale=10"]),
    cfg("bench-tcg-icount", "bench", **TCG, mem_mib=128, smp=2, icount=True,
        cmdline=["bench_scale=10"]),
    cfg("bench-bochs", "bench", emu="bochs", cpu="corei7_skylake_x", mem_mib=128, smp=2,
        cmdline=["bench_scale=10"]),
    TestConfig("bench-compare", "bench-compare",
               boot.Settings(**TCG, mem_mib=128, smp=2,
                             cmdline=["bench=switch", "bench_scale=10"]),
               compare=("lazy=skip", "lazy=off")),
]


# --- The TLB oracle (tests/kernel/test_tlb.c) -----------------------------------
# test=all above runs it with every policy at its default (TCG with 1 to 16
# CPUs, Bochs). These run it alone under each alternative value, several
# compatible ones to a line, so that every value runs on TCG with 2, 4 and 8
# CPUs and on Bochs with PCID on and off. TCG has no PCID: pcid=, invpcid=
# and asid_slots= vary on Bochs only, with a CPU model that has PCID and
# INVPCID but no SMAP. With SMAP on, Bochs walks the page tables afresh for
# every kernel access to a user page, which hides the stale user
# translations the oracle looks for (docs/tlb-bugs.md).
# Serial output only: drawing every KTAP line on the emulated screen would
# cost Bochs most of the run (the screen has configurations of its own).
TLB = ["test=tlb", "console=serial"]
BOCHS_TLB = dict(emu="bochs", cpu="corei7_haswell_4770", mem_mib=128, smp=2)
PCID_IN_FORCE = "pcid=1 invpcid=1 "  # in the boot summary
TLB_CONFIGS = [
    cfg("tcg-smp2-tlb-lazy-ipi", **TCG, mem_mib=128, smp=2,
        cmdline=TLB + ["lazy=ipi", "flush_info=stack", "flush_ceiling=0"]),
    cfg("tcg-smp2-tlb-lazy-dynamic", **TCG, mem_mib=128, smp=2,
        cmdline=TLB + ["lazy=dynamic", "lazy_backoff=1", "flush_concurrent=off"]),
    cfg("tcg-smp2-tlb-lazy-off", **TCG, mem_mib=128, smp=2,
        cmdline=TLB + ["lazy=off", "kernel_mm_mask=touch", "lazy_mm=refcount"]),
    cfg("tcg-smp4-tlb-lazy-ipi", **TCG, mem_mib=128, smp=4, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=ipi", "flush_concurrent=off", "flush_ceiling=4096",
                       "lazy_mm=refcount"]),
    cfg("tcg-smp4-tlb-lazy-dynamic", **TCG, mem_mib=128, smp=4, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=dynamic", "lazy_backoff=1", "flush_info=stack",
                       "kernel_mm_mask=touch"]),
    cfg("tcg-smp4-tlb-lazy-off", **TCG, mem_mib=128, smp=4, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=off", "flush_ceiling=0", "flush_concurrent=off"]),
    cfg("tcg-smp8-tlb-lazy-dynamic", **TCG, mem_mib=128, smp=8, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=dynamic", "lazy_backoff=1", "lazy_mm=refcount",
                       "flush_info=stack", "flush_ceiling=0"]),
    cfg("tcg-smp8-tlb-lazy-off", **TCG, mem_mib=128, smp=8, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=off", "kernel_mm_mask=touch", "flush_concurrent=off",
                       "flush_ceiling=4096"]),
    cfg("tcg-smp8-tlb-lazy-ipi", **TCG, mem_mib=128, smp=8, timeout=SMP_TIMEOUT,
        cmdline=TLB + ["lazy=ipi"]),
    cfg("bochs-smp2-tlb", **BOCHS_TLB, cmdline=TLB + ["tlb_stats"],
        expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-invpcid-off", **BOCHS_TLB,
        cmdline=TLB + ["invpcid=off", "asid_slots=1", "lazy=ipi", "flush_info=stack"],
        expect=("pcid=1 invpcid=0 ",)),
    cfg("bochs-smp2-tlb-slots-max", **BOCHS_TLB,
        cmdline=TLB + ["asid_slots=32", "lazy=dynamic", "lazy_backoff=1",
                       "flush_concurrent=off", "lazy_mm=refcount", "flush_ceiling=0"],
        expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-lazy-off", **BOCHS_TLB,
        cmdline=TLB + ["lazy=off", "kernel_mm_mask=touch", "flush_ceiling=4096"],
        expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-pcid-off", **BOCHS_TLB, cmdline=TLB + ["pcid=off"],
        expect=("pcid=0 ",)),
    cfg("bochs-smp2-tlb-pcid-off-lazy-ipi", **BOCHS_TLB,
        cmdline=TLB + ["pcid=off", "lazy=ipi", "lazy_mm=refcount", "kernel_mm_mask=touch"],
        expect=("pcid=0 ",)),
]


def tlb_bug(name: str, bug: str, **settings) -> TestConfig:
    """A run of the tlb suite with tlb_bug=<bug>, which must be caught."""
    return cfg(name, "bug", cmdline=TLB + [f"tlb_bug={bug}"], **settings)


# Only the bugs each emulator shows every time (docs/tlb-bugs.md: which bug
# shows where, and why the others need the host simulator).
TLB_BUG_CONFIGS = [
    tlb_bug("tcg-smp4-bug-skip-remote", "skip_remote", **TCG, mem_mib=128, smp=4,
            timeout=SMP_TIMEOUT),
    tlb_bug("tcg-smp4-bug-no-wait", "no_wait", **TCG, mem_mib=128, smp=4,
            timeout=SMP_TIMEOUT),
    tlb_bug("tcg-smp4-bug-no-gen-check", "no_gen_check", **TCG, mem_mib=128, smp=4,
            timeout=SMP_TIMEOUT),
    tlb_bug("tcg-smp4-bug-ack-before-flush", "ack_before_flush", **TCG, mem_mib=128, smp=4, timeout=SMP_TIMEOUT),
    tlb_bug("bochs-smp2-bug-skip-remote", "skip_remote", **BOCHS_TLB),
    tlb_bug("bochs-smp2-bug-no-gen-check", "no_gen_check", **BOCHS_TLB),
]

CONFIGS += TLB_CONFIGS + TLB_BUG_CONFIGS


# --- Results --------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    name: str
    status: str        # ok | skip | FAIL
    reason: str = ""
    log: str = ""      # where to look

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}"
        if self.status == "skip" and self.reason:
            text += f" ({self.reason})"
        elif self.status == "FAIL":
            text += f": {self.reason or 'failed'}"
            if self.log:
                text += f" (log: {self.log})"
        return text


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def tail(text: str, lines: int = 25) -> str:
    kept = clean_lines(text.rstrip())[-lines:]
    return "\n".join("    | " + line for line in kept)


# --- KTAP parsing ------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?=]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b.")
VERSION = re.compile(r"K?TAP version \d+$")
PLAN = re.compile(r"1\.\.(\d+)\b")
RESULT = re.compile(r"(not ok|ok)\s+(\d+)\b(?:\s*-)?\s*([^#]*?)\s*(?:#\s*(.*))?$")
SUBTEST = re.compile(r"#\s*Subtest:\s*(.*?)\s*$")


def clean_lines(text: str) -> list[str]:
    """Serial text as lines, without CRs, terminal escapes (OVMF and GRUB
    draw on COM1 before the kernel) and other control characters."""
    text = ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return ["".join(c for c in line if c == "\t" or c >= " ") for line in text.split("\n")]


@dataclasses.dataclass
class Case:
    number: int
    name: str
    ok: bool
    directive: str = ""                 # e.g. "SKIP no hpet"
    diagnostics: list[str] = dataclasses.field(default_factory=list)
    children: "Block | None" = None     # the subtest this line reports


@dataclasses.dataclass
class Block:
    """One KTAP document or subtest: its plan and results, at one indent."""
    indent: int
    name: str = ""
    plan: int | None = None
    cases: list[Case] = dataclasses.field(default_factory=list)
    closed: bool = False                # its end was seen
    running: "Block | None" = None      # the subtest open when output stopped
    pending_diag: list[str] = dataclasses.field(default_factory=list)
    pending_child: "Block | None" = None


def parse_ktap(text: str) -> Block | None:
    """Parse the first KTAP document in `text`; None if there is none.

    Structure comes from indentation (4 spaces per level). Lines that are
    not KTAP, such as kernel log messages, are ignored, as the KTAP spec
    asks. Blocks still open where the text ends are left closed=False with
    `running` pointing down the chain of open subtests: that is where the
    kernel stopped (crash, hang, truncated log).
    """
    stack: list[Block] = []

    def close_deeper(indent: int) -> None:
        """Pop subtests deeper than `indent` whose result line never came."""
        while len(stack) > 1 and stack[-1].indent > indent:
            child = stack.pop()
            child.closed = True
            parent = stack[-1]
            parent.cases.append(Case(len(parent.cases) + 1, child.name, False,
                                     ["no result line for this subtest"], child))

    for raw in clean_lines(text):
        line = raw.lstrip(" ")
        indent = len(raw) - len(line)
        line = line.rstrip()
        if not stack:
            # The document starts at a version line; what comes before is
            # firmware and boot noise (which may also precede it on its line).
            m = re.search(r"K?TAP version \d+$", line)
            if m:
                stack.append(Block(indent if m.start() == 0 else 0))
            continue
        top = stack[-1]
        if indent < stack[0].indent:
            continue
        if VERSION.match(line):
            if indent > top.indent:
                stack.append(Block(indent))
            elif indent == stack[0].indent and stack[0].cases:
                break  # a second document: the kernel restarted; stop here
            continue
        m = SUBTEST.match(line)
        if m:
            if indent > top.indent:
                stack.append(Block(indent))
            elif indent < top.indent:
                close_deeper(indent)
            if stack[-1].indent == indent and not stack[-1].cases:
                stack[-1].name = m.group(1)
            continue
        m = PLAN.match(line)
        if m:
            if indent > top.indent:
                stack.append(Block(indent))
            elif indent < top.indent:
                close_deeper(indent)
            if stack[-1].plan is None:
                stack[-1].plan = int(m.group(1))
            continue
        m = RESULT.match(line)
        if m:
            # A result line one level up reports the subtest just finished.
            if top.indent > indent:
                # The shallowest block deeper than this line is the one
                # reported; blocks below it lack their own result lines.
                k = next(i for i, b in enumerate(stack) if b.indent > indent)
                close_deeper(stack[k].indent)
                child = stack.pop()
                child.closed = True
                stack[-1].pending_child = child
            top = stack[-1]
            if indent > top.indent:  # cases with no version or plan line
                top = Block(indent)
                stack.append(top)
            case = Case(int(m.group(2)), m.group(3).strip(), m.group(1) == "ok",
                        (m.group(4) or "").strip(), top.pending_diag, top.pending_child)
            if case.children is not None and not case.children.name:
                case.children.name = case.name
            top.cases.append(case)
            top.pending_diag, top.pending_child = [], None
            continue
        if line.startswith("#"):
            # A diagnostic explains the result that follows it at its level
            # (KUnit prints "# case: EXPECTATION FAILED ..." before not ok).
            target = next((b for b in reversed(stack) if b.indent <= indent), top)
            target.pending_diag.append(line.lstrip("# ").rstrip())

    if not stack:
        return None
    root = stack[0]
    for parent, child in zip(stack, stack[1:]):
        parent.running = child
    root.closed = (len(stack) == 1 and root.plan is not None
                   and len(root.cases) >= root.plan)
    return root


def is_skip(directive: str) -> bool:
    return directive.upper().startswith(("SKIP", "TODO"))


def has_failure(results: list[Result]) -> bool:
    return any(r.status == "FAIL" for r in results)


def leaf_results(block: Block, prefix: str, sep: str, log: str) -> list[Result]:
    """One Result per leaf case of `block`; missing cases count as failed."""
    results: list[Result] = []
    for case in block.cases:
        name = f"{prefix}{sep}{case.name or f'#{case.number}'}"
        # The first diagnostics name the first failed check: the cause.
        why = "; ".join(case.diagnostics[:2])
        if len(case.diagnostics) > 2:
            why += f" (+{len(case.diagnostics) - 2} more lines)"
        if case.children is not None:
            sub = leaf_results(case.children, name, ".", log)
            results += sub
            # A suite that says "not ok" while no case failed (its setup
            # failed, say) must not vanish.
            if not case.ok and not is_skip(case.directive) and not has_failure(sub):
                results.append(Result(name, "FAIL", why or "suite reported not ok", log))
        elif is_skip(case.directive):
            reason = case.directive.split(None, 1)[1] if " " in case.directive else ""
            results.append(Result(name, "skip", reason))
        elif case.ok:
            results.append(Result(name, "ok"))
        else:
            # Without diagnostics, a directive such as "# oops" is the reason.
            results.append(Result(name, "FAIL", (why or case.directive or "not ok")[:300], log))

    reported = len(block.cases)
    if block.running is not None:
        # The subtest running when the output stopped.
        reported += 1
        name = f"{prefix}{sep}{block.running.name or f'#{reported}'}"
        sub = leaf_results(block.running, name, ".", log)
        if not has_failure(sub):
            sub.append(Result(name, "FAIL", "the output stopped before this suite ended", log))
        results += sub
    if block.plan is not None and reported < block.plan:
        why = (f"missing: planned {block.plan}, got {len(block.cases)}" if block.closed
               else "missing: the output stopped before it")
        results += [Result(f"{prefix}{sep}#{n}", "FAIL", why, log)
                    for n in range(reported + 1, block.plan + 1)]
    elif block.plan is None and not block.closed and not has_failure(results):
        results.append(Result(f"{prefix}{sep}(rest)", "FAIL",
                              "the output stopped, with no plan to tell what was missing", log))
    return results


def ktap_results(prefix: str, text: str, log: str) -> tuple[list[Result], bool]:
    """The results of the KTAP in `text`, and whether it was complete.
    No KTAP at all gives no results."""
    root = parse_ktap(text)
    if root is None:
        return [], False
    results = leaf_results(root, prefix, "/", log)
    if not results:
        results = [Result(prefix, "FAIL", "KTAP with no results", log)]
    return results, root.closed


# --- Host tests --------------------------------------------------------------------

def run_host_test(binary: str) -> tuple[list[Result], str]:
    name = Path(binary).name
    prefix = f"host/{name}"
    log_path = TEST_DIR / "host" / f"{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = rel(log_path)
    limit = HOST_TIMEOUTS.get(name, HOST_TIMEOUT)
    try:
        proc = subprocess.run([binary], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=limit)
        output, status, timed_out = proc.stdout.decode("utf-8", "replace"), proc.returncode, False
    except subprocess.TimeoutExpired as e:
        output = (e.output or b"").decode("utf-8", "replace")
        status, timed_out = None, True
    except OSError as e:
        return [Result(prefix, "FAIL", f"cannot run: {e}")], ""
    log_path.write_text(output)
    results, complete = ktap_results(prefix, output, log)
    if not results:
        why = "timed out" if timed_out else f"no KTAP output (exit status {status})"
        return [Result(prefix, "FAIL", why, log)], tail(output)
    extra = ""
    if timed_out:
        results.append(Result(prefix, "FAIL", f"timed out after {limit} s", log))
    elif status != 0 and all(r.status != "FAIL" for r in results):
        # e.g. a sanitizer report after the last case
        results.append(Result(prefix, "FAIL", f"exit status {status}", log))
    if not complete or timed_out or (status != 0):
        extra = tail(output)
    return results, extra


# --- Mutation testing (tools/mutants.py) -------------------------------------------

def run_mutants() -> tuple[list[Result], str]:
    """host/mutants/check: every mutant applies; host/mutants/<name>: each of
    TEST_MUTANTS is killed by the simulator."""
    log_path = TEST_DIR / "host" / "mutants.log"
    json_path = TEST_DIR / "host" / "mutants.json"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = rel(log_path)
    json_path.unlink(missing_ok=True)
    output = ""

    def mutants(*args: str) -> tuple[str, int | None]:
        nonlocal output
        cmd = [sys.executable, str(MUTANTS), *args]
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=MUTANTS_TIMEOUT)
            text, status = proc.stdout.decode("utf-8", "replace"), proc.returncode
        except subprocess.TimeoutExpired as e:
            text, status = (e.output or b"").decode("utf-8", "replace"), None
        output += f"$ {' '.join(cmd[1:])}\n{text}"
        log_path.write_text(output)
        return text, status

    text, status = mutants("--check")
    errors = [line[len("error: "):] for line in text.splitlines() if line.startswith("error: ")]
    if status == 0:
        results = [Result("host/mutants/check", "ok")]
    else:
        why = errors[0] if errors else ("timed out" if status is None
                                        else f"exit status {status}")
        results = [Result("host/mutants/check", "FAIL", why[:300], log)]

    text, status = mutants("--no-baseline", "--json", str(json_path), *TEST_MUTANTS)
    try:
        outcomes = {m["name"]: m for m in json.loads(json_path.read_text())["mutants"]}
    except (OSError, ValueError, KeyError):
        outcomes = {}
    for name in TEST_MUTANTS:
        m = outcomes.get(name)
        if m is None:
            why = "timed out" if status is None else f"no result (exit status {status})"
            results.append(Result(f"host/mutants/{name}", "FAIL", why, log))
        elif m["result"] == "killed":
            results.append(Result(f"host/mutants/{name}", "ok"))
        else:
            by = f"{m['case']}: {m['reason']}" if m["case"] else m["reason"]
            results.append(Result(f"host/mutants/{name}", "FAIL",
                                  f"{m['result']}: {by}"[:300], log))
    failed = any(r.status == "FAIL" for r in results)
    return results, tail(output) if failed else ""


# --- Kernel configurations ------------------------------------------------------------

def test_cmdline(extra: list[str]) -> list[str]:
    """test=all unless the user's words already choose the suites."""
    if any(w.startswith("test=") for w in extra):
        return list(extra)
    return ["test=all", *extra]


def run_config(tc: TestConfig, kernel: str) -> tuple[list[Result], str, str]:
    """Boot one configuration. Returns (results, log tail to show, summary)."""
    run_dir = TEST_DIR / tc.name
    log = rel(run_dir / "serial.log")
    s = dataclasses.replace(tc.settings)
    if tc.kind in ("bench", "bench-compare"):
        return run_bench_config(tc, kernel)
    try:
        if tc.kind == "screendump":
            s.cmdline = ["done=halt", *s.cmdline]
            ppm = run_dir / "screen.ppm"
            result, err = boot.screendump(s, kernel, run_dir, ppm, wait_for=SCREEN_WAIT_FOR)
        elif tc.kind in ("crash", "bug"):
            result, err = boot.run(s, kernel, run_dir), ""
        elif tc.kind == "message":
            # The kernel halts after its message: stop it once it is seen.
            result = boot.run(s, kernel, run_dir, wait_for=tc.expect[0],
                              on_seen=lambda proc, text: proc.kill())
            err = result.error
        else:
            s.cmdline = test_cmdline(s.cmdline)
            result, err = boot.run(s, kernel, run_dir), ""
    except (boot.ConfigError, RuntimeError, OSError) as e:
        return [Result(tc.name, "FAIL", str(e).strip().splitlines()[-1][:300], log)], \
            tail(str(e)), "did not start"

    summary = (f"{result.duration:.1f} s, " +
               ("timed out" if result.timed_out else f"exit status {result.status}") +
               (", shutdown" if result.shutdown else ""))
    emulator_log = run_dir / ("bochs.log" if s.emu == "bochs" else "qemu.log")

    serial_text = "\n".join(clean_lines(result.serial))
    missing = [e for e in tc.expect if e not in serial_text]

    if tc.kind in ("crash", "message"):
        name = f"{tc.name}/{tc.kind}"
        if tc.kind == "crash" and not result.timed_out and \
                result.status != boot.EXIT_FAILURE:
            return [Result(name, "FAIL", f"{exit_note(result)}; expected the "
                           f"failure status {boot.EXIT_FAILURE}", log)], \
                tail(result.serial), summary
        if err or missing:
            why = err or f"serial log lacks {missing[0]!r}"
            return [Result(name, "FAIL", why, log)], tail(result.serial), summary
        return [Result(name, "ok")], "", summary

    if tc.kind == "bug":
        return judge_bug(tc, result, log, summary, missing)

    if tc.kind == "exit":
        if result.passed_exit():
            return [Result(f"{tc.name}/exit", "ok")], "", summary
        why = result.error or f"{exit_note(result)}; expected {boot.EXIT_SUCCESS}"
        return [Result(f"{tc.name}/exit", "FAIL", why, rel(emulator_log))], \
            tail(_read(emulator_log)), summary

    if tc.kind == "screendump":
        name = f"{tc.name}/screendump"
        if err:
            return [Result(name, "FAIL", err, log)], tail(result.serial), summary
        if not CHECK_SCREENDUMP.is_file():
            return [Result(name, "FAIL", f"{rel(CHECK_SCREENDUMP)} is missing", log)], "", summary
        check = subprocess.run([sys.executable, str(CHECK_SCREENDUMP), str(ppm), str(FONT),
                                SCREEN_TEXT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=120)
        (run_dir / "check-screendump.log").write_text(check.stdout)
        if check.returncode == 0:
            return [Result(name, "ok")], "", summary
        # Its first line says what is wrong; the rest draws the screen.
        why = (check.stdout.strip().splitlines() or ["text not found on screen"])[0]
        return [Result(name, "FAIL", why[:300], rel(run_dir / "check-screendump.log"))], \
            "", summary

    # kind == "ktap"
    results, complete = ktap_results(tc.name, result.serial, log)
    for text in missing:
        results.append(Result(f"{tc.name}/(serial)", "FAIL",
                              f"serial log lacks {text!r}", log))
    show_tail = not complete
    if not results:
        why = result.error or f"no KTAP output on serial ({exit_note(result)})"
        return [Result(tc.name, "FAIL", why, log)], tail(result.serial), summary
    all_passed = all(r.status != "FAIL" for r in results)
    if result.timed_out:
        results.append(Result(f"{tc.name}/(run)", "FAIL", result.error, log))
        show_tail = True
    elif s.emu == "qemu" and all_passed and result.status != boot.EXIT_SUCCESS:
        # Every case passed, yet the kernel did not end with success (e.g. a
        # panic after the tests, or a triple fault: status 0).
        results.append(Result(f"{tc.name}/(exit)", "FAIL",
                              f"{exit_note(result)}; expected {boot.EXIT_SUCCESS}", log))
        show_tail = True
    elif s.emu == "qemu" and not all_passed and result.status == boot.EXIT_SUCCESS:
        results.append(Result(f"{tc.name}/(exit)", "FAIL",
                              "cases failed but the kernel exited with success (33)", log))
    elif s.emu == "bochs" and not result.shutdown and complete:
        results.append(Result(f"{tc.name}/(exit)", "FAIL", exit_note(result),
                              rel(emulator_log)))
        show_tail = True
    return results, tail(result.serial) if show_tail else "", summary


def run_bench_config(tc: TestConfig, kernel: str) -> tuple[list[Result], str, str]:
    """A benchmark configuration: tools/bench.py boots and judges it."""
    run_dir = TEST_DIR / tc.name
    log = rel(run_dir / ("A" if tc.kind == "bench-compare" else "") / "serial.log")
    started = time.monotonic()
    try:
        if tc.kind == "bench":
            verdicts = bench.test_run(tc.settings, kernel, run_dir)
        else:
            verdicts = bench.test_compare(tc.settings, kernel, run_dir, *tc.compare)
    except (boot.ConfigError, RuntimeError, OSError) as e:
        return [Result(tc.name, "FAIL", str(e).strip().splitlines()[-1][:300], log)], \
            "", "did not start"
    results = [Result(f"{tc.name}/{name}", "ok" if ok else "FAIL", why[:300], log)
               for name, ok, why in verdicts]
    summary = f"{time.monotonic() - started:.1f} s"
    failed = any(r.status == "FAIL" for r in results)
    return results, tail(_read(run_dir / "serial.log")) if failed else "", summary


# A tlb case that reported a failure ("not ok 3 TLB0003 ..."); a case cut
# short by a hang does not count.
FAILED_TLB_CASE = re.compile(r"^\s*not ok \d+ (TLB\d+)\b", re.M)


def judge_bug(tc: TestConfig, result: boot.RunResult, log: str, summary: str,
              missing: list[str]) -> tuple[list[Result], str, str]:
    """kind "bug": caught if a tlb case failed or the kernel panicked."""
    name = f"{tc.name}/bug"
    bug = next((w.split("=", 1)[1] for w in tc.settings.cmdline
                if w.startswith("tlb_bug=")), "?")
    text = "\n".join(clean_lines(result.serial))
    failed = FAILED_TLB_CASE.findall(text)
    panicked = "PANIC: " in text
    if missing:
        return [Result(name, "FAIL", f"serial log lacks {missing[0]!r}", log)], \
            tail(result.serial), summary
    if failed or panicked:
        how = ", ".join(failed) + (" and a panic" if failed and panicked else "")
        return [Result(name, "ok")], "", f"{summary}; bug caught by {how or 'a panic'}"
    _, complete = ktap_results(tc.name, result.serial, log)
    if complete and not result.timed_out:
        return [Result(name, "FAIL", f"bug missed: the tlb suite passed with tlb_bug={bug}",
                       log)], "", summary
    why = result.error or f"no verdict: the tlb suite did not end ({exit_note(result)})"
    return [Result(name, "FAIL", why, log)], tail(result.serial), summary


def exit_note(result: boot.RunResult) -> str:
    """How the emulator ended, with the likely reason when it is not clean."""
    if result.emu == "bochs":
        if result.shutdown:
            return "Bochs: shutdown by the kernel"
        panics = [line.split(">>PANIC<<", 1)[1].strip()
                  for line in _read(result.run_dir / "bochs.log").splitlines()
                  if ">>PANIC<<" in line and "[TERM" not in line]
        return f"Bochs stopped: {panics[-1]}" if panics else f"Bochs exit status {result.status}"
    if result.status == 0:
        return "exit status 0: QEMU ended without isa-debug-exit, e.g. on a triple fault"
    return f"exit status {result.status}"


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# --- Main --------------------------------------------------------------------------------

def select_configs() -> list[TestConfig]:
    overrides = boot.env_overrides()
    if not any(v in overrides for v in boot.MACHINE_VARS):
        configs = [dataclasses.replace(tc, settings=dataclasses.replace(tc.settings))
                   for tc in CONFIGS]
    else:
        # The user asked for one machine: run just that, tests for all suites.
        configs = [TestConfig("custom", "ktap", boot.settings_from_env(boot.Settings()))]
        if configs[0].settings.smp is None:
            configs[0].settings.smp = 1
    if "TIMEOUT" in overrides:
        for tc in configs:
            tc.settings.timeout = boot.settings_from_env(boot.Settings()).timeout
    for tc in configs:
        tc.settings.resolve()  # report a bad setting before anything runs
    return configs


def main(argv: list[str]) -> int:
    boot.interrupt_on_sigterm()
    if len(argv) < 2:
        print(f"usage: {argv[0]} <kernel.elf> [host test binaries...]", file=sys.stderr)
        return 2
    kernel, host_bins = argv[1], argv[2:]
    try:
        configs = select_configs()
    except boot.ConfigError as e:
        print(f"run-tests: {e}", file=sys.stderr)
        return 2
    started = time.monotonic()
    passed = failed = 0

    def report(results: list[Result], extra: str = "", print_lines: bool = True) -> None:
        nonlocal passed, failed
        for r in results:
            if print_lines:
                print(r.line())
            if r.status == "FAIL":
                failed += 1
            else:
                passed += 1
        if extra:
            print(extra)
        sys.stdout.flush()

    for binary in host_bins:
        report(*run_host_test(binary))
    if any(Path(b).name == "tlb_sim" for b in host_bins):
        mutants_started = time.monotonic()
        report(*run_mutants())
        print(f"# mutants: {time.monotonic() - mutants_started:.0f} s")

    if not os.path.isfile(kernel):
        report([Result("kernel", "FAIL", f"no kernel at {kernel}")])
        configs = []

    # KVM configurations run only on real hardware virtualization.
    kvm_ok, kvm_why = boot.kvm_status()

    def show(tc: TestConfig, outcome) -> None:
        if outcome is None:
            print(f"skip {tc.name}: {kvm_why}")
            report([Result(tc.name, "skip", kvm_why)], print_lines=False)
            return
        results, extra, summary = outcome
        print(f"# {tc.name}: {tc.settings.resolve().describe()}; {summary}")
        report(results, extra)

    # QEMU configurations two at a time; Bochs (slow, and its emulated time
    # is only steady on an idle host) alone afterwards. Everything prints
    # in table order.
    skipped = {tc.name for tc in configs if tc.needs == "kvm" and not kvm_ok}
    qemu_runs = [tc for tc in configs if tc.settings.emu != "bochs"]
    bochs_runs = [tc for tc in configs if tc.settings.emu == "bochs"]
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        try:
            futures = [(tc, None if tc.name in skipped else pool.submit(run_config, tc, kernel))
                       for tc in qemu_runs]
            for tc, future in futures:
                show(tc, future.result() if future else None)
        except KeyboardInterrupt:
            # Start nothing more, and end what runs (in sessions of their
            # own, the emulators did not get the terminal's Ctrl-C).
            pool.shutdown(wait=False, cancel_futures=True)
            boot.stop_all()
            raise
    for tc in bochs_runs:
        show(tc, None if tc.name in skipped else run_config(tc, kernel))

    print(f"# all tests took {time.monotonic() - started:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        boot.stop_all()
        print("\nrun-tests: interrupted", file=sys.stderr)
        sys.exit(130)
