"""Grades every submission of one lab (`make grade-batch`, labs/teacher/README.md).

    python3 -m tools.labs.batch LAB --submissions DIR --out DIR
                                [--seed N] [--jobs N] [--time-limit SECONDS]

Each entry of the submissions directory is one student's tree: a
directory, or a git bundle (NAME.bundle, cloned at its HEAD, or its only
branch). The student's name is the entry's, without .bundle. Only the
files holding the lab's regions (tools/labs/lab_tree.py) and the lab's
break-it workload (labs/breakit/) are taken from a submission: each is graded in a scratch copy of this tree with those files
put in, so the grader, the tests and the Makefile are this tree's and a
submission cannot change how it is graded. A file the submission lacks is
the lab tree's stub.

Every submission is graded with the same seed (GRADE_SEED): --seed, or a
random one, written only to OUT/summary.txt; the logs say <hidden>
instead. A grade that runs past --time-limit (default 1800 s, the build
included) is stopped and recorded as timed out. --jobs grade at once
(default 1). Writes OUT/grades.csv (student, score, max, status, seconds),
OUT/<student>.log (the grade's output) and OUT/summary.txt. Statuses: full,
partial, gated (the correctness gate capped the score), no-build, skipped
(every check SKIPped: tools missing here), timed-out, error. Exit status 0 when every submission was graded, 1 when
one could not be, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import dataclasses
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tools import ROOT
from tools.labs import breakit, grade, lab_tree

DEFAULT_TIME_LIMIT = 1800  # seconds: a full L3 grade takes several minutes on two cores
STOP_GRACE = 20  # seconds between asking a grade to stop (its emulators too) and killing it
BUNDLE = ".bundle"
SCORE = re.compile(r"^Score: (\d+)/(\d+)$", re.M)


@dataclasses.dataclass
class Submission:
    student: str
    path: Path


@dataclasses.dataclass
class Row:
    student: str
    score: int | str
    max: int | str
    status: str
    seconds: float
    note: str = ""


def usage_error(text: str) -> int:
    print(f"grade-batch: {text}", file=sys.stderr)
    return 2


def submissions_in(folder: Path) -> tuple[list[Submission], list[str]]:
    """The submissions in folder, by name, and the entries that are none."""
    found: dict[str, Submission] = {}
    ignored: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            name = entry.name
        elif entry.is_file() and entry.name.endswith(BUNDLE):
            name = entry.name[:-len(BUNDLE)]
        else:
            ignored.append(entry.name)
            continue
        if name in found:
            raise ValueError(f"two submissions of {name}: {found[name].path.name} and {entry.name}")
        found[name] = Submission(name, entry)
    return list(found.values()), ignored


def lab_files(lab: str) -> dict[str, list[str]]:
    """The files a student writes for lab, each with what a lab tree holds
    in its place: the files holding lab's regions (stubbed) and, for a lab
    with a break-it exercise, its workload file (the template)."""
    regions = lab_tree.all_regions(lab_tree.tracked_files())
    stubs = {}
    for path, found in regions.items():
        mine = [r for r in found if r.lab == lab]
        if mine:
            lines = lab_tree.read_lines(path)
            stubs[path] = lab_tree.stubbed(path, lines, mine)
    workload = f"{breakit.STUDENT_DIR}/{lab}.workload"
    if lab in breakit.EXERCISES and (ROOT / workload).is_file():
        stubs[workload] = (ROOT / workload).read_text(encoding="utf-8").split("\n")
    return stubs


def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def unpack(sub: Submission, where: Path) -> str:
    """The submission's tree in where (a clone of a bundle, or the
    directory itself); what went wrong, or ""."""
    if sub.path.is_dir():
        return ""
    if not shutil.which("git"):
        return "a bundle needs git (package git), not installed here"
    heads = git("bundle", "list-heads", str(sub.path))
    if heads.returncode != 0:
        return f"{sub.path.name} is not a git bundle: {heads.stdout.strip()[:200]}"
    refs = [line.split()[1] for line in heads.stdout.splitlines() if len(line.split()) == 2]
    branches = [r for r in refs if r.startswith("refs/heads/")]
    ref = "HEAD" if "HEAD" in refs else branches[0] if len(branches) == 1 else ""
    if not ref:
        return (f"{sub.path.name} has no HEAD and {len(branches)} branches: "
                "bundle one branch, or HEAD (git bundle create NAME.bundle HEAD main)")
    branch = [] if ref == "HEAD" else ["-b", ref.removeprefix("refs/heads/")]
    cloned = git("clone", "-q", *branch, str(sub.path), str(where))
    if cloned.returncode != 0:
        return f"git clone of {ref} failed: {cloned.stdout.strip()[:200]}"
    if not any(p.name != ".git" for p in where.iterdir()):
        return f"{sub.path.name}: {ref} holds no files"
    return ""


def scratch_tree(lab: str, files: list[str], stubs: dict[str, list[str]], student_tree: Path,
                 dest: Path) -> list[str]:
    """This tree's tracked files in dest, with the lab's files from the
    student's tree, marked as lab's tree (so its break-it check grades the
    student's workload, not the teacher's); the lab's files the student's
    tree lacks (stubbed)."""
    lacking = []
    dest.mkdir(parents=True, exist_ok=True)
    (dest / lab_tree.LAB_FILE).write_text(f"# A submission graded by make grade-batch.\nlab={lab}\n",
                                          encoding="utf-8")
    for path in files:
        if path.startswith(lab_tree.TEACHER_DIR) and path not in stubs:
            continue  # answers: no grade reads them
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path in stubs:
            theirs = student_tree / path
            if theirs.is_file():
                shutil.copyfile(theirs, target)
            else:
                lacking.append(path)
                target.write_text("\n".join(stubs[path]), encoding="utf-8")
            shutil.copymode(ROOT / path, target)
        else:
            shutil.copy2(ROOT / path, target)
    return lacking


def run_grade(lab: str, tree: Path, seed: str, limit: float) -> tuple[str, int | None]:
    """The grade's output and exit status (None: stopped at the limit)."""
    env = dict(os.environ, GRADE_SEED=seed)
    # The scratch tree's own make and tools (not this tree's through
    # PYTHONPATH); every student graded alike.
    for name in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PYTHONPATH", "GRADE_BUG", "GRADE_LOG",
                 "GRADE_FIRST_FAILURE", "GRADE_FIRST_CHECK"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "tools.labs.grade", lab], cwd=tree, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit)
        return out.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired:
        pass
    # SIGTERM first: the grader stops its emulators (each in a session of
    # its own); then nothing of the grade's own group may outlive it.
    for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, STOP_GRACE)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            out, _ = proc.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            out = b""
    return out.decode("utf-8", "replace"), None


