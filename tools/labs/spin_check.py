"""Model-check the L7 TLB model with SPIN (labs/L7-model.md).

For each configuration, the model without a bug and the model with each
injected bug (-DBUG_<NAME>, the kernel's tlb_bug=<name>), this runs
`spin -a`, compiles the verifier (pan) with gcc in build/spin/<name>/ and
runs a safety search: assertion violations and deadlocks. One KTAP line
per configuration:

    ok 1 no bug: no violation (N states)
    ok 2 bug skip_remote: counterexample found (P2, trail of K steps)

The model without a bug must verify; every bug must give a counterexample
that breaks one of the model's properties (P1-P4), not a deadlock, and not
the assert(false) of an unwritten LAB(L7) region. Each witness
(-DWITNESS_<NAME>) asserts that a state is never reached which the
kernel does reach; it too must give a counterexample, or the model is
more atomic than the kernel. Searches with a bug are
breadth-first, so their trails are the shortest there are.

    python3 -m tools.labs.spin_check [--model PATH] [--bug NAME]... [--cpus N]
    python3 -m tools.labs.spin_check --list
    python3 -m tools.labs.spin_check --trail NAME [--steps]

--bug none selects the model without a bug; without --bug every
configuration runs. --trail prints one bug's counterexample as the model's
own narrative (spin -t -p), --steps every statement as well. Exit status:
0 when every line is ok, 1 otherwise, 2 when spin or gcc is missing (a
grader reports that as SKIP).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools import ROOT

DEFAULT_MODEL = ROOT / "labs" / "L7" / "tlb.pml"
BUILD_DIR = ROOT / "build" / "spin"
NO_BUG = "none"
# name -> what the bug does, in the kernel's words (mm/tlb_bug.h); the last is
# the model's own, with no tlb_bug= of the kernel behind it.
BUGS = {
    "skip_remote": "no flush IPIs at all",
    "no_wait": "the flusher does not wait for the targets",
    "ack_before_flush": "targets acknowledge, then flush at their next TLB event",
    "no_gen_check": "every ASID slot counts as current",
    "reuse_asid_noflush": "a recycled ASID slot keeps its entries",
    "lazy_skip_freed_tables": "lazy CPUs are skipped even when page tables are freed",
    "free_before_ack": "pages are freed before the flush is done",
    "skip_switching": "the flusher skips SWITCHING CPUs (the model's own: CVE-2025-37964)",
}
# name -> a state the model must reach, -DWITNESS_<NAME>: a "counterexample"
# here shows the model is not more atomic than the kernel.
WITNESSES = {
    "switch_in_choice": "a CPU of the copied mask switches before the flusher "
                        "looks at it (the look is a step of its own)",
}
SPIN_TIMEOUT = 60    # seconds for spin -a and for a trail replay
GCC_TIMEOUT = 120    # seconds to compile pan.c
PAN_TIMEOUT = 300    # seconds for one search (two CPUs: well under one)
PAN_MEMORY_MB = 2048  # pan stops at this much memory rather than swap
PAN_DEPTH = 100000   # the depth-first search's stack; the model's is a few hundred
INCOMPLETE_SEARCH = ("max search depth too small", "out of memory", "reached -DMEMLIM bound")
# The stub a student tree has in each unwritten region (docs/labs.md).
STUB_ASSERTION = "0"
STUB_MESSAGE = re.compile(r"lab L7: .*")


@dataclasses.dataclass
class Result:
    ok: bool
    summary: str               # what the KTAP line says after the name
    diagnostics: list[str]     # "# ..." lines under it


def configuration_name(bug: str) -> str:
    if bug in WITNESSES:
        return f"witness {bug}"
    return "no bug" if bug == NO_BUG else f"bug {bug}"


def spin_defines(bug: str, cpus: int | None) -> list[str]:
    kind = "WITNESS" if bug in WITNESSES else "BUG"
    defines = [] if bug == NO_BUG else [f"-D{kind}_{bug.upper()}"]
    if cpus is not None:
        defines.append(f"-DNCPU={cpus}")
    return defines


def run(cmd: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess[str] | str:
    """The finished process, or why it did not finish."""
    try:
        return subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{cmd[0]} took more than {timeout} s"
    except OSError as err:
        return f"{cmd[0]}: {err}"


def tail(text: str, lines: int = 8) -> list[str]:
    return text.rstrip().splitlines()[-lines:]


def build_verifier(model: Path, bug: str, cpus: int | None, work: Path) -> str | None:
    """spin -a and gcc in work; None, or what went wrong."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spin = run(["spin", "-a", *spin_defines(bug, cpus), str(model)], work, SPIN_TIMEOUT)
    if isinstance(spin, str):
        return spin
    if spin.returncode != 0 or not (work / "pan.c").exists():
        return "spin -a failed: " + " | ".join(tail(spin.stdout, 4))
    # A bug's search is breadth-first (the shortest trail); the model
    # without a bug is searched depth-first with compressed states, which
    # needs a fraction of the memory for the whole state space.
    search = ["-DBFS"] if bug != NO_BUG else ["-DCOLLAPSE"]
    # With two CPUs a search takes a tenth of a second and gcc -O2 six
    # seconds; with three the search takes seconds and -O2 halves it.
    optimise = "-O2" if cpus is not None and cpus > 2 else "-O0"
    # -w: pan.c is SPIN's generated code, its warnings are not ours to fix.
    gcc = run(["gcc", optimise, "-w", "-DSAFETY", f"-DMEMLIM={PAN_MEMORY_MB}", *search,
               "-o", "pan", "pan.c"], work, GCC_TIMEOUT)
    if isinstance(gcc, str):
        return gcc
    if gcc.returncode != 0:
        return "gcc failed: " + " | ".join(tail(gcc.stdout, 4))
    return None


