#!/usr/bin/env python3
"""The lab grader's promises to a teacher (tools/labs/grade.py, batch.py):
it installs nothing and says SKIP, naming the package, for a check whose
tool is missing (PATH without bochs, spin, apt-get and sudo, which here
record a call); a stale translation caps the score at half the maximum
and a failed simulator check shows its reproduce: command and its log
(a fake tlb_sim); FORMAT=gradescope writes Gradescope's results.json; and
make grade-batch grades two submissions of L7 (one stubbed, one solved,
as a directory and as a git bundle), stops one past its time limit and
refuses bad variables.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/grade). Python 3.11 standard library; the batch cases need git, and
spin for their scores.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.labs import grade, lab_tree
from tools.test.ktap import SkipCase, run_case_functions

# Programs a grade must find missing here, and those that must never run.
ABSENT = ("bochs", "spin")
RECORDERS = ("apt-get", "apt", "sudo")
BATCH_TIMEOUT = 300  # seconds for one make grade-batch of two L7 submissions

FAKE_SIM = """#!/bin/sh
# A stand-in for tlb_sim: "good" cases pass, "bad" ones find a stale read,
# "stub" ones stop at a lab tree's stub.
echo "KTAP version 1"
echo "1..1"
case "$1" in
good*) echo "ok 1 $1" ;;
bad*)
	echo "# bad under defaults: cpu1 reads mm1 page 0: stale frame 17"
	echo "# reproduce: build/host/tlb_sim -w bad -p defaults -b none -c '0,1' -v"
	echo "not ok 1 $1"
	exit 1 ;;
stub*)
	echo "# stub under defaults: lab L3: send() is not written yet (labs/L3-shootdown.md)"
	echo "# reproduce: build/host/tlb_sim -w stub -p defaults -b none -c '' -v"
	echo "not ok 1 $1"
	exit 1 ;;
