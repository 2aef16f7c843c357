"""The lab grader: `make grade LAB=Ln` (labs/README.md, docs/labs.md).

    python3 -m tools.labs.grade LAB [--build DIR] [--log SERIAL_LOG] [--list]

Builds this tree (the reference or a student's), runs the lab's checks,
prints one line per check with its points and `Score: N/M` last, and exits
1 below full marks (2 for bad usage). A check that needs what this machine
lacks (Bochs, spin, hardware virtualization, L8's --log) says SKIP with
the reason and counts toward neither.

Environment: GRADE_SEED=n reseeds the simulator's random scenarios, the
host tests and the kernel's oracle (test_seed=), so a teacher can grade on
seeds the students never saw; GRADE_QUICK=1 runs each repeated check once
and a third of the simulator cases (make test does); GRADE_BUG=name boots
the kernel with tlb_bug=name and searches the simulator's scenarios with
that bug, for a teacher to see that the lab's checks catch it
(labs/teacher/README.md); GRADE_FIRST_FAILURE=1 stops at the first failed
check (make test's "catches" results need only one); GRADE_LOG= is --log.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools import ROOT
from tools.run import boot
from tools.test.ktap import clean_lines, ktap_results

UNWRITTEN = "is not written yet"  # how a lab tree's stub stops (lib/lab.h)
SIM_TIMEOUT = 600
SIM_USAGE_ERROR = 2  # tlb_sim's exit status for a scenario or policy set it does not know  # seconds for one simulator invocation
HOST_TIMEOUT = 120
QUICK_SIM_SHARE = 3  # GRADE_QUICK=1 runs about 1/3 of a check's simulator cases
TCG = dict(emu="qemu", accel="tcg", cpu="max")
KVM = dict(emu="qemu", accel="kvm", cpu="host")
# Bochs with PCID and INVPCID and without SMAP (docs/tlb-bugs.md: with SMAP
# on, Bochs walks afresh for kernel accesses to user pages and hides stale
# entries from the oracle).
BOCHS = dict(emu="bochs", cpu="corei7_haswell_4770")
TLB = ("test=tlb", "console=serial")


# --- What a check is ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Boot:
    """One boot of this tree's kernel; checks naming the same one share it."""
    what: str                      # for the check line: "TCG, 4 CPUs"
    emu: dict
    smp: int
    cmdline: tuple[str, ...]
    topology: str = ""
    timeout: float = 300

    def key(self) -> tuple:
        return (tuple(sorted(self.emu.items())), self.smp, self.cmdline, self.topology)


@dataclasses.dataclass
class Check:
    points: int
    title: str
    kind: str                      # host | sim | boot | bench | spin | tool | log
    host: str = ""                 # host: the program in build/host/
    cases: tuple[str, ...] = ()    # sim: case names; boot: KTAP test IDs
    boot: Boot | None = None       # boot, bench
    expect: tuple[str, ...] = ()   # boot: serial lines that must appear
    function: str = ""             # bench, tool, log: a lab_checks function
    repeat: int = 1                # racy checks: every run must pass
    tied: bool = True              # fails while the lab's regions are stubs


@dataclasses.dataclass
class Lab:
    title: str
    handout: str
    checks: list[Check]
    # tlb_bug= names this lab's checks must catch: with GRADE_BUG=name the
    # reference scores below full marks (make test proves it).
    bugs: tuple[str, ...] = ()


def tcg(smp: int, *cmdline: str, topology: str = "") -> Boot:
    what = f"TCG, {smp} CPU{'s' if smp > 1 else ''}" + (f" ({topology})" if topology else "")
    return Boot(what, TCG, smp, tuple(cmdline), topology)


def kvm(smp: int, *cmdline: str) -> Boot:
    return Boot(f"KVM, {smp} CPUs", KVM, smp, tuple(cmdline))


def bochs(smp: int, *cmdline: str) -> Boot:
    return Boot(f"Bochs with PCID, {smp} CPUs", BOCHS, smp, tuple(cmdline), timeout=600)


def policy_cases(scenarios: str, policies: str) -> tuple[str, ...]:
    return tuple(f"{s} {p}" for s in scenarios.split() for p in policies.split())


ALL_POLICIES = "nopcid-off nopcid-skip pcid1-ipi pcid2-skip pcid2-dynamic pcid1-off defaults pcid3-skip"

