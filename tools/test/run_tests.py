"""Run every test: the host test binaries, the kernel in each machine
configuration of CONFIGS, judged by its kind (JUDGES), and the labs' grades;
two steps at a time, the longest first, each printed when it ends. One line
per result, then exactly `N passed, N failed` (skips count as passed); exits 1
on failure. Each step's seconds go to build/test/times.json.

    python3 -m tools.test.run_tests [--only PATTERNS] <kernel.elf> [host test binaries...]
    python3 -m tools.test.run_tests --list

Both print KTAP (as Linux KUnit does): every leaf case is one result,
host/<binary>/<case> or <config>/<suite>.<case>; the cases a crash cut off
fail. With the TLB simulator among the host binaries, tools/test/mutants.py
checks that every mutant applies and that a few are killed; with any host
binary, the host scripts (HOST_SCRIPTS: the tests of the timeline renderer,
the lab tools, the QR encoder, the results screen, the report, the USB
stick writer, the check that shared variables open only through
smp/shared.h, and what a QEMU run that times out says of its CPUs) run
too, and the labs are graded (tools/labs/lab_tests.py: results
labs/<lab>/...), and `make compare-linux` runs, reduced, to its end
(compare-linux/rows). ONLY=PATTERNS works as --only. Setting any of EMU SMP
MEM ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT runs one
configuration, `custom`, built from them, instead of the table; TIMEOUT
changes every time limit. Logs: build/test/.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import fnmatch
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import typing
from pathlib import Path

from tools.run import boot
from tools.bench import bench
from tools.test import results_screen
from tools.test.ktap import Result, clean_lines, has_failure, ktap_results
from tools.labs import lab_tests

ROOT = boot.ROOT
TEST_DIR = ROOT / "build" / "test"
# Screendump configurations run the default job (the benchmarks) and show
# its results screen once, each page this many seconds: time enough for
# the screendump the page's announcement on serial asks for.
SCREEN_PAGE_SECONDS = 3
FONT = ROOT / "build" / "kernel" / "font.psf"
HOST_TIMEOUT = 120  # seconds for one host test binary
# The TLB simulator searches for minutes (about 2.5 under ASan on an idle
# 2-core host, more beside the emulator runs): its own limit.
HOST_TIMEOUTS = {"tlb_sim": 1200}
MUTANTS = "tools.test.mutants"
# Host tests written in Python, run like the binaries (KTAP on stdout):
# host/<name>: the renderer of tools/run/timeline.py draws a known trace; the
# lab tools; qr: the QR encoder, zlib and base64 of lib/ read back by
# zbarimg and Python (through the host tool qr_tool, found in $HOST_BIN_DIR:
# the directory of the host binaries); the results screen's QR decoder and
# checks; the report and charts on fixture results; the USB stick writer
# (tools/run/usb.py) refuses what it must, on fake sysfs trees; make
# profile-path finds the IPC fast path, and the general one with it off;
# tlb_trace=on traces the fast path's switches; a plain access of a variable
# shared without a lock does not compile (smp/shared.h); a QEMU run that
# times out names where each CPU was (boot.py's Qemu.hang_report).
HOST_SCRIPTS = {"timeline": ROOT / "tests" / "timeline" / "test_timeline.py",
                "lab-tools": ROOT / "tests" / "labs" / "test_lab_tools.py",
                "qr": ROOT / "tests" / "qr" / "test_qr.py",
                "results-screen": ROOT / "tests" / "screen" / "test_results_screen.py",
                "bench-report": ROOT / "tests" / "bench" / "test_bench_report.py",
                "usb": ROOT / "tests" / "usb" / "test_usb.py",
                "path-profile": ROOT / "tests" / "profile" / "test_path_profile.py",
                "ipc-trace": ROOT / "tests" / "bench" / "test_ipc_trace.py",
                "plain-access": ROOT / "tests" / "shared" / "test_plain_access.py",
                "hang-report": ROOT / "tests" / "hang" / "test_hang_report.py"}
# With the simulator's host test: every mutant in tests/mutants/ must apply,
# and these, quick to kill, be killed (make mutants runs them all): a
# shootdown that does not wait, a batch freed before its flush, a PCID that
# collides with the kernel's.
TEST_MUTANTS = ["no-wait", "batch-free-before-flush", "pcid-equals-asid"]
MUTANTS_TIMEOUT = 300  # seconds for the check and for the named mutants
# make compare-linux, reduced (tools/bench/compare_linux.py: 4 boots, some 45 s).
COMPARE_LINUX = "tools.bench.compare_linux"
COMPARE_LINUX_SCALE = 10
COMPARE_LINUX_TIMEOUT = 400
COMPARE_LINUX_COST = 60
PARALLEL = 2        # steps at once (the machine has 2 cores)
LAB_COST = 240      # a guess of one lab's seconds (its grades and its student tree)
SLOWEST_SHOWN = 8   # steps named in the closing "# slowest" line


# --- The configurations ---------------------------------------------------------

@dataclasses.dataclass
class TestConfig:
    """One way to boot the kernel. kind: a key of JUDGES, whose docstring
    says what it boots and what passes. needs "kvm": only where KVM is
    hardware virtualization. expect: strings the serial log must hold."""
    name: str
    kind: str
    settings: boot.Settings
    needs: str = ""
    expect: tuple[str, ...] = ()
    compare: tuple[str, str] = ("", "")  # kind "bench-compare": A and B


def cfg(name: str, kind: str = "ktap", needs: str = "", expect: tuple[str, ...] = (),
        compare: tuple[str, str] = ("", ""), mem_mib: int = 128, **settings) -> TestConfig:
    # The boot summary must count exactly the CPUs the machine has.
    if kind == "ktap":
        expect = (f"boot: cpus={settings['smp']} ", *expect)
    # Several vCPUs on a 2-core host, beside the pool's other job, spin on
    # each other: give them room.
    if settings.get("emu") != "bochs" and settings["smp"] >= 2:
        settings.setdefault("timeout", SMP_TIMEOUT)
    return TestConfig(name, kind, boot.Settings(mem_mib=mem_mib, **settings), needs, expect,
                      compare)


TCG = dict(accel="tcg", cpu="max")
BOCHS = dict(emu="bochs", cpu="corei7_skylake_x")
SMP_TIMEOUT = 300
# The USB boots take 2 s (SeaBIOS) and 9 s (OVMF) here; a stick the firmware
# cannot boot leaves it waiting for a boot device until this runs out.
USB_TIMEOUT = 60
CRASH_REPORT = ("PANIC: ", "rip=", "backtrace:", "<kmain+")


# One line per configuration (128 MiB unless said). Settings fields: see boot.Settings.
CONFIGS = [
    cfg("tcg-bios", **TCG, firmware="bios", smp=1),
    cfg("tcg-uefi", **TCG, firmware="uefi", smp=1),
    # The ISO on a USB stick (xHCI, no CD-ROM, no disk), as a PC boots it,
    # under each firmware: the boot suite is enough to show it came up.
    cfg("tcg-usb-bios", **TCG, firmware="bios", media="usb", smp=1, cmdline=["test=boot"],
        timeout=USB_TIMEOUT),
    cfg("tcg-usb-uefi", **TCG, firmware="uefi", media="usb", smp=1, cmdline=["test=boot"],
        timeout=USB_TIMEOUT),
    cfg("tcg-5g", **TCG, mem_mib=5 * 1024, smp=1),
    cfg("tcg-q35", **TCG, machine="q35", mem_mib=256, smp=1),
    cfg("tcg-serial-none", "exit", accel="tcg", smp=1, serial="none"),
    cfg("tcg-screendump", "screendump", accel="tcg", smp=1),
    cfg("tcg-uefi-screendump", "screendump", accel="tcg", firmware="uefi", smp=1),
    # GRUB leaves 80x25 VGA text mode (no graphics mode, as on some old PCs):
    # the summary must fit, and the codes are small (version 5: some 30 of
    # them for this short job, 3 s each).
    cfg("tcg-text-screendump", "screendump", accel="tcg", smp=1, screen="text",
        cmdline=["bench=invlpg,idle_lazy", "bench_scale=1"], timeout=240),
    cfg("tcg-smp2", **TCG, smp=2),
    # The general IPC path alone (docs/user.md, "The IPC fast path").
    cfg("tcg-smp2-ipc-slow", **TCG, smp=2,
        cmdline=["test=user", "ipc_fastpath=off"]),
    # The fast path under the other TLB switch policies: every switch it
    # makes loads or keeps address spaces as those policies say.
    cfg("tcg-smp2-ipc-lazy-off", **TCG, smp=2,
        cmdline=["test=user", "lazy=off", "kernel_mm_mask=touch", "lazy_mm=refcount"]),
    # The fast path broken on purpose: the user suite must fail.
    cfg("tcg-smp2-ipc-bug-skip-cpu-check", "bug", **TCG, smp=2,
        cmdline=["test=user", "ipc_bug=skip_cpu_check"]),
    cfg("tcg-smp2-ipc-bug-drop-word", "bug", **TCG, smp=2,
        cmdline=["test=user", "ipc_bug=drop_word"]),
    cfg("tcg-smp2-ipc-bug-no-reference", "bug", **TCG, smp=2,
        cmdline=["test=user", "ipc_bug=no_reference"]),
    cfg("tcg-smp3", **TCG, smp=3),
    cfg("tcg-smp4", **TCG, smp=4),
    # 8 vCPUs take some 250 s on a loaded 2-core host.
    cfg("tcg-smp8", **TCG, smp=8, timeout=3 * SMP_TIMEOUT // 2),
    # 16 vCPUs on a 2-core host: the slowest TCG run, with the most spread.
    # The suites of the protocol and of what it rests on; pending and user
    # run with up to 8 CPUs above and would double the time.
    cfg("tcg-smp16", **TCG, mem_mib=256, smp=16, timeout=2 * SMP_TIMEOUT,
        cmdline=["test=boot,smp,sched,tlb,revoke"]),
    # APIC IDs 0,1,2,4,5,6: gaps in the ID space, met by the suites that
    # start CPUs and send them IPIs.
    cfg("tcg-smp6-gaps", **TCG, smp=6, topology="sockets=2,cores=3,threads=1",
        cmdline=["test=boot,smp,sched,tlb"]),
    # The MADT lists 4 CPUs, 2 of them not enabled (absent): no IPI may
    # wait for them.
    cfg("tcg-smp2-max4", **TCG, smp=2, topology="maxcpus=4", cmdline=["test=boot,smp,tlb"],
        expect=("absent (not enabled in the MADT)",)),
    # UEFI's memory map and tables, with the suites that lean on them.
    cfg("tcg-uefi-smp4", **TCG, firmware="uefi", mem_mib=256, smp=4,
        cmdline=["test=acpi,boot,mm,smp,sched,time,tlb"]),
    cfg("tcg-x2apic-typo", **TCG, smp=2, cmdline=["x2apic=maybe", "test=boot,smp"],
        expect=("cmdline: warning: option x2apic: bad value 'maybe'",)),
    cfg("tcg-crash-panic", "crash", **TCG, smp=2, cmdline=["crash=panic"],
        expect=CRASH_REPORT + ("crash=panic: a deliberate panic",)),
    cfg("tcg-crash-pagefault", "crash", **TCG, smp=1, cmdline=["crash=pagefault"],
        expect=CRASH_REPORT + ("#PF page fault (vector 14)", "cr2=0xbadbad")),
    cfg("tcg-crash-stack", "crash", **TCG, smp=1, cmdline=["crash=stack"],
        expect=CRASH_REPORT + ("#DF double fault", "stack's guard page")),
    # Bugs injected into the cross-CPU call protocol must be caught.
    cfg("tcg-smp4-call-bug-drop", "crash", **TCG, smp=4, cmdline=["test=smp", "call_bug=drop"],
        expect=("not ok 4 SMP0004",)),
    cfg("tcg-smp2-call-bug-no-ipi", "crash", **TCG, smp=2, timeout=SMP_TIMEOUT,
        cmdline=["test=smp", "call_bug=no-ipi"],
        expect=("has not looked at a call from CPU", "it is dead or an IPI was lost")),
    cfg("tcg-no-long-mode", "message", accel="tcg", cpu="qemu32", smp=1, timeout=60,
        expect=("shootdown: this CPU has no 64-bit long mode",)),
    # Every suite on an Intel model: SYSRET and IRETQ to a non-canonical RIP
    # fault in ring 0 there (USER0017), which QEMU does not model.
    cfg("bochs", **BOCHS, smp=1),
    cfg("bochs-smp2", **BOCHS, smp=2, expect=("apic: x2apic",)),
    cfg("bochs-smp4", **BOCHS, smp=4, expect=("apic: x2apic", "timer=tsc-deadline")),
    # xAPIC's MMIO registers: the suites that send IPIs and use the timer.
    cfg("bochs-xapic", **BOCHS, smp=2, cmdline=["x2apic=off", "test=boot,smp,time,sched,tlb"],
        expect=("apic: xapic",)),
    # The CPU quirks table (docs/cpu-quirks.md). Bochs's CPU has PCID and is
    # not on the INVLPG erratum's list: forced, the erratum turns PCID off, and
    # INVPCID with it (BOOT0006 checks CR4.PCIDE). TCG: a bad value is named.
    cfg("bochs-quirk-invlpg", **BOCHS, smp=1,
        cmdline=["test=boot", "console=serial", "cpu_quirks_force=intel-invlpg-global-pcid"],
        expect=("cpu: quirk intel-invlpg-global-pcid: PCID off (forced", "pcid=0 invpcid=0 ")),
    cfg("tcg-quirks-typo", **TCG, smp=1, cmdline=["test=boot", "cpu_quirks=maybe"],
        expect=("cmdline: warning: option cpu_quirks: bad value 'maybe'",
                "cpu: quirks: none of the 2 known applies")),
    cfg("kvm", needs="kvm", accel="kvm", cpu="host", mem_mib=256, smp=2),
    # Every benchmark, with a tenth of the samples (no timing thresholds).
    cfg("bench-tcg", "bench", **TCG, smp=2, cmdline=["bench_scale=10"]),
    cfg("bench-tcg-icount", "bench", **TCG, smp=2, icount=True, cmdline=["bench_scale=10"]),
    cfg("bench-bochs", "bench", **BOCHS, smp=2, cmdline=["bench_scale=10"]),
    cfg("bench-compare", "bench-compare", **TCG, smp=2, compare=("lazy=skip", "lazy=off"),
        cmdline=["bench=switch", "bench_scale=10"]),
    # The revoke rows under the two other unmap_batch= strategies (bench-tcg
    # has the default, pages): every row in both columns.
    cfg("bench-compare-unmap-batch", "bench-compare", **TCG, smp=2,
        compare=("unmap_batch=all", "unmap_batch=per_mm"),
        cmdline=["bench=revoke,revoke_refill", "bench_scale=10"]),
]


# --- The TLB oracle (tests/kernel/test_tlb.c) -----------------------------------
# test=all above runs it with every policy at its default. These run it alone
# under each alternative value, several compatible ones to a line, so that
# every value runs on TCG with 2, 4 and 8 CPUs and on Bochs with PCID on and
# off. TCG has no PCID: pcid=, invpcid= and asid_slots= vary on Bochs only,
# with a CPU model that has PCID and INVPCID but no SMAP: with SMAP on, Bochs
# walks the page tables afresh for every kernel access to a user page, which
# hides the stale translations the oracle looks for (docs/tlb-bugs.md).
# Serial output only: drawing every KTAP line on the emulated screen would
# cost Bochs most of the run (the screen has configurations of its own).
TLB = ["test=tlb", "console=serial"]
TLB_PENDING = ["test=tlb,pending", "console=serial"]
BOCHS_TLB = dict(emu="bochs", cpu="corei7_haswell_4770", smp=2)
PCID_IN_FORCE = "pcid=1 invpcid=1 "  # in the boot summary
CONFIGS += [
    cfg("tcg-smp2-tlb-lazy-ipi", **TCG, smp=2,
        cmdline=TLB + ["lazy=ipi", "flush_info=stack", "flush_ceiling=0"]),
    cfg("tcg-smp2-tlb-lazy-dynamic", **TCG, smp=2,
        cmdline=TLB + ["lazy=dynamic", "lazy_backoff=1", "flush_concurrent=off"]),
    cfg("tcg-smp2-tlb-lazy-off", **TCG, smp=2,
        cmdline=TLB + ["lazy=off", "kernel_mm_mask=touch", "lazy_mm=refcount"]),
    # With 4 CPUs the pending-flush cases (test=pending) ride along, so
    # that they too run under every lazy= value.
    cfg("tcg-smp4-tlb-lazy-ipi", **TCG, smp=4, cmdline=TLB_PENDING + [
        "lazy=ipi", "flush_concurrent=off", "flush_ceiling=4096", "lazy_mm=refcount"]),
    cfg("tcg-smp4-tlb-lazy-dynamic", **TCG, smp=4, cmdline=TLB_PENDING + [
        "lazy=dynamic", "lazy_backoff=1", "flush_info=stack", "kernel_mm_mask=touch"]),
    cfg("tcg-smp4-tlb-lazy-off", **TCG, smp=4,
        cmdline=TLB_PENDING + ["lazy=off", "flush_ceiling=0", "flush_concurrent=off"]),
    cfg("tcg-smp8-tlb-lazy-dynamic", **TCG, smp=8, cmdline=TLB + [
        "lazy=dynamic", "lazy_backoff=1", "lazy_mm=refcount", "flush_info=stack",
        "flush_ceiling=0"]),
    cfg("tcg-smp8-tlb-lazy-off", **TCG, smp=8, cmdline=TLB + [
        "lazy=off", "kernel_mm_mask=touch", "flush_concurrent=off", "flush_ceiling=4096"]),
    cfg("tcg-smp8-tlb-lazy-ipi", **TCG, smp=8, cmdline=TLB + ["lazy=ipi"]),
    cfg("bochs-smp2-tlb", **BOCHS_TLB, cmdline=TLB + ["tlb_stats"], expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-invpcid-off", **BOCHS_TLB,
        cmdline=TLB + ["invpcid=off", "asid_slots=1", "lazy=ipi", "flush_info=stack"],
        expect=("pcid=1 invpcid=0 ",)),
    cfg("bochs-smp2-tlb-slots-max", **BOCHS_TLB,
        cmdline=TLB + ["asid_slots=32", "lazy=dynamic", "lazy_backoff=1",
                       "flush_concurrent=off", "lazy_mm=refcount", "flush_ceiling=0"],
        expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-lazy-off", **BOCHS_TLB,
        cmdline=TLB + ["lazy=off", "kernel_mm_mask=touch", "flush_ceiling=4096"],
        expect=(PCID_IN_FORCE,)),
    cfg("bochs-smp2-tlb-pcid-off", **BOCHS_TLB, cmdline=TLB + ["pcid=off"],
        expect=("pcid=0 ",)),
    cfg("bochs-smp2-tlb-pcid-off-lazy-ipi", **BOCHS_TLB,
        cmdline=TLB + ["pcid=off", "lazy=ipi", "lazy_mm=refcount", "kernel_mm_mask=touch"],
        expect=("pcid=0 ",)),
    # Injected protocol bugs (tlb_bug=), which must be caught: only those each
    # emulator shows every time (docs/tlb-bugs.md: which bug shows where, and
    # why the others need the host simulator).
    cfg("tcg-smp4-bug-skip-remote", "bug", **TCG, smp=4, cmdline=TLB + ["tlb_bug=skip_remote"]),
    cfg("tcg-smp4-bug-no-wait", "bug", **TCG, smp=4, cmdline=TLB + ["tlb_bug=no_wait"]),
    cfg("tcg-smp4-bug-ack-before-flush", "bug", **TCG, smp=4,
        cmdline=TLB + ["tlb_bug=ack_before_flush"]),
    cfg("tcg-smp4-bug-no-gen-check", "bug", **TCG, smp=4,
        cmdline=TLB + ["tlb_bug=no_gen_check"]),
    cfg("bochs-smp2-bug-skip-remote", "bug", **BOCHS_TLB, cmdline=TLB + ["tlb_bug=skip_remote"]),
    cfg("bochs-smp2-bug-no-wait", "bug", **BOCHS_TLB, cmdline=TLB + ["tlb_bug=no_wait"]),
    cfg("bochs-smp2-bug-no-gen-check", "bug", **BOCHS_TLB,
        cmdline=TLB + ["tlb_bug=no_gen_check"]),
]

# Revocation (test=revoke): one object unmapped from several address spaces
# at once, under each way of flushing the batch (unmap_batch=). With 4 CPUs
# the pending-flush cases (test=pending, tests/kernel/test_pending.c: a
# revoke or a map while an unmap's flush is pending) ride along; they
# need 3 CPUs, and Bochs runs them once, with PCID, on 3.
REVOKE = ["test=revoke", "console=serial"]
REVOKE_PENDING = ["test=revoke,pending", "console=serial"]
PENDING = ["test=pending", "console=serial"]
CONFIGS += [
    *(cfg(f"tcg-smp{n}-revoke-{batch.replace('_', '-')}", **TCG, smp=n,
          cmdline=(REVOKE if n == 2 else REVOKE_PENDING) + [f"unmap_batch={batch}"])
      for n in (2, 4) for batch in ("pages", "all", "per_mm")),
    *(cfg(f"bochs-smp2-revoke-{batch.replace('_', '-')}", **BOCHS_TLB,
          cmdline=REVOKE + [f"unmap_batch={batch}"], expect=(PCID_IN_FORCE,))
      for batch in ("pages", "all", "per_mm")),
    cfg("bochs-smp3-pending", **dict(BOCHS_TLB, smp=3), cmdline=PENDING,
        expect=(PCID_IN_FORCE,)),
    cfg("tcg-smp4-bug-batch-first-mm-only", "bug", **TCG, smp=4,
        cmdline=REVOKE + ["tlb_bug=batch_first_mm_only"]),
    # The pending-flush rule broken: a revoke that flushes only the PTEs
    # it finds present, a map that does not flush a pending range.
    cfg("tcg-smp3-bug-revoke-skips-cleared", "bug", **TCG, smp=3,
        cmdline=PENDING + ["tlb_bug=revoke_skips_cleared"]),
    cfg("tcg-smp3-bug-map-no-wait", "bug", **TCG, smp=3,
        cmdline=PENDING + ["tlb_bug=map_no_wait"]),
]

# The fuzzer that races (test=race, user/race.c): tasks with threads on every
# CPU make random system calls while others close, revoke, unmap and end what
# those calls use, each run with the IPC fast path off and on. heap_debug=on
# turns a write after free in the kernel into a panic where it happens. Each
# lazy= value runs once and each unmap_batch= value at least once; the Bochs
# run (PCID on) is short. About 20 s each on TCG, 60 s on Bochs.
RACE = ["test=race", "console=serial", "heap_debug=on"]
CONFIGS += [
    cfg("tcg-smp2-race-lazy-skip", **TCG, smp=2,
        cmdline=["test=race,mm", *RACE[1:], "lazy=skip", "unmap_batch=pages"]),
    cfg("tcg-smp2-race-lazy-off", **TCG, smp=2,
        cmdline=RACE + ["lazy=off", "unmap_batch=per_mm", "lazy_mm=refcount"]),
    cfg("tcg-smp4-race-lazy-ipi", **TCG, smp=4,
        cmdline=RACE + ["lazy=ipi", "unmap_batch=all"]),
    cfg("tcg-smp4-race-lazy-dynamic", **TCG, smp=4,
        cmdline=RACE + ["lazy=dynamic", "lazy_backoff=1", "unmap_batch=per_mm"]),
    cfg("bochs-smp2-race", **BOCHS_TLB, cmdline=RACE + ["unmap_batch=all"],
        expect=(PCID_IN_FORCE,)),
]


# --- Results --------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    """What one step (a host binary, the mutants, a configuration) gives."""
    results: list[Result]
    tail: str = ""      # log lines to show under the results
    summary: str = ""   # for the "# <config>: ..." line
    heading: str = ""   # printed above the results
    seconds: float = 0  # how long the step took


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def tail(text: str) -> str:
    """The last 25 lines of a log, to show under its results."""
    return "\n".join("    | " + line for line in clean_lines(text.rstrip())[-25:])


# --- Host tests and mutants --------------------------------------------------------

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


def lab_tree() -> tuple[str, set[str]]:
    """In a lab tree (docs/labs.md), its lab and the tlb_bug= switches whose
    hooks were in the code the student writes: tests that inject those skip."""
    try:
        text = (ROOT / ".lab").read_text()
    except OSError:
        return "", set()
    fields = dict(line.split("=", 1) for line in text.splitlines()
                  if "=" in line and not line.startswith("#"))
    return fields.get("lab", "").strip(), set(fields.get("bugs", "").split())


def lab_skip_reason(tc: TestConfig) -> str:
    lab, bugs = lab_tree()
    for word in tc.settings.cmdline:
        if word.startswith("tlb_bug=") and word.split("=", 1)[1] in bugs:
            return (f"lab tree {lab}: the code carrying {word} is yours to write "
                    "(.lab); the reference tree runs it")
    return ""


def run_host_test(binary: str, name: str = "") -> Outcome:
    """host/<binary> (or host/<name>): its KTAP, its exit status and its
    time limit. A .py file runs under this Python."""
    name = name or Path(binary).name
    prefix = f"host/{name}"
    log_path = TEST_DIR / "host" / f"{name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = rel(log_path)
    limit = HOST_TIMEOUTS.get(name, HOST_TIMEOUT)
    os.environ["TLB_SIM_SKIP_BUGS"] = " ".join(sorted(lab_tree()[1]))
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
                       f"lab tree {lab_tree()[0]}: left out, its patch shows the code to write")
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


# --- Judges: one per kind of configuration ----------------------------------------------

def did_not_start(name: str, e: Exception, log: str, show_tail: bool = True) -> Outcome:
    message = str(e).strip()
    why = (message.splitlines() or [repr(e)])[-1][:300]
    return Outcome([Result(name, "FAIL", why, log)], tail(message) if show_tail else "",
                   "did not start")


class Judge:
    """One boot of a configuration, judged by its kind: the kernel options
    the kind adds (options), how it boots (start) and what passes (judge)."""

    def __init__(self, tc: TestConfig, run_dir: Path) -> None:
        self.tc, self.run_dir, self.log = tc, run_dir, rel(run_dir / "serial.log")
        self.err = ""          # why the boot did not do what the kind needs

    def options(self, words: list[str]) -> list[str]:
        return list(words)

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        return boot.run(s, kernel, self.run_dir), ""

    def run(self, kernel: str) -> Outcome:
        s = dataclasses.replace(self.tc.settings, cmdline=self.options(self.tc.settings.cmdline))
        try:
            self.result, self.err = self.start(s, kernel)
        except (boot.ConfigError, RuntimeError, OSError) as e:
            return did_not_start(self.tc.name, e, self.log)
        return self.judge()

    @functools.cached_property
    def missing(self) -> list[str]:
        """The `expect` strings the serial log lacks."""
        text = "\n".join(clean_lines(self.result.serial))
        return [e for e in self.tc.expect if e not in text]

    @property
    def summary(self) -> str:
        r = self.result
        return (f"{r.duration:.1f} s, "
                + ("timed out" if r.timed_out else f"exit status {r.status}")
                + (", shutdown" if r.ending is boot.Ending.SHUTDOWN else ""))

    def ok(self, name: str, summary: str = "") -> Outcome:
        return Outcome([Result(name, "ok")], "", summary or self.summary)

    def fail(self, name: str, why: str, show_tail: bool = True, log: str = "") -> Outcome:
        # Whatever else went wrong, a run that timed out says so, and where
        # its CPUs were (boot.run's error).
        r = self.result
        if r.timed_out and r.error not in why:
            why = f"{why}; {r.error}"
        return Outcome([Result(name, "FAIL", why, log or self.log)],
                       tail(self.result.serial) if show_tail else "", self.summary)

    def expect_all(self, name: str) -> Outcome:
        """ok if the boot went as the kind needs and the serial log holds
        every string of `expect`."""
        if self.err or self.missing:
            return self.fail(name, self.err or f"serial log lacks {self.missing[0]!r}")
        return self.ok(name)


class KtapJudge(Judge):
    """"ktap": boot with test=all (unless the options choose the suites) and
    judge the KTAP on serial, one result per case; the way the run ended
    must agree with it (no panic after the last case, say)."""

    def options(self, words: list[str]) -> list[str]:
        return list(words) if any(w.startswith("test=") for w in words) else ["test=all", *words]

    def judge(self) -> Outcome:
        name, r = self.tc.name, self.result
        results, complete = ktap_results(name, r.serial, self.log)
        results += [Result(f"{name}/(serial)", "FAIL", f"serial log lacks {text!r}", self.log)
                    for text in self.missing]
        if not results:
            return self.fail(name, r.error or f"no KTAP output on serial ({r.note()})")
        passed, end, show_tail = not has_failure(results), None, not complete
        if r.timed_out:
            end = Result(f"{name}/(run)", "FAIL", r.error, self.log)
        elif not r.backend.verdict_in_status:
            if not r.clean and complete:
                end = Result(f"{name}/(exit)", "FAIL", r.note(), rel(r.emulator_log))
        elif passed and not r.clean:
            end = Result(f"{name}/(exit)", "FAIL", f"{r.note()}; expected {boot.EXIT_SUCCESS}",
                         self.log)
        elif not passed and r.clean:
            results.append(Result(f"{name}/(exit)", "FAIL", "cases failed but the kernel "
                                  "exited with success (33)", self.log))
        if end:
            results.append(end)
            show_tail = True
        return Outcome(results, tail(r.serial) if show_tail else "", self.summary)


class ExitJudge(Judge):
    """"exit": the way the run ended alone (a clean end passes), for machines
    without a serial port: one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/exit", self.result
        if r.clean:
            return self.ok(name)
        why = r.error or f"{r.note()}; expected {boot.EXIT_SUCCESS}"
        return Outcome([Result(name, "FAIL", why, rel(r.emulator_log))],
                       tail(boot.read(r.emulator_log)), self.summary)


