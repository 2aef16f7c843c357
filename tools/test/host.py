"""The steps of `make test` that run host programs: a host test binary or
Python script (host/<name>), the mutants (host/mutants/...) and `make
compare-linux`, reduced (compare-linux/rows).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.labs import lab_tests
from tools.test.ktap import Result, clean_lines, has_failure, ktap_results
from tools.test.pool import TEST_DIR, Outcome, rel, tail

HOST_TIMEOUT = 120  # seconds for one host test binary
# The TLB simulator searches for minutes (about 2.5 under ASan on an idle
# 2-core host, more beside the emulator runs): its own limit. host/grade
# runs SPIN on L7's model for two submissions (a minute on a busy host).
HOST_TIMEOUTS = {"tlb_sim": 1200, "grade": 600}
# Host tests written in Python, run like the binaries (KTAP on stdout):
# host/<name>: the renderer of tools/run/timeline.py draws a known trace; the
# lab tools; breakit: the labs' "Break it" grading (tools/labs/breakit.py)
# on the teacher's workloads and on wrong ones; grade: the grader's SKIP,
# gate, Gradescope output and batch grading; qr: the QR encoder, zlib
# and base64 of lib/ read back by zbarimg and Python (through the host
# tool qr_tool, found in $HOST_BIN_DIR:
# the directory of the host binaries); the results screen's QR decoder and
# checks; the report and charts on fixture results; the USB stick writer
# (tools/run/usb.py) refuses what it must, on fake sysfs trees; make
# profile-path finds the IPC fast path, and the general one with it off;
# tlb_trace=on traces the fast path's switches; the lab grader installs
# nothing, SKIPs what is missing, gates on stale reads, writes Gradescope's
# results and grades a batch of two submissions (grade); a plain access of a
# variable shared without a lock does not compile (sync/shared.h); a QEMU
# run that times out names where each CPU was (boot.py's Qemu.hang_report); the layer
# checker passes the tree and fails broken copies of its layer file;
# docs/options.md's table is what the kernel's help option prints; the
# bootable image's GRUB configurations parse, its MBR has an active entry,
# it carries both UEFI loaders, and OVMF's menu explains a dark screen;
# the container recipe's lock and Containerfile agree with deps.sh.
HOST_SCRIPTS = {"timeline": ROOT / "tests" / "timeline" / "test_timeline.py",
                "lab-tools": ROOT / "tests" / "labs" / "test_lab_tools.py",
                "breakit": ROOT / "tests" / "labs" / "test_breakit.py",
                "grade": ROOT / "tests" / "labs" / "test_grade.py",
                "qr": ROOT / "tests" / "qr" / "test_qr.py",
                "results-screen": ROOT / "tests" / "screen" / "test_results_screen.py",
                "bench-report": ROOT / "tests" / "bench" / "test_bench_report.py",
                "usb": ROOT / "tests" / "usb" / "test_usb.py",
                "path-profile": ROOT / "tests" / "profile" / "test_path_profile.py",
                "ipc-trace": ROOT / "tests" / "bench" / "test_ipc_trace.py",
                "plain-access": ROOT / "tests" / "shared" / "test_plain_access.py",
                "hang-report": ROOT / "tests" / "hang" / "test_hang_report.py",
                "layers": ROOT / "tests" / "layers" / "test_layers.py",
                "options-doc": ROOT / "tools" / "check" / "options_doc.py",
                "iso": ROOT / "tests" / "iso" / "test_iso.py",
                "container": ROOT / "tests" / "container" / "test_container.py"}
# With the simulator's host test: every mutant in tests/mutants/ must apply,
# and these, quick to kill, be killed (make mutants runs them all): a
# shootdown that does not wait, a batch freed before its flush, a PCID that
# collides with the kernel's.
MUTANTS = "tools.test.mutants"
TEST_MUTANTS = ["no-wait", "batch-free-before-flush", "pcid-equals-asid"]
MUTANTS_TIMEOUT = 300  # seconds for the check and for the named mutants
# make compare-linux, reduced (tools/bench/compare_linux.py: 4 boots, some 45 s).
COMPARE_LINUX = "tools.bench.compare_linux"
COMPARE_LINUX_SCALE = 10
COMPARE_LINUX_TIMEOUT = 400
COMPARE_LINUX_COST = 60


def _run(cmd: list[str], timeout: float) -> tuple[str, int | None]:
    """Output and exit status (None: timed out) of a host command, run from
    the repository root with the tools package importable."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=path))
        return proc.stdout.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        return (e.output or b"").decode("utf-8", "replace"), None


