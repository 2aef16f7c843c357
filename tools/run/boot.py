"""Boot the kernel in QEMU or Bochs: `make run` / `make qemu-gdb`, and the
library of tools/test/run_tests.py and tools/bench/bench.py. Python 3.11
stdlib only.

    python3 -m tools.run.boot run build/shootdown.elf   boot, stream serial,
                                                        map the exit
    python3 -m tools.run.boot gdb build/shootdown.elf   boot halted, wait for
                                                        gdb on :1234

Settings come from environment variables (all optional; see Settings):
EMU SMP MEM ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT
TIMEOUT. Each back end (Qemu, Bochs) owns its command line, its logs and what its
exit means; ending_of() turns that into one Ending per run.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import enum
import functools
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools import ROOT

MKISO = ROOT / "tools" / "make" / "mkiso.sh"

QEMU = "qemu-system-x86_64"
EXIT_SUCCESS = 33  # isa-debug-exit: the kernel wrote 0x10
EXIT_FAILURE = 35  # isa-debug-exit: the kernel wrote 0x11 (or panicked)
DEBUG_EXIT_DEVICE = "isa-debug-exit,iobase=0xf4,iosize=0x04"

# OVMF images in order of preference: (code, vars). The 4M builds are what
# Debian 12 ships by default; the others cover older or other layouts.
OVMF_PAIRS = [
    ("/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"),
    ("/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"),
    ("/usr/share/edk2/ovmf/OVMF_CODE.fd", "/usr/share/edk2/ovmf/OVMF_VARS.fd"),
]
# The 32-bit UEFI of some tablets and early UEFI PCs (a 64-bit CPU behind a
# 32-bit firmware): GRUB's i386-efi loader starts the kernel there. Debian
# ships this firmware only as a Secure Boot build, which needs a q35 machine
# with SMM; its variable store has no keys enrolled, so it boots unsigned
# loaders.
OVMF32_PAIRS = [
    ("/usr/share/OVMF/OVMF32_CODE_4M.secboot.fd", "/usr/share/OVMF/OVMF32_VARS_4M.fd"),
]

BOCHS_ROM = "/usr/share/bochs/BIOS-bochs-latest"
BOCHS_VGAROM = "/usr/share/bochs/VGABIOS-lgpl-latest"
BOCHS_CPU = "corei7_skylake_x"
BOCHS_IPS = 50_000_000  # emulated instructions per emulated second
BOCHS_SHUTDOWN = "Shutdown port: shutdown requested"

# A QEMU run that times out is asked over its monitor where each vCPU was
# (Qemu.hang_report). Both limits together bound what a wedged QEMU can add
# to the timeout: seconds for the monitor's answer, then for nm.
HANG_MONITOR_SECONDS = 6.0
HANG_NM_SECONDS = 4.0
HANG_REGISTERS = "hang-registers.txt"  # the monitor's answer, in the run directory
RFLAGS_IF = 1 << 9
# An address this far past the symbol below it is not in that function (the
# largest kernel function is some 5 KiB): past the text, say, or in a
# program's code when the kernel's symbols are the only ones at hand.
MAX_FUNCTION_BYTES = 0x10000

ENV_VARS = ("EMU", "SMP", "MEM", "ACCEL", "CPU", "FIRMWARE", "MACHINE", "MEDIA",
            "CMDLINE", "QEMU_ARGS", "ICOUNT", "TIMEOUT")
# The variables that pick a machine (TIMEOUT only changes patience).
MACHINE_VARS = ENV_VARS[:-1]


class ConfigError(Exception):
    """A setting that cannot work (bad value or impossible combination)."""


# --- Host facts -------------------------------------------------------------

def kvm_status() -> tuple[bool, str]:
    """Whether KVM is hardware virtualization here, and if not, why. /dev/kvm
    without vmx/svm (a software KVM such as kvm_pvm) is slower than TCG."""
    flags = {f for line in read(Path("/proc/cpuinfo")).splitlines() if line.startswith("flags")
             for f in line.split(":", 1)[1].split()}
    if not os.path.exists("/dev/kvm"):
        return False, "no /dev/kvm on this host"
    if not flags & {"vmx", "svm"}:
        return False, ("/dev/kvm here is not hardware virtualization "
                       "(no vmx/svm in /proc/cpuinfo)")
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
    except OSError as e:
        return False, f"/dev/kvm cannot be opened read-write ({e.strerror})"
    return True, "KVM available"


def find_ovmf(firmware: str = "uefi") -> tuple[str, str]:
    pairs, package = (OVMF32_PAIRS, "ovmf-ia32") if firmware == "uefi32" else (OVMF_PAIRS, "ovmf")
    for code, vars_ in pairs:
        if os.path.isfile(code) and os.path.isfile(vars_):
            return code, vars_
    raise ConfigError(f"FIRMWARE={firmware}: no OVMF images found (apt-get install {package})")


# --- Settings ---------------------------------------------------------------

def parse_mem(text: str) -> int:
    """'128M', '5G', '5GiB', '512' (MiB, as QEMU reads it) -> MiB."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ConfigError(f"MEM={text!r}: expected a size like 128M or 5G")
    value, unit = int(m.group(1)), m.group(2).upper() or "M"
    kib = value * {"K": 1, "M": 1 << 10, "G": 1 << 20, "T": 1 << 30}[unit]
    if kib % 1024 or kib == 0:
        raise ConfigError(f"MEM={text!r}: must be a whole, non-zero number of MiB")
    return kib // 1024