class ScreendumpJudge(Judge):
    """"screendump": the default job with its results screen shown once
    (results_screen=once, bench/screen.c), a screendump of the summary, of
    every page of rows and of every QR code as the kernel announces each on
    serial; tools/test/results_screen.py checks them against the serial log: the
    summary's sentences, every row on a page, the codes decoding (zbarimg) to
    the serial log's results JSON. Three results."""

    def options(self, words: list[str]) -> list[str]:
        return ["results_screen=once", f"page_seconds={SCREEN_PAGE_SECONDS}", *words]

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        self.shots: dict[str, Path] = {}

        def shot(line: str) -> Path | None:
            name = results_screen.shot_name(line)
            # The summary comes back last, as QEMU ends: the first one counts.
            if name is None or name in self.shots:
                return None
            self.shots[name] = self.run_dir / f"{name}.ppm"
            return self.shots[name]

        for old in self.run_dir.glob("*.ppm"):
            old.unlink()
        result, problems = boot.screendumps(s, kernel, self.run_dir, shot)
        return result, "; ".join(problems) or result.error

    def judge(self) -> Outcome:
        if self.err or not self.result.clean:
            return self.fail(f"{self.tc.name}/summary", self.err or self.result.note())
        if not shutil.which("zbarimg"):
            verdicts = [(n, ok, why) for n, ok, why in results_screen.verdicts(
                self.result.serial, self.shots, FONT) if n != "qr"]
            skip = [Result(f"{self.tc.name}/qr", "SKIP", "zbarimg is missing (make deps)")]
        else:
            verdicts = results_screen.verdicts(self.result.serial, self.shots, FONT)
            skip = []
        results = [Result(f"{self.tc.name}/{name}", "ok" if ok else "FAIL", why[:300], self.log)
                   for name, ok, why in verdicts] + skip
        return Outcome(results, "", self.summary)


