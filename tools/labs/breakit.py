"""Break it: a simulator workload that exposes a wrong protocol (labs/L3-shootdown.md,
"Break it"; docs/labs.md).

    python3 -m tools.labs.breakit LAB [WORKLOAD] [--sim PROGRAM]

For each protocol lab (L2 to L5) the protocol is given wrong on purpose,
with one tlb_bug= switched on, and the student writes a workload for the
TLB simulator (docs/tlb-simulator.md, "Writing your own race") that shows
it: the simulator's search over that workload must find a violation with
the bug, and none without it, under the lab's policy. The workload is a
file of lines:

    # a comment
    -W run 1, read 0, read 0      one line per CPU (at most 4; quotes optional)
    -p flush_ceiling=0            optional: option words added to the lab's policy
    -P 3                          optional: the preemption bound (1 to 3; default 2)

A lab tree (it has the .lab file make lab-tree writes) is graded on the
student's labs/breakit/<LAB>.workload (another lab's check skips there: its
answer is not in the tree); the reference tree on the teacher's
labs/teacher/breakit/<LAB>.workload, which lab trees leave out. The
simulator runs on this tree's own code: the bug of each lab is one whose
hook lies outside the code that lab's students write, so that it is
switched on whatever they wrote. Exit status: 0 exposed, 1 not, 2 bad
usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from tools import ROOT
from tools.labs.grade import run_program

LAB_FILE = ".lab"  # written by tools/labs/lab_tree.py in every lab tree
STUDENT_DIR = "labs/breakit"
TEACHER_DIR = "labs/teacher/breakit"
SECTION = "Break it"

# Bounds on the work one search may take: the simulator stops a search at
# its run cap (3000 runs), so what is left to bound is the length of a run.
CPUS_MAX = 4
OPS_MAX = 12            # operations of one CPU
BOUND_MIN, BOUND_MAX = 1, 3
TIMEOUT = 180           # seconds for one search (a few seconds when unloaded)
UNWRITTEN = "is not written yet"  # a lab tree's stub (lib/lab.h)

# The simulator's operations (tests/host/tlb_sim_workload.c) and how many
# numbers each takes; the simulator checks their ranges.
OPERATIONS = {"run": 1, "kthread": 0, "read": 1, "write": 1, "kread": 1, "remap": 2,
              "map": 3, "unmap": 3, "protect": 2, "free-table": 2, "kremap": 1, "exit": 1,
              "kstack-alloc": 1, "kstack-free": 1, "kstack-touch": 1, "revoke": 0, "mapshm": 1}


@dataclasses.dataclass(frozen=True)
class Exercise:
    bug: str        # the tlb_bug= the workload must expose
    policy: str     # the lab's policy: option words a workload may add to, not change
    handout: str


EXERCISES = {
    # L2's own hooks sit in choose_asid, which L2 students write: in their
    # tree the bug is the catch-up's half of no_gen_check (L5's code).
    "L2": Exercise("no_gen_check", "asid_slots=2 lazy=skip", "labs/L2-pcid.md"),
    # The hook is in call_targets(), which L3's send_request must call.
    "L3": Exercise("ack_before_flush", "", "labs/L3-shootdown.md"),
    # lazy_skip_freed_tables is in L4's own lazy_skipped_by(); one slot and
    # lazy=ipi leave one way to a stale slot: through a LAZY CPU sent away.
    "L4": Exercise("no_gen_check", "asid_slots=1 lazy=ipi", "labs/L4-lazy.md"),
    # L5 students write the catch-up: in their tree the bug is the hit
    # path's half (L2's choose_asid).
    "L5": Exercise("no_gen_check", "asid_slots=3 flush_ceiling=2", "labs/L5-generations.md"),
}


@dataclasses.dataclass
class Workload:
    cpus: list[str]
    words: str = ""          # -p: option words added to the lab's policy
    bound: int | None = None  # -P
    lines: list[int] = dataclasses.field(default_factory=list)  # the file line of each CPU


class WorkloadError(Exception):
    """A workload file the grader cannot run, with the reason."""


@dataclasses.dataclass
class Outcome:
    status: str  # PASS | FAIL | SKIP
    why: str = ""


def is_lab_tree(root: Path) -> bool:
    return (root / LAB_FILE).is_file()


def tree_lab(root: Path) -> str:
    """The lab a lab tree is for (its .lab), or "" in the reference."""
    try:
        text = (root / LAB_FILE).read_text()
    except OSError:
        return ""
    return next((line.split("=", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("lab=")), "")


def workload_path(lab: str, root: Path = ROOT) -> Path:
    """The workload graded in this tree: the student's in a lab tree, the
    teacher's in the reference."""
    folder = STUDENT_DIR if is_lab_tree(root) else TEACHER_DIR
    return root / folder / f"{lab}.workload"


def unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].strip()
    return text


def check_operations(text: str, where: str) -> None:
    ops = [op.strip() for op in text.split(",")]
    if len(ops) > OPS_MAX:
        raise WorkloadError(f"{where}: {len(ops)} operations; at most {OPS_MAX} per CPU, "
                            "so that the search ends in time")
    for op in ops:
        if not op:
            raise WorkloadError(f"{where}: an empty operation (two commas, or one at the end)")
        name, *args = op.split()
        if name not in OPERATIONS:
            raise WorkloadError(f"{where}: unknown operation {name!r}; the operations are "
                                + ", ".join(OPERATIONS))
        if len(args) != OPERATIONS[name] or not all(a.isdigit() for a in args):
            raise WorkloadError(f"{where}: {name} takes {OPERATIONS[name]} number"
                                f"{'' if OPERATIONS[name] == 1 else 's'}, got {op!r}")


def option_names(words: str) -> set[str]:
    return {w.split("=", 1)[0] for w in words.split()}


def parse(text: str, lab: str, name: str = "workload") -> Workload:
    """The workload in text, or WorkloadError with the line at fault."""
    w = Workload([])
    fixed = option_names(EXERCISES[lab].policy)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{name}:{n}"
        if not line or line.startswith("#"):
            continue
        flag, _, rest = line.partition(" ")
        rest = unquote(rest)
        if flag == "-W":
            if not rest:
                raise WorkloadError(f"{where}: -W with no operations")
            check_operations(rest, where)
            w.cpus.append(rest)
            w.lines.append(n)
        elif flag == "-p":
            if w.words:
                raise WorkloadError(f"{where}: a second -p line; give every option word on one")
            for word in rest.split():
                key, eq, value = word.partition("=")
                if not eq or not value:
                    raise WorkloadError(f"{where}: {word!r} is not an option word (name=value)")
                if key == "tlb_bug":
                    raise WorkloadError(f"{where}: the grader chooses the bug; leave tlb_bug= out")
                if key in fixed:
                    raise WorkloadError(f"{where}: {key}= is fixed by lab {lab}'s policy "
                                        f"({EXERCISES[lab].policy})")
            w.words = rest
        elif flag == "-P":
            if not rest.isdigit() or not BOUND_MIN <= int(rest) <= BOUND_MAX:
                raise WorkloadError(f"{where}: -P takes a preemption bound from {BOUND_MIN} "
                                    f"to {BOUND_MAX}")
            w.bound = int(rest)
        else:
            raise WorkloadError(f"{where}: expected a line '-W operations' (one per CPU), "
                                f"'-p options' or '-P bound', or a # comment; got {line[:40]!r}")
    if len(w.cpus) > CPUS_MAX:
        raise WorkloadError(f"{name}: {len(w.cpus)} CPUs; at most {CPUS_MAX} -W lines, so that "
                            "the search ends in time")
    return w


def policy_of(lab: str, w: Workload) -> str:
    words = " ".join(filter(None, [EXERCISES[lab].policy, w.words]))
    return words or "defaults"


def command(program: Path, lab: str, w: Workload, bug: str | None) -> list[str]:
    cmd = [str(program)]
    for cpu in w.cpus:
        cmd += ["-W", cpu]
    cmd += ["-p", policy_of(lab, w)]
    if w.bound is not None:
        cmd += ["-P", str(w.bound)]
    if bug:
        cmd += ["-b", bug]
    return cmd


def line_of(output: str, prefix: str) -> str:
    return next((line.strip("# ").strip() for line in output.splitlines()
                 if line.lstrip("# ").startswith(prefix)), "")


def failure_of(output: str) -> str:
    """The violation a search reported ("# custom under POLICY: what"), or ""."""
    for line in output.splitlines():
        if "FAILURE:" in line:
            return line.split("FAILURE:", 1)[1].strip()[:240]
    m = re.search(r"^# custom under .*?: (.*)$", output, re.M)
    return m.group(1).strip()[:240] if m else ""


def runs_of(output: str) -> str:
    m = re.search(r"^# (\d+) runs, (.*)$", output, re.M)
    return f"{m.group(1)} runs, {m.group(2)}" if m else "the search"


def problem(output: str, status: int | None, w: Workload, name: str, timeout: float) -> str:
    """What kept a search from giving an answer, or ""."""
    if status is None:
        return (f"the search ran past {timeout:.0f} s: make the workload smaller "
                "(fewer CPUs or operations, a lower -P)")
    stub = next((line.strip("# ").strip() for line in output.splitlines() if UNWRITTEN in line), "")
    if stub:
        return f"the simulator stopped at your lab's unwritten code: {stub}"
    if status == 2:  # the simulator refused the workload or the policy
        text = output.strip().splitlines()[-1] if output.strip() else "refused"
        m = re.search(r"custom cpu(\d+): (.*)", text)
        if m and int(m.group(1)) < len(w.lines):
            return f"{name}:{w.lines[int(m.group(1))]}: {m.group(2)}"
        return f"{name}: {text.removeprefix('tlb_sim: ')}"
    if status not in (0, 1):
        return f"the simulator ended with status {status}: {output.strip()[-200:]}"
    return ""