@dataclasses.dataclass
class Settings:
    """One machine to boot. Defaults are filled in by resolve()."""
    emu: str = "qemu"            # qemu | bochs
    smp: int | None = None       # CPUs; None: host CPUs, at least 2
    mem_mib: int = 256
    accel: str | None = None     # kvm | tcg; None: kvm iff kvm_status()
    cpu: str | None = None       # QEMU -cpu / Bochs model; None: host|max
    firmware: str = "bios"       # bios | uefi | uefi32 (QEMU only; uefi32 on q35)
    machine: str = "pc"          # pc | q35 (QEMU only)
    media: str = "cdrom"         # cdrom | usb: what the ISO is on (usb: QEMU only)
    cmdline: list[str] = dataclasses.field(default_factory=list)
    qemu_args: list[str] = dataclasses.field(default_factory=list)
    icount: bool = False         # deterministic TCG: -icount shift=1
    timeout: float | None = None  # seconds; None: 120 (QEMU), 600 (Bochs); 0: none
    serial: str = "file"         # file | stdio | none (where COM1 goes)
    topology: str = ""           # QEMU only: more -smp keys, e.g. sockets=2,cores=3
    screen: str = "fb"           # fb | text | WxH: GRUB's framebuffer (1024x768), 80x25
                                 # VGA text mode, or a framebuffer of W x H pixels

    def resolve(self) -> "Settings":
        """Fill in defaults and check combinations; returns a new copy."""
        s = dataclasses.replace(self, cmdline=list(self.cmdline),
                                qemu_args=list(self.qemu_args))
        for var, value, allowed in (("EMU", s.emu, ("qemu", "bochs")),
                                    ("FIRMWARE", s.firmware, ("bios", "uefi", "uefi32")),
                                    ("MACHINE", s.machine, ("pc", "q35")),
                                    ("MEDIA", s.media, ("cdrom", "usb")),
                                    ("serial", s.serial, ("file", "stdio", "none")),
                                    ("screen", s.screen, ("fb", "text", "WxH"))):
            if value not in allowed and not (var == "screen" and re.fullmatch(r"\d+x\d+", value)):
                raise ConfigError(f"{var}={value!r}: expected "
                                  f"{', '.join(allowed[:-1])} or {allowed[-1]}")
        if s.screen == "text" and s.firmware != "bios":
            raise ConfigError("a text screen needs FIRMWARE=bios: UEFI has no text mode")
        if s.smp is None:
            s.smp = max(2, len(os.sched_getaffinity(0)))  # the CPUs we may use
        if s.smp < 1:
            raise ConfigError(f"SMP={s.smp}: need at least 1 CPU")
        if s.timeout is None:
            s.timeout = 600.0 if s.emu == "bochs" else 120.0
        if s.emu == "bochs":
            if s.firmware != "bios":
                raise ConfigError("EMU=bochs boots with its own BIOS only (FIRMWARE=bios)")
            if s.media != "cdrom":
                raise ConfigError("EMU=bochs boots the ISO from its CD-ROM drive only "
                                  "(MEDIA=cdrom); MEDIA=usb needs EMU=qemu")
            if (s.accel == "kvm" or s.icount or s.qemu_args or s.machine != "pc"
                    or s.topology):
                raise ConfigError("ACCEL, ICOUNT, QEMU_ARGS, MACHINE and a CPU topology "
                                  "apply to QEMU only")
            s.cpu = s.cpu or BOCHS_CPU
            return s
        if s.accel is None:
            s.accel = "tcg" if s.icount or not kvm_status()[0] else "kvm"
        if s.accel not in ("kvm", "tcg"):
            raise ConfigError(f"ACCEL={s.accel!r}: expected kvm or tcg")
        if s.icount and s.accel == "kvm":
            raise ConfigError("ICOUNT=1 needs TCG: -icount does not work with KVM")
        if s.cpu is None:
            s.cpu = "host" if s.accel == "kvm" else "max"
        if s.firmware == "uefi32":
            s.machine = "q35"  # the 32-bit OVMF build needs SMM (OVMF32_PAIRS)
        return s

    def describe(self) -> str:
        if self.emu == "bochs":
            return f"bochs {self.cpu} smp={self.smp} mem={self.mem_mib}M"
        return (f"qemu {self.accel} -cpu {self.cpu} {self.machine} {self.firmware} "
                f"smp={self.smp} mem={self.mem_mib}M" + (" icount" if self.icount else "")
                + (" usb-stick" if self.media == "usb" else "")
                + (" text-screen" if self.screen == "text" else "")
                + (f" screen={self.screen}" if self.screen not in ("fb", "text") else ""))


def env_overrides() -> dict[str, str]:
    """The run variables that are set and non-empty."""
    return {v: os.environ[v] for v in ENV_VARS if os.environ.get(v, "").strip()}


def settings_from_env(base: Settings | None = None) -> Settings:
    """`base` with every variable that is set in the environment applied."""
    s = dataclasses.replace(base) if base else Settings()
    o = env_overrides()

    def number(var: str, kind, what: str):
        try:
            return kind(o[var])
        except ValueError:
            raise ConfigError(f"{var}={o[var]!r}: expected {what}") from None

    for var, field in (("EMU", "emu"), ("ACCEL", "accel"), ("FIRMWARE", "firmware"),
                       ("MACHINE", "machine"), ("MEDIA", "media")):
        if var in o:
            setattr(s, field, o[var].strip().lower())
    if "SMP" in o:
        s.smp = number("SMP", int, "a number")
    if "MEM" in o:
        s.mem_mib = parse_mem(o["MEM"])
    if "CPU" in o:
        s.cpu = o["CPU"].strip()
    if "CMDLINE" in o:
        s.cmdline = s.cmdline + shlex.split(o["CMDLINE"])
    if "QEMU_ARGS" in o:
        s.qemu_args = s.qemu_args + shlex.split(o["QEMU_ARGS"])
    if "ICOUNT" in o:
        s.icount = o["ICOUNT"].strip().lower() not in ("0", "no", "false", "off")
    if "TIMEOUT" in o:
        s.timeout = number("TIMEOUT", float, "seconds")
    return s


