"""The labs in `make test` (docs/labs.md): for every lab, the student tree
`make lab-tree` writes builds, its grade is below full marks with every
check tied to the stubbed code failing, and this tree's grade is full.
Each student mistake of the catalogue (labs/teacher/mistakes/<lab>/, the
format below) applied to a copy of this tree scores below full marks, and
the check that fails is the one the mistake names.

Grades run with GRADE_QUICK=1 (repeated checks once, a third of the
simulator cases); `make grade` itself runs the full counts. Used by
tools/test/run_tests.py; results are named labs/<lab>/<what>.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools import ROOT
from tools.labs import breakit, grade, lab_tree
from tools.test.ktap import Result

GRADE_TIMEOUT = 1200  # seconds for one grade, the student tree's build included
# Labs whose student tree is also solved (the stubbed files put back as the
# reference has them) and graded again, which must give full marks: one of
# each kind of lab (simulator and oracle, benchmark, SPIN), to bound the time.
SOLVED_LABS = ("L1", "L3", "L7")
SCORE = re.compile(r"^Score: (\d+)/(\d+)$", re.M)
MISTAKES_DIR = "labs/teacher/mistakes"  # <lab>/<name>.patch
CAUGHT_BY = "caught-by:"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
# The build outputs a scratch copy needs: not the logs of tests and grades.
BUILD_LEFT_OUT = ("test", "grade", "mutants", "labs")


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


# --- Student mistakes (labs/teacher/mistakes/) --------------------------------------
#
# One file per mistake, <lab>/<name>.patch: leading lines "# ..." say what
# the student thought and why it is wrong, one of them "# caught-by: <part
# of the title of the check that must fail>", then a unified diff against
# this tree (git diff -U2, paths from its top) that changes only lines
# inside that lab's LAB(...) regions.


class MistakeError(Exception):
    """A malformed mistake file: the catalogue's fault, not the grade's."""


@dataclasses.dataclass
class Mistake:
    lab: str
    name: str
    path: Path
    description: str
    caught_by: str
    diff: str


def mistake_paths(lab: str, root: Path = ROOT) -> list[Path]:
    return sorted((root / MISTAKES_DIR / lab).glob("*.patch"))


def parse_mistake(path: Path, lab: str) -> Mistake:
    """Reads one mistake; MistakeError naming the file and line if malformed."""
    where = path.name if not path.is_relative_to(ROOT) else str(path.relative_to(ROOT))
    lines = path.read_text(encoding="utf-8").split("\n")
    described: list[str] = []
    caught: list[tuple[int, str]] = []
    at = 0
    while at < len(lines) and (lines[at] == "#" or lines[at].startswith("# ")):
        text = lines[at][2:].strip()
        if text.startswith(CAUGHT_BY):
            caught.append((at + 1, text[len(CAUGHT_BY):].strip()))
        else:
            described.append(text)
        at += 1
    if not any(described):
        raise MistakeError(f"{where}:1: no description: begin with '# ' lines saying what "
                           "the student thought and why it is wrong")
    if not caught:
        raise MistakeError(f"{where}: no '# {CAUGHT_BY} <part of a check's title>' line: "
                           "say which check of the grade must fail")
    if len(caught) > 1:
        raise MistakeError(f"{where}:{caught[1][0]}: a second '# {CAUGHT_BY}' line")
    line, caught_by = caught[0]
    if not caught_by:
        raise MistakeError(f"{where}:{line}: '# {CAUGHT_BY}' names no check")
    titles = [c.title for c in grade.LABS[lab].checks] if lab in grade.LABS else []
    if not any(caught_by in t for t in titles):
        raise MistakeError(f"{where}:{line}: no check of lab {lab} has {caught_by!r} "
                           "in its title (python3 -m tools.labs.grade "
                           f"{lab} --list)")
    diff = "\n".join(lines[at:])
    if not (diff.startswith("diff --git ") or diff.startswith("--- ")):
        raise MistakeError(f"{where}:{at + 1}: after the '# ' lines, a unified diff "
                           "(git diff -U2) must follow")
    return Mistake(lab, path.name[:-len(".patch")], path, " ".join(d for d in described if d),
                   caught_by, diff)


def outside_regions(m: Mistake, root: Path = ROOT) -> str:
    """The first change of m's diff outside its lab's regions, or ""."""
    file = ""
    old = 0
    regions: list[lab_tree.Region] = []
    for line in m.diff.split("\n"):
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            file = line[4:].strip()
            file = file[2:] if file.startswith("b/") else file
            lines = ((root / file).read_text(encoding="utf-8").split("\n")
                     if (root / file).is_file() else [])
            regions = [r for r in lab_tree.regions_of(file, lines) if r.lab == m.lab]
            if not regions:
                return f"{file} has no LAB({m.lab}) region"
            continue
        hunk = HUNK.match(line)
        if hunk:
            old = int(hunk.group(1)) - 1  # 0-based index of the next old line
            if hunk.group(2) == "0":  # an insertion after that line
                old += 1
            continue
        if not file or not line[:1] in ("-", "+", " "):
            continue
        # Where the hunk says; git apply would find the lines elsewhere, but
        # the regions are judged by these numbers, so they must be exact.
        if line[0] != "+" and (old >= len(lines) or lines[old] != line[1:]):
            return (f"{file}:{old + 1} is not the patch's line {line[1:].strip()!r}: make the "
                    f"mistake again against the current file (python3 -m tools.labs.lab_tests "
                    f"remake {m.lab}, or git diff -U2 by hand)")
        if line[0] == "-" and not any(r.body <= old < r.last for r in regions):
            return f"{file}:{old + 1} is outside the LAB({m.lab}) regions"
        if line[0] == "+" and not any(r.body <= old <= r.last for r in regions):
            return f"{file}: a line added before line {old + 1}, outside the LAB({m.lab}) regions"
        if line[0] != "+":
            old += 1
    return ""


def _file_changes(diff: str) -> list[tuple[str, list[list[str]]]]:
    """diff's files, each with its hunks' lines (' ', '-', '+' kept)."""
    files: list[tuple[str, list[list[str]]]] = []
    for line in diff.split("\n"):
        if line.startswith("+++ "):
            path = line[4:].strip()
            files.append((path[2:] if path.startswith("b/") else path, []))
        elif HUNK.match(line) and files:
            files[-1][1].append([])
        elif line[:1] in (" ", "-", "+") and not line.startswith("--- ") and files \
                and files[-1][1]:
            files[-1][1][-1].append(line)
    return files


def _place_hunk(lines: list[str], hunk: list[str]) -> list[str] | None:
    """lines with hunk applied where its old lines are found exactly once,
    dropping up to two of its outer context lines (as patch's fuzz) if the
    code around the region changed; None if no such place."""
    for fuzz in range(3):
        body = hunk[:]
        for _ in range(fuzz):
            if body and body[0][0] == " ":
                body = body[1:]
            if body and body[-1][0] == " ":
                body = body[:-1]
        old = [h[1:] for h in body if h[0] != "+"]
        new = [h[1:] for h in body if h[0] != "-"]
        places = [i for i in range(len(lines) - len(old) + 1) if lines[i:i + len(old)] == old]
        if len(places) == 1:
            at = places[0]
            return lines[:at] + new + lines[at + len(old):]
    return None


def remake_mistake(m: Mistake, root: Path = ROOT) -> str:
    """m's file made again against the current sources: the same change,
    found by its lines, with today's line numbers (git diff -U2's form).
    MistakeError if a change's lines are gone or found more than once."""
    parts: list[str] = []
    for path, hunks in _file_changes(m.diff):
        before = (root / path).read_text(encoding="utf-8").split("\n")
        after = before
        for number, hunk in enumerate(hunks, 1):
            placed = _place_hunk(after, hunk)
            if placed is None:
                raise MistakeError(f"{m.path.name}: change {number} to {path} is not found once "
                                   "in the current file: make the mistake again by hand")
            after = placed
        parts += [f"diff --git a/{path} b/{path}\n"]
        parts += [line + "\n" for line in difflib.unified_diff(
            before, after, f"a/{path}", f"b/{path}", n=2, lineterm="")]
    head = m.path.read_text(encoding="utf-8").split("\n")
    described = []
    for line in head:
        if line != "#" and not line.startswith("# "):
            break
        described.append(line + "\n")
    return "".join(described + parts)