class CrashJudge(Judge):
    """"crash": the options make the kernel crash or inject a bug: the run
    must end with the failure status (35) or time out, and the serial log
    hold every string of `expect` (the proof that tests can fail): one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/crash", self.result
        if not r.timed_out and r.ending not in (boot.Ending.FAILURE, boot.Ending.PANIC):
            return self.fail(name, f"{r.note()}; expected the failure status {boot.EXIT_FAILURE}")
        return self.expect_all(name)


class MessageJudge(Judge):
    """"message": the kernel cannot start (e.g. no long mode) and halts: the
    first string of `expect` must appear on serial, then the run is stopped:
    one result."""

    def start(self, s: boot.Settings, kernel: str) -> tuple[boot.RunResult, str]:
        result = boot.run(s, kernel, self.run_dir, wait_for=self.tc.expect[0],
                          on_seen=lambda proc, text: proc.kill())
        return result, result.error

    def judge(self) -> Outcome:
        return self.expect_all(f"{self.tc.name}/message")


# A TLB-protocol case (test=tlb, test=revoke, test=pending) that reported a
# failure ("not ok 3 TLB0003 ..."); a case cut short by a hang does not count.
FAILED_TLB_CASE = re.compile(r"^\s*not ok \d+ ((?:TLB|RVK|PND|USER)\d+)\b", re.M)


class BugJudge(Judge):
    """"bug": test=tlb (or test=revoke, test=pending, test=user) with an injected
    protocol bug (tlb_bug=, ipc_bug=): passes ("bug caught") only if a case of it fails or the
    kernel panics, fails ("bug missed") if the suite passes: one result."""

    def judge(self) -> Outcome:
        name, r = f"{self.tc.name}/bug", self.result
        text = "\n".join(clean_lines(r.serial))
        failed, panicked = FAILED_TLB_CASE.findall(text), boot.panicked(text)
        if self.missing:
            return self.fail(name, f"serial log lacks {self.missing[0]!r}")
        if failed or panicked:
            how = ", ".join(failed) + (" and a panic" if failed and panicked else "")
            return self.ok(name, f"{self.summary}; bug caught by {how or 'a panic'}")
        if ktap_results(self.tc.name, r.serial, self.log)[1] and not r.timed_out:
            bug = next((w for w in self.tc.settings.cmdline
                        if w.startswith(("tlb_bug=", "ipc_bug="))), "?")
            return self.fail(name, f"bug missed: the suite passed with {bug}",
                             show_tail=False)
        return self.fail(name, r.error or f"no verdict: the tlb suite did not end ({r.note()})")


class BenchJudge(Judge):
    """"bench": boot with bench=all: every benchmark must run to its end and
    print results that parse (tools/bench/bench.py), and the kernel end the run
    cleanly: one result per benchmark."""
    log_dir = ""

    def verdicts(self, kernel: str) -> list[tuple[str, bool, str]]:
        return bench.test_run(self.tc.settings, kernel, self.run_dir)

    def run(self, kernel: str) -> Outcome:
        log = rel(self.run_dir / self.log_dir / "serial.log")
        started = time.monotonic()
        try:
            verdicts = self.verdicts(kernel)
        except (boot.ConfigError, RuntimeError, OSError) as e:
            return did_not_start(self.tc.name, e, log, show_tail=False)
        results = [Result(f"{self.tc.name}/{name}", "ok" if ok else "FAIL", why[:300], log)
                   for name, ok, why in verdicts]
        serial = boot.read(self.run_dir / "serial.log")
        return Outcome(results, tail(serial) if has_failure(results) else "",
                       f"{time.monotonic() - started:.1f} s")


class BenchCompareJudge(BenchJudge):
    """"bench-compare": boots A and B with the options of `compare` added;
    the side-by-side table (make bench-compare) must have both columns: one
    result."""
    log_dir = "A"

    def verdicts(self, kernel: str) -> list[tuple[str, bool, str]]:
        return bench.test_compare(self.tc.settings, kernel, self.run_dir, *self.tc.compare)


JUDGES: dict[str, type[Judge]] = {
    "ktap": KtapJudge, "exit": ExitJudge, "screendump": ScreendumpJudge, "crash": CrashJudge,
    "message": MessageJudge, "bug": BugJudge, "bench": BenchJudge,
    "bench-compare": BenchCompareJudge,
}


BUG_OPTIONS = ("tlb_bug=", "ipc_bug=", "call_bug=")


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


# --- Main --------------------------------------------------------------------------------

def report(outcome: Outcome, results: list[Result]) -> None:
    """Print an outcome as it comes, and keep its results for the count."""
    results += outcome.results
    if outcome.heading:
        print(outcome.heading)
    for r in outcome.results:
        print(r.line())
    if outcome.tail:
        print(outcome.tail)
    sys.stdout.flush()


def config_steps(configs: list[TestConfig], kernel: str) -> list[Step]:
    """One step per configuration; KVM configurations run only on hardware
    virtualization, and a lab tree skips the bugs whose code it stubbed."""
    kvm_ok, kvm_why = boot.kvm_status()
    steps = []
    for tc in configs:
        why = kvm_why if tc.needs == "kvm" and not kvm_ok else lab_skip_reason(tc)

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


@dataclasses.dataclass
class Step:
    """One thing make test does (a host test, the mutants, a boot, a lab's
    grades), with a guess of its seconds."""
    name: str
    work: typing.Callable[[], Outcome]
    cost: float = 60


def run_steps(steps: list[Step], results: list[Result]) -> None:
    """Every step, PARALLEL at once, the longest first so that the 2 cores
    stay busy to the end (most steps keep one core busy: Bochs, the
    simulator, a lab's grades): by the times of the last run in this tree
    where there are some, else by the guesses; each prints as soon as it is
    done."""
    try:
        last = json.loads((TEST_DIR / "times.json").read_text())
    except (OSError, ValueError):
        last = {}
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        try:
            futures = {pool.submit(timed, step): step
                       for step in sorted(steps, key=lambda st: -last.get(st.name, st.cost))}
            times = {}
            for future in concurrent.futures.as_completed(futures):
                report(future.result(), results)
                times[futures[future].name] = round(future.result().seconds, 1)
        except KeyboardInterrupt:
            # Start nothing more, and end what runs (in sessions of their
            # own, the emulators did not get the terminal's Ctrl-C).
            pool.shutdown(wait=False, cancel_futures=True)
            boot.stop_all()
            raise
    TEST_DIR.mkdir(parents=True, exist_ok=True)
    (TEST_DIR / "times.json").write_text(json.dumps(last | times, indent=1) + "\n")
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:SLOWEST_SHOWN]
    print("# slowest: " + ", ".join(f"{name} {t:.0f} s" for name, t in slowest))


def timed(step: Step) -> Outcome:
    """A step's outcome and time; a step that breaks fails alone."""
    started = time.monotonic()
    try:
        outcome = step.work()
    except Exception as e:  # noqa: BLE001  (a bug in a judge must not stop the others)
        outcome = Outcome([Result(step.name, "FAIL", f"the runner broke: {e!r}"[:300])],
                          "\n".join("    | " + line for line in
                                    traceback.format_exc().rstrip().splitlines()))
    outcome.seconds = time.monotonic() - started
    return outcome


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
    scripts = [n for n in HOST_SCRIPTS if args.host_bins and matches(f"host/{n}", args.patterns)]
    # The labs grade lab trees built from this one: with the host programs.
    labs = [lab for lab in lab_tests.grade.LABS
            if args.host_bins and lab_tests.selected(lab, args.patterns)]
    # make compare-linux, reduced: beside the table, not with one machine.
    linux = bool(args.kernel) and not overrides_machine() and matches("compare-linux", args.patterns)
    if args.patterns and not configs and not host_bins and not scripts and not labs and not linux:
        print(f"run-tests: nothing matches {args.only!r} (--list shows the names)",
              file=sys.stderr)
        return 2
    if args.host_bins:  # where the host scripts find the host tools
        os.environ["HOST_BIN_DIR"] = str(Path(args.host_bins[0]).resolve().parent)
    steps = [Step(f"host/{Path(b).name}", functools.partial(run_host_test, b),
                  cost=HOST_TIMEOUTS.get(Path(b).name, 10)) for b in host_bins]
    steps += [Step(f"host/{n}", functools.partial(run_host_test, str(HOST_SCRIPTS[n]), n), cost=20)
              for n in scripts]
    if any(Path(b).name == "tlb_sim" for b in host_bins):
        steps.append(Step("host/mutants", run_mutants, cost=MUTANTS_TIMEOUT))
    if configs and not os.path.isfile(args.kernel):
        steps.append(Step("kernel", lambda: Outcome([Result("kernel", "FAIL",
                                                            f"no kernel at {args.kernel}")])))
    elif configs:
        steps += config_steps(configs, args.kernel)
    if linux and os.path.isfile(args.kernel):
        steps.append(Step("compare-linux", functools.partial(compare_linux_step, args.kernel),
                          cost=COMPARE_LINUX_COST))
    steps += [Step(f"labs/{lab}", functools.partial(lab_step, lab), cost=LAB_COST)
              for lab in labs]
    started = time.monotonic()
    results: list[Result] = []
    run_steps(steps, results)
    print(f"# all tests took {time.monotonic() - started:.0f} s")
    failed = sum(r.status == "FAIL" for r in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


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


def lab_step(lab: str) -> Outcome:
    outcome = Outcome(lab_tests.lab_results(lab, TEST_DIR / "labs", rel, lab_tree()[0]))
    outcome.heading = f"# labs/{lab}"
    return outcome


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        boot.stop_all()
        print("\nrun-tests: interrupted", file=sys.stderr)
        sys.exit(130)