# --- Images -------------------------------------------------------------------

def build_iso(kernel: str | Path, iso: Path, cmdline: list[str],
              screen: str = "fb") -> Path:
    """A boot-at-once ISO for `kernel` with these command-line words, carrying
    as multiboot2 modules the user programs built next to it (<build>/user/);
    screen as Settings.screen: "text": GRUB leaves the screen in 80x25 text
    mode; "WxH": GRUB sets that framebuffer mode if the firmware has it."""
    programs = sorted(Path(kernel).resolve().parent.glob("user/*.elf"))
    modules = [arg for elf in programs for arg in ("--module", str(elf))]
    if screen == "text":
        modules.append("--text-screen")
    elif screen != "fb":
        modules += ["--gfxmode", screen]
    # An empty word tells mkiso.sh "no menu" even for an empty command line.
    proc = subprocess.run([str(MKISO), *modules, str(iso), str(kernel), *(cmdline or [""])],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mkiso.sh failed:\n{proc.stdout}")
    return iso


def _opt(path: Path | str) -> str:
    """A path inside a QEMU option string, where a comma must be doubled."""
    return str(path).replace(",", ",,")


def read(path: Path) -> str:
    """A log's text; "" if there is none."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


# --- How a run ended ------------------------------------------------------------

class Ending(enum.Enum):
    """How one emulator run ended: decided in ending_of() alone (or where
    the emulator cannot start)."""
    SUCCESS = "the kernel reported success"        # QEMU: status 33
    FAILURE = "the kernel reported failure"        # QEMU: status 35
    PANIC = "the kernel panicked"                  # QEMU: status 35 after "PANIC: "
    TRIPLE_FAULT = "triple fault"                  # QEMU: status 0 under -no-reboot
    SHUTDOWN = "the kernel shut Bochs down"        # the verdict is in the KTAP
    STOPPED = "the emulator stopped on its own"    # a Bochs panic, another status
    TIMEOUT = "timed out"
    NOT_STARTED = "did not start"


@dataclasses.dataclass
class RunResult:
    status: int | None       # the emulator's exit status; None if killed
    serial: str              # COM1 output ("" with serial none)
    timed_out: bool          # we stopped it at the deadline
    duration: float          # seconds
    cmd: list[str]
    run_dir: Path
    backend: Qemu | Bochs
    ending: Ending
    error: str = ""          # why it could not run or was stopped

    @property
    def serial_path(self) -> Path:
        return self.run_dir / "serial.log"

    @property
    def emulator_log(self) -> Path:
        """Where the emulator says why it stopped."""
        return self.run_dir / self.backend.emulator_log

    @property
    def clean(self) -> bool:
        """The kernel ended the run itself, with success where the exit
        status can say so (QEMU)."""
        return self.ending is self.backend.clean_ending

    def note(self) -> str:
        """How the emulator ended, with the likely reason when not cleanly."""
        return self.backend.note(self)


def panicked(serial: str) -> bool:
    return "PANIC: " in serial  # how the kernel's panic report begins


def ending_of(backend: Qemu | Bochs, status: int | None, timed_out: bool,
              run_dir: Path, serial: str) -> Ending:
    """What the back end's exit says, unless we stopped it at the deadline.
    A clean end still counts then: Bochs logs the kernel's shutdown before
    its own teardown, which can outlive the deadline on a loaded host."""
    ending = backend.ending(status, run_dir, serial)
    return Ending.TIMEOUT if timed_out and ending is not backend.clean_ending else ending


# --- Where the CPUs were ---------------------------------------------------------

def symbols(elf: str | Path, timeout: float | None = None,
            kinds: str = "tTwW") -> list[tuple[int, str]]:
    """The symbols of elf of the nm types in kinds (code by default), by
    address (`nm -n`)."""
    out = subprocess.run(["nm", "-n", str(elf)], capture_output=True, text=True,
                         check=True, timeout=timeout).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in kinds:
            found.append((int(parts[0], 16), parts[2]))
    return found


DATA_KINDS = "bBdD"  # nm's types of .bss and .data symbols
# A CPU in spin_wait_turn(lock, ticket) spins with the lock's address in
# RDI, the first argument's register, or that of its now_serving field
# (gcc adds its offset, 4, first): the hang report names that lock.
LOCK_WAIT = "spin_wait_turn"
MAX_LOCK_OFFSET = 1 << 16  # a lock inside a static table or structure


class Symbols:
    """Code symbols by address, to name the function an address is in."""

    def __init__(self, entries: list[tuple[int, str]]) -> None:
        self.entries = sorted(entries)
        self.starts = [address for address, _ in self.entries]

    def at(self, address: int, within: int | None = None) -> tuple[str, int] | None:
        """(name, offset) of the last symbol at or below address; None below
        the first symbol, or `within` bytes or more past the one found."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or (within is not None and address - self.starts[i] >= within):
            return None
        return self.entries[i][1], address - self.starts[i]


@dataclasses.dataclass
class CpuAt:
    """One vCPU as the monitor's `info registers -a` shows it."""
    index: int
    ip: int                # RIP, or EIP outside long mode
    long_mode: bool
    interrupts: bool       # RFLAGS.IF
    cpl: int | None
    halted: bool           # in HLT
    rdi: int | None = None

    def where(self, table: Symbols | None, data: Symbols | None = None) -> str:
        """E.g. 'halt_forever+0x2 IF=0 hlt': the kernel function (for kernel
        code in long mode; else the address), IF, then hlt and a CPL other
        than 0 where they apply. A CPU waiting for a spinlock also names
        the lock: 'spin_wait_turn+0x9 IF=0 lock=console_lock', by its data
        symbol in `data` or else by address (one on the heap)."""
        found = (table.at(self.ip, MAX_FUNCTION_BYTES)
                 if table and self.long_mode and not self.cpl else None)
        place = (found[0] + (f"+{found[1]:#x}" if found[1] else "") if found
                 else f"{'rip' if self.long_mode else 'eip'}={self.ip:#x}")
        lock = []
        if found and found[0] == LOCK_WAIT and self.rdi is not None:
            named = data.at(self.rdi, MAX_LOCK_OFFSET) if data else None
            lock = [f"lock={named[0]}" + (f"+{named[1]:#x}" if named[1] else "") if named
                    else f"lock={self.rdi:#x}"]
        return " ".join([place, f"IF={int(self.interrupts)}", *(["hlt"] if self.halted else []),
                         *([f"CPL={self.cpl}"] if self.cpl else []), *lock])


# `info registers -a` starts each CPU with "CPU#1"; its program counter line
# reads "RIP=ffffffff8010f338 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0
# HLT=1" (EIP= and EFL= outside long mode).
CPU_HEADER = re.compile(r"^CPU#(\d+)[ \t]*$", re.M)
IP_LINE = re.compile(r"^([RE])IP=([0-9a-f]+) [RE]FL=([0-9a-f]+)(.*)$", re.M)


def parse_registers(text: str) -> list[CpuAt]:
    """Every CPU of an `info registers -a` answer; ValueError for a CPU
    without its program counter line."""
    parts = CPU_HEADER.split(text)
    cpus = []
    for index, body in zip(parts[1::2], parts[2::2]):
        m = IP_LINE.search(body)
        if not m:
            raise ValueError(f"no RIP line for CPU#{index}")
        cpl, hlt = re.search(r"\bCPL=(\d)", m[4]), re.search(r"\bHLT=(\d)", m[4])
        rdi = re.search(r"\bRDI=([0-9a-f]+)", body)
        cpus.append(CpuAt(int(index), int(m[2], 16), m[1] == "R",
                          bool(int(m[3], 16) & RFLAGS_IF), int(cpl[1]) if cpl else None,
                          bool(hlt) and hlt[1] == "1", int(rdi[1], 16) if rdi else None))
    return cpus


def cpu_ranges(indices: list[int]) -> str:
    """[1, 2, 3, 5] -> '1-3,5'."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def cpus_summary(cpus: list[CpuAt], table: Symbols | None,
                 data: Symbols | None = None) -> str:
    """'cpu0 halt_forever+0x2 IF=0 hlt, cpu1-3 idle_entry+0x8 IF=1 hlt': the
    CPUs at one place share an entry, so that 16 idle ones take one."""
    groups: dict[str, list[int]] = {}
    for cpu in sorted(cpus, key=lambda c: c.index):
        groups.setdefault(cpu.where(table, data), []).append(cpu.index)
    return ", ".join(f"cpu{cpu_ranges(indices)} {where}" for where, indices in groups.items())


def _short(e: Exception) -> str:
    """An exception in a few words, for a one-line report."""
    if isinstance(e, subprocess.TimeoutExpired):
        return "timed out"
    if isinstance(e, subprocess.CalledProcessError):
        return f"exit status {e.returncode}"
    return (e.strerror if isinstance(e, OSError) and e.strerror else str(e)) or type(e).__name__


# --- Back ends ------------------------------------------------------------------
# launch() gives (command, working directory, environment); None: ours.

class Qemu:
    """QEMU under TCG or KVM. The kernel writes to the isa-debug-exit port
    0xf4 and QEMU exits with (value << 1) | 1: 33 = success, 35 = failure;
    under -no-reboot a triple fault exits with 0. The status carries the
    kernel's verdict, so the judges check that it agrees with the KTAP."""
    output_log = emulator_log = "qemu.log"  # QEMU's own stdout and stderr
    clean_ending = Ending.SUCCESS
    verdict_in_status = True

    def interactive(self, s: Settings) -> bool:
        """With the serial port on the terminal QEMU owns it: input, Ctrl-C."""
        return s.serial == "stdio"

    def launch(self, s: Settings, iso: Path, run_dir: Path, extra_args=(), monitor=None):
        machine = s.machine + (",smm=on" if s.firmware == "uefi32" else "")
        cmd = [QEMU, "-accel", s.accel, "-cpu", s.cpu, "-machine", machine,
               "-smp", f"{s.smp},{s.topology}" if s.topology else str(s.smp),
               "-m", f"{s.mem_mib}M"]
        if s.icount:
            cmd += ["-icount", "shift=1"]
        if s.firmware == "uefi32":
            # A Secure Boot build keeps its variables in SMM-only flash.
            cmd += ["-global", "driver=cfi.pflash01,property=secure,value=on"]
        if s.firmware in ("uefi", "uefi32"):
            # OVMF writes its variable store: each run gets its own copy.
            code, vars_template = find_ovmf(s.firmware)
            shutil.copyfile(vars_template, run_dir / "ovmf-vars.fd")
            cmd += ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={_opt(code)}",
                    "-drive", f"if=pflash,format=raw,unit=1,"
                              f"file={_opt(run_dir / 'ovmf-vars.fd')}"]
        cmd += self.boot_media(s, iso)
        serial = run_dir / "serial.log"
        if s.serial == "stdio":
            # Shown on the terminal and kept in serial.log; signal=on lets
            # Ctrl-C end QEMU.
            cmd += ["-chardev", f"stdio,id=com1,signal=on,logfile={_opt(serial)}",
                    "-serial", "chardev:com1"]
        else:  # a file: path has no option parsing
            cmd += ["-serial", f"file:{serial}" if s.serial == "file" else "none"]
        cmd += ["-display", "none", "-no-reboot", "-device", DEBUG_EXIT_DEVICE]
        if monitor:
            cmd += ["-monitor", f"unix:{_opt(monitor)},server=on,wait=off"]
        # The user's arguments come last so that they can override ours.
        return cmd + list(extra_args) + list(s.qemu_args), None, None

    def boot_media(self, s: Settings, iso: Path) -> list[str]:
        """The ISO as the only boot device: in the CD-ROM drive, or on a USB
        stick (a removable usb-storage disk on an xHCI controller, the way a
        PC with a stick in a USB 3 port sees it; SeaBIOS and OVMF both boot
        from it). The stick is read-only: every run has its own ISO anyway,
        and nothing the guest does can change the next run's image."""
        if s.media == "usb":
            return ["-device", "qemu-xhci,id=xhci",
                    "-drive", f"if=none,id=stick,file={_opt(iso)},format=raw,readonly=on",
                    "-device", "usb-storage,bus=xhci.0,drive=stick,removable=on,bootindex=1"]
        return ["-drive", f"file={_opt(iso)},media=cdrom,format=raw,readonly=on",
                "-boot", "order=d"]

    def ending(self, status: int | None, run_dir: Path, serial: str) -> Ending:
        if status == EXIT_SUCCESS:
            return Ending.SUCCESS
        if status == EXIT_FAILURE:
            return Ending.PANIC if panicked(serial) else Ending.FAILURE
        return Ending.TRIPLE_FAULT if status == 0 else Ending.STOPPED

    def note(self, result: RunResult) -> str:
        if result.status == 0:
            return "exit status 0: QEMU ended without isa-debug-exit, e.g. on a triple fault"
        return f"exit status {result.status}"

    def hang_report(self, sock_path: str, kernel: str | Path, run_dir: Path) -> str:
        """Where each vCPU of this QEMU, still running past its time limit,
        is: "CPUs at: cpu0 spin_wait_turn+0x1c IF=0, ...", the monitor's whole
        answer in run_dir/HANG_REGISTERS; or "CPUs unknown (why)". Never
        raises, and gives up within HANG_MONITOR_SECONDS + HANG_NM_SECONDS:
        the report only explains a timeout, it must not become the failure."""
        try:
            return self._hang_report(sock_path, kernel, run_dir)
        except Exception as e:  # noqa: BLE001  (a bug here must leave a plain timeout)
            return f"CPUs unknown (the report broke: {_short(e)})"[:200]

    def _hang_report(self, sock_path: str, kernel: str | Path, run_dir: Path) -> str:
        try:
            # stop first: QEMU takes every vCPU out of the guest, so the
            # registers are all from one moment.
            text = _monitor(sock_path, ["stop", "info registers -a"], quit_after=False,
                            timeout=HANG_MONITOR_SECONDS).replace("\r", "")
        except OSError as e:
            return f"CPUs unknown (monitor: {_short(e)})"
        # From the first CPU on: before it the monitor echoes the command
        # as a terminal would, cursor moves and all.
        first = CPU_HEADER.search(text)
        text = text[first.start():] if first else text
        with contextlib.suppress(OSError):
            (run_dir / HANG_REGISTERS).write_text(text)
        try:
            cpus = parse_registers(text)
        except ValueError as e:
            return f"CPUs unknown ({e})"
        if not cpus:
            return "CPUs unknown (no CPU in the monitor's answer)"
        # Without symbols the addresses alone still say a good deal.
        try:
            table, missing = Symbols(symbols(kernel, HANG_NM_SECONDS)), ""
            data = Symbols(symbols(kernel, HANG_NM_SECONDS, DATA_KINDS))
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            table, data, missing = None, None, f" (no symbols: nm: {_short(e)})"
        return f"CPUs at: {cpus_summary(cpus, table, data)}{missing}"


