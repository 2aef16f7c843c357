"""Mutation testing of the TLB simulator (docs/tlb-simulator.md).

A mutant is one realistic mistake in the kernel's sources, written as a
file tests/mutants/<name>.mutant:

    description: <one line: the mistake>
    file: mm/tlb.c
    <<<<<<<
    <old text, verbatim, whole lines; must occur exactly once in the file>
    =======
    <new text>
    >>>>>>>

(several file: lines, several blocks per file; blank lines inside blocks
are kept). For each mutant this copies the tracked files of the tree into
build/mutants/<name>/src, applies the blocks, builds that copy's simulator
without sanitizers and runs its cases one at a time, quick exhaustive
scenarios first, stopping at the first that fails:

    KILLED    a case failed, crashed or timed out (a hang counts: every case
              of the unmutated tree ends well within the time limit)
    SURVIVED  every case passed: the simulator cannot tell the mistake
    ERROR     the mutant is wrong, not the simulator: a format error, old
              text missing or not unique, or it does not compile

    python3 -m tools.test.mutants [NAME...]
            run them (all, or those named); table, then
            `mutants: K killed, S survived of N`
    python3 -m tools.test.mutants --check [NAME...]
            only check that each one applies

Exit status: 0 if every mutant was killed (or, with --check, applies), 1
otherwise, 2 for bad usage. Results also go to build/mutants/results.json;
logs of each mutant to build/mutants/<name>/ (diff, build.log, cases.log).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tools import ROOT

MUTANT_DIR = ROOT / "tests" / "mutants"
WORK_DIR = ROOT / "build" / "mutants"
SIM = "build/host/tlb_sim"  # inside each copy
# The simulator's own warnings, -O2, no sanitizers (Makefile: TLB_SIM_CFLAGS).
FAST_CFLAGS = "-std=gnu11 -O2 -Wall -Wextra -Werror -I."
# A case's time limit is CPU time, so that a host loaded by other work does
# not turn slow runs into kills; a case blocked without using the CPU meets
# the wall-clock limit, WALL_FACTOR times longer. The slowest unmutated case
# takes about 4 s of CPU.
CASE_TIMEOUT = 60    # CPU seconds for one case
WALL_FACTOR = 5
BUILD_TIMEOUT = 300  # seconds for one build
PARALLEL = 2         # mutants at once (the machine has 2 cores)
BASELINE = "(unmutated)"

BEGIN, MIDDLE, END = "<<<<<<<", "=======", ">>>>>>>"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*$")

# Cases run quickest-to-kill first: small exhaustive scenarios, then the
# bigger ones, then random machines, the combinations of every policy last.
# Scenarios not listed go after the listed exhaustive ones.
SCENARIO_ORDER = ["asid", "exit", "switch", "three", "crossfire", "lazy", "shootdown",
                  "upgrade", "revoke-unmap", "unmap-map", "unmap-unmap", "rejoin",
                  "kstack-reuse", "fail-map", "fail-shm", "fail-kstack", "gasid-wrap-second",
                  "gasid-wrap-twice"]
# What report_failure (tests/host/test_tlb_sim.c) prints first:
# "# <scenario> under <policy>: <violation>".
FAILURE_LINE = re.compile(r"^# \S+ under .+?: ")
RESULT_LINE = re.compile(r"^(not ok|ok) \d+ (.*)$")


# --- The format --------------------------------------------------------------------

class MutantError(Exception):
    """Something wrong with a mutant file: the catalog, not the simulator."""

    def __init__(self, path: Path, line: int, message: str):
        super().__init__(f"{rel(path)}:{line}: {message}")


@dataclasses.dataclass
class Block:
    file: str
    line: int           # of its <<<<<<< line
    old: list[str]
    new: list[str]


@dataclasses.dataclass
class Mutant:
    name: str
    path: Path
    description: str = ""
    blocks: list[Block] = dataclasses.field(default_factory=list)


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def split_lines(text: str) -> tuple[list[str], bool]:
    """The lines of text, without their newlines; and whether it ended with one."""
    if not text:
        return [], False
    ends = text.endswith("\n")
    return (text[:-1] if ends else text).split("\n"), ends


def parse(path: Path) -> Mutant:
    """Reads one mutant file; MutantError (with its line) if malformed."""
    m = Mutant(path.name[:-len(".mutant")], path)
    if not NAME.match(m.name):
        raise MutantError(path, 1, f"bad mutant name {m.name!r} (letters, digits, - _ .)")
    try:
        lines, _ = split_lines(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise MutantError(path, 1, f"cannot read: {e}") from e
    description_line = 0
    file = None
    file_line = 0
    file_blocks = 0
    block = None
    state = "top"  # top, old (after <<<<<<<), new (after =======)

    def end_file(line: int) -> None:
        if file is not None and not file_blocks:
            raise MutantError(path, file_line, f"file: {file} has no block")

    for number, line in enumerate(lines, 1):
        marker = line.rstrip()
        if state == "old":
            if marker == MIDDLE:
                state = "new"
            elif marker in (BEGIN, END):
                raise MutantError(path, number, f"{marker} inside the old text "
                                  f"(block of line {block.line}); expected {MIDDLE}")
            else:
                block.old.append(line)
            continue
        if state == "new":
            if marker == END:
                if not block.old:
                    raise MutantError(path, block.line, "the old text is empty")
                if block.old == block.new:
                    raise MutantError(path, block.line, "the new text is the old text")
                m.blocks.append(block)
                file_blocks += 1
                state = "top"
            elif marker in (BEGIN, MIDDLE):
                raise MutantError(path, number, f"{marker} inside the new text "
                                  f"(block of line {block.line}); expected {END}")
            else:
                block.new.append(line)
            continue
        if not marker:
            continue
        if line.startswith("description:"):
            if description_line:
                raise MutantError(path, number, "a second description: line "
                                  f"(the first is line {description_line})")
            m.description = line[len("description:"):].strip()
            description_line = number
            if not m.description:
                raise MutantError(path, number, "the description is empty")
        elif line.startswith("file:"):
            end_file(number)
            file, file_line, file_blocks = line[len("file:"):].strip(), number, 0
            check_source(path, number, file)
        elif marker == BEGIN:
            if file is None:
                raise MutantError(path, number, f"{BEGIN} before any file: line")
            block = Block(file, number, [], [])
            state = "old"
        else:
            raise MutantError(path, number, "expected description:, file: or "
                              f"{BEGIN}, not {line[:60]!r}")
    if state != "top":
        raise MutantError(path, block.line, f"block not closed (no {END})")
    end_file(len(lines))
    if not description_line:
        raise MutantError(path, 1, "no description: line")
    if not m.blocks:
        raise MutantError(path, 1, "no file: line and block")
    return m


def check_source(path: Path, line: int, file: str) -> None:
    p = Path(file)
    if not file or p.is_absolute() or ".." in p.parts or p.parts[0] in ("build", ".git"):
        raise MutantError(path, line, f"file: {file!r} is not a path inside the source tree")
    if not (ROOT / p).is_file():
        raise MutantError(path, line, f"file: {file} does not exist")


def find(haystack: list[str], needle: list[str]) -> list[int]:
    """Where needle starts in haystack, as whole lines."""
    n = len(needle)
    return [i for i in range(len(haystack) - n + 1) if haystack[i:i + n] == needle]


def apply(m: Mutant, root: Path) -> dict[str, str]:
    """The mutated files' texts (the sources read from root), blocks in
    order, each on the file as the blocks before it left it."""
    texts: dict[str, str] = {}
    for b in m.blocks:
        if b.file not in texts:
            try:
                texts[b.file] = (root / b.file).read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise MutantError(m.path, b.line, f"cannot read {b.file}: {e}") from e
        lines, ends = split_lines(texts[b.file])
        at = find(lines, b.old)
        if not at:
            raise MutantError(m.path, b.line, f"old text not found in {b.file}: the "
                              "mutant is out of date")
        if len(at) > 1:
            where = ", ".join(str(i + 1) for i in at[:5]) + (", ..." if len(at) > 5 else "")
            raise MutantError(m.path, b.line, f"old text found {len(at)} times in "
                              f"{b.file} (lines {where}): it must occur exactly once, "
                              "give it more lines")
        lines[at[0]:at[0] + len(b.old)] = b.new
        texts[b.file] = "\n".join(lines) + ("\n" if ends else "")
    return texts


# --- One run ----------------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    name: str
    description: str
    result: str          # killed, survived, error
    case: str = ""       # the case that killed it
    reason: str = ""     # its first failure line, "timeout", a crash, or the error
    seconds: float = 0.0
    cases_run: int = 0
    slowest_case: float = 0.0

    def by(self) -> str:
        if self.case:
            return f"{self.case}: {self.reason}"
        return self.reason


def git_top() -> Path | None:
    """The top of the git checkout ROOT is, if ROOT is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(out.decode().strip()).resolve()


