"""Run every test: the host test binaries, the kernel in each machine
configuration of the table (tools/test/configs.py), judged by its kind
(tools/test/judges.py), and the labs' grades; two steps at a time, the
longest first, each printed when it ends (tools/test/pool.py). One line
per result, then exactly `N passed, N failed` (skips count as passed); exits 1
on failure. Each step's seconds go to build/test/times.json.

    python3 -m tools.test.run_tests [--only PATTERNS] <kernel.elf> [host test binaries...]
    python3 -m tools.test.run_tests --list

Both print KTAP (as Linux KUnit does): every leaf case is one result,
host/<binary>/<case> or <config>/<suite>.<case>; the cases a crash cut off
fail. With the TLB simulator among the host binaries, tools/test/mutants.py
checks that every mutant applies and that a few are killed; with any host
binary, the host scripts (tools/test/host.py: the tests of the timeline renderer,
the lab tools, the QR encoder, the results screen, the report, the USB
stick writer, the check that shared variables open only through
sync/shared.h, and what a QEMU run that times out says of its CPUs) run
too, and the labs are graded (tools/labs/lab_tests.py: results
labs/<lab>/...), and `make compare-linux` runs, reduced, to its end
(compare-linux/rows). ONLY=PATTERNS works as --only. Setting any of EMU SMP
MEM ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT runs one
configuration, `custom`, built from them, instead of the table; TIMEOUT
changes every time limit. Logs: build/test/.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import functools
import os
import sys
import time
from pathlib import Path

from tools.labs import lab_tests
from tools.run import boot
from tools.test import host
from tools.test.configs import CONFIGS, SMP_TIMEOUT, TestConfig
from tools.test.judges import JUDGES
from tools.test.ktap import Result
from tools.test.pool import TEST_DIR, Outcome, Step, rel, run_steps

LAB_COST = 240  # a guess of one lab's seconds (its grades and its student tree)
BUG_OPTIONS = ("tlb_bug=", "ipc_bug=", "call_bug=", "boot_bug=")


def kernel_for(tc: TestConfig, kernel: str) -> str:
    """The kernel a configuration boots: the injection build (make inject,
    <build>/inject/) when its command line names a deliberate bug, which the
    default kernel does not have."""
    if any(w.startswith(BUG_OPTIONS) and not w.endswith("=none") for w in tc.settings.cmdline):
        return str(Path(kernel).parent / "inject" / "shootdown.elf")
    return kernel


def run_config(tc: TestConfig, kernel: str) -> Outcome:
    """Boot one configuration and judge it by its kind."""
    return JUDGES[tc.kind](tc, TEST_DIR / tc.name).run(kernel_for(tc, kernel))


# --- Choosing what runs ----------------------------------------------------------------

def select_configs() -> list[TestConfig]:
    """The table, or the one `custom` machine the run variables describe;
    TIMEOUT applies to every configuration."""
    overrides = boot.env_overrides()
    if not overrides_machine():
        configs = [dataclasses.replace(tc, settings=dataclasses.replace(tc.settings))
                   for tc in CONFIGS]
    else:
        # The user asked for one machine: run just that, tests for all suites.
        configs = [TestConfig("custom", "ktap", boot.settings_from_env(boot.Settings()))]
        if configs[0].settings.smp is None:
            configs[0].settings.smp = 1
    if "TIMEOUT" in overrides:
        for tc in configs:
            tc.settings.timeout = boot.settings_from_env().timeout
    for tc in configs:
        tc.settings.resolve()  # report a bad setting before anything runs
    return configs


def overrides_machine() -> bool:
    """The run variables describe one machine (the `custom` configuration)."""
    return any(v in boot.env_overrides() for v in boot.MACHINE_VARS)


def matches(name: str, patterns: list[str]) -> bool:
    """No patterns select everything."""
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def list_configs(configs: list[TestConfig]) -> None:
    """--list: one line per configuration, with what its judge expects."""
    for tc in configs:
        s = tc.settings.resolve()
        words = " ".join(s.cmdline)
        print(f"{tc.name:<34} {tc.kind:<13} {s.describe()}, {s.timeout:g} s"
              + (f", needs {tc.needs}" if tc.needs else "")
              + (f", options: {words}" if words else "")
              + (f", A: {tc.compare[0]}, B: {tc.compare[1]}" if any(tc.compare) else "")
              + "".join(f"\n{'':<48}expect {e!r}" for e in tc.expect))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=Path(argv[0]).name,
                                description="Run the host tests and the kernel configurations.")
    p.add_argument("--list", action="store_true", help="print the configurations and stop")
    p.add_argument("--only", metavar="PATTERN", default=os.environ.get("ONLY", ""),
                   help="comma-separated shell patterns: run only the configurations "
                        "and host binaries (host/<binary>) they match (default: $ONLY)")
    p.add_argument("kernel", nargs="?", help="the kernel ELF")
    p.add_argument("host_bins", nargs="*", help="host test binaries")
    args = p.parse_args(argv[1:])
    if not args.list and not args.kernel:
        p.error("the kernel is required")
    args.patterns = [w.strip() for w in args.only.split(",") if w.strip()]
    return args


# --- The steps ---------------------------------------------------------------------------

def config_steps(configs: list[TestConfig], kernel: str) -> list[Step]:
    """One step per configuration; KVM configurations run only on hardware
    virtualization, and a lab tree skips the bugs whose code it stubbed."""
    kvm_ok, kvm_why = boot.kvm_status()
    steps = []
    for tc in configs:
        why = (kvm_why if tc.needs == "kvm" and not kvm_ok
               else lab_tests.skip_reason(tc.settings.cmdline))

        def work(tc: TestConfig = tc, why: str = why) -> Outcome:
            if why:
                return Outcome([Result(tc.name, "skip", why)], heading=f"skip {tc.name}: {why}")
            outcome = run_config(tc, kernel)
            outcome.heading = f"# {tc.name}: {tc.settings.resolve().describe()}; {outcome.summary}"
            return outcome
        steps.append(Step(tc.name, work, cost=config_cost(tc)))
    return steps


def config_cost(tc: TestConfig) -> float:
    """A rough guess of a configuration's seconds, to start the long ones
    first: Bochs is slow, and many emulated CPUs on 2 host cores are too."""
    if tc.needs == "kvm":
        return 0
    if tc.settings.emu == "bochs":
        return 120 * (tc.settings.smp or 1)
    if tc.kind in ("screendump", "bench", "bench-compare"):  # the benchmarks run
        return 120
    return min(tc.settings.timeout or SMP_TIMEOUT, 30 * (tc.settings.smp or 1))


# --- Main --------------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    boot.interrupt_on_sigterm()
    args = parse_args(argv)
    try:
        configs = [tc for tc in select_configs() if matches(tc.name, args.patterns)]
    except boot.ConfigError as e:
        print(f"run-tests: {e}", file=sys.stderr)
        return 2
    if args.list:
        list_configs(configs)
        return 0
    host_bins = [b for b in args.host_bins if matches(f"host/{Path(b).name}", args.patterns)]
    scripts = [n for n in host.HOST_SCRIPTS
               if args.host_bins and matches(f"host/{n}", args.patterns)]
    # The labs grade lab trees built from this one: with the host programs.
    labs = [lab for lab in lab_tests.grade.LABS
            if args.host_bins and lab_tests.selected(lab, args.patterns)]
    # make compare-linux, reduced: beside the table, not with one machine.
    linux = (bool(args.kernel) and not overrides_machine()
             and matches("compare-linux", args.patterns))
    if args.patterns and not configs and not host_bins and not scripts and not labs and not linux:
        print(f"run-tests: nothing matches {args.only!r} (--list shows the names)",
              file=sys.stderr)
        return 2
    if args.host_bins:  # where the host scripts find the host tools
        os.environ["HOST_BIN_DIR"] = str(Path(args.host_bins[0]).resolve().parent)
    steps = [Step(f"host/{Path(b).name}", functools.partial(host.run_host_test, b),
                  cost=host.HOST_TIMEOUTS.get(Path(b).name, 10)) for b in host_bins]
    steps += [Step(f"host/{n}", functools.partial(host.run_host_test, str(host.HOST_SCRIPTS[n]), n),
                   cost=20) for n in scripts]
    if any(Path(b).name == "tlb_sim" for b in host_bins):
        steps.append(Step("host/mutants", host.run_mutants, cost=host.MUTANTS_TIMEOUT))
    if configs and not os.path.isfile(args.kernel):
        steps.append(Step("kernel", lambda: Outcome([Result("kernel", "FAIL",
                                                            f"no kernel at {args.kernel}")])))
    elif configs:
        steps += config_steps(configs, args.kernel)
    if linux and os.path.isfile(args.kernel):
        steps.append(Step("compare-linux", functools.partial(host.compare_linux_step, args.kernel),
                          cost=host.COMPARE_LINUX_COST))
    steps += [Step(f"labs/{lab}", functools.partial(lab_step, lab), cost=LAB_COST)
              for lab in labs]
    started = time.monotonic()
    results: list[Result] = []
    run_steps(steps, results)
    print(f"# all tests took {time.monotonic() - started:.0f} s")
    failed = sum(r.status == "FAIL" for r in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def lab_step(lab: str) -> Outcome:
    outcome = Outcome(lab_tests.lab_results(lab, TEST_DIR / "labs", rel,
                                            lab_tests.this_tree()[0]))
    outcome.heading = f"# labs/{lab}"
    return outcome


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        boot.stop_all()
        print("\nrun-tests: interrupted", file=sys.stderr)
        sys.exit(130)