# --- The labs ---------------------------------------------------------------------------

LABS: dict[str, Lab] = {
    "L0": Lab("bring-up census", "labs/L0-census.md", [
        Check(3, "MADT parser on crafted tables (gaps, disabled, x2APIC, duplicates, damage)",
              "host", host="test_acpi_tables", cases=("madt_",)),
        Check(3, "every enabled CPU online once, APIC IDs 0,1,2,4,5,6", "boot",
              boot=tcg(6, "test=acpi,smp", topology="sockets=2,cores=3,threads=1"),
              cases=("ACPI0003", "ACPI0004", "SMP0001", "SMP0002"), expect=("boot: cpus=6 ",)),
        Check(2, "a CPU listed but not enabled is reported absent, not started", "boot",
              boot=tcg(2, "test=acpi,smp", topology="maxcpus=4"),
              cases=("ACPI0003", "SMP0001"),
              expect=("boot: cpus=2 ", "absent (not enabled in the MADT)")),
        Check(2, "x2APIC mode: the other CPUs start and take calls", "boot",
              boot=bochs(2, "test=smp", "console=serial"), cases=("SMP0001", "SMP0002", "SMP0003")),
    ]),
    "L1": Lab("measure the TLB", "labs/L1-measure.md", [
        Check(3, "tlb_reach prints every working set, with statistics that hold together", "bench",
              boot=tcg(1, "bench=tlb_reach", "console=serial"), function="check_tlb_reach"),
        Check(2, "tlb_reach follows bench_scale= (fewer samples, every row still there)", "bench",
              boot=tcg(1, "bench=tlb_reach", "bench_scale=10", "console=serial"),
              function="check_tlb_reach"),
    ]),
    "L2": Lab("PCID and ASID slots", "labs/L2-pcid.md", [
        Check(3, "simulator: ASID slots recycled, hit, reused (every policy set)", "sim",
              cases=policy_cases("asid", ALL_POLICIES) + ("refill pcid1-off", "return pcid1-off")),
        Check(2, "simulator: switching while flushed, three CPUs", "sim",
              cases=policy_cases("switch three", "pcid1-ipi pcid2-skip defaults pcid3-skip")),
        Check(2, "oracle under TCG (no PCID: slot 0 only)", "boot",
              boot=tcg(2, *TLB), cases=("TLB0001", "TLB0004", "TLB0005"), repeat=2),
        Check(3, "oracle under Bochs with PCID: more address spaces than slots", "boot",
              boot=bochs(2, *TLB, "asid_slots=2"), cases=("TLB0001", "TLB0004", "TLB0005"),
              expect=("pcid=1 ",)),
    ], bugs=("reuse_asid_noflush", "no_gen_check")),
    "L3": Lab("a shootdown", "labs/L3-shootdown.md", [
        Check(3, "simulator: changes against accesses, crossing flushes, kernel stacks", "sim",
              cases=policy_cases("shootdown crossfire kstack shared", ALL_POLICIES)),
        Check(2, "simulator: random machines and workloads", "sim",
              cases=policy_cases("random", "nopcid-off defaults pcid2-dynamic")),
        Check(3, "oracle under TCG, 4 CPUs: remaps, rights, migration, concurrent flushes, "
              "a flush waiting for a CPU with interrupts off", "boot",
              boot=tcg(4, *TLB), cases=("TLB0001", "TLB0002", "TLB0005", "TLB0009", "TLB0010",
                                        "TLB0011", "TLB0012"), repeat=3),
        Check(2, "oracle with the local flush after the remote ones", "boot",
              boot=tcg(4, *TLB, "flush_concurrent=off", "flush_info=stack"),
              cases=("TLB0001", "TLB0002", "TLB0009", "TLB0011"), repeat=2),
    ], bugs=("skip_remote", "no_wait", "ack_before_flush", "free_before_ack")),
    "L4": Lab("lazy TLB", "labs/L4-lazy.md", [
        Check(3, "simulator: lazy CPUs, speculative walks, freed tables, exit", "sim",
              cases=policy_cases("lazy speculate lazyfree exit", ALL_POLICIES)),
        Check(2, "oracle, lazy=skip: lazy CPUs catch up; freed tables reach them", "boot",
              boot=tcg(4, *TLB), cases=("TLB0003", "TLB0007"), repeat=3),
        Check(2, "oracle, lazy=dynamic with a back-off of one switch", "boot",
              boot=tcg(4, *TLB, "lazy=dynamic", "lazy_backoff=1"),
              cases=("TLB0003", "TLB0007"), repeat=2),
        Check(1, "oracle, lazy=ipi with lazy_mm=refcount", "boot",
              boot=tcg(2, *TLB, "lazy=ipi", "lazy_mm=refcount"), cases=("TLB0003", "TLB0007")),
    ], bugs=("lazy_skip_freed_tables",)),
    "L5": Lab("tlb_gen", "labs/L5-generations.md", [
        Check(1, "simulator: crossing flushes under every policy set", "sim",
              cases=policy_cases("crossfire", ALL_POLICIES)),
        # GRADE_QUICK=1 keeps every len//3-th case: these short lists keep
        # two-behind, refill and a return-refill case in it.
        Check(2, "simulator: the newest request two behind, a change during a full flush", "sim",
              cases=("two-behind defaults", "two-behind pcid2-skip", "refill pcid1-off")),
        Check(2, "simulator: returning to a lazy mm, and a change during its catch-up", "sim",
              cases=policy_cases("return", "nopcid-skip pcid2-skip pcid3-skip")
              + ("speculate pcid2-skip",) + policy_cases("return-refill", "nopcid-skip defaults")),
        Check(1, "simulator: every policy combination on random machines", "sim",
              cases=("random every policy combination",)),
        Check(2, "oracle under TCG: ranges around the ceiling, concurrent flushes", "boot",
              boot=tcg(4, *TLB), cases=("TLB0006", "TLB0009", "TLB0003"), repeat=2),
        Check(2, "oracle under Bochs with PCID: partial and full flushes by generation", "boot",
              boot=bochs(2, *TLB), cases=("TLB0003", "TLB0004", "TLB0005", "TLB0006", "TLB0009"),
              expect=("pcid=1 ",)),
    ], bugs=("no_gen_check",)),
    "L6": Lab("the ceiling", "labs/L6-ceiling.md", [
        Check(2, "flush_crossover on crafted medians: page by page winning again, ties, none",
              "host", host="test_crossover"),
        Check(1, "the crossover printed is the one the run's own rows show", "bench",
              boot=tcg(1, "bench=flush_local", "console=serial"), function="check_crossover"),
        Check(1, "the crossover follows flush_ceiling= into the report", "bench",
              boot=tcg(1, "bench=flush_local", "flush_ceiling=8", "console=serial"),
              function="check_crossover"),
        Check(1, "oracle: ranges below, at and above the ceiling", "boot",
              boot=tcg(2, *TLB, "flush_ceiling=8"), cases=("TLB0006",), tied=False),
    ]),
    "L7": Lab("model it", "labs/L7-model.md", [
        Check(3, "SPIN: the protocol as modelled keeps its promise", "spin", cases=("none",)),
        Check(4, "SPIN: a counterexample for every injected bug", "spin", cases=("bugs",)),
    ]),
    "L8": Lab("real-hardware day", "labs/L8-hardware.md", [
        Check(3, "hwcompare pairs rows and computes ratios on the fixtures", "tool",
              function="check_hwcompare"),
        Check(1, "the census of this machine (TCG) reads as a census", "boot",
              boot=tcg(2, "test=boot", "console=serial"), cases=("BOOT0001",),
              expect=("cpus: index  APIC ID  state", "boot: cpus=2 "), tied=False),
        Check(1, "the census under KVM says accel=kvm", "boot",
              boot=kvm(2, "test=boot", "console=serial"), cases=("BOOT0001",),
              expect=("accel=kvm ",), tied=False),
        Check(2, "the day's log (LOG=): a real PC or KVM, its census and benchmarks", "log",
              function="check_hardware_log", tied=False),
    ]),
}