def pan_number(output: str, pattern: str) -> int | None:
    match = re.search(pattern, output)
    return int(match.group(1)) if match else None


def replay(model: Path, bug: str, cpus: int | None, work: Path,
           steps: bool) -> subprocess.CompletedProcess[str] | str:
    trail = work / f"{model.name}.trail"
    if not trail.exists():
        return "pan reported an error but wrote no trail"
    cmd = ["spin", "-t", *(["-p"] if steps else []), "-k", str(trail),
           *spin_defines(bug, cpus), str(model)]
    return run(cmd, work, SPIN_TIMEOUT)


def violated_property(model: Path, replayed: str) -> str:
    """P1-P4, from the comment on the model line of the failed assertion."""
    match = re.search(r"^spin: .*?:(\d+), Error: assertion violated", replayed, re.M)
    if not match:
        return "an assertion"
    lines = model.read_text().splitlines()
    number = int(match.group(1))
    found = re.search(r"/\* ([PW]\d) \*/", lines[number - 1]) if number <= len(lines) else None
    return found.group(1) if found else f"the assertion on line {number}"


def check(model: Path, bug: str, cpus: int | None) -> Result:
    work = BUILD_DIR / bug
    failure = build_verifier(model, bug, cpus, work)
    if failure:
        return Result(False, failure, [])
    pan = run(["./pan", f"-m{PAN_DEPTH}"], work, PAN_TIMEOUT)
    if isinstance(pan, str):
        return Result(False, pan, [])
    out = pan.stdout
    errors = pan_number(out, r"errors: (\d+)")
    states = pan_number(out, r"(\d+) states, stored")
    if errors is None or states is None:
        return Result(False, "pan did not finish its search", tail(out))
    # pan's own words when it gave up before the end of the state space
    incomplete = [line for line in out.splitlines()
                  if any(words in line for words in INCOMPLETE_SEARCH)]
    assertion = re.search(r"assertion violated (.*?) \(at depth", out)
    if assertion and assertion.group(1).strip() == STUB_ASSERTION:
        replayed = replay(model, bug, cpus, work, steps=False)
        text = replayed if isinstance(replayed, str) else replayed.stdout
        stub = STUB_MESSAGE.search(text)
        return Result(False, "stops at an unwritten LAB(L7) region",
                      [stub.group(0) if stub else "assert(false) reached"])
    if bug == NO_BUG:
        if errors == 0 and not incomplete:
            return Result(True, f"no violation ({states} states)", [])
        if errors == 0:
            return Result(False, f"search incomplete ({states} states)", incomplete)
        why = (f"assertion violated {assertion.group(1).strip()}" if assertion
               else "an invalid end state (a deadlock)")
        return Result(False, f"violation: {why}",
                      [f"see it: tools/labs/spin_check.py --model {model} --trail none"])
    if errors == 0:
        return Result(False, f"no counterexample ({states} states searched)", incomplete)
    if not assertion:
        return Result(False, "the error is a deadlock, not a broken property", tail(out, 3))
    replayed = replay(model, bug, cpus, work, steps=False)
    if isinstance(replayed, str):
        return Result(False, replayed, [])
    length = pan_number(replayed.stdout, r"trail ends after (\d+) steps")
    what = violated_property(model, replayed.stdout)
    return Result(True, f"counterexample found ({what}, trail of {length} steps)", [])