esac
"""



def reduced_path(where: Path, record: Path) -> str:
    """A PATH of links to every program on this one but ABSENT, and
    RECORDERS that note their call in record and fail."""
    where.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            name = entry.name
            if name in ABSENT or name in RECORDERS or (where / name).exists():
                continue
            if os.access(entry, os.X_OK) and not entry.is_dir():
                (where / name).symlink_to(entry)
    for name in RECORDERS:
        fake = where / name
        fake.write_text(f'#!/bin/sh\necho "{name} $*" >> "{record}"\nexit 1\n')
        fake.chmod(0o755)
    return str(where)


def make_env(**more: str) -> dict[str, str]:
    env = dict(os.environ, **more)
    for name in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "GRADE_BUG", "GRADE_SEED",
                 "GRADE_FIRST_FAILURE", "GRADE_FIRST_CHECK", "GRADE_LOG"):
        env.pop(name, None)
    return env


def run(cmd: list[str], env: dict[str, str], timeout: float = 120,
        cwd: Path = ROOT) -> tuple[str, int]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    return proc.stdout.decode("utf-8", "replace"), proc.returncode


class Environment:
    """os.environ changed for one case, then put back."""

    def __init__(self, **values: str) -> None:
        self.values = values
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for name in ("GRADE_BUG", "GRADE_SEED", "GRADE_QUICK", "GRADE_FIRST_FAILURE",
                     "GRADE_FIRST_CHECK", "GRADE_LOG",
                     *self.values):
            self.saved[name] = os.environ.pop(name, None)
        os.environ.update(self.values)

    def __exit__(self, *_) -> None:
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def fake_grader(tmp: Path) -> grade.Grader:
    build = tmp / "build"
    (build / "host").mkdir(parents=True)
    sim = build / "host" / "tlb_sim"
    sim.write_text(FAKE_SIM)
    sim.chmod(0o755)
    return grade.Grader("L3", build)


FAKE_LAB = grade.Lab("a fake", "labs/L3-shootdown.md", [
    grade.Check(6, "simulator: fine", "sim", cases=("good defaults",)),
    grade.Check(4, "simulator: stale", "sim", cases=("bad defaults",)),
    grade.Check(2, "oracle under Bochs", "boot", boot=grade.bochs(2, *grade.TLB),
                cases=("TLB0001",)),
    grade.Check(1, "SPIN", "spin", cases=("none",)),
])


# --- SKIP, and nothing installed ---------------------------------------------------


def case_missing_tools_skip_naming_the_package() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = reduced_path(Path(tmp) / "bin", Path(tmp) / "called")
        with Environment(PATH=path):
            grader = fake_grader(Path(tmp))
            lines: list[str] = []
            result = grade.grade_checks(FAKE_LAB, grader, lines.append)
        skipped = [o for o in result.outcomes if o.verdict.status == "SKIP"]
        assert [o.check.kind for o in skipped] == ["boot", "spin"], lines
        assert "package bochs" in skipped[0].line and "package spin" in skipped[1].line, lines
        assert result.counted == 10, f"a SKIP counted toward the maximum: {result.counted}"
        assert not (Path(tmp) / "called").exists()


def case_make_grade_installs_nothing() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "called"
        path = reduced_path(Path(tmp) / "bin", record)
        results = Path(tmp) / "results.json"
        output, status = run(["make", "-s", "grade", "LAB=L7", "FORMAT=gradescope",
                              f"OUT={results}"], make_env(PATH=path))
        assert not record.exists(), f"make grade ran {record.read_text().strip()}"
        skips = [line for line in output.splitlines() if line.lstrip().startswith("SKIP")]
        assert len(skips) == 2 and all("(package spin)" in s for s in skips), output
        assert "Score: 0/0" in output, output
        data = json.loads(results.read_text())
        assert data["score"] == 0 and data["max_score"] == 0, data
        assert [t["max_score"] for t in data["tests"]] == [0, 0], data
        assert all(t["output"].startswith("SKIP: ") for t in data["tests"]), data


# --- the gate and the feedback -----------------------------------------------------------


def case_gate_caps_at_half_with_reproduce_and_log() -> None:
    with tempfile.TemporaryDirectory() as tmp, Environment():
        grader = fake_grader(Path(tmp))
        lab = grade.Lab("a fake", "labs/L3-shootdown.md", FAKE_LAB.checks[:2])
        lines: list[str] = []
        result = grade.grade_checks(lab, grader, lines.append)
        assert (result.score, result.counted) == (5, 10), (result.score, result.counted, lines)
        assert result.gate.startswith("Gate: simulator: stale") and "5/10" in result.gate, \
            result.gate
        failed = lines[1]
        assert "reproduce: build/host/tlb_sim -w bad -p defaults -b none -c '0,1' -v" in failed, \
            failed
        log = failed.rsplit("(log: ", 1)[1].rstrip(")")
        assert "stale frame 17" in Path(log).read_text(), log


def case_first_check_runs_first_and_stops_there() -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            Environment(GRADE_FIRST_CHECK="stale", GRADE_FIRST_FAILURE="1"):
        grader = fake_grader(Path(tmp))
        lab = grade.Lab("a fake", "labs/L3-shootdown.md", FAKE_LAB.checks[:2])
        lines: list[str] = []
        result = grade.grade_checks(lab, grader, lines.append)
        statuses = [(o.check.title, o.verdict.status) for o in result.outcomes]
        assert statuses == [("simulator: stale", "FAIL"), ("simulator: fine", "SKIP")], lines
        assert Path(tmp, "build", "grade", "L3", "check2-sim.log").exists(), \
            "the check's log lost its number in the table"
    with tempfile.TemporaryDirectory() as tmp, Environment(GRADE_FIRST_CHECK="no such title"):
        result = grade.grade_checks(FAKE_LAB, fake_grader(Path(tmp)), lambda line: None)
        assert [o.check for o in result.outcomes] == FAKE_LAB.checks, "the table order changed"


def case_stub_is_no_violation() -> None:
    with tempfile.TemporaryDirectory() as tmp, Environment():
        grader = fake_grader(Path(tmp))
        lab = grade.Lab("a fake", "labs/L3-shootdown.md", [
            grade.Check(6, "fine", "sim", cases=("good defaults",)),
            grade.Check(4, "stubbed", "sim", cases=("stub defaults",))])
        result = grade.grade_checks(lab, grader, lambda line: None)
        assert (result.score, result.gate) == (6, ""), (result.score, result.gate)
    stale = ("KTAP version 1\n1..1\n# TLB0001: expected !stale at tests/kernel/tlb_oracle.c:400: "
             "CPU 2 round 7: read saw old\nnot ok 1 TLB0001 remaps\n")
    assert "TLB0001" in grade.oracle_violation(stale, ("TLB0001",))
    assert not grade.oracle_violation(stale.replace("not ok", "ok"), ("TLB0001",))
    stopped = ("KTAP version 1\n1..1\nnot ok 1 TLB0001 remaps\n"
               "PANIC: lab L3: send() is not written yet (labs/L3-shootdown.md)\n")
    assert not grade.oracle_violation(stopped, ("TLB0001",)), "a stub counted as a stale read"


def case_gradescope_results() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = reduced_path(Path(tmp) / "bin", Path(tmp) / "called")
        with Environment(PATH=path):
            result = grade.grade_checks(FAKE_LAB, fake_grader(Path(tmp)), lambda line: None)
    data = json.loads(json.dumps(grade.gradescope_results(result, "grade: a fake", 3.0)))
    assert (data["score"], data["max_score"]) == (5, 10), data
    assert [t["name"] for t in data["tests"]] == [c.title for c in FAKE_LAB.checks], data
    assert [(t["score"], t["max_score"], t["status"]) for t in data["tests"]] == [
        (6, 6, "passed"), (0, 4, "failed"), (0, 0, "passed"), (0, 0, "passed")], data
    assert "reproduce:" in data["tests"][1]["output"] and "Gate:" in data["output"], data
    output, status = run(["make", "-s", "grade", "LAB=L1", "FORMAT=xml"], make_env())
    assert status != 0 and "FORMAT=xml" in output and "gradescope" in output, output
    output, status = run([sys.executable, "-m", "tools.labs.grade", "L1", "--out", "x.json"],
                         make_env())
    assert status == 2 and "FORMAT=gradescope" in output, output


# --- grade-batch ---------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=grader", "-c", "user.email=grader@example.org",
                    *args], cwd=cwd, check=True, capture_output=True)


def case_batch_takes_the_students_break_it_workload() -> None:
    # The scratch tree is the student's tree for the lab: its break-it
    # check must read the student's workload, never the teacher's answer.
    from tools.labs import batch, breakit
    with tempfile.TemporaryDirectory() as tmp:
        student, dest = Path(tmp) / "student", Path(tmp) / "tree"
        workload = student / breakit.STUDENT_DIR / "L3.workload"
        workload.parent.mkdir(parents=True)
        workload.write_text("-W 'run 1, read 0'\n")
        stubs = batch.lab_files("L3")
        files = [f for f in lab_tree.tracked_files() if f.startswith(("labs/", "mm/"))]
        lacking = batch.scratch_tree("L3", files, stubs, student, dest)
        assert "mm/tlb.c" in lacking, lacking
        assert breakit.tree_lab(dest) == "L3", "the scratch tree is not marked as L3's"
        graded = breakit.workload_path("L3", dest)
        assert graded.read_text() == workload.read_text(), f"{graded} is not the student's workload"
        assert not (dest / breakit.TEACHER_DIR).exists(), "the teacher's answers were copied"


def case_batch_grades_two_submissions() -> None:
    if not shutil.which("git"):
        raise SkipCase("no git")
    model = "labs/L7/tlb.pml"
    if "LAB(L7) to write:" in (ROOT / model).read_text():
        raise SkipCase("this is lab L7's tree: it has no solved model to submit")
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "subs"
        (subs / "stubby" / "labs" / "L7").mkdir(parents=True)
        lines = lab_tree.read_lines(model)
        regions = [r for r in lab_tree.regions_of(model, lines) if r.lab == "L7"]
        (subs / "stubby" / model).write_text("\n".join(lab_tree.stubbed(model, lines, regions)))
        solved = Path(tmp) / "solved"
        (solved / "labs" / "L7").mkdir(parents=True)
        shutil.copyfile(ROOT / model, solved / model)
        git("init", "-q", cwd=solved)
        git("add", "-A", cwd=solved)
        git("commit", "-qm", "done", cwd=solved)
        git("bundle", "create", "-q", str(subs / "ada.bundle"), "HEAD", cwd=solved)
        out = Path(tmp) / "out"
        seed = 0x5eed2026
        output, status = run(["make", "-s", "grade-batch", "LAB=L7", f"SUBMISSIONS={subs}",
                              f"OUT={out}", "JOBS=2", f"SEED={seed:#x}"],
                             make_env(GRADE_QUICK="1"), BATCH_TIMEOUT)
        assert status == 0, output
        rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
        assert set(rows) == {"ada", "stubby"}, rows
        if shutil.which("spin") and shutil.which("gcc"):
            assert (rows["ada"]["score"], rows["ada"]["status"]) == ("7", "full"), rows
            assert rows["stubby"]["score"] == "0" and rows["stubby"]["status"] == "partial", rows
        log = (out / "stubby.log").read_text()
        assert "Score: " in log and str(seed) not in log and "<hidden>" in log, log
        assert str(seed) in (out / "summary.txt").read_text()

        output, status = run(["make", "-s", "grade-batch", "LAB=L7", f"SUBMISSIONS={subs}",
                              f"OUT={out}", "TIME_LIMIT=0.5"], make_env(), BATCH_TIMEOUT)
        rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
        assert status != 0 and {r["status"] for r in rows.values()} == {"timed-out"}, output
        assert "GRADE_SEED=" in (out / "summary.txt").read_text()

        for bad, said in ((f"SUBMISSIONS={tmp}/none", "no such directory"),
                          ("JOBS=0", "JOBS='0'"), ("JOBS=many", "positive whole number"),
                          ("TIME_LIMIT=soon", "TIME_LIMIT='soon'"), ("SEED=x", "SEED='x'")):
            args = [f"SUBMISSIONS={subs}", f"OUT={out}", bad]
            output, status = run(["make", "-s", "grade-batch", "LAB=L7", *args], make_env())
            assert status != 0 and said in output, f"{bad}: {output}"


def main() -> int:
    return run_case_functions(globals())


if __name__ == "__main__":
    sys.exit(main())