# --- Running checks ------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    status: str        # PASS | FAIL | SKIP
    why: str = ""


class Grader:
    def __init__(self, lab: str, kernel: Path, build: Path) -> None:
        self.lab = lab
        self.kernel = kernel
        self.build = build
        self.run_root = build / "grade" / lab
        seed = os.environ.get("GRADE_SEED", "").strip()
        self.seed = str(int(seed, 0)) if seed else ""  # checked by environment_problem
        self.quick = os.environ.get("GRADE_QUICK", "").strip() not in ("", "0")
        self.bug = os.environ.get("GRADE_BUG", "").strip()
        self.log = os.environ.get("GRADE_LOG", "").strip()
        self.first_failure = os.environ.get("GRADE_FIRST_FAILURE", "").strip() not in ("", "0")
        self.boots: dict[tuple, list[boot.RunResult]] = {}

    # Boots, shared between the checks that name the same one.
    def boot_runs(self, b: Boot, runs: int) -> list[boot.RunResult]:
        done = self.boots.setdefault(b.key(), [])
        while len(done) < runs:
            cmdline = list(b.cmdline)
            if self.seed:
                cmdline.append(f"test_seed={self.seed}")
            if self.bug:
                cmdline.append(f"tlb_bug={self.bug}")
            s = boot.Settings(**b.emu, smp=b.smp, mem_mib=256, cmdline=cmdline,
                              topology=b.topology, timeout=b.timeout)
            run_dir = self.run_root / f"boot{len(self.boots)}-{len(done)}"
            done.append(boot.run(s, self.kernel, run_dir))
        return done[:runs]

    def repeats(self, c: Check) -> int:
        return 1 if self.quick else c.repeat

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.seed:
            env["HOST_TEST_SEED"] = self.seed
        return env

    def run(self, c: Check) -> Verdict:
        if c.boot and c.boot.emu["emu"] == "bochs" and not shutil.which("bochs"):
            return Verdict("SKIP", "Bochs is not installed (make deps)")
        if c.boot and c.boot.emu.get("accel") == "kvm":
            usable, why = boot.kvm_status()
            if not usable:
                return Verdict("SKIP", why)
        return getattr(self, f"check_{c.kind}")(c)

    def check_log(self, c: Check) -> Verdict:
        if not self.log:
            return Verdict("SKIP", "no log of the day given: make grade LAB=L8 LOG=serial.log "
                                   "(labs/L8-hardware.md)")
        try:
            text = "\n".join(clean_lines(Path(self.log).read_text(errors="replace")))
        except OSError as e:
            return Verdict("FAIL", f"LOG={self.log}: {e.strerror}")
        problems = lab_check(c.function)(text)
        return problems_verdict(problems)

    def check_host(self, c: Check) -> Verdict:
        program = self.build / "host" / c.host
        output, status = run_program([str(program)], HOST_TIMEOUT, self.env())
        return ktap_verdict(output, status, c.cases)

    def check_sim(self, c: Check) -> Verdict:
        program = str(self.build / "host" / "tlb_sim")
        cases = c.cases
        if self.quick and not self.bug:  # a third of them, spread over the list
            cases = cases[::max(1, len(cases) // QUICK_SIM_SHARE)]
        if self.bug:  # each scenario searched with the bug: it must be caught
            searched = 0
            for case in cases:
                scenario, _, policy = case.partition(" ")
                output, status = run_program(
                    [program, "-w", scenario, "-p", policy, "-b", self.bug], SIM_TIMEOUT,
                    self.env())
                if status == SIM_USAGE_ERROR:  # not one scenario under one policy set
                    continue
                searched += 1
                if status not in (0, None) or "FAILURE:" in output:
                    return Verdict("FAIL", f"{case} with tlb_bug={self.bug}: {first_failure(output)}")
            if not searched:
                return Verdict("SKIP", f"no case here is one scenario the simulator can search "
                                       f"with tlb_bug={self.bug}")
            return Verdict("PASS")
        output, status = run_program([program, *cases], SIM_TIMEOUT, self.env())
        return ktap_verdict(output, status, ())

    def check_boot(self, c: Check) -> Verdict:
        runs = self.boot_runs(c.boot, self.repeats(c))
        for n, r in enumerate(runs, 1):
            v = boot_verdict(r, c.cases, c.expect)
            if v.status != "PASS":
                again = f"run {n} of {len(runs)}: " if len(runs) > 1 else ""
                return Verdict(v.status, again + v.why)
        return Verdict("PASS", f"{len(runs)} runs" if len(runs) > 1 else "")

    def check_bench(self, c: Check) -> Verdict:
        r = self.boot_runs(c.boot, 1)[0]
        text = "\n".join(clean_lines(r.serial))
        problems = lab_check(c.function)(text)
        if not problems and not r.clean:
            problems = [f"the kernel did not end cleanly: {r.note()}"]
        return problems_verdict(problems, panic_of(text))

    def check_tool(self, c: Check) -> Verdict:
        problems = lab_check(c.function)(ROOT)
        return problems_verdict(problems)

    def check_spin(self, c: Check) -> Verdict:
        """cases: configurations of tools/labs/spin_check.py ("bugs": every one
        but none)."""
        checker = [sys.executable, "-m", "tools.labs.spin_check"]
        names = c.cases
        if names == ("bugs",):
            listed, _ = run_program([*checker, "--list"], HOST_TIMEOUT, self.env())
            names = tuple(line.split()[0] for line in listed.splitlines()
                          if line.strip() and line.split()[0] != "none")
        args = [*checker] + [a for name in names for a in ("--bug", name)]
        output, status = run_program(args, SIM_TIMEOUT, self.env())
        if status == 2:
            lines = output.strip().splitlines()
            return Verdict("SKIP", lines[-1] if lines else "spin or gcc is missing")
        return ktap_verdict(output, status, ())


def problems_verdict(problems: list[str], more: str = "") -> Verdict:
    """A functional check's verdict: its problems (and more) are the reason."""
    return Verdict("FAIL", "; ".join(problems)[:400] + more) if problems else Verdict("PASS")


def lab_check(name: str):
    """A functional check of tools/labs/lab_checks.py, imported when first used."""
    from tools.labs import lab_checks
    return getattr(lab_checks, name)


def run_program(cmd: list[str], timeout: float, env: dict[str, str]) -> tuple[str, int | None]:
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, env=env, cwd=ROOT)
        return proc.stdout.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        return (e.output or b"").decode("utf-8", "replace"), None
    except OSError as e:
        return f"cannot run {cmd[0]}: {e}", 127


def first_failure(output: str) -> str:
    for line in output.splitlines():
        for key in ("lab L", "FAILURE:", "not ok", "PANIC:"):
            if key in line:
                return line.strip("# ").strip()[:300]
    return "failed"


def panic_of(text: str) -> str:
    for line in text.splitlines():
        if "PANIC:" in line:
            return f" [{line.strip()[:200]}]"
    return ""


def ktap_verdict(output: str, status: int | None, wanted: tuple[str, ...]) -> Verdict:
    """A program's or a boot's KTAP: every result ok (and the program's exit
    status 0), or, with wanted, the results whose names hold those IDs."""
    if status is None:
        return Verdict("FAIL", "timed out")
    results, complete = ktap_results("", output, "")
    if wanted:
        results = [r for r in results if any(w in r.name for w in wanted)]
        missing = [w for w in wanted if not any(w in r.name for r in results)]
    else:
        missing = [] if results else ["any test"]
    if not complete:  # a crash after the wanted ones still fails the check
        missing.append("the rest (the output stopped)")
    failed = [r for r in results if r.status == "FAIL"]
    stub = next((line.strip("# ").strip() for line in output.splitlines()
                 if UNWRITTEN in line), "")
    if failed and stub:  # a lab tree's stub: the one reason that matters
        return Verdict("FAIL", f"{failed[0].name.strip('/')}: {stub}"[:300])
    if failed:
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        return Verdict("FAIL", f"{failed[0].name.strip('/')}: {failed[0].reason}"[:300] + more)
    if missing:
        return Verdict("FAIL", f"no result for {', '.join(missing)}: {first_failure(output)}")
    if not wanted and status != 0:
        return Verdict("FAIL", f"exit status {status}: {first_failure(output)}")
    return Verdict("PASS")


def boot_verdict(r: boot.RunResult, tests: tuple[str, ...], expect: tuple[str, ...]) -> Verdict:
    text = "\n".join(clean_lines(r.serial))
    if r.error and not text:
        return Verdict("FAIL", r.error)
    v = ktap_verdict(text, 0 if not r.timed_out else None, tests)
    if v.status != "PASS":
        return Verdict("FAIL", v.why if "PANIC:" in v.why else v.why + panic_of(text))
    for line in expect:
        if line not in text:
            return Verdict("FAIL", f"serial log lacks {line!r}" + panic_of(text))
    return v


def bug_names() -> list[str]:
    """The tlb_bug= names, as mm/tlb_options.c spells them (tlb_bug_names)."""
    text = (ROOT / "mm" / "tlb_options.c").read_text()
    table = re.search(r"tlb_bug_names\[[^]]*\]\s*=\s*\{(.*?)\};", text, re.S)
    return re.findall(r'"(\w+)"', table.group(1)) if table else []


def environment_problem() -> str:
    """What is wrong with GRADE_SEED= or GRADE_BUG=, or ""."""
    seed = os.environ.get("GRADE_SEED", "").strip()
    if seed:
        try:
            if not 0 <= int(seed, 0) < 1 << 64:
                raise ValueError
        except ValueError:
            return f"GRADE_SEED={seed!r}: give a number from 0 to 2^64-1 (decimal, or hex as 0x...)"
    bug = os.environ.get("GRADE_BUG", "").strip()
    names = [n for n in bug_names() if n != "none"]
    if bug and bug not in names:
        return f"GRADE_BUG={bug!r}: the injected bugs are {', '.join(names)}"
    return ""


def build_tree(build: Path) -> str:
    """Builds the kernel and the host programs; their errors, or ""."""
    cmd = ["make", "-s", f"BUILD={build}", "all", "host-tests"]
    if os.environ.get("GRADE_BUG", "").strip():
        cmd.append("inject")
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode == 0:
        return ""
    return proc.stdout.decode("utf-8", "replace")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", help="L0..L8")
    parser.add_argument("--build", default="build", help="the build directory (make's BUILD)")
    parser.add_argument("--list", action="store_true", help="list the lab's checks")
    parser.add_argument("--log", help="L8: the serial log of the day on real hardware")
    args = parser.parse_args(argv)
    lab = LABS.get(args.lab)
    if not lab:
        print(f"grade: LAB={args.lab!r}: the labs are {', '.join(LABS)} (labs/README.md)",
              file=sys.stderr)
        return 2
    problem = environment_problem()
    if problem:
        print(f"grade: {problem}", file=sys.stderr)
        return 2
    total = sum(c.points for c in lab.checks)
    if args.list:
        for c in lab.checks:
            print(f"{c.points:2} pts  {c.kind:5} {c.title}")
        print(f"{total} points" + (f"; catches tlb_bug={', '.join(lab.bugs)}" if lab.bugs else ""))
        return 0
    build = (ROOT / args.build).resolve()
    if args.log:
        os.environ["GRADE_LOG"] = str(Path(args.log).resolve())
    # The deliberate bugs live only in the injection kernel (make inject).
    kernel = build / "inject" / "shootdown.elf" if os.environ.get("GRADE_BUG", "").strip() \
        else build / "shootdown.elf"
    grader = Grader(args.lab, kernel, build)
    seed = grader.seed or "default"
    print(f"grade: lab {args.lab}, {lab.title} ({lab.handout}); seed {seed}"
          + ("; quick" if grader.quick else "") + (f"; tlb_bug={grader.bug}" if grader.bug else ""),
          flush=True)
    errors = build_tree(Path(args.build))
    if errors:
        print("grade: the tree does not build:")
        print("\n".join("    | " + line for line in errors.rstrip().splitlines()[-20:]))
        print(f"Score: 0/{total}")
        return 1
    score = counted = 0
    failed = False
    started = time.monotonic()
    for c in lab.checks:
        if failed and grader.first_failure:
            print(f"  SKIP   -/{c.points}  {c.title}: not run, a check failed "
                  "(GRADE_FIRST_FAILURE=1)", flush=True)
            continue
        v = grader.run(c)
        if v.status == "SKIP":
            print(f"  SKIP   -/{c.points}  {c.title}: {v.why}", flush=True)
            continue
        got = c.points if v.status == "PASS" else 0
        failed = failed or v.status != "PASS"
        score += got
        counted += c.points
        what = f"{c.kind}" + (f", {c.boot.what}" if c.boot else "")
        print(f"  {v.status}  {got}/{c.points}  {c.title} [{what}]"
              + (f": {v.why}" if v.why else ""), flush=True)
    print(f"# grading took {time.monotonic() - started:.0f} s; boot logs in "
          f"{grader.run_root.relative_to(ROOT) if grader.run_root.is_relative_to(ROOT) else grader.run_root}")
    print(f"Score: {score}/{counted}")
    return 0 if score == counted else 1


if __name__ == "__main__":
    boot.interrupt_on_sigterm()
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        boot.stop_all()
        sys.exit(130)