def remake(labs: list[str]) -> int:
    """Rewrites every mistake of labs (all if none) whose line numbers went
    stale; says which, and which it could not place."""
    unknown = [lab for lab in labs if lab not in grade.LABS]
    if unknown:
        print(f"lab_tests: no lab {unknown[0]}: name one of {' '.join(grade.LABS)}", file=sys.stderr)
        return 2
    failed = 0
    for lab in labs or list(grade.LABS):
        for path in mistake_paths(lab):
            try:
                m = parse_mistake(path, lab)
                if "make the mistake again" not in outside_regions(m):
                    continue
                path.write_text(remake_mistake(m), encoding="utf-8")
                m = parse_mistake(path, lab)
                problem = outside_regions(m)
                if problem:
                    raise MistakeError(f"{path.name}: made again, but {problem}")
                print(f"remade {path.relative_to(ROOT)}")
            except MistakeError as e:
                print(f"lab_tests: {e}", file=sys.stderr)
                failed += 1
    return 1 if failed else 0


def scratch_copy(dest: Path) -> None:
    """This tree's tracked files and its build, times kept: make then
    rebuilds only what a mistake changes."""
    shutil.rmtree(dest, ignore_errors=True)
    for path in lab_tree.tracked_files():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target)
    if (ROOT / "build").is_dir():
        shutil.copytree(ROOT / "build", dest / "build", symlinks=True,
                        ignore=lambda d, names: [n for n in names if Path(d) == ROOT / "build"
                                                 and n in BUILD_LEFT_OUT])


