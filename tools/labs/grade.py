"""The lab grader: `make grade LAB=Ln` (labs/README.md, docs/labs.md).

    python3 -m tools.labs.grade LAB [--build DIR] [--log SERIAL_LOG] [--list]
                                    [--format text|gradescope [--out FILE]]

Builds this tree (the reference or a student's), runs the lab's checks,
prints one line per check with its points and `Score: N/M` last, and exits
1 below full marks (2 for bad usage). It installs nothing: a check that
needs what this machine lacks (QEMU, Bochs, spin, a compiler, hardware
virtualization, L8's --log) says SKIP with the reason, naming the Debian
package, and counts toward neither. A check that saw a stale translation
(the simulator's violation, a failed TLB case of the oracle) caps the
lab's score at half its maximum, the correctness gate. --format
gradescope also writes Gradescope's results.json (--out, default
results.json).

Environment: GRADE_SEED=n reseeds the simulator's random scenarios, the
host tests and the kernel's oracle (test_seed=), so a teacher can grade on
seeds the students never saw; GRADE_QUICK=1 runs each repeated check once
and a third of the simulator cases (make test does); GRADE_BUG=name boots
the kernel with tlb_bug=name and searches the simulator's scenarios with
that bug, for a teacher to see that the lab's checks catch it
(labs/teacher/README.md); GRADE_FIRST_FAILURE=1 stops at the first failed
check (make test's "catches" results need only one); GRADE_FIRST_CHECK=text
runs the check whose title contains text before the others (make test's
mistakes start with the check that must catch each); GRADE_LOG= is --log.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
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
SIM_TIMEOUT = 600  # seconds for one simulator invocation
SIM_USAGE_ERROR = 2  # tlb_sim's exit status for a scenario or policy set it does not know
REPRODUCE = re.compile(r"^# reproduce: (.*)$", re.M)  # tlb_sim's line under a failure
FORMATS = ("text", "gradescope")
GATE_SHOWN = 160  # characters of the violation the Gate: line repeats (the check's line has more)
HOST_TIMEOUT = 120
QUICK_SIM_SHARE = 3  # GRADE_QUICK=1 runs about 1/3 of a check's simulator cases
TCG = dict(emu="qemu", accel="tcg", cpu="max")
KVM = dict(emu="qemu", accel="kvm", cpu="host")
# Bochs with PCID and INVPCID and without SMAP (docs/tlb-bugs.md: with SMAP
# on, Bochs walks afresh for kernel accesses to user pages and hides stale
# entries from the oracle).
BOCHS = dict(emu="bochs", cpu="corei7_haswell_4770")
TLB = ("test=tlb", "console=serial")

# What each kind of check runs, as (command or file, Debian package), as
# tools/make/deps.sh names them. The grader installs nothing: a check whose
# tools are missing says SKIP and names the packages.
ISO_TOOLS = (("grub-mkrescue", "grub-common"), ("/usr/lib/grub/i386-pc/multiboot2.mod", "grub-pc-bin"),
             ("xorriso", "xorriso"), ("mformat", "mtools"))
QEMU_TOOLS = (("qemu-system-x86_64", "qemu-system-x86"),)
BOCHS_TOOLS = (("bochs", "bochs"), ("/usr/share/bochs/BIOS-bochs-latest", "bochsbios"),
               ("/usr/share/bochs/VGABIOS-lgpl-latest", "vgabios"),
               ("/usr/lib/*/bochs/plugins/libbx_term_gui.so*", "bochs-term"), ("script", "bsdutils"))
SPIN_TOOLS = (("spin", "spin"), ("gcc", "gcc"))  # spin_check.py compiles the verifier with gcc


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
    # The injection kernel (make inject): its benchmark rows come with the
    # record of what each sample did (bench/probe.h), which a check reads.
    probes: bool = False

    def key(self) -> tuple:
        return (tuple(sorted(self.emu.items())), self.smp, self.cmdline, self.topology,
                self.probes)


@dataclasses.dataclass
class Check:
    points: int
    title: str
    kind: str                      # host | sim | boot | bench | spin | tool | log | breakit
    host: str = ""                 # host: the program in build/host/
    cases: tuple[str, ...] = ()    # sim: case names; boot: KTAP test IDs
    boot: Boot | None = None       # boot, bench
    expect: tuple[str, ...] = ()   # boot: serial lines that must appear
    function: str = ""             # bench, tool, log, and boot (on its serial log too): a
                                   # lab_checks function
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


def tcg(smp: int, *cmdline: str, topology: str = "", probes: bool = False) -> Boot:
    what = f"TCG, {smp} CPU{'s' if smp > 1 else ''}" + (f" ({topology})" if topology else "") \
        + (", injection kernel" if probes else "")
    return Boot(what, TCG, smp, tuple(cmdline), topology, probes=probes)


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
        Check(2, "every enabled CPU online once, APIC IDs 0,1,2,4,5,6", "boot",
              boot=tcg(6, "test=acpi,smp", topology="sockets=2,cores=3,threads=1"),
              cases=("ACPI0003", "ACPI0004", "SMP0001", "SMP0002"), expect=("boot: cpus=6 ",)),
        Check(1, "a CPU listed but not enabled is reported absent, not started", "boot",
              boot=tcg(2, "test=acpi,smp", topology="maxcpus=4"),
              cases=("ACPI0003", "SMP0001"),
              expect=("boot: cpus=2 ", "absent (not enabled in the MADT)")),
        Check(1, "x2APIC mode: the other CPUs start and take calls", "boot",
              boot=bochs(2, "test=smp", "console=serial"), cases=("SMP0001", "SMP0002", "SMP0003")),
        # The injection kernel records each AP's INIT and STARTUPs and
        # whether it had answered when the boot CPU moved on
        # (apic/startup_probe.h); ap_bug= makes the first AP slow or mute.
        # Three APs: a missing INIT wait shows unless the host stalls the
        # boot CPU for 10 ms at that point for every one of them.
        Check(2, "an AP that answers late: 10 ms after INIT, online only once it said so", "boot",
              boot=tcg(4, "test=smp", "ap_bug=late", "console=serial", probes=True),
              cases=("SMP0001", "SMP0002", "SMP0003"), expect=("boot: cpus=4 ",),
              function="check_start_up"),
        Check(1, "an AP that never answers is reported, parked with INIT, and the boot goes on",
              "boot", boot=tcg(3, "test=smp", "ap_bug=silent", "console=serial", probes=True),
              cases=("SMP0002", "SMP0003"),
              expect=("boot: cpus=2 ", "no answer to INIT-SIPI-SIPI"), function="check_start_up"),
    ]),
    "L1": Lab("measure the TLB", "labs/L1-measure.md", [
        Check(3, "tlb_reach prints every working set, with statistics that hold together", "bench",
              boot=tcg(1, "bench=tlb_reach", "console=serial"), function="check_tlb_reach"),
        Check(2, "tlb_reach follows bench_scale= (fewer samples, every row still there)", "bench",
              boot=tcg(1, "bench=tlb_reach", "bench_scale=10", "console=serial"),
              function="check_tlb_reach"),
        Check(2, "tlb_reach times one pass per sample, after an untimed one, per page", "bench",
              boot=tcg(1, "bench=tlb_reach", "bench_scale=10", "console=serial", probes=True),
              function="check_reach_samples"),
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
        Check(2, "break it: your workload exposes no_gen_check", "breakit"),
    ], bugs=("reuse_asid_noflush", "no_gen_check")),
    "L3": Lab("a shootdown", "labs/L3-shootdown.md", [
        Check(3, "simulator: changes against accesses, crossing flushes, kernel stacks", "sim",
              cases=policy_cases("shootdown crossfire kstack shared", ALL_POLICIES)),
        # Few cases, so that GRADE_QUICK=1 runs them all: lazy, switching
        # and returning CPUs and the sequential send path, which the quick
        # third of the check above leaves out.
        Check(1, "simulator: lazy, switching and returning CPUs, freed tables, the local flush "
              "after", "sim", cases=("three pcid2-skip", "rejoin pcid1-off", "shootdown pcid1-off",
                                     "lazyfree pcid2-skip")),
        Check(1, "simulator: random machines and workloads", "sim",
              cases=policy_cases("random", "nopcid-off defaults pcid2-dynamic")),
        Check(3, "oracle under TCG, 4 CPUs: remaps, rights, migration, concurrent flushes, "
              "a flush waiting for a CPU with interrupts off", "boot",
              boot=tcg(4, *TLB), cases=("TLB0001", "TLB0002", "TLB0005", "TLB0009", "TLB0010",
                                        "TLB0011", "TLB0012"), repeat=3),
        Check(2, "oracle with the local flush after the remote ones", "boot",
              boot=tcg(4, *TLB, "flush_concurrent=off", "flush_info=stack"),
              cases=("TLB0001", "TLB0002", "TLB0009", "TLB0011"), repeat=2),
        Check(2, "break it: your workload exposes ack_before_flush", "breakit"),
    ], bugs=("skip_remote", "no_wait", "ack_before_flush", "free_before_ack")),
    "L4": Lab("lazy TLB", "labs/L4-lazy.md", [
        Check(2, "simulator: lazy CPUs, speculative walks, freed tables, exit", "sim",
              cases=policy_cases("lazy speculate lazyfree exit", ALL_POLICIES)),
        # Few cases, so that GRADE_QUICK=1 runs them all: lazy=skip and
        # lazy=ipi with a lazy CPU about, which the quick third of the
        # check above leaves out.
        Check(1, "simulator: lazy=skip and lazy=ipi: leaving LAZY, tables freed first", "sim",
              cases=("lazy pcid2-skip", "switch nopcid-skip", "lazy-tables pcid2-skip",
                     "lazy pcid1-ipi")),
        Check(2, "oracle, lazy=skip: lazy CPUs catch up; freed tables reach them", "boot",
              boot=tcg(4, *TLB), cases=("TLB0003", "TLB0007"), repeat=3),
        Check(2, "oracle, lazy=dynamic with a back-off of one switch", "boot",
              boot=tcg(4, *TLB, "lazy=dynamic", "lazy_backoff=1"),
              cases=("TLB0003", "TLB0007"), repeat=2),
        Check(1, "oracle, lazy=ipi with lazy_mm=refcount", "boot",
              boot=tcg(2, *TLB, "lazy=ipi", "lazy_mm=refcount"), cases=("TLB0003", "TLB0007")),
        Check(2, "break it: your workload exposes no_gen_check", "breakit"),
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
        Check(2, "break it: your workload exposes no_gen_check", "breakit"),
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
    # No emulator has INVLPGB: the simulator's model of the AMD APM grades it
    # all. GRADE_QUICK=1 keeps every len//3-th case: lists of at most five
    # keep every case in it.
    "L9": Lab("broadcast", "labs/L9-broadcast.md", [
        Check(3, "simulator: a global ASID freed at exit and handed out again", "sim",
              cases=("gasid-wrap gasid", "gasid-wrap-remote gasid",
                     "gasid-wrap-second gasid2", "gasid-wrap-twice gasid2")),
        Check(2, "simulator: INVLPGB and TLBSYNC against accesses, a range of many pages", "sim",
              cases=("shootdown gasid", "gasid-range gasid")),
        Check(2, "simulator: random machines with INVLPGB, tables freed", "sim",
              cases=("random gasid",)),
        Check(2, "simulator: a CPU switches in while its space gets a global ASID", "sim",
              cases=("gasid-switch gasid",)),
    ], bugs=("transition_skips_switching",)),
}


# --- Running checks ------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    status: str           # PASS | FAIL | SKIP
    why: str = ""
    violation: str = ""   # a stale translation seen: the correctness gate
    reproduce: str = ""   # the simulator's command that repeats the failure
    log: str = ""         # the output behind the verdict


def missing_tools(needs) -> list[tuple[str, str]]:
    """The (command or file, package) pairs of needs this machine lacks; a
    command is looked for on PATH, a file (a glob) on disk."""
    lacking = []
    for what, package in needs:
        found = glob.glob(what) if what.startswith("/") else shutil.which(what)
        if not found:
            lacking.append((what, package))
    return lacking


def not_installed(lacking: list[tuple[str, str]]) -> str:
    names = [f"{what} (package {package})" for what, package in lacking]
    return f"needs {', '.join(names)}, not installed here"


def relative(path: Path) -> str:
    """path as the student sees it: from the tree's root when inside."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class Grader:
    def __init__(self, lab: str, build: Path) -> None:
        self.lab = lab
        self.build = build
        self.run_root = build / "grade" / lab
        seed = os.environ.get("GRADE_SEED", "").strip()
        self.seed = str(int(seed, 0)) if seed else ""  # checked by environment_problem
        self.quick = os.environ.get("GRADE_QUICK", "").strip() not in ("", "0")
        self.bug = os.environ.get("GRADE_BUG", "").strip()
        # The deliberate bugs live only in the injection kernel (make inject).
        self.kernel = build / "shootdown.elf"
        self.inject_kernel = build / "inject" / "shootdown.elf"
        self.log = os.environ.get("GRADE_LOG", "").strip()
        self.first_failure = os.environ.get("GRADE_FIRST_FAILURE", "").strip() not in ("", "0")
        self.first_check = os.environ.get("GRADE_FIRST_CHECK", "").strip()
        self.boots: dict[tuple, list[boot.RunResult]] = {}
        self.number = 0  # the check being run, 1 first: its log's name
        # Why the kernel or the host programs could not be built here (a
        # tool missing): the checks that need them say SKIP with it.
        self.unbuilt: dict[str, str] = {}

    def needs(self, c: Check) -> tuple:
        """What c runs, as (command or file, package) pairs."""
        if self.part(c) == "host":
            return ((os.environ.get("HOSTCC", "").strip() or "cc", "gcc"),)
        if self.part(c) == "kernel" and c.boot:
            return ISO_TOOLS + (BOCHS_TOOLS if c.boot.emu["emu"] == "bochs" else QEMU_TOOLS)
        if c.kind == "spin":
            return SPIN_TOOLS
        return ()

    def part(self, c: Check) -> str:
        """The part of the tree c needs built: kernel, host (a breakit
        check runs the simulator) or nothing."""
        return {"host": "host", "sim": "host", "breakit": "host",
                "boot": "kernel", "bench": "kernel"}.get(c.kind, "")

    def unavailable(self, c: Check) -> str:
        """Why c cannot run on this machine (a SKIP), or ""."""
        lacking = missing_tools(self.needs(c))
        if lacking:
            return not_installed(lacking)
        if self.part(c) in self.unbuilt:
            return self.unbuilt[self.part(c)]
        if c.boot and c.boot.emu.get("accel") == "kvm":
            usable, why = boot.kvm_status()
            if not usable:
                return why
        return ""

    def log_file(self, c: Check) -> Path:
        return self.run_root / f"check{self.number}-{c.kind}.log"

    def save(self, c: Check, output: str, append: bool = False) -> str:
        """Keeps a check's output; where it is, for the check's line."""
        path = self.log_file(c)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w") as f:
            f.write(output)
        return relative(path)

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
            kernel = self.inject_kernel if self.bug or b.probes else self.kernel
            done.append(boot.run(s, kernel, run_dir))
        return done[:runs]

    def repeats(self, c: Check) -> int:
        return 1 if self.quick else c.repeat

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.seed:
            env["HOST_TEST_SEED"] = self.seed
        return env

    def program(self, name: str) -> str:
        """A host program, named from the tree's root when it is inside (the
        simulator's reproduce: line repeats the name it was run by)."""
        return relative(self.build / "host" / name)

    def run(self, c: Check, number: int = 0) -> Verdict:
        self.number = number
        why = self.unavailable(c)
        if why:
            return Verdict("SKIP", why)
        try:
            return getattr(self, f"check_{c.kind}")(c)
        except RuntimeError as e:  # boot.py could not make the image
            return Verdict("FAIL", str(e).strip().replace("\n", " | ")[:300])

    def check_log(self, c: Check) -> Verdict:
        if not self.log:
            return Verdict("SKIP", "no log of the day given: make grade LAB=L8 LOG=serial.log "
                                   "(labs/L8-hardware.md)")
        try:
            text = "\n".join(clean_lines(Path(self.log).read_text(errors="replace")))
        except OSError as e:
            return Verdict("FAIL", f"LOG={self.log}: {e.strerror}")
        problems = lab_check(c.function)(text)
        v = problems_verdict(problems)
        v.log = self.log
        return v

    def check_host(self, c: Check) -> Verdict:
        output, status = run_program([self.program(c.host)], HOST_TIMEOUT, self.env())
        v = ktap_verdict(output, status, c.cases)
        v.log = self.save(c, output)
        return v

    def check_sim(self, c: Check) -> Verdict:
        program = self.program("tlb_sim")
        cases = c.cases
        if self.quick and not self.bug:  # a third of them, spread over the list
            cases = cases[::max(1, len(cases) // QUICK_SIM_SHARE)]
        if self.bug:  # each scenario searched with the bug: it must be caught
            searched = 0
            self.save(c, "")
            for case in cases:
                scenario, _, policy = case.partition(" ")
                output, status = run_program(
                    [program, "-w", scenario, "-p", policy, "-b", self.bug], SIM_TIMEOUT,
                    self.env())
                log = self.save(c, f"$ {program} -w {scenario} -p {policy} -b {self.bug}\n{output}",
                                append=True)
                if status == SIM_USAGE_ERROR:  # not one scenario under one policy set
                    continue
                searched += 1
                if status not in (0, None) or "FAILURE:" in output:
                    v = sim_failure(output)
                    v.why = f"{case} with tlb_bug={self.bug}: {first_failure(output)}"
                    v.log = log
                    return v
            if not searched:
                return Verdict("SKIP", f"no case here is one scenario the simulator can search "
                                       f"with tlb_bug={self.bug}")
            return Verdict("PASS")
        output, status = run_program([program, *cases], SIM_TIMEOUT, self.env())
        v = ktap_verdict(output, status, ())
        if v.status == "FAIL":
            found = sim_failure(output)
            v.violation, v.reproduce = found.violation, found.reproduce
        v.log = self.save(c, output)
        return v

    def check_boot(self, c: Check) -> Verdict:
        runs = self.boot_runs(c.boot, self.repeats(c))
        for n, r in enumerate(runs, 1):
            # A function's problems first: they say what the code did.
            problems = lab_check(c.function)("\n".join(clean_lines(r.serial))) \
                if c.function else []
            v = problems_verdict(problems) if problems else boot_verdict(r, c.cases, c.expect)
            if v.status != "PASS":
                again = f"run {n} of {len(runs)}: " if len(runs) > 1 else ""
                v.why = again + v.why
                v.log = relative(r.run_dir / "serial.log")
                return v
        return Verdict("PASS", f"{len(runs)} runs" if len(runs) > 1 else "")

    def check_bench(self, c: Check) -> Verdict:
        r = self.boot_runs(c.boot, 1)[0]
        text = "\n".join(clean_lines(r.serial))
        problems = lab_check(c.function)(text)
        if not problems and not r.clean:
            problems = [f"the kernel did not end cleanly: {r.note()}"]
        v = problems_verdict(problems, panic_of(text))
        v.log = relative(r.run_dir / "serial.log")
        return v

    def check_tool(self, c: Check) -> Verdict:
        problems = lab_check(c.function)(ROOT)
        return problems_verdict(problems)

    def check_breakit(self, c: Check) -> Verdict:
        """The lab's workload file exposes its bug (tools/labs/breakit.py)."""
        from tools.labs import breakit
        v = breakit.grade(self.lab, ROOT, self.build)
        return Verdict(v.status, v.why)

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
        v = ktap_verdict(output, status, ())
        v.log = self.save(c, output)
        return v


def sim_failure(output: str) -> Verdict:
    """What the simulator's report of failed cases says: the first
    reproduce: command, and a violation unless every failure is a lab
    tree's stub (the line above each reproduce: names the failure)."""
    lines = output.splitlines()
    v = Verdict("FAIL")
    for n, line in enumerate(lines):
        m = REPRODUCE.match(line)
        if not m:
            continue
        failure = lines[n - 1].lstrip("# ").strip() if n else ""
        v.reproduce = v.reproduce or m.group(1).strip()
        if UNWRITTEN not in failure and not v.violation:
            v.violation = f"the simulator found a violation: {failure}"[:300]
    return v


def oracle_violation(text: str, tests: tuple[str, ...]) -> str:
    """A failed TLB case of the in-kernel oracle among tests (not a lab
    tree's stub stopping the kernel): what it says, or ""."""
    if UNWRITTEN in text:
        return ""
    results, _ = ktap_results("", text, "")
    failed = [r for r in results if r.status == "FAIL" and "TLB" in r.name
              and (not tests or any(t in r.name for t in tests))]
    if not failed:
        return ""
    return f"the oracle saw a stale translation: {failed[0].name.strip('/')}: {failed[0].reason}"[:300]


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
        return Verdict("FAIL", v.why if "PANIC:" in v.why else v.why + panic_of(text),
                       violation=oracle_violation(text, tests))
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


PARTS = {"kernel": "the kernel", "host": "the host programs"}


def build_parts(build: Path, parts: set[str], inject: bool) -> tuple[str, dict[str, str]]:
    """Builds the parts of the tree the checks need (kernel: make all, and
    make inject with inject; host: make host-tests). Returns the
    compiler's errors ("" when it built) and, for a part whose tool is
    missing here (the Makefile's "no such command"), why it was not built."""
    unbuilt: dict[str, str] = {}
    for part in [p for p in PARTS if p in parts]:
        targets = ["host-tests"] if part == "host" else \
            ["all"] + (["inject"] if inject else [])
        proc = subprocess.run(["make", "-s", f"BUILD={build}", *targets], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = proc.stdout.decode("utf-8", "replace")
        if proc.returncode == 0:
            continue
        tool = next((line for line in output.splitlines() if "no such command" in line), "")
        if not tool:
            return output, unbuilt
        tool = re.sub(r"^.*?\*\*\* ", "", tool).removesuffix(".  Stop.").strip()
        unbuilt[part] = f"cannot build {PARTS[part]} here: {tool}"
    return "", unbuilt


@dataclasses.dataclass
class Outcome:
    """One check graded: its verdict, the points it earned, its line."""
    check: Check
    verdict: Verdict
    got: int
    line: str


@dataclasses.dataclass
class Grade:
    outcomes: list[Outcome]
    score: int       # after the gate
    counted: int     # the maximum: the points of the checks that ran
    gate: str = ""   # the gate's line, when it capped the score


def outcome_line(c: Check, v: Verdict, got: int) -> str:
    if v.status == "SKIP":
        return f"  SKIP   -/{c.points}  {c.title}: {v.why}"
    what = f"{c.kind}" + (f", {c.boot.what}" if c.boot else "")
    line = f"  {v.status}  {got}/{c.points}  {c.title} [{what}]" + (f": {v.why}" if v.why else "")
    if v.status == "FAIL":
        line += (f"; reproduce: {v.reproduce}" if v.reproduce else "") \
            + (f" (log: {v.log})" if v.log else "")
    return line


def gate_line(outcomes: list[Outcome], score: int, counted: int) -> tuple[int, str]:
    """The correctness gate: a check that saw a stale translation caps the
    score at half the maximum, rounded down. The score, and the line
    saying so ("" when no check did)."""
    bad = next((o for o in outcomes if o.verdict.violation), None)
    if not bad:
        return score, ""
    cap = counted // 2
    seen = bad.verdict.violation
    seen = seen if len(seen) <= GATE_SHOWN else seen[:GATE_SHOWN - 3] + "..."
    return min(score, cap), (f"Gate: {bad.check.title}: {seen}; a lab with a stale translation "
                             f"scores at most half its maximum, {cap}/{counted}")


def grade_checks(lab: Lab, grader: Grader, show=print) -> Grade:
    """Runs lab's checks in order (GRADE_FIRST_CHECK's first), showing each
    line as it is known. Each check's log keeps its number in the table."""
    outcomes: list[Outcome] = []
    score = counted = 0
    failed = False
    numbered = list(enumerate(lab.checks, 1))
    if grader.first_check:
        # A stable sort: the named check first, the others in table order.
        numbered.sort(key=lambda nc: grader.first_check not in nc[1].title)
    for number, c in numbered:
        if failed and grader.first_failure:
            v = Verdict("SKIP", "not run, a check failed (GRADE_FIRST_FAILURE=1)")
        else:
            v = grader.run(c, number)
        got = c.points if v.status == "PASS" else 0
        if v.status != "SKIP":
            failed = failed or v.status != "PASS"
            score += got
            counted += c.points
        outcomes.append(Outcome(c, v, got, outcome_line(c, v, got)))
        show(outcomes[-1].line)
    score, gate = gate_line(outcomes, score, counted)
    return Grade(outcomes, score, counted, gate)


def gradescope_results(grade: Grade, header: str, seconds: float) -> dict:
    """Gradescope's results.json: one test per check. A SKIP is there with
    score 0 of 0, its reason as the output, so that a student sees what
    this machine could not run; it counts toward neither total."""
    tests = []
    for o in grade.outcomes:
        v = o.verdict
        output = {"SKIP": f"SKIP: {v.why} (counts toward neither score nor maximum)",
                  "PASS": v.why or "passed"}.get(v.status, o.line.strip())
        tests.append({"name": o.check.title, "score": o.got if v.status != "SKIP" else 0,
                      "max_score": o.check.points if v.status != "SKIP" else 0,
                      "output": output, "status": "failed" if v.status == "FAIL" else "passed"})
    output = "\n".join(filter(None, [header, grade.gate, f"Score: {grade.score}/{grade.counted}"]))
    return {"score": grade.score, "max_score": grade.counted, "execution_time": round(seconds),
            "output": output, "tests": tests}


def write_json(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", help="L0..L9")
    parser.add_argument("--build", default="build", help="the build directory (make's BUILD)")
    parser.add_argument("--list", action="store_true", help="list the lab's checks")
    parser.add_argument("--log", help="L8: the serial log of the day on real hardware")
    parser.add_argument("--format", default="text",
                        help="text (the default), or gradescope: also write results.json")
    parser.add_argument("--out", help="with --format gradescope: where (default results.json)")
    args = parser.parse_args(argv)
    lab = LABS.get(args.lab)
    if not lab:
        print(f"grade: LAB={args.lab!r}: the labs are {', '.join(LABS)} (labs/README.md)",
              file=sys.stderr)
        return 2
    if args.format not in FORMATS:
        print(f"grade: FORMAT={args.format!r}: use FORMAT=gradescope (Gradescope's results.json, "
              "OUT= where), or leave it out for the text report", file=sys.stderr)
        return 2
    if args.out and args.format != "gradescope":
        print("grade: OUT= names the results.json of FORMAT=gradescope; add FORMAT=gradescope",
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
    out = Path(args.out or "results.json").resolve() if args.format == "gradescope" else None
    build = (ROOT / args.build).resolve()
    if args.log:
        os.environ["GRADE_LOG"] = str(Path(args.log).resolve())
    grader = Grader(args.lab, build)
    seed = grader.seed or "default"
    header = (f"grade: lab {args.lab}, {lab.title} ({lab.handout}); seed {seed}"
              + ("; quick" if grader.quick else "") + (f"; tlb_bug={grader.bug}" if grader.bug else ""))
    print(header, flush=True)
    started = time.monotonic()
    parts = {grader.part(c) for c in lab.checks if not missing_tools(grader.needs(c))}
    inject = bool(grader.bug) or any(c.boot and c.boot.probes for c in lab.checks)
    errors, grader.unbuilt = build_parts(Path(args.build), parts, inject)
    if errors:
        print("grade: the tree does not build:")
        shown = "\n".join("    | " + line for line in errors.rstrip().splitlines()[-20:])
        print(shown)
        print(f"Score: 0/{total}")
        if out:
            write_json(out, {"score": 0, "max_score": total, "output": f"{header}\n"
                             f"the tree does not build:\n{shown}",
                             "tests": [{"name": c.title, "score": 0, "max_score": c.points,
                                        "output": "not run: the tree does not build",
                                        "status": "failed"} for c in lab.checks]})
        return 1
    grade = grade_checks(lab, grader, lambda line: print(line, flush=True))
    print(f"# grading took {time.monotonic() - started:.0f} s; logs in {relative(grader.run_root)}")
    if grade.gate:
        print(grade.gate)
    print(f"Score: {grade.score}/{grade.counted}")
    if out:
        write_json(out, gradescope_results(grade, header, time.monotonic() - started))
        print(f"# Gradescope results: {out}")
    return 0 if grade.score == grade.counted else 1


if __name__ == "__main__":
    boot.interrupt_on_sigterm()
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        boot.stop_all()
        sys.exit(130)