def hide(text: str, seed: str) -> str:
    """text with the seed, in decimal and hex, replaced by <hidden>."""
    value = int(seed)
    for spelling in (f"{value:#x}", str(value)):
        if len(spelling) < 6:  # a short seed is a teacher's own, and any number's digits
            continue
        text = re.sub(rf"(?<![0-9a-fA-Fx]){re.escape(spelling)}(?![0-9a-fA-F])", "<hidden>", text)
    return text


class Batch:
    def __init__(self, lab: str, out: Path, seed: str, limit: float) -> None:
        self.lab = lab
        self.out = out
        self.seed = seed
        self.limit = limit
        self.files = lab_tree.tracked_files()
        self.stubs = lab_files(lab)
        self.total = sum(c.points for c in grade.LABS[lab].checks)
        self.print_lock = threading.Lock()

    def grade(self, sub: Submission) -> Row:
        started = time.monotonic()
        scratch = self.out / ".scratch" / sub.student
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        log = [f"grade-batch: {sub.student} ({sub.path.name}), lab {self.lab}"]
        try:
            row = self.grade_in(sub, scratch, log, started)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        (self.out / f"{sub.student}.log").write_text(hide("\n".join(log) + "\n", self.seed))
        with self.print_lock:
            print(f"  {row.student:24} {row.score!s:>3}/{row.max!s:<3} {row.status:10} "
                  f"{row.seconds:6.0f} s" + (f"  {row.note}" if row.note else ""), flush=True)
        return row

    def grade_in(self, sub: Submission, scratch: Path, log: list[str], started: float) -> Row:
        def row(score, status: str, note: str = "", most=self.total) -> Row:
            if note:
                log.append(f"grade-batch: {note}")
            return Row(sub.student, score, most, status, time.monotonic() - started, note)

        unpacked = scratch / "submission"
        problem = unpack(sub, unpacked)
        if problem:
            return row(0, "error", problem)
        tree = scratch / "tree"
        lacking = scratch_tree(self.lab, self.files, self.stubs,
                               sub.path if sub.path.is_dir() else unpacked, tree)
        if lacking:
            log.append(f"grade-batch: the submission lacks {', '.join(lacking)}: graded as stubs")
        output, status = run_grade(self.lab, tree, self.seed, self.limit)
        log.append(output.rstrip())
        found = SCORE.findall(output)
        if status is None:
            return row(0, "timed-out", f"stopped after {self.limit:g} s")
        if not found:
            return row(0, "error", f"the grade ended without a score (exit status {status})")
        score, most = int(found[-1][0]), int(found[-1][1])
        if "grade: the tree does not build" in output:
            return row(score, "no-build", most=most)
        if most == 0:  # every check said SKIP: this machine lacks their tools
            return row(score, "skipped", "every check was skipped here", most=most)
        if re.search(r"^Gate: ", output, re.M):
            return row(score, "gated", most=most)
        return row(score, "full" if score == most else "partial", most=most)