def apply_patch(diff: str, tree: Path, reverse: bool = False) -> str:
    """git apply of diff in tree (not in any repository above it); its
    complaint, or ""."""
    # An absolute ceiling (git ignores relative ones): inside another
    # repository, git apply would skip the paths outside the current
    # directory and succeed having changed nothing.
    tree = tree.resolve()
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(tree.parent))
    proc = subprocess.run(["git", "apply", *(["-R"] if reverse else []), "-"], cwd=tree,
                          input=(diff.rstrip("\n") + "\n").encode(), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode else ""


def failed_titles(output: str) -> list[str]:
    """The titles of the checks a grade printed as failed."""
    return [m.group(1).split(" [")[0] for m in
            re.finditer(r"^\s+FAIL\s+\S+\s+(.*)$", output, re.M)]


def mistake_result(m: Mistake, tree: Path, log: Path, rel: str) -> Result:
    name = f"labs/{m.lab}/mistake-{m.name}"
    problem = outside_regions(m)
    if problem:
        return Result(name, "FAIL", f"{m.path.name}: {problem}", rel)
    problem = apply_patch(m.diff, tree)
    if problem:
        return Result(name, "FAIL", f"{m.path.name} no longer applies: {problem[:200]}", rel)
    try:
        # The check that must catch it first: one check's time, not the
        # table's up to it (the others still run if it passes).
        text, status = run([sys.executable, "-m", "tools.labs.grade", m.lab], tree, log,
                           GRADE_FIRST_FAILURE="1", GRADE_FIRST_CHECK=m.caught_by)
    finally:
        # Back to the reference; the files changed twice get new times, so
        # make rebuilds them for the next mistake.
        undone = apply_patch(m.diff, tree, reverse=True)
    if undone:
        raise MistakeError(f"{m.path.name}: cannot undo it in the scratch tree: {undone[:200]}")
    got = score(text)
    if status is None:
        return Result(name, "FAIL", "the grade timed out", rel)
    if "grade: the tree does not build" in text:
        return Result(name, "FAIL", f"{m.path.name}: the tree does not build with it: "
                      f"{first_error(text)}", rel)
    if not got or got[0] >= got[1] or status != 1:
        return Result(name, "FAIL", f"full marks with the mistake ({got[0]}/{got[1]} quick)"
                      if got else "no Score line", rel)
    failed = failed_titles(text)
    if not any(m.caught_by in t for t in failed):
        return Result(name, "FAIL", f"caught, but not by a check titled '...{m.caught_by}...': "
                      f"failed {'; '.join(failed) or 'nothing'}"[:400], rel)
    return Result(name, "ok")


def mistake_results(lab: str, work: Path, log: Path, rel: str) -> list[Result]:
    """Each mistake of lab's catalogue, in one scratch copy of this tree,
    undone after each: the lab's grade (quick, to its first failure) below
    full marks, the check that failed the one the mistake names."""
    paths = mistake_paths(lab)
    if not paths:
        return []
    mistakes: list[Mistake] = []
    results: list[Result] = []
    for path in paths:
        try:
            mistakes.append(parse_mistake(path, lab))
        except (MistakeError, OSError, UnicodeDecodeError) as e:
            results.append(Result(f"labs/{lab}/mistake-{path.stem}", "FAIL", str(e), rel))
    tree = work / "mistakes"
    started = time.monotonic()
    scratch_copy(tree)
    for n, m in enumerate(mistakes):
        try:
            results.append(mistake_result(m, tree, log, rel))
        except MistakeError as e:  # the tree is no longer the reference
            results.append(Result(f"labs/{lab}/mistake-{m.name}", "FAIL", str(e), rel))
            results += [Result(f"labs/{lab}/mistake-{later.name}", "FAIL",
                               f"not run: {m.path.name} could not be undone", rel)
                        for later in mistakes[n + 1:]]
            break
    with log.open("a") as f:  # what the catalogue adds to make test
        f.write(f"# {len(mistakes)} mistakes of {lab} graded in "
                f"{time.monotonic() - started:.0f} s\n")
    return results


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
    results += mistake_results(lab, work, log, rel(log))
    return results + student_results(lab, work, log, rel(log))


if __name__ == "__main__":
    # python3 -m tools.labs.lab_tests remake [LAB ...]: the catalogue's
    # mistakes made again after the code around their regions moved.
    if sys.argv[1:2] != ["remake"]:
        sys.exit("usage: python3 -m tools.labs.lab_tests remake [LAB ...]")
    sys.exit(remake(sys.argv[2:]))
