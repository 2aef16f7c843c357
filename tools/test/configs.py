"""The test configurations of `make test`: one line each, a machine, kernel
options and what the serial log must hold; the kind of a configuration
(tools/test/judges.py) says how it boots and what passes. Data only:
tools/test/run_tests.py runs them, `--list` prints them.
"""

from __future__ import annotations

import dataclasses

from tools.run import boot


@dataclasses.dataclass
class TestConfig:
    """One way to boot the kernel. kind: a key of judges.JUDGES, whose docstring
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
    # The boot summary must count exactly the CPUs the machine has, or the
    # fewer that maxcpus= allows.
    if kind == "ktap":
        started = settings["smp"]
        for word in settings.get("cmdline", []):
            if word.startswith("maxcpus="):
                started = min(started, int(word.removeprefix("maxcpus=")))
        expect = (f"boot: cpus={started} ", *expect)
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
    # TCG has no INVLPGB: asked for, it stays off, and every suite runs on IPIs.
    cfg("tcg-bios", **TCG, firmware="bios", smp=1, cmdline=["invlpgb=on"],
        expect=("boot: INVLPGB/TLBSYNC: absent", "invlpgb=0 ")),
    cfg("tcg-uefi", **TCG, firmware="uefi", smp=1),
    # The ISO on a USB stick (xHCI, no CD-ROM, no disk), as a PC boots it,
    # under each firmware: the boot suite is enough to show it came up.
    cfg("tcg-usb-bios", **TCG, firmware="bios", media="usb", smp=1, cmdline=["test=boot"],
        timeout=USB_TIMEOUT),
    cfg("tcg-usb-uefi", **TCG, firmware="uefi", media="usb", smp=1, cmdline=["test=boot"],
        timeout=USB_TIMEOUT),
    # A 64-bit CPU behind a 32-bit UEFI (some tablets and early UEFI PCs):
    # GRUB's i386-efi loader starts the kernel.
    cfg("tcg-uefi32", **TCG, firmware="uefi32", smp=1, cmdline=["test=boot"]),
    # A UEFI display with no linear framebuffer (virtio-gpu's GOP only copies
    # pixels): the kernel must say why the screen stays dark, and run on.
    cfg("tcg-uefi-no-framebuffer", **TCG, firmware="uefi", smp=1, cmdline=["test=boot"],
        qemu_args=["-vga", "none", "-device", "virtio-gpu-pci"],
        expect=("has no linear framebuffer",)),
    cfg("tcg-5g", **TCG, mem_mib=5 * 1024, smp=1),
    cfg("tcg-q35", **TCG, machine="q35", mem_mib=256, smp=1),
    # An IOMMU, as on most PCs: its DMAR table is read for the x2APIC opt-out.
    cfg("tcg-q35-iommu", **TCG, machine="q35", smp=1, cmdline=["test=acpi"],
        qemu_args=["-device", "intel-iommu,intremap=on"],
        expect=("acpi: DMAR: interrupt remapping supported, x2APIC opt-out clear",)),
    cfg("tcg-serial-none", "exit", accel="tcg", smp=1, serial="none"),
    # Every user program that runs on its own must exit with status 0.
    cfg("tcg-smp2-init-all", "exit", **TCG, smp=2, cmdline=["init=all", "console=serial"]),
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
    # maxcpus= below the CPUs enabled: the ones over the limit are counted,
    # reported in one line, and never started (the MAX_CPUS path).
    cfg("tcg-smp4-maxcpus2", **TCG, smp=4, cmdline=["maxcpus=2", "test=boot"],
        expect=("smp: 4 CPUs listed, 2 started: maxcpus=2",)),
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
    # Bochs's Skylake-X (stepping 4) reports microcode 0, below the fix of
    # Intel's TSC-deadline erratum: the quirk applies and one-shots count
    # (docs/cpu-quirks.md). With cpu_quirks=off the deadline timer runs.
    cfg("bochs-smp2", **BOCHS, smp=2,
        expect=("apic: x2apic", "cpu: quirk intel-tsc-deadline-microcode: TSC-deadline not used (fits",
                "timer=oneshot")),
    cfg("bochs-smp4", **BOCHS, smp=4, cmdline=["cpu_quirks=off"],
        expect=("apic: x2apic", "timer=tsc-deadline")),
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
                "cpu: quirks: none of the 4 known applies")),
    cfg("kvm", needs="kvm", accel="kvm", cpu="host", mem_mib=256, smp=2),
    # Every benchmark, with a tenth of the samples (no timing thresholds).
    cfg("bench-tcg", "bench", **TCG, smp=2, cmdline=["bench_scale=10"]),
    cfg("bench-tcg-icount", "bench", **TCG, smp=2, icount=True, cmdline=["bench_scale=10"]),
    # Two cores of two threads: CPU 1 is CPU 0's SMT sibling, so the
    # one-target shootdown must flush CPU 2, and the record name the pairs.
    cfg("bench-tcg-smt", "bench", **TCG, smp=4, topology="sockets=1,cores=2,threads=2",
        cmdline=["bench=shootdown,ipi", "bench_scale=10"]),
    # One core of two threads: the sibling is the only target, and the record says so.
    cfg("bench-tcg-smt-one-core", "bench", **TCG, smp=2, topology="sockets=1,cores=1,threads=2",
        cmdline=["bench=shootdown", "bench_scale=10"]),
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

# The screen at boot (docs/hardware.md, "The screen at boot"). A panic before
# the kernel page tables, the screen not started yet, must start it through
# the early window with the kept log: the CPU census and the panic on it.
# boot_bug=late-screen starts the screen only with the kernel page tables: the
# boot line must still say it is there.
SCREEN_LATER_1024 = "screen framebuffer 1024x768 (drawn from the kernel page tables on)"
CONFIGS += [
    cfg("tcg-screen-early-panic", "panic-screen", **TCG, smp=1,
        cmdline=["boot_bug=early-panic"],
        expect=(SCREEN_LATER_1024, "cpu:   feature       present  path",
                "PANIC: boot_bug=early-panic")),
    cfg("tcg-uefi-screen-early-panic", "panic-screen", **TCG, firmware="uefi", smp=1,
        cmdline=["boot_bug=early-panic"],
        expect=(SCREEN_LATER_1024, "cpu:   feature       present  path",
                "PANIC: boot_bug=early-panic")),
    cfg("tcg-screen-late", **TCG, smp=1, cmdline=["test=boot", "boot_bug=late-screen"],
        expect=(SCREEN_LATER_1024,)),
]
# A 1920x1080 screen: the font at x2 (font_scale=auto, which the boot line
# names), the text found at x2 only; 33 rows hold the census's last lines.
CONFIGS += [
    cfg("tcg-screen-1080-early-panic", "panic-screen", **TCG, smp=1, screen="1920x1080",
        cmdline=["boot_bug=early-panic"],
        expect=("screen framebuffer 1920x1080, font x2 (drawn", "cpu:   RDTSCP",
                "PANIC: boot_bug=early-panic")),
]
# The screen started late, with the kernel page tables: a later panic is on it;
# and what was kept before it started, the census, is drawn when it starts
# (at 1920x1080 with the font at x1: 67 rows hold the boot up to the panic).
CONFIGS += [
    cfg("tcg-screen-late-panic", "panic-screen", **TCG, smp=1,
        cmdline=["boot_bug=late-screen", "crash=panic"],
        expect=(SCREEN_LATER_1024, "PANIC: crash=panic: a deliberate panic")),
    cfg("tcg-screen-late-census", "panic-screen", **TCG, smp=1, screen="1920x1080",
        cmdline=["boot_bug=late-panic", "font_scale=1"],
        expect=("screen framebuffer 1920x1080 (drawn from the kernel page tables on)",
                "cpu:   feature       present  path", "PANIC: boot_bug=late-panic")),
]
