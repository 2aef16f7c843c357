"""The labs in `make test` (docs/labs.md): for every lab, the student tree
`make lab-tree` writes builds, its grade is below full marks with every
check tied to the stubbed code failing, and this tree's grade is full.

Grades run with GRADE_QUICK=1 (repeated checks once, a third of the
simulator cases); `make grade` itself runs the full counts. Used by
tools/test/run_tests.py; results are named labs/<lab>/<what>.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.labs import breakit, grade
from tools.test.ktap import Result

GRADE_TIMEOUT = 1200  # seconds for one grade, the student tree's build included
# Labs whose student tree is also solved (the stubbed files put back as the
# reference has them) and graded again, which must give full marks: one of
# each kind of lab (simulator and oracle, benchmark, SPIN), to bound the time.
SOLVED_LABS = ("L1", "L3", "L7")
SCORE = re.compile(r"^Score: (\d+)/(\d+)$", re.M)


def this_tree() -> tuple[str, set[str]]:
    """In a lab tree (docs/labs.md), its lab and the tlb_bug= switches whose
    hooks were in the code the student writes: tests that inject those skip."""
    try:
        text = (ROOT / ".lab").read_text()
    except OSError:
        return "", set()
    fields = dict(line.split("=", 1) for line in text.splitlines()
                  if "=" in line and not line.startswith("#"))
    return fields.get("lab", "").strip(), set(fields.get("bugs", "").split())


def skip_reason(cmdline: list[str]) -> str:
    """Why a configuration with these kernel options skips in this tree
    (empty: it runs)."""
    lab, bugs = this_tree()
    for word in cmdline:
        if word.startswith("tlb_bug=") and word.split("=", 1)[1] in bugs:
            return (f"lab tree {lab}: the code carrying {word} is yours to write "
                    "(.lab); the reference tree runs it")
    return ""


def selected(lab: str, patterns: list[str]) -> bool:
    """A lab runs (all its results) when a pattern names it or one of its
    results: labs/L3/*, labs/L*/catches-*."""
    return not patterns or any(
        fnmatch.fnmatchcase(f"labs/{lab}", "/".join(p.split("/")[:2])) for p in patterns
        if p.startswith("labs"))


def run(cmd: list[str], cwd: Path, log: Path, **more_env: str) -> tuple[str, int | None]:
    env = dict(os.environ, GRADE_QUICK="1", **more_env)
    env.pop("MAKEFLAGS", None)  # the tree's own make, not this one's jobserver
    env.pop("MAKELEVEL", None)
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=GRADE_TIMEOUT)
        text, status = proc.stdout.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        text, status = (e.output or b"").decode("utf-8", "replace"), None
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(f"$ (cd {cwd} && {' '.join(cmd)})\n{text}\n")
    return text, status


def check_line(output: str, check: grade.Check) -> str:
    """The status (PASS, FAIL, SKIP) the grade printed for check, or ""."""
    for line in output.splitlines():
        m = re.match(r"^\s+(PASS|FAIL|SKIP)\s+\S+\s+(.*)$", line)
        if m and m.group(2).startswith(check.title):
            return m.group(1)
    return ""


def first_error(output: str) -> str:
    return next((line.strip() for line in output.splitlines() if "error" in line),
                "the build failed")[:300]


def score(output: str) -> tuple[int, int] | None:
    found = SCORE.findall(output)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def student_results(lab: str, work: Path, log: Path, rel: str) -> list[Result]:
    name = f"labs/{lab}"
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    text, status = run([sys.executable, "-m", "tools.labs.lab_tree", lab, str(tree)], ROOT, log)
    if status != 0:
        return [Result(f"{name}/tree", "FAIL", f"make lab-tree failed: {text.strip()[-200:]}", rel)]
    results = [Result(f"{name}/tree", "ok")]
    text, status = run(["make", "-s", "grade", f"LAB={lab}"], tree, log)
    if "grade: the tree does not build" in text or status is None:
        why = "timed out" if status is None else "the student tree does not build"
        return results + [Result(f"{name}/student-builds", "FAIL", why, rel)]
    results.append(Result(f"{name}/student-builds", "ok"))
    if shutil.which("clang"):  # the stubs must keep clang's -Werror quiet too
        text_clang, clang_status = run(["make", "-s", "BUILD=build-clang", "CC=clang", "all"],
                                       tree, log)
        results.append(Result(f"{name}/student-builds-clang", "ok") if clang_status == 0 else
                       Result(f"{name}/student-builds-clang", "FAIL",
                              f"clang: {first_error(text_clang)}", rel))
    got = score(text)
    if got is None:
        results.append(Result(f"{name}/student-below-full", "FAIL", "no Score line", rel))
    elif got[0] >= got[1] or status == 0:
        results.append(Result(f"{name}/student-below-full", "FAIL",
                              f"the stubbed tree scores {got[0]}/{got[1]}", rel))
    else:
        results.append(Result(f"{name}/student-below-full", "ok"))
    passed = [c.title for c in grade.LABS[lab].checks
              if c.tied and check_line(text, c) not in ("FAIL", "SKIP")]
    results.append(Result(f"{name}/student-stubbed-checks-fail", "FAIL",
                          f"passed with the code stubbed: {'; '.join(passed)}"[:300], rel)
                   if passed else Result(f"{name}/student-stubbed-checks-fail", "ok"))
    if lab in SOLVED_LABS:
        results.append(solved_result(lab, tree, log, rel))
    return results


def solved_result(lab: str, tree: Path, log: Path, rel: str) -> Result:
    """The student's part done as the reference does it: every file the
    tree stubbed put back and the teacher's break-it workload in place,
    then the tree's own grade must be full."""
    name = f"labs/{lab}/solved-full-marks"
    stubbed = [p for p in tree.rglob("*") if p.is_file()
               and not p.relative_to(tree).parts[0].startswith("build")
               and p.suffix in (".c", ".h", ".pml", ".py")
               and f"LAB({lab}) to write:" in p.read_text(errors="replace")]
    if not stubbed:
        return Result(name, "FAIL", "no stubbed file found in the tree", rel)
    for path in stubbed:
        # A new modification time, as an editor gives: make rebuilds.
        shutil.copyfile(ROOT / path.relative_to(tree), path)
    breakit.put_answer(lab, tree)
    return full_marks(name, *run(["make", "-s", "grade", f"LAB={lab}"], tree, log), rel)