class Bochs:
    """Bochs with its own BIOS. The kernel writes "Shutdown" to port 0x8900;
    Bochs then "panics" on purpose and exits with status 1, as for any
    fatal error, so a clean end is read from bochs.log instead, and the
    verdict is the KTAP's alone."""
    output_log = "bochs.out"       # the screen drawing script(1) copies
    emulator_log = "bochs.log"
    clean_ending = Ending.SHUTDOWN
    verdict_in_status = False

    def interactive(self, s: Settings) -> bool:
        return False

    def launch(self, s: Settings, iso: Path, run_dir: Path, extra_args=(), monitor=None):
        """Bochs runs in run_dir (bochsrc cannot quote paths). Debian's Bochs
        has no `nogui` display; `term` needs a terminal, so Bochs runs under
        script(1), which gives it a pty and copies the screen to bochs.out."""
        (run_dir / "bochs.rc").write_text("c\nquit\n")  # Bochs starts in its debugger
        serial = "com1: enabled=1, mode=file, dev=serial.log" \
            if s.serial != "none" else "com1: enabled=0"
        (run_dir / "bochsrc").write_text("\n".join([
            f"megs: {s.mem_mib}",
            # reset_on_triple_fault=0: a triple fault ends the run (as QEMU's
            # -no-reboot does) instead of booting GRUB again in a loop.
            f"cpu: model={s.cpu}, count={s.smp}, ips={BOCHS_IPS}, reset_on_triple_fault=0",
            f"romimage: file={BOCHS_ROM}",
            f"vgaromimage: file={BOCHS_VGAROM}",
            "ata0-master: type=cdrom, path=shootdown.iso, status=inserted",
            "boot: cdrom",
            serial,
            # Reading port 0xe9 gives 0xe9: how the kernel detects Bochs.
            "port_e9_hack: enabled=1",
            "display_library: term",
            # The term GUI cannot draw the 32-bpp mode GRUB sets and panics:
            # that panic only reports, so the run goes on (unseen framebuffer).
            "panic: action=fatal, term=report",
            "log: bochs.log",
            "mouse: enabled=0",
            "speaker: enabled=0",  # else ALSA complains on a machine without sound
            # Emulated time follows the instruction count, not the host clock.
            "clock: sync=none, time0=local",
            "",
        ]))
        # script -e: return Bochs's status; -f: flush; -q: no banner. The
        # term GUI (ncurses) needs a known TERM.
        cmd = ["script", "-qfec", shlex.join(["bochs", "-f", "bochsrc", "-rc", "bochs.rc"]),
               "/dev/null"]
        return cmd, run_dir, dict(os.environ, TERM="xterm")

    def ending(self, status: int | None, run_dir: Path, serial: str) -> Ending:
        return Ending.SHUTDOWN if BOCHS_SHUTDOWN in read(run_dir / "bochs.log") \
            else Ending.STOPPED

    def note(self, result: RunResult) -> str:
        if result.ending is Ending.SHUTDOWN:
            return "Bochs: shutdown by the kernel"
        panics = [line.split(">>PANIC<<", 1)[1].strip()
                  for line in read(result.emulator_log).splitlines()
                  if ">>PANIC<<" in line and "[TERM" not in line]
        return f"Bochs stopped: {panics[-1]}" if panics else f"Bochs exit status {result.status}"

    def hang_report(self, sock_path: str, kernel: str | Path, run_dir: Path) -> str:
        """Bochs has no monitor to ask: its timeouts say just that."""
        return ""