def run_host_test(binary: str, name: str = "") -> Outcome:
    """host/<binary> (or host/<name>): its KTAP, its exit status and its
    time limit. A .py file runs under this Python."""
    name = name or Path(binary).name
    prefix = f"host/{name}"
    log_path = TEST_DIR / "host" / f"{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = rel(log_path)
    limit = HOST_TIMEOUTS.get(name, HOST_TIMEOUT)
    os.environ["TLB_SIM_SKIP_BUGS"] = " ".join(sorted(lab_tests.this_tree()[1]))
    try:
        output, status = _run([sys.executable, binary] if binary.endswith(".py")
                              else [binary], limit)
    except OSError as e:
        return Outcome([Result(prefix, "FAIL", f"cannot run: {e}")])
    log_path.write_text(output)
    results, complete = ktap_results(prefix, output, log)
    if not results:
        why = "timed out" if status is None else f"no KTAP output (exit status {status})"
        return Outcome([Result(prefix, "FAIL", why, log)], tail(output))
    if status is None:
        results.append(Result(prefix, "FAIL", f"timed out after {limit} s", log))
    elif status != 0 and not has_failure(results):
        # e.g. a sanitizer report after the last case
        results.append(Result(prefix, "FAIL", f"exit status {status}", log))
    return Outcome(results, tail(output) if not complete or status != 0 else "")


def run_mutants() -> Outcome:
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
        text, status = _run([sys.executable, "-m", MUTANTS, *args], MUTANTS_TIMEOUT)
        output += f"$ {' '.join(['python3', '-m', MUTANTS, *args])}\n{text}"
        log_path.write_text(output)
        return text, status

    text, status = mutants("--check")
    error = next((line[len("error: "):] for line in text.splitlines()
                  if line.startswith("error: ")), "")
    why = error or ("timed out" if status is None else f"exit status {status}")
    results = [Result("host/mutants/check", "ok") if status == 0
               else Result("host/mutants/check", "FAIL", why[:300], log)]

    # A lab tree leaves out the mutants of the files it stubbed (docs/labs.md).
    present = [n for n in TEST_MUTANTS if (ROOT / "tests" / "mutants" / f"{n}.mutant").exists()]
    results += [Result(f"host/mutants/{n}", "skip",
                       f"lab tree {lab_tests.this_tree()[0]}: left out, its patch shows the code "
                       "to write")
                for n in TEST_MUTANTS if n not in present]
    outcomes = {}
    if present:
        text, status = mutants("--no-baseline", "--json", str(json_path), *present)
        try:
            outcomes = {m["name"]: m for m in json.loads(json_path.read_text())["mutants"]}
        except (OSError, ValueError, KeyError):
            pass
    for name in present:
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
    return Outcome(results, tail(output) if has_failure(results) else "")


def compare_linux_step(kernel: str) -> Outcome:
    """compare-linux/rows: make compare-linux at a tenth of its samples runs
    to its end with every row in both columns (the tool's exit status)."""
    out = TEST_DIR / "compare-linux"
    lbench = Path(kernel).resolve().parent / "compare-linux" / "lbench"
    log_path = out / "output.log"
    out.mkdir(parents=True, exist_ok=True)
    text, status = _run([sys.executable, "-m", COMPARE_LINUX, kernel, str(lbench),
                         "--scale", str(COMPARE_LINUX_SCALE), "--out", str(out)],
                        COMPARE_LINUX_TIMEOUT)
    log_path.write_text(text)
    if status == 0:
        return Outcome([Result("compare-linux/rows", "ok")])
    problems = [line.split("problem: ", 1)[1] for line in text.splitlines() if "problem: " in line]
    why = ("timed out" if status is None else
           problems[0] if problems else (clean_lines(text.strip()) or ["no output"])[-1])
    return Outcome([Result("compare-linux/rows", "FAIL", why[:300], rel(log_path))], tail(text))