def full_marks(name: str, text: str, status: int | None, rel: str) -> Result:
    """ok when a grade's output says full marks, else its first failure."""
    got = score(text)
    if status == 0 and got and got[0] == got[1]:
        return Result(name, "ok")
    failed = [line.strip() for line in text.splitlines() if line.lstrip().startswith("FAIL")]
    why = failed[0] if failed else ("timed out" if status is None else f"exit status {status}")
    return Result(name, "FAIL", why[:600], rel)


def reference_results(lab: str, log: Path, rel: str) -> list[Result]:
    text, status = run([sys.executable, "-m", "tools.labs.grade", lab], ROOT, log)
    return [full_marks(f"labs/{lab}/reference-full-marks", text, status, rel)]


def catches(lab: str, bug: str, log: Path, rel: str) -> Result:
    """The reference with tlb_bug=bug must score below full marks: one
    failed check shows it, so the grade stops there."""
    name = f"labs/{lab}/catches-{bug}"
    text, status = run([sys.executable, "-m", "tools.labs.grade", lab], ROOT, log,
                       GRADE_BUG=bug, GRADE_FIRST_FAILURE="1")
    got = score(text)
    if got and got[0] < got[1] and status == 1:
        return Result(name, "ok")
    why = "timed out" if status is None else (f"scored {got[0]}/{got[1]}" if got else "no Score line")
    return Result(name, "FAIL", f"tlb_bug={bug} not caught: {why}", rel)


def lab_results(lab: str, work_dir: Path, rel, own_lab: str = "") -> list[Result]:
    """lab's results; own_lab: the lab of this tree when it is a lab tree,
    whose reference this tree no longer has."""
    if lab == own_lab:
        return [Result(f"labs/{lab}", "skip",
                       f"this is lab {lab}'s tree: make grade LAB={lab} grades your work")]
    work = work_dir / lab
    log = work / "grade.log"
    log.unlink(missing_ok=True)
    # A solved lab's tree is graded with the reference's code
    # (solved-full-marks): grading this tree as well would repeat it.
    results = [] if lab in SOLVED_LABS else reference_results(lab, log, rel(log))
    results += [catches(lab, bug, log, rel(log)) for bug in grade.LABS[lab].bugs]
    return results + student_results(lab, work, log, rel(log))