BACKENDS = {"qemu": Qemu(), "bochs": Bochs()}


# --- Running ------------------------------------------------------------------

# Emulators running now (process -> in a session of its own?), so that an
# interrupted caller can end them all.
_live: dict[subprocess.Popen, bool] = {}


def stop_all() -> None:
    """End every emulator that run() started and that is still running."""
    for proc, group in list(_live.items()):
        _stop(proc, group)


def _stop(proc: subprocess.Popen, group: bool) -> None:
    """End the emulator: politely (QEMU restores the terminal on SIGTERM),
    then by force. group: end its whole session too (script and Bochs)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(5.0)
            return
        except subprocess.TimeoutExpired:
            pass


def line_seen(serial: str, prefix: str) -> bool:
    """Whether some line of the serial output starts with `prefix`."""
    return any(line.lstrip("\r").startswith(prefix) for line in serial.split("\n"))


@contextlib.contextmanager
def monitor_socket():
    """A path for a QEMU monitor socket, in a directory of its own that goes
    afterwards. A unix socket's path must fit in 108 bytes: under /tmp when
    TMPDIR is long."""
    short = len(tempfile.gettempdir()) < 64
    sock_dir = tempfile.mkdtemp(prefix="shootdown-mon-", dir=None if short else "/tmp")
    try:
        yield os.path.join(sock_dir, "monitor.sock")
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)


def run(s: Settings, kernel: str | Path, run_dir: str | Path, *, extra_args=(),
        stream: bool = False, wait_for: str | None = None, on_seen=None,
        on_line=None, monitor: str | None = None, announce=None) -> RunResult:
    """Boot `kernel` once with settings `s` (resolved here); the ISO,
    serial.log, cmd and the emulator's logs go to run_dir.

    stream: copy serial output to stdout as it comes (QEMU does so itself
    with serial=stdio). Once a serial line starts with wait_for, call
    on_seen(proc, serial_text). on_line(line) is called for every whole
    serial line as it arrives. announce(command) comes before the start.
    monitor: where QEMU's monitor listens, for the caller to use.

    A QEMU run that times out is asked where each CPU was before it is
    stopped (Qemu.hang_report): the answer ends its error and its log.
    """
    s = s.resolve()
    boot = functools.partial(_run, s, kernel, Path(run_dir), extra_args=extra_args,
                             stream=stream, wait_for=wait_for, on_seen=on_seen,
                             on_line=on_line, announce=announce)
    # A QEMU run with a time limit gets a monitor to ask, the caller's or
    # its own. Bochs is left as it is: it has no monitor to ask.
    if monitor is not None or s.emu != "qemu" or not s.timeout:
        return boot(monitor)
    with monitor_socket() as own:
        return boot(own)


def _run(s: Settings, kernel: str | Path, run_dir: Path, monitor: str | None, *,
         extra_args, stream: bool, wait_for: str | None, on_seen, on_line,
         announce) -> RunResult:
    """run() with resolved settings and the monitor decided."""
    backend = BACKENDS[s.emu]
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("serial.log", "bochs.log", "bochs.out", "qemu.log", HANG_REGISTERS):
        (run_dir / stale).unlink(missing_ok=True)
    iso = build_iso(kernel, run_dir / "shootdown.iso", s.cmdline, s.screen)
    cmd, cwd, env = backend.launch(s, iso, run_dir, extra_args, monitor)
    shown = (f"cd {shlex.quote(str(cwd))} && " if cwd else "") + shlex.join(cmd)
    (run_dir / "cmd").write_text(shown + "\n")
    if announce:
        announce(shown)

    group = not backend.interactive(s)  # in a session of its own, off the terminal
    streamed, seen, timed_out, lines_done, hang = 0, False, False, 0, ""

    def flush(text: str) -> None:
        nonlocal streamed
        if stream and len(text) > streamed:
            sys.stdout.write(text[streamed:])
            sys.stdout.flush()
            streamed = len(text)

    def watch() -> None:
        nonlocal seen, lines_done
        text = read(run_dir / "serial.log")
        flush(text)
        if on_line:
            whole = text[:text.rfind("\n") + 1].split("\n")[:-1]
            for line in whole[lines_done:]:
                on_line(line.strip("\r"))
            lines_done = len(whole)
        if wait_for and not seen and line_seen(text, wait_for):
            seen = True
            if on_seen:
                on_seen(proc, text)

    start = time.monotonic()
    with open(run_dir / backend.output_log, "wb") if group else contextlib.nullcontext() as out:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL if group else None,
                                    stdout=out, stderr=subprocess.STDOUT if group else None,
                                    cwd=cwd, env=env, start_new_session=group)
        except OSError as e:
            return RunResult(None, "", False, 0.0, cmd, run_dir, backend, Ending.NOT_STARTED,
                             f"cannot start {cmd[0]}: {e}")
        _live[proc] = group
        try:
            while True:
                try:
                    proc.wait(0.1)
                except subprocess.TimeoutExpired:
                    pass
                if stream or on_line or (wait_for and not seen):
                    watch()
                if proc.returncode is not None:
                    break
                if s.timeout and time.monotonic() > start + s.timeout:
                    # Where the CPUs are is all a hang leaves: ask before
                    # the emulator goes.
                    if monitor:
                        hang = backend.hang_report(monitor, kernel, run_dir)
                    _stop(proc, group)
                    timed_out = True
                    break
        finally:
            if proc.poll() is None:
                _stop(proc, group)
            _live.pop(proc, None)
    duration = time.monotonic() - start

    serial = read(run_dir / "serial.log")
    flush(serial)
    status = None if timed_out else proc.returncode
    error = f"timed out after {s.timeout:g} s" if timed_out else ""
    if hang:
        error += f"; {hang}"
        # Also at the end of the log, which is what a reader of a failed
        # test opens (serial.log; QEMU's own without a serial port); the
        # result's serial text stays the guest's alone.
        registers = run_dir / HANG_REGISTERS
        _append_line(run_dir / ("serial.log" if s.serial != "none" else backend.output_log),
                     f"boot.py: {error}"
                     + (f" (every register: {registers.name})" if registers.is_file() else ""))
    if wait_for and not seen and not error:
        error = f"no serial line starting with {wait_for!r}"
    return RunResult(status, serial, timed_out, duration, cmd, run_dir, backend,
                     ending_of(backend, status, timed_out, run_dir, serial), error)


def _append_line(path: Path, line: str) -> None:
    """`line` at the end of a log, on a line of its own."""
    text = read(path)
    with contextlib.suppress(OSError), open(path, "a") as log:
        log.write(("\n" if text and not text.endswith("\n") else "") + line + "\n")


def _monitor(sock_path: str, commands: list[str], quit_after: bool = True,
             timeout: float = 30.0) -> str:
    """Send HMP commands over QEMU's monitor socket, each after a prompt, then
    wait for QEMU to close it (closing it first can make QEMU drop a quit
    unread), or, when the last command is not a quit, for the prompt that
    says it is done. Returns what the last command printed. The whole
    exchange may take `timeout` seconds (then TimeoutError): a QEMU that
    does not answer cannot hold up its caller."""
    deadline = time.monotonic() + timeout

    def wait(sock: socket.socket) -> socket.socket:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(left)
        return sock

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        wait(sock).connect(sock_path)

        def prompt() -> bytes:
            buf = b""
            while not buf.endswith(b"(qemu) "):
                chunk = wait(sock).recv(4096)
                if not chunk:
                    raise ConnectionError("monitor closed")
                buf += chunk
            return buf

        for command in commands:
            prompt()
            wait(sock).sendall(command.encode() + b"\n")
        if not quit_after:
            return prompt()[:-len(b"(qemu) ")].decode(errors="replace")
        while wait(sock).recv(4096):
            pass
        return ""


# VGA text mode: 80x25 cells of character and attribute at 0xb8000.
TEXT_COLUMNS, TEXT_ROWS, TEXT_BUFFER = 80, 25, 0xB8000
HALFWORD = re.compile(r"0x([0-9a-f]{4})\b")


def _text_screen(sock_path: str) -> list[str]:
    """The characters of an 80x25 text screen, read from video memory by the
    monitor (QEMU draws text mode with the VGA font, which the screendump
    reader cannot read), row by row; CP437's block characters as themselves."""
    dump = _monitor(sock_path, [f"xp /{TEXT_COLUMNS * TEXT_ROWS}hx {TEXT_BUFFER:#x}"],
                    quit_after=False)
    cells = [int(h, 16) for line in dump.splitlines() if ":" in line
             for h in HALFWORD.findall(line.split(":", 1)[1])]
    if len(cells) != TEXT_COLUMNS * TEXT_ROWS:
        raise ConnectionError(f"the monitor gave {len(cells)} text cells, not "
                              f"{TEXT_COLUMNS * TEXT_ROWS}")
    chars = bytes(c & 0xFF for c in cells).decode("cp437")
    return [chars[r * TEXT_COLUMNS:(r + 1) * TEXT_COLUMNS].rstrip()
            for r in range(TEXT_ROWS)]