def process_name(proc: str, pid: str) -> str:
    """Who ran a statement: the flusher is CPU 0, scheduled_cpu(c) pid c+1."""
    if proc == "scheduled_cpu":
        return f"cpu{int(pid) - 1}"
    return "init" if proc == ":init:" else proc


def print_trail(model: Path, bug: str, cpus: int | None, steps: bool) -> int:
    """The counterexample of one configuration: the model's printf
    narrative, each line with the step and the model line that printed it
    (and with steps, every statement between them)."""
    result = check(model, bug, cpus)
    work = BUILD_DIR / bug
    print(f"{configuration_name(bug)}: {result.summary}")
    for line in result.diagnostics:
        print(f"# {line}")
    if not (work / f"{model.name}.trail").exists():
        return 0 if result.ok else 1
    replayed = replay(model, bug, cpus, work, steps=True)
    if isinstance(replayed, str):
        print(replayed)
        return 1
    print(f"model {model}, spin {' '.join(spin_defines(bug, cpus)) or '(no -D)'}")
    print(f"{'step':>5}  {'line':>4}  what happens")
    statement = re.compile(r"^\s*(\d+):\s+proc\s+(\d+) \((\S+?):\d+\) \S+?:(\d+) \(state \d+\)\s+\[(.*)\]$")
    narrative: list[str] = []
    final_values = False
    for raw in replayed.stdout.splitlines():
        match = statement.match(raw)
        if match:
            step, pid, proc, line, code = match.groups()
            # spin prints a printf's output just before its statement
            for text in narrative:
                print(f"{step:>5}  {line:>4}  {text}")
            narrative = []
            if steps and not code.startswith("printf("):
                print(f"{step:>5}  {line:>4}      {process_name(proc, pid)}: {code}")
        elif raw.startswith("spin: "):
            print(raw)
        elif raw.startswith("#processes"):
            final_values = True  # every variable's last value follows
        elif not final_values and raw.strip() and not raw.startswith("Starting "):
            narrative.append(raw.strip())
    return 0 if result.ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                        help="the Promela model (default: labs/L7/tlb.pml)")
    parser.add_argument("--bug", action="append", choices=[NO_BUG, *BUGS, *WITNESSES],
                        help="a configuration to check (repeatable; default: all)")
    parser.add_argument("--cpus", type=int, choices=[2, 3],
                        help="NCPU for the model (default: the model's own, 2)")
    parser.add_argument("--list", action="store_true", help="list the configurations")
    parser.add_argument("--trail", choices=[NO_BUG, *BUGS, *WITNESSES],
                        help="print this configuration's counterexample, readably")
    parser.add_argument("--steps", action="store_true",
                        help="with --trail: every statement, not only the narrative")
    args = parser.parse_args()

    if args.list:
        print(f"{NO_BUG:24} the protocol as mm/tlb.c has it: must verify")
        for name, what in BUGS.items():
            print(f"{name:24} -DBUG_{name.upper()}: {what}")
        for name, what in WITNESSES.items():
            print(f"{name:24} -DWITNESS_{name.upper()}: {what}")
        return 0
    missing = [tool for tool in ("spin", "gcc") if shutil.which(tool) is None]
    if missing:
        print(f"spin-check: {' and '.join(missing)} not found; the L7 model check needs both "
              "(Debian: apt-get install spin gcc)", file=sys.stderr)
        return 2
    model = args.model.resolve()
    if not model.is_file():
        print(f"spin-check: no model at {args.model}", file=sys.stderr)
        return 1
    if args.trail:
        return print_trail(model, args.trail, args.cpus, args.steps)

    selected = list(dict.fromkeys(args.bug or [NO_BUG, *BUGS, *WITNESSES]))
    print("KTAP version 1")
    print(f"1..{len(selected)}")
    all_ok = True
    started = time.monotonic()
    for number, bug in enumerate(selected, 1):
        result = check(model, bug, args.cpus)
        all_ok &= result.ok
        print(f"{'ok' if result.ok else 'not ok'} {number} {configuration_name(bug)}: {result.summary}")
        for line in result.diagnostics:
            print(f"# {line}")
        sys.stdout.flush()
    print(f"# {len(selected)} configurations in {time.monotonic() - started:.1f} s")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