def positive(text: str, name: str, kind=int) -> tuple[float | int | None, str]:
    try:
        value = kind(text)
        if value > 0:
            return value, ""
    except ValueError:
        pass
    what = "a positive whole number" if kind is int else "a positive number of seconds"
    return None, f"{name}={text!r}: give {what}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab")
    parser.add_argument("--submissions", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--seed", default="")
    parser.add_argument("--jobs", default="1")
    parser.add_argument("--time-limit", default=str(DEFAULT_TIME_LIMIT))
    args = parser.parse_args(argv)
    if args.lab not in grade.LABS:
        return usage_error(f"LAB={args.lab!r}: the labs are {', '.join(grade.LABS)}")
    if not args.submissions:
        return usage_error("SUBMISSIONS= names the directory holding one tree or .bundle "
                           "per student")
    folder = Path(args.submissions).resolve()
    if not folder.is_dir():
        return usage_error(f"SUBMISSIONS={args.submissions}: no such directory")
    if not args.out:
        return usage_error("OUT= names the directory for grades.csv and the logs, e.g. OUT=../grades")
    out = Path(args.out).resolve()
    if out.exists() and not out.is_dir():
        return usage_error(f"OUT={args.out}: exists and is not a directory")
    if out == folder or out.is_relative_to(folder) or folder.is_relative_to(out):
        return usage_error(f"OUT={args.out}: must be outside SUBMISSIONS={args.submissions} "
                           "and not hold it")
    jobs, problem = positive(args.jobs, "JOBS")
    if problem:
        return usage_error(problem)
    limit, problem = positive(args.time_limit, "TIME_LIMIT", float)
    if problem:
        return usage_error(problem)
    if args.seed:
        try:
            seed = int(args.seed, 0)
            if not 0 <= seed < 1 << 64:
                raise ValueError
        except ValueError:
            return usage_error(f"SEED={args.seed!r}: give a number from 0 to 2^64-1 "
                               "(decimal, or hex as 0x...)")
    else:
        seed = secrets.randbits(32) | 1 << 31  # never a short number a log might hold anyway
    try:
        subs, ignored = submissions_in(folder)
    except ValueError as e:
        return usage_error(f"SUBMISSIONS={args.submissions}: {e}")
    if not subs:
        return usage_error(f"SUBMISSIONS={args.submissions}: no submission in it (a directory "
                           "or a .bundle per student)")

    out.mkdir(parents=True, exist_ok=True)
    batch = Batch(args.lab, out, str(seed), limit)
    started = time.monotonic()
    print(f"grade-batch: lab {args.lab}, {len(subs)} submissions, {jobs} at a time, "
          f"{limit:g} s each at most; seed in {out / 'summary.txt'}", flush=True)
    for name in ignored:
        print(f"grade-batch: ignored {name}: neither a directory nor a {BUNDLE}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=int(jobs)) as pool:
        rows = list(pool.map(batch.grade, subs))
    shutil.rmtree(out / ".scratch", ignore_errors=True)

    with (out / "grades.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "score", "max", "status", "seconds"])
        for r in rows:
            w.writerow([r.student, r.score, r.max, r.status, f"{r.seconds:.0f}"])
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    commit = git("rev-parse", "--short", "HEAD", cwd=ROOT).stdout.strip() \
        if shutil.which("git") else ""
    summary = [f"lab {args.lab}: {len(rows)} submissions from {folder}",
               f"seed: GRADE_SEED={seed} ({'given' if args.seed else 'drawn at random'}; "
               "keep it to grade again alike)",
               f"grader: this tree{f' at {commit}' if commit else ''}, "
               f"{limit:g} s per submission, {jobs} at a time",
               "statuses: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())),
               f"took {time.monotonic() - started:.0f} s"]
    summary += [f"ignored: {name}" for name in ignored]
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    print(f"grade-batch: {out / 'grades.csv'}; "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if any(r.status in ("error", "timed-out") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