def screendumps(s: Settings, kernel: str | Path, run_dir: str | Path,
                shot) -> tuple[RunResult, list[str]]:
    """Boot, and for every serial line for which shot(line) names a file,
    screendump to that file at once: the kernel announces a page on serial
    after drawing it and leaves it up for a while (bench/screen.c). On a
    text screen the file's .txt twin gets the screen's characters too.
    Returns the run and what went wrong with the screendumps, if anything."""
    problems = []
    with monitor_socket() as sock_path:
        def on_line(line: str) -> None:
            ppm = shot(line)
            if ppm is None:
                return
            ppm = Path(ppm).resolve()
            ppm.unlink(missing_ok=True)
            try:
                _monitor(sock_path, [f"screendump {ppm}"], quit_after=False)
                if s.screen == "text":
                    ppm.with_suffix(".txt").write_text("\n".join(_text_screen(sock_path)) + "\n")
            except OSError as e:
                problems.append(f"monitor: {e}")
                return
            if not ppm.is_file() or ppm.stat().st_size == 0:
                problems.append(f"QEMU wrote no screendump for {line!r}")

        result = run(s, kernel, run_dir, on_line=on_line, monitor=sock_path)
    return result, problems


# --- CLI ----------------------------------------------------------------------

def cli_verdict(result: RunResult) -> tuple[int, str]:
    """`make run`'s exit status for a finished run, and what to tell the user."""
    e = result.ending
    if result.timed_out:
        registers = result.run_dir / HANG_REGISTERS
        return 124, (f"\nboot.py: {result.error}; the guest was killed "
                     f"(TIMEOUT=seconds changes the limit, 0 = none)"
                     + (f"\nboot.py: every register: {registers}" if registers.is_file() else ""))
    if e is Ending.NOT_STARTED:
        return 1, f"boot.py: {result.error}"
    if e is Ending.SHUTDOWN:  # the verdict is the KTAP's: a suite that reported "not ok"
        return (1 if re.search(r"^not ok ", result.serial.replace("\r", ""), re.M) else 0), ""
    if e is Ending.SUCCESS:
        return 0, ""
    if e in (Ending.FAILURE, Ending.PANIC):
        return 1, "\nboot.py: the kernel reported failure (exit status 35)"
    if e is Ending.TRIPLE_FAULT:
        return 1, ("\nboot.py: QEMU exited without the kernel's isa-debug-exit "
                   "(a triple fault ends QEMU this way under -no-reboot)")
    if isinstance(result.backend, Bochs):
        return 1, (f"\nboot.py: Bochs stopped without the kernel's shutdown "
                   f"(see {result.emulator_log})")
    status = result.status
    return (status if status and status > 0 else 1), f"\nboot.py: QEMU exited with status {status}"