def source_files() -> list[str]:
    """The tracked files (git ls-files), as they are in the working tree; if
    ROOT is not a git checkout of its own (a tarball, even one unpacked
    inside another checkout), every file but build/ and .git."""
    if git_top() == ROOT:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             stdout=subprocess.PIPE).stdout
        files = [f for f in out.decode().split("\0") if f]
    else:
        files = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            top = Path(dirpath).relative_to(ROOT)
            if top == Path("."):
                dirnames[:] = [d for d in dirnames if d not in ("build", ".git")]
            files += [str(top / f) for f in filenames]
    return [f for f in files
            if not f.startswith("build/") and os.path.lexists(ROOT / f)]


def copy_tree(files: list[str], dest: Path) -> None:
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target, follow_symlinks=False)


def sub_env() -> dict[str, str]:
    """The environment for make in a copy: none of the calling make's
    variables or job server (make mutants runs this script)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


# The builds and simulators running now (each in a session of its own, so
# a terminal's Ctrl-C does not reach them): stop_all ends them.
running: set[subprocess.Popen] = set()
running_lock = threading.Lock()
stopping = threading.Event()


class Stopped(Exception):
    pass


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_all() -> None:
    stopping.set()
    with running_lock:
        for proc in running:
            kill_group(proc)


def run_killable(cmd: list[str], cwd: Path, timeout: float,
                 cpu_limit: float | None = None) -> tuple[str, int | None]:
    """Output and exit status (None: timed out, then killed with its group).
    With cpu_limit, the command also gets that many seconds of CPU time (it
    ends on SIGXCPU)."""
    if cpu_limit is not None:
        cmd = ["sh", "-c", 'ulimit -S -t "$0" && exec "$@"', str(max(1, round(cpu_limit))),
               *cmd]
    with running_lock:
        if stopping.is_set():
            raise Stopped()
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=sub_env(), start_new_session=True)
        running.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, _ = proc.communicate()
        status = None
    finally:
        with running_lock:
            running.discard(proc)
    if stopping.is_set():
        raise Stopped()
    return out.decode("utf-8", "replace"), status


def order_cases(names: list[str]) -> list[str]:
    """The simulator's cases to run, in the order that kills fastest; not
    the "bug ... caught" cases (they inject bugs of their own)."""
    def key(item: tuple[int, str]) -> tuple[int, int, int]:
        index, name = item
        first = name.split()[0]
        if "combination" in name:
            return (2, 0, index)
        if first in SCENARIO_ORDER:
            return (0, SCENARIO_ORDER.index(first), index)
        if first == "random":
            return (1, 0, index)
        return (0, len(SCENARIO_ORDER), index)
    wanted = [(i, n) for i, n in enumerate(names)
              if not (n.startswith("bug ") and n.endswith(" caught"))]
    return [n for _, n in sorted(wanted, key=key)]


def judge_case(case: str, output: str, status: int | None, timeout: float) -> str | None:
    """None if the case passed, else why it killed the mutant."""
    if status is None:
        return f"timeout (no end after {timeout * WALL_FACTOR:.0f} s)"
    if status == -signal.SIGXCPU:
        return f"timeout (more than {timeout:.0f} s of CPU time)"
    if status < 0:
        try:
            return f"crash ({signal.Signals(-status).name})"
        except ValueError:
            return f"crash (signal {-status})"
    lines = output.splitlines()
    verdict = None
    for line in lines:
        r = RESULT_LINE.match(line)
        if r and r.group(2).strip() == case:
            verdict = r.group(1)
    if verdict == "not ok":
        first = next((x for x in lines if FAILURE_LINE.match(x)), None)
        if first is None:  # no report: the last diagnostic before the verdict
            first = next((x for x in reversed(lines) if x.startswith("# ")),
                         "# (no diagnostic)")
        return first[2:].strip()
    if verdict is None:
        return f"crash (exit status {status}, no result line)"
    if status != 0:
        return f"crash (exit status {status} after 'ok')"
    return None


def run_mutant(m: Mutant, files: list[str], timeout: float) -> Outcome:
    started = time.monotonic()
    out = Outcome(m.name, m.description, "error")

    def done(result: str, reason: str, case: str = "") -> Outcome:
        out.result, out.reason, out.case = result, reason, case
        out.seconds = time.monotonic() - started
        return out

    work = WORK_DIR / m.name
    src = work / "src"
    if work.exists():
        shutil.rmtree(work)
    src.mkdir(parents=True)
    copy_tree(files, src)
    try:
        texts = apply(m, src)
    except MutantError as e:
        return done("error", str(e))
    diff = []
    for f, text in texts.items():
        before = (src / f).read_text()
        diff += difflib.unified_diff(before.splitlines(True), text.splitlines(True),
                                     f"a/{f}", f"b/{f}")
        (src / f).write_text(text)
    (work / "diff").write_text("".join(diff))

    build_log = work / "build.log"
    try:
        output, status = run_killable(["make", "--no-print-directory", SIM,
                                       f"TLB_SIM_CFLAGS={FAST_CFLAGS}"], src, BUILD_TIMEOUT)
    except OSError as e:
        return done("error", f"cannot run make: {e}")
    build_log.write_text(output)
    if status != 0:
        error = next((x.strip() for x in output.splitlines() if "error:" in x),
                     "timed out" if status is None else f"make exit status {status}")
        return done("error", f"stillborn: does not compile: {error[:200]} "
                    f"(log: {rel(build_log)})")

    listing, status = run_killable([SIM, "-l"], src, timeout)
    if status != 0:
        return done("killed", "crash (tlb_sim -l failed)", "-l")
    cases_log = work / "cases.log"
    with cases_log.open("w") as log:
        for case in order_cases(listing.splitlines()):
            case_started = time.monotonic()
            output, status = run_killable([SIM, case], src, timeout * WALL_FACTOR,
                                          cpu_limit=timeout)
            took = time.monotonic() - case_started
            out.cases_run += 1
            out.slowest_case = max(out.slowest_case, took)
            log.write(f"=== {case} ({took:.1f} s, status {status})\n{output}")
            log.flush()
            why = judge_case(case, output, status, timeout)
            if why is not None:
                return done("killed", why, case)
    return done("survived", f"all {out.cases_run} cases passed")


# --- Main ---------------------------------------------------------------------------------

class UsageError(Exception):
    pass


def catalog(names: list[str]) -> list[Path]:
    """The mutant files, all or those named (a name, name.mutant or a path)."""
    if not names:
        return sorted(MUTANT_DIR.glob("*.mutant"))
    paths = []
    for n in names:
        p = Path(n)
        if p.suffix != ".mutant":
            p = MUTANT_DIR / f"{n}.mutant"
        elif len(p.parts) == 1:
            p = MUTANT_DIR / p
        if not p.is_file():
            raise UsageError(f"no mutant {n} ({rel(p)})")
        paths.append(p)
    return paths


def check(paths: list[Path]) -> int:
    bad = 0
    for p in paths:
        try:
            apply(parse(p), ROOT)
        except MutantError as e:
            print(f"error: {e}")
            bad += 1
    print(f"mutants: {len(paths) - bad} of {len(paths)} apply cleanly")
    return 1 if bad or not paths else 0


def table(outcomes: list[Outcome]) -> None:
    width = max([len(o.name) for o in outcomes] + [6])
    print(f"{'mutant':<{width}}  {'result':<8}  {'seconds':>7}  killed by / reason")
    for o in outcomes:
        by = o.by()
        if len(by) > 150:
            by = by[:147] + "..."
        print(f"{o.name:<{width}}  {o.result.upper():<8}  {o.seconds:7.1f}  {by}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Mutation testing of the TLB simulator "
                                 "(docs/tlb-simulator.md).")
    ap.add_argument("names", nargs="*", help="mutants to run (default: every one in "
                    f"{rel(MUTANT_DIR)})")
    ap.add_argument("--check", action="store_true",
                    help="only check that every mutant applies cleanly")
    ap.add_argument("--no-baseline", action="store_true",
                    help="do not run the unmutated tree first (it must survive)")
    ap.add_argument("--timeout", type=float, default=CASE_TIMEOUT,
                    help=f"CPU seconds for one case (default {CASE_TIMEOUT}; wall clock: "
                    f"{WALL_FACTOR} times that)")
    ap.add_argument("-j", "--jobs", type=int, default=PARALLEL,
                    help=f"mutants at once (default {PARALLEL})")
    ap.add_argument("--json", type=Path, default=WORK_DIR / "results.json",
                    help="where the results go (default build/mutants/results.json)")
    args = ap.parse_args(argv[1:])
    try:
        paths = catalog(args.names)
    except UsageError as e:
        print(f"mutants: {e}", file=sys.stderr)
        return 2
    if args.check:
        return check(paths)
    if not paths:
        print(f"mutants: none in {rel(MUTANT_DIR)}")
        return 1

    started = time.monotonic()
    files = source_files()
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    total = len(paths)
    finished = 0

    baseline_failed = None

    def one(p: Path | None) -> Outcome:
        nonlocal finished, baseline_failed
        if p is None:
            o = run_mutant(Mutant("_baseline", ROOT), files, args.timeout)
            o.name = BASELINE
            if o.result != "survived":  # nothing else can be judged
                baseline_failed = o
                stop_all()
        else:
            try:
                m = parse(p)
            except MutantError as e:
                o = Outcome(p.name[:-len(".mutant")], "", "error", reason=str(e))
            else:
                o = run_mutant(m, files, args.timeout)
            with lock:
                finished += 1
                print(f"# [{finished}/{total}] {o.name}: {o.result} ({o.seconds:.1f} s)",
                      file=sys.stderr, flush=True)
        return o

    jobs = ([] if args.no_baseline else [None]) + paths
    pool = concurrent.futures.ThreadPoolExecutor(max(1, args.jobs))
    try:
        outcomes = list(pool.map(one, jobs))
    except (KeyboardInterrupt, Stopped):
        stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        if baseline_failed is None:
            raise KeyboardInterrupt from None
        outcomes = [baseline_failed]
    pool.shutdown()
    baseline = None if args.no_baseline else outcomes.pop(0)
    if baseline is not None and baseline.result != "survived":
        print(f"mutants: the unmutated tree fails ({baseline.by()}): "
              "no mutant can be judged", file=sys.stderr)
        return 2

    table(outcomes)
    killed = sum(o.result == "killed" for o in outcomes)
    survived = sum(o.result == "survived" for o in outcomes)
    errors = sum(o.result == "error" for o in outcomes)
    elapsed = time.monotonic() - started
    if baseline is not None:
        print(f"# unmutated tree: {baseline.cases_run} cases passed in "
              f"{baseline.seconds:.1f} s, the slowest in {baseline.slowest_case:.1f} s "
              f"(limit per case: {args.timeout:.0f} s of CPU time)")
    print(f"# {elapsed:.0f} s, {args.jobs} at a time; logs: {rel(WORK_DIR)}/<name>/")
    results = {
        "killed": killed, "survived": survived, "errors": errors, "total": len(outcomes),
        "seconds": round(elapsed, 1), "case_timeout": args.timeout,
        "baseline": dataclasses.asdict(baseline) if baseline else None,
        "mutants": [dataclasses.asdict(o) for o in outcomes],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    line = f"mutants: {killed} killed, {survived} survived of {len(outcomes)}"
    if errors:
        line += f", {errors} errors"
    print(line)
    return 1 if survived or errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        print("\nmutants: interrupted", file=sys.stderr)
        sys.exit(130)
