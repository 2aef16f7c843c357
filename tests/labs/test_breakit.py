#!/usr/bin/env python3
"""The labs' "Break it" exercise (tools/labs/breakit.py): the teacher's
workloads expose each lab's bug and pass; an empty template, a workload
too small to race and one that never reaches the bug fail; malformed
workloads are refused with the line at fault; each lab's bug can be
switched on in that lab's tree; the grader has one break-it check per lab.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/breakit). The simulator is $HOST_BIN_DIR/tlb_sim (build/host/ by
default); in a lab tree the cases that run it skip (its stubs stop it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tools import ROOT
from tools.labs import breakit, grade, lab_tree
from tools.test.ktap import SkipCase, run_case_functions

SIM = Path(os.environ.get("HOST_BIN_DIR") or ROOT / "build" / "host") / "tlb_sim"



def needs_simulator() -> None:
    if breakit.is_lab_tree(ROOT):
        raise SkipCase("a lab tree: the simulator stops at the stubbed code")
    if not SIM.exists():
        raise SkipCase(f"{SIM} is not built")


def judge(lab: str, text: str) -> breakit.Outcome:
    return breakit.judge(lab, text, SIM, "my.workload")


def fails(lab: str, text: str, *words: str) -> str:
    v = judge(lab, text)
    assert v.status == "FAIL", f"{lab}: {text!r} passed: {v.why}"
    for w in words:
        assert w in v.why, f"{lab}: {text!r}: {w!r} not in {v.why!r}"
    return v.why


def case_teachers_workloads_expose_each_bug() -> None:
    needs_simulator()
    for lab in breakit.EXERCISES:
        path = ROOT / breakit.TEACHER_DIR / f"{lab}.workload"
        if not path.exists():
            raise SkipCase(f"{path.relative_to(ROOT)} is not in this tree")
        v = breakit.judge(lab, path.read_text(), SIM, path.name)
        assert v.status == "PASS", f"{lab}: the teacher's workload: {v.why}"
        assert f"tlb_bug={breakit.EXERCISES[lab].bug}" in v.why


def case_template_fails_naming_the_handout() -> None:
    for lab, ex in breakit.EXERCISES.items():
        text = (ROOT / breakit.STUDENT_DIR / f"{lab}.workload").read_text()
        assert not breakit.parse(text, lab).cpus, f"{lab}'s template holds a workload"
        why = fails(lab, text, ex.handout, f'"{breakit.SECTION}"')
        assert "no workload yet" in why, why
    fails("L3", "", "no workload yet")


def case_one_cpu_reading_fails() -> None:
    needs_simulator()
    fails("L3", "-W run 1, read 0\n", "no violation", "does not reach the bug")


def case_workload_missing_the_bug_fails() -> None:
    needs_simulator()
    # A switch away and back recycles L4's one slot: the bug's hit path
    # never sees a slot behind.
    fails("L4", "-W 'run 1, read 0, run 2, run 1, read 0'\n-W 'run 2, remap 1 0'\n",
          "no violation")


def case_malformed_workloads_refused() -> None:
    bad = {
        "-W run 1, reed 0\n": ("my.workload:1", "unknown operation 'reed'"),
        "# fine\n-W run 1\n-W remap 1\n": ("my.workload:3", "remap takes 2 numbers"),
        "-W run 1,, read 0\n": ("my.workload:1", "empty operation"),
        "run 1, read 0\n": ("my.workload:1", "expected a line '-W operations'"),
        "-W\n": ("my.workload:1", "-W with no operations"),
        "-W run 1\n" * 5: ("5 CPUs", "at most 4"),
        "-W " + ", ".join(["read 0"] * 13) + "\n": ("13 operations", "at most 12"),
        "-W run 1\n-p tlb_bug=none\n": ("my.workload:2", "leave tlb_bug= out"),
        "-W run 1\n-p lazy=off\n": ("my.workload:2", "lazy= is fixed"),
        "-W run 1\n-p lazy\n": ("my.workload:2", "not an option word"),
        "-W run 1\n-p a=1\n-p b=2\n": ("my.workload:3", "a second -p"),
        "-W run 1\n-P 9\n": ("my.workload:2", "preemption bound from 1 to 3"),
    }
    for text, words in bad.items():
        fails("L4", text, *words)


def case_simulator_refusal_names_the_line() -> None:
    needs_simulator()
    fails("L3", "# two CPUs\n-W run 1, read 0\n-W run 9, read 0\n",
          "my.workload:3", "out of range")
    fails("L3", "-W run 1, read 0\n-W run 1, remap 1 0\n-p lazy=sometimes\n", "bad value")


def case_search_past_its_time_fails() -> None:
    needs_simulator()
    text = (ROOT / breakit.TEACHER_DIR / "L3.workload")
    if not text.exists():
        raise SkipCase("no teacher's workload in this tree")
    v = breakit.judge("L3", text.read_text(), SIM, "my.workload", timeout=0.001)
    assert v.status == "FAIL" and "ran past" in v.why, v.why


def case_each_bug_survives_in_its_lab_tree() -> None:
    """A hook of each lab's bug lies outside that lab's regions, so a lab
    tree still has it whatever the student wrote."""
    regions = lab_tree.all_regions(lab_tree.tracked_files())
    hooks: dict[str, list[tuple[str, int]]] = {}
    for path in ("mm/tlb.c", "mm/tlb_batch.c", "mm/mm.c"):
        for n, line in enumerate((ROOT / path).read_text().splitlines()):
            for bug in lab_tree.BUG_TOKEN.findall(line):
                if "INJECTED" in line:
                    hooks.setdefault(bug.lower(), []).append((path, n))
    for lab, ex in breakit.EXERCISES.items():
        if breakit.is_lab_tree(ROOT):
            raise SkipCase("a lab tree: its own regions are stubs")
        mine = [(r.path, r.first, r.last) for rs in regions.values() for r in rs if r.lab == lab]
        outside = [h for h in hooks.get(ex.bug, [])
                   if not any(p == h[0] and first < h[1] < last for p, first, last in mine)]
        assert outside, f"{lab}: every hook of {ex.bug} is in the lab's own regions"


def case_grade_has_one_breakit_check_per_lab() -> None:
    for name, lab in grade.LABS.items():
        checks = [c for c in lab.checks if c.kind == "breakit"]
        if name not in breakit.EXERCISES:
            assert not checks, f"{name} has a break-it check but no exercise"
            continue
        assert len(checks) == 1, f"{name}: {len(checks)} break-it checks"
        assert breakit.EXERCISES[name].bug in checks[0].title, checks[0].title
        assert breakit.EXERCISES[name].handout == lab.handout


def case_lab_tree_grades_the_students_file() -> None:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        tree = Path(d)
        assert breakit.workload_path("L3", tree) == tree / breakit.TEACHER_DIR / "L3.workload"
        (tree / breakit.LAB_FILE).write_text("lab=L3\n")
        assert breakit.workload_path("L3", tree) == tree / breakit.STUDENT_DIR / "L3.workload"
        v = breakit.grade("L3", tree, tree / "build")
        assert v.status == "FAIL" and "labs/L3-shootdown.md" in v.why, v.why
        v = breakit.grade("L2", tree, tree / "build")  # another lab's answer is not there
        assert v.status == "SKIP" and "lab L3's tree" in v.why, v.why


def main() -> int:
    return run_case_functions(globals())


if __name__ == "__main__":
    sys.exit(main())