def judge(lab: str, text: str, program: Path, name: str = "workload",
          timeout: float = TIMEOUT) -> Outcome:
    """The verdict on the workload in text: PASS if the search finds a
    violation with the lab's bug and none without it."""
    ex = EXERCISES[lab]
    try:
        w = parse(text, lab, name)
    except WorkloadError as e:
        return Outcome("FAIL", str(e))
    if not w.cpus:
        return Outcome("FAIL", f"{name} has no workload yet, only comments: write one "
                               f"({ex.handout}, \"{SECTION}\")")
    if not program.exists():
        return Outcome("FAIL", f"{program} is not built (make host-tests)")
    output, status = run_program(command(program, lab, w, ex.bug), timeout, dict(os.environ))
    why = problem(output, status, w, name, timeout)
    if why:
        return Outcome("FAIL", why)
    if status == 0:
        return Outcome("FAIL", f"with tlb_bug={ex.bug} the search found no violation "
                               f"({runs_of(output)}): this workload does not reach the bug")
    exposed = failure_of(output)
    if not exposed:  # status 1 with no violation reported: a crash, not a verdict
        return Outcome("FAIL", f"the simulator ended without a verdict: {output.strip()[-200:]}")
    output, status = run_program(command(program, lab, w, None), timeout, dict(os.environ))
    why = problem(output, status, w, name, timeout)
    if why:
        return Outcome("FAIL", why)
    if status != 0:
        reproduce = line_of(output, "reproduce:")
        return Outcome("FAIL", f"without the bug the search finds a violation too, so it shows "
                               f"nothing about tlb_bug={ex.bug} (or your own code is wrong: see "
                               f"the other checks): {failure_of(output) or 'failed'}; {reproduce}")
    return Outcome("PASS", f"with tlb_bug={ex.bug}: {exposed[:160]}; without: none "
                           f"({runs_of(output)})")


def grade(lab: str, root: Path = ROOT, build: Path | None = None,
          workload: Path | None = None) -> Outcome:
    """The grade's check: this tree's workload file for lab (workload_path)."""
    own = tree_lab(root)
    if workload is None and own and own != lab:
        return Outcome("SKIP", f"lab {own}'s tree: the answer to lab {lab}'s break-it is not in it "
                               "(labs/teacher/ stays in the reference)")
    path = workload or workload_path(lab, root)
    program = (build or root / "build") / "host" / "tlb_sim"
    name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    try:
        text = path.read_text()
    except OSError as e:
        return Outcome("FAIL", f"{name}: {e.strerror} (write it: "
                               f"{EXERCISES[lab].handout}, \"{SECTION}\")")
    return judge(lab, text, program, name)


def put_answer(lab: str, tree: Path) -> None:
    """The teacher's workload where a student's goes, in a lab tree: a
    finished student's work (tools/labs/lab_tests.py's solved trees)."""
    answer = ROOT / TEACHER_DIR / f"{lab}.workload"
    if lab in EXERCISES and answer.is_file():
        shutil.copyfile(answer, tree / STUDENT_DIR / f"{lab}.workload")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", help=", ".join(EXERCISES))
    parser.add_argument("workload", nargs="?", help="the workload file (default: this tree's)")
    parser.add_argument("--build", default="build", help="the build directory (make's BUILD)")
    args = parser.parse_args(argv)
    if args.lab not in EXERCISES:
        print(f"break-it: LAB={args.lab!r}: the labs with a break-it exercise are "
              f"{', '.join(EXERCISES)}", file=sys.stderr)
        return 2
    ex = EXERCISES[args.lab]
    path = Path(args.workload).resolve() if args.workload else workload_path(args.lab)
    print(f"break-it: lab {args.lab}: expose tlb_bug={ex.bug} under "
          f"'{ex.policy or 'defaults'}' with {path}", flush=True)
    verdict = grade(args.lab, ROOT, (ROOT / args.build).resolve(), path)
    print(f"{verdict.status}: {verdict.why}")
    if verdict.status != "PASS":
        try:
            w = parse(path.read_text(), args.lab)
            if w.cpus:
                print("replay with the bug: " + shlex.join(
                    command(Path(args.build) / "host" / "tlb_sim", args.lab, w, ex.bug)))
        except (OSError, WorkloadError):
            pass
    return 0 if verdict.status == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