def interrupt_on_sigterm() -> None:
    """Treat SIGTERM like Ctrl-C, so the emulator is ended either way."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str]) -> int:
    interrupt_on_sigterm()
    if len(argv) != 3 or argv[1] not in ("run", "gdb"):
        print(f"usage: {argv[0]} run|gdb <kernel.elf>", file=sys.stderr)
        return 2
    mode, kernel = argv[1], argv[2]
    if not os.path.isfile(kernel):
        print(f"boot.py: no kernel at {kernel}", file=sys.stderr)
        return 2
    try:
        s = settings_from_env(Settings(serial="stdio")).resolve()
        if mode == "gdb" and s.emu != "qemu":
            raise ConfigError("gdb mode needs EMU=qemu")
    except ConfigError as e:
        print(f"boot.py: {e}", file=sys.stderr)
        return 2
    if mode == "gdb":
        s.timeout = 0  # the user takes as long as they like
        print("QEMU waits for gdb on localhost:1234. Attach with:\n"
              f"    gdb {kernel} -ex 'target remote :1234'\n"
              "(the kernel starts in 32-bit mode: use hbreak for early breakpoints)",
              flush=True)
    try:
        result = run(s, kernel, ROOT / "build" / "run",
                     extra_args=["-s", "-S"] if mode == "gdb" else [],
                     stream=(s.emu == "bochs"),
                     announce=lambda cmd: print(f"# {s.describe()}\n{cmd}", flush=True))
    except KeyboardInterrupt:
        print("\nboot.py: interrupted", file=sys.stderr)
        return 130
    except (ConfigError, RuntimeError) as e:
        print(f"boot.py: {e}", file=sys.stderr)
        return 2
    code, message = cli_verdict(result)
    if message:
        print(message, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
