#!/usr/bin/env python3
"""Boot the kernel in QEMU or Bochs: a CLI for `make run` / `make qemu-gdb`
and a library for tools/run-tests.py.

    tools/boot.py run build/shootdown.elf     boot, stream serial, map the exit
    tools/boot.py gdb build/shootdown.elf     boot halted, wait for gdb on :1234

Settings come from environment variables (all optional; see Settings):
EMU SMP MEM ACCEL CPU FIRMWARE MACHINE CMDLINE QEMU_ARGS ICOUNT TIMEOUT.

How a run ends is each back end's business (Qemu, Bochs below);
ending_of() turns it into one Ending.

Python 3.11 standard library only.
"""

from __future__ import annotations

import dataclasses
import enum
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

ROOT = Path(__file__).resolve().parent.parent
MKISO = ROOT / "tools" / "mkiso.sh"

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

BOCHS_ROM = "/usr/share/bochs/BIOS-bochs-latest"
BOCHS_VGAROM = "/usr/share/bochs/VGABIOS-lgpl-latest"
BOCHS_CPU = "corei7_skylake_x"
BOCHS_IPS = 50_000_000  # emulated instructions per emulated second
BOCHS_SHUTDOWN = "Shutdown port: shutdown requested"

ENV_VARS = ("EMU", "SMP", "MEM", "ACCEL", "CPU", "FIRMWARE", "MACHINE",
            "CMDLINE", "QEMU_ARGS", "ICOUNT", "TIMEOUT")
# The variables that pick a machine (TIMEOUT only changes patience).
MACHINE_VARS = tuple(v for v in ENV_VARS if v != "TIMEOUT")


class ConfigError(Exception):
    """A setting that cannot work (bad value or impossible combination)."""


# --- Host facts -------------------------------------------------------------

def kvm_status() -> tuple[bool, str]:
    """Whether KVM is real hardware virtualization here, and if not, why.

    /dev/kvm can exist without VT-x/AMD-V (e.g. a software emulator such as
    kvm_pvm); it is then slower than TCG for us, so it only counts with
    vmx/svm among the CPU flags as well.
    """
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    if not os.path.exists("/dev/kvm"):
        return False, "no /dev/kvm on this host"
    if not flags & {"vmx", "svm"}:
        return False, ("/dev/kvm here is not hardware virtualization "
                       "(no vmx/svm in /proc/cpuinfo)")
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return False, f"/dev/kvm cannot be opened read-write ({e.strerror})"
    os.close(fd)
    return True, "KVM available"


def host_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def find_ovmf() -> tuple[str, str]:
    for code, vars_ in OVMF_PAIRS:
        if os.path.isfile(code) and os.path.isfile(vars_):
            return code, vars_
    raise ConfigError("FIRMWARE=uefi: no OVMF images found (apt-get install ovmf)")


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
    firmware: str = "bios"       # bios | uefi (QEMU only)
    machine: str = "pc"          # pc | q35 (QEMU only)
    cmdline: list[str] = dataclasses.field(default_factory=list)
    qemu_args: list[str] = dataclasses.field(default_factory=list)
    icount: bool = False         # deterministic TCG: -icount shift=1
    timeout: float | None = None  # seconds; None: 120 (QEMU), 600 (Bochs); 0: none
    serial: str = "file"         # file | stdio | none (where COM1 goes)
    topology: str = ""           # QEMU only: more -smp keys, e.g. sockets=2,cores=3

    def resolve(self) -> "Settings":
        """Fill in defaults and check combinations; returns a new copy."""
        s = dataclasses.replace(self, cmdline=list(self.cmdline),
                                qemu_args=list(self.qemu_args))
        if s.emu not in ("qemu", "bochs"):
            raise ConfigError(f"EMU={s.emu!r}: expected qemu or bochs")
        if s.firmware not in ("bios", "uefi"):
            raise ConfigError(f"FIRMWARE={s.firmware!r}: expected bios or uefi")
        if s.machine not in ("pc", "q35"):
            raise ConfigError(f"MACHINE={s.machine!r}: expected pc or q35")
        if s.serial not in ("file", "stdio", "none"):
            raise ConfigError(f"serial={s.serial!r}: expected file, stdio or none")
        if s.smp is None:
            s.smp = max(2, host_cpus())
        if s.smp < 1:
            raise ConfigError(f"SMP={s.smp}: need at least 1 CPU")
        if s.timeout is None:
            s.timeout = 600.0 if s.emu == "bochs" else 120.0
        if s.emu == "bochs":
            if s.firmware != "bios":
                raise ConfigError("EMU=bochs boots with its own BIOS only (FIRMWARE=bios)")
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
        return s

    def describe(self) -> str:
        if self.emu == "bochs":
            return f"bochs {self.cpu} smp={self.smp} mem={self.mem_mib}M"
        return (f"qemu {self.accel} -cpu {self.cpu} {self.machine} {self.firmware} "
                f"smp={self.smp} mem={self.mem_mib}M" + (" icount" if self.icount else ""))


def env_overrides(env=os.environ) -> dict[str, str]:
    """The run variables that are set and non-empty."""
    return {v: env[v] for v in ENV_VARS if env.get(v, "").strip()}


def settings_from_env(base: Settings | None = None, env=os.environ) -> Settings:
    """`base` with every variable that is set in the environment applied."""
    s = dataclasses.replace(base) if base else Settings()
    o = env_overrides(env)
    if "EMU" in o:
        s.emu = o["EMU"].strip().lower()
    if "SMP" in o:
        try:
            s.smp = int(o["SMP"])
        except ValueError:
            raise ConfigError(f"SMP={o['SMP']!r}: expected a number") from None
    if "MEM" in o:
        s.mem_mib = parse_mem(o["MEM"])
    if "ACCEL" in o:
        s.accel = o["ACCEL"].strip().lower()
    if "CPU" in o:
        s.cpu = o["CPU"].strip()
    if "FIRMWARE" in o:
        s.firmware = o["FIRMWARE"].strip().lower()
    if "MACHINE" in o:
        s.machine = o["MACHINE"].strip().lower()
    if "CMDLINE" in o:
        s.cmdline = s.cmdline + shlex.split(o["CMDLINE"])
    if "QEMU_ARGS" in o:
        s.qemu_args = s.qemu_args + shlex.split(o["QEMU_ARGS"])
    if "ICOUNT" in o:
        s.icount = o["ICOUNT"].strip().lower() not in ("0", "no", "false", "off")
    if "TIMEOUT" in o:
        try:
            s.timeout = float(o["TIMEOUT"])
        except ValueError:
            raise ConfigError(f"TIMEOUT={o['TIMEOUT']!r}: expected seconds") from None
    return s


# --- Images and command lines ------------------------------------------------

def user_programs(kernel: str | Path) -> list[Path]:
    """The user programs built with `kernel`: <build>/user/*.elf, sorted.

    The Makefile puts them next to the kernel (build/shootdown.elf,
    build/user/hello.elf), also for another BUILD= directory.
    """
    return sorted(Path(kernel).resolve().parent.glob("user/*.elf"))


def build_iso(kernel: str | Path, iso: str | Path, cmdline: list[str]) -> Path:
    """Build a boot-at-once ISO for `kernel` with these command-line words,
    carrying every user program as a multiboot2 module."""
    iso = Path(iso)
    iso.parent.mkdir(parents=True, exist_ok=True)
    # An empty word tells mkiso.sh "no menu" even for an empty command line.
    words = list(cmdline) or [""]
    modules = [arg for elf in user_programs(kernel) for arg in ("--module", str(elf))]
    proc = subprocess.run([str(MKISO), *modules, str(iso), str(kernel), *words],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mkiso.sh failed:\n{proc.stdout}")
    return iso


def _opt(path: Path | str) -> str:
    """A path inside a QEMU option string, where a comma must be doubled."""
    return str(path).replace(",", ",,")


# --- How a run ended ------------------------------------------------------------

class Ending(enum.Enum):
    """How one emulator run ended: decided once, in ending_of() (or where
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
    backend: "Backend"
    ending: Ending
    error: str = ""          # why it could not run or was stopped

    @property
    def serial_path(self) -> Path:
        return self.run_dir / "serial.log"

    @property
    def clean(self) -> bool:
        """The kernel ended the run itself and, where the exit status can
        say so (QEMU), said success."""
        return self.ending in self.backend.clean_endings

    @property
    def emulator_log(self) -> Path:
        """Where the emulator says why it stopped."""
        return self.run_dir / self.backend.emulator_log

    def note(self) -> str:
        """How the emulator ended, with the likely reason when it is not clean."""
        return self.backend.note(self)


def panicked(serial: str) -> bool:
    """The kernel's panic report begins with "PANIC: "."""
    return "PANIC: " in serial


def ending_of(backend: "Backend", status: int | None, timed_out: bool,
              run_dir: Path, serial: str) -> Ending:
    """The one place that decides how a run ended: what the back end's exit
    channel says, unless we stopped it at the deadline. A clean end still
    counts then: Bochs logs the kernel's shutdown before its own teardown,
    which can outlive the deadline on a loaded host."""
    ending = backend.ending(status, run_dir, serial)
    if timed_out and ending not in backend.clean_endings:
        return Ending.TIMEOUT
    return ending


# --- Back ends ------------------------------------------------------------------

@dataclasses.dataclass
class Launch:
    """How to start one emulator process."""
    cmd: list[str]
    cwd: Path | None = None
    env: dict[str, str] = dataclasses.field(default_factory=lambda: dict(os.environ))


class Qemu:
    """QEMU under TCG or KVM (Settings.accel picks the variant).

    The kernel writes to the isa-debug-exit port 0xf4 and QEMU exits with
    (value << 1) | 1: 33 = success, 35 = failure. With -no-reboot a triple
    fault becomes a plain exit with status 0. The exit status carries the
    kernel's verdict, so the judges check that it agrees with the KTAP.
    """
    name = "qemu"
    output_log = "qemu.log"        # QEMU's own stdout and stderr
    emulator_log = "qemu.log"
    clean_endings = frozenset({Ending.SUCCESS})
    verdict_in_status = True

    def interactive(self, s: Settings) -> bool:
        """With the serial port on the terminal QEMU owns it: input, Ctrl-C."""
        return s.serial == "stdio"

    def launch(self, s: Settings, iso: Path, run_dir: Path, extra_args: list[str] = (),
               monitor: str | None = None) -> Launch:
        accel = "kvm" if s.accel == "kvm" else "tcg"
        cmd = [QEMU, "-accel", accel, "-cpu", s.cpu, "-machine", s.machine,
               "-smp", f"{s.smp},{s.topology}" if s.topology else str(s.smp),
               "-m", f"{s.mem_mib}M"]
        if s.icount:
            cmd += ["-icount", "shift=1"]
        if s.firmware == "uefi":
            cmd += self._ovmf_drives(run_dir)
        cmd += ["-drive", f"file={_opt(iso)},media=cdrom,format=raw,readonly=on",
                "-boot", "order=d"]
        cmd += self._serial(s, run_dir)
        cmd += ["-display", "none", "-no-reboot", "-device", DEBUG_EXIT_DEVICE]
        if monitor:
            cmd += ["-monitor", f"unix:{_opt(monitor)},server=on,wait=off"]
        # The user's arguments come last so that they can override ours.
        return Launch(cmd + list(extra_args) + list(s.qemu_args))

    @staticmethod
    def _ovmf_drives(run_dir: Path) -> list[str]:
        """OVMF writes its variable store: each run gets its own copy."""
        code, vars_template = find_ovmf()
        vars_copy = run_dir / "ovmf-vars.fd"
        shutil.copyfile(vars_template, vars_copy)
        return ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={_opt(code)}",
                "-drive", f"if=pflash,format=raw,unit=1,file={_opt(vars_copy)}"]

    @staticmethod
    def _serial(s: Settings, run_dir: Path) -> list[str]:
        if s.serial == "stdio":
            # Shown on the terminal and kept in serial.log; signal=on lets
            # Ctrl-C end QEMU.
            return ["-chardev",
                    f"stdio,id=com1,signal=on,logfile={_opt(run_dir / 'serial.log')}",
                    "-serial", "chardev:com1"]
        if s.serial == "file":
            return ["-serial", f"file:{run_dir / 'serial.log'}"]  # no option parsing here
        return ["-serial", "none"]

    def ending(self, status: int | None, run_dir: Path, serial: str) -> Ending:
        if status == EXIT_SUCCESS:
            return Ending.SUCCESS
        if status == EXIT_FAILURE:
            return Ending.PANIC if panicked(serial) else Ending.FAILURE
        if status == 0:
            return Ending.TRIPLE_FAULT
        return Ending.STOPPED

    def note(self, result: RunResult) -> str:
        if result.status == 0:
            return "exit status 0: QEMU ended without isa-debug-exit, e.g. on a triple fault"
        return f"exit status {result.status}"


class Bochs:
    """Bochs with its own BIOS, under script(1).

    The kernel writes "Shutdown" to port 0x8900; Bochs then "panics" on
    purpose and exits with status 1, the same as for any other fatal error,
    so a clean end is recognised from bochs.log instead, and the verdict
    is the KTAP's alone.
    """
    name = "bochs"
    output_log = "bochs.out"       # the screen drawing script(1) copies
    emulator_log = "bochs.log"
    clean_endings = frozenset({Ending.SHUTDOWN})
    verdict_in_status = False

    def interactive(self, s: Settings) -> bool:
        return False

    def launch(self, s: Settings, iso: Path, run_dir: Path, extra_args: list[str] = (),
               monitor: str | None = None) -> Launch:
        """Write bochsrc and the debugger rc file next to the ISO; Bochs runs
        in run_dir (bochsrc has no quoting for paths with spaces or commas).

        Debian's Bochs has no `nogui` display library; `term` (bochs-term)
        needs a terminal, so Bochs runs under script(1), which gives it a
        pty and copies the screen drawing to bochs.out.
        """
        (run_dir / "bochs.rc").write_text("c\nquit\n")  # Bochs starts in its debugger
        (run_dir / "bochsrc").write_text(self.bochsrc(s))
        # script -e: return Bochs's status; -f: flush; -q: no banner.
        cmd = ["script", "-qfec", shlex.join(["bochs", "-f", "bochsrc", "-rc", "bochs.rc"]),
               "/dev/null"]
        env = dict(os.environ, TERM="xterm")  # the term GUI (ncurses) needs a known TERM
        return Launch(cmd, cwd=run_dir, env=env)

    @staticmethod
    def bochsrc(s: Settings) -> str:
        """The term GUI cannot draw the 32-bpp mode GRUB sets and panics;
        that one panic is made a report so the run goes on (the framebuffer
        still works, it is just not shown)."""
        serial = "com1: enabled=1, mode=file, dev=serial.log" \
            if s.serial != "none" else "com1: enabled=0"
        return "\n".join([
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
            "panic: action=fatal, term=report",
            "log: bochs.log",
            "mouse: enabled=0",
            "speaker: enabled=0",  # else ALSA complains on a machine without sound
            # Emulated time follows the instruction count, not the host clock.
            "clock: sync=none, time0=local",
            "",
        ])

    def ending(self, status: int | None, run_dir: Path, serial: str) -> Ending:
        if BOCHS_SHUTDOWN in _read(run_dir / "bochs.log"):
            return Ending.SHUTDOWN
        return Ending.STOPPED

    def note(self, result: RunResult) -> str:
        if result.ending is Ending.SHUTDOWN:
            return "Bochs: shutdown by the kernel"
        panics = [line.split(">>PANIC<<", 1)[1].strip()
                  for line in _read(result.emulator_log).splitlines()
                  if ">>PANIC<<" in line and "[TERM" not in line]
        return f"Bochs stopped: {panics[-1]}" if panics else f"Bochs exit status {result.status}"


Backend = Qemu | Bochs
BACKENDS: dict[str, Backend] = {"qemu": Qemu(), "bochs": Bochs()}


# --- Running ------------------------------------------------------------------

# Emulators running now (process -> in a session of its own?), so that an
# interrupted caller can end them all.
_live: dict[subprocess.Popen, bool] = {}


def stop_all() -> None:
    """End every emulator that run() started and that is still running."""
    for proc, group in list(_live.items()):
        _stop(proc, group)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _stop(proc: subprocess.Popen, group: bool) -> None:
    """End the emulator: politely (QEMU restores the terminal on SIGTERM),
    then by force. group: it runs in its own session, so end everything it
    started too (script and Bochs)."""
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
            continue


def line_seen(serial: str, prefix: str) -> bool:
    """Whether some line of the serial output starts with `prefix`."""
    return any(line.lstrip("\r").startswith(prefix) for line in serial.split("\n"))


@dataclasses.dataclass
class _Watch:
    """Polls serial.log while the emulator runs: streams it, and calls
    on_seen(proc, text) once a line starts with wait_for."""
    path: Path
    stream: bool
    wait_for: str | None
    on_seen: object
    streamed: int = 0
    seen: bool = False

    def poll(self, proc: subprocess.Popen) -> None:
        if not (self.stream or (self.wait_for and not self.seen)):
            return
        text = _read(self.path)
        self.flush(text)
        if self.wait_for and not self.seen and line_seen(text, self.wait_for):
            self.seen = True
            if self.on_seen:
                self.on_seen(proc, text)

    def flush(self, text: str) -> None:
        if self.stream and len(text) > self.streamed:
            sys.stdout.write(text[self.streamed:])
            sys.stdout.flush()
            self.streamed = len(text)


def _wait(proc: subprocess.Popen, watch: _Watch, timeout: float, group: bool) -> bool:
    """Wait for the emulator to end, watching its serial port; stop it at
    the timeout (0: none). Returns whether it timed out."""
    deadline = time.monotonic() + timeout if timeout else None
    try:
        while True:
            try:
                proc.wait(0.1)
                watch.poll(proc)
                return False
            except subprocess.TimeoutExpired:
                watch.poll(proc)
            if deadline and time.monotonic() > deadline:
                _stop(proc, group)
                return True
    except KeyboardInterrupt:
        _stop(proc, group)
        raise
    finally:
        if proc.poll() is None:
            _stop(proc, group)
        _live.pop(proc, None)


def run(s: Settings, kernel: str | Path, run_dir: str | Path, *,
        extra_args: list[str] = (), stream: bool = False,
        wait_for: str | None = None, on_seen=None, monitor: str | None = None,
        announce=None) -> RunResult:
    """Boot `kernel` once with settings `s` (resolved here) in `run_dir`.

    The ISO, serial.log, cmd and emulator logs all go to run_dir. stream:
    copy new serial output to stdout as it comes (Bochs; QEMU streams by
    itself with serial=stdio). wait_for/on_seen: once a serial line starts
    with wait_for, call on_seen(proc, serial_text) (e.g. for a screendump).
    announce(cmd_text) is called with the command line before the start.
    """
    s = s.resolve()
    backend = BACKENDS[s.emu]
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("serial.log", "bochs.log", "bochs.out", "qemu.log"):
        (run_dir / stale).unlink(missing_ok=True)
    iso = build_iso(kernel, run_dir / "shootdown.iso", s.cmdline)
    launch = backend.launch(s, iso, run_dir, extra_args, monitor)
    shown = (f"cd {shlex.quote(str(launch.cwd))} && " if launch.cwd else "") \
        + shlex.join(launch.cmd)
    (run_dir / "cmd").write_text(shown + "\n")
    if announce:
        announce(shown)

    interactive = backend.interactive(s)
    out = None if interactive else open(run_dir / backend.output_log, "wb")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(launch.cmd, stdin=None if interactive else subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT if out else None,
                                cwd=launch.cwd, env=launch.env,
                                start_new_session=not interactive)
    except OSError as e:
        if out:
            out.close()
        return RunResult(None, "", False, 0.0, launch.cmd, run_dir, backend, Ending.NOT_STARTED,
                         error=f"cannot start {launch.cmd[0]}: {e}")
    _live[proc] = not interactive
    watch = _Watch(run_dir / "serial.log", stream, wait_for, on_seen)
    try:
        timed_out = _wait(proc, watch, s.timeout, group=not interactive)
    finally:
        if out:
            out.close()
    duration = time.monotonic() - start

    serial = _read(run_dir / "serial.log")
    watch.flush(serial)
    status = None if timed_out else proc.returncode
    error = f"timed out after {s.timeout:g} s" if timed_out else ""
    if wait_for and not watch.seen and not error:
        error = f"no serial line starting with {wait_for!r}"
    return RunResult(status, serial, timed_out, duration, launch.cmd, run_dir, backend,
                     ending_of(backend, status, timed_out, run_dir, serial), error)


def _monitor_command(sock_path: str, commands: list[str], timeout: float = 30.0) -> str:
    """Send HMP commands over QEMU's monitor socket, one prompt at a time."""
    prompt = b"(qemu) "
    transcript = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(sock_path)

        def until_prompt() -> None:
            nonlocal transcript
            buf = b""
            while not buf.endswith(prompt):
                chunk = sock.recv(4096)
                if not chunk:
                    raise ConnectionError("monitor closed")
                buf += chunk
            transcript += buf

        until_prompt()
        for command in commands:
            sock.sendall(command.encode() + b"\n")
            if command == "quit":
                # No prompt follows: wait for QEMU to close the socket. Closing
                # it first can make QEMU drop the command unread.
                while sock.recv(4096):
                    pass
                break
            until_prompt()
    return transcript.decode("utf-8", "replace")


def screendump(s: Settings, kernel: str | Path, run_dir: str | Path, ppm: str | Path,
               wait_for: str = "boot: ", settle: float = 1.0,
               announce=None) -> tuple[RunResult, str]:
    """Boot, wait for a serial line starting with wait_for, screendump, quit.

    Returns the run and "" on success or why no screendump was taken. Give
    the kernel `done=halt` so that it is still on screen when we look.
    settle: seconds of serial silence to wait for before the screendump, so
    the framebuffer has caught up with the serial port.
    """
    ppm = Path(ppm).resolve()
    ppm.unlink(missing_ok=True)
    # A Unix socket path is limited to ~107 bytes: keep it short, in /tmp.
    sock_dir = tempfile.mkdtemp(prefix="shootdown-mon-")
    sock_path = os.path.join(sock_dir, "monitor.sock")
    problem = []

    def take(proc: subprocess.Popen, _text: str) -> None:
        serial_path = Path(run_dir) / "serial.log"
        size, quiet_since, give_up = -1, time.monotonic(), time.monotonic() + 10
        while time.monotonic() < give_up and proc.poll() is None:
            now_size = serial_path.stat().st_size if serial_path.exists() else 0
            if now_size != size:
                size, quiet_since = now_size, time.monotonic()
            elif time.monotonic() - quiet_since >= settle:
                break
            time.sleep(0.1)
        try:
            _monitor_command(sock_path, [f"screendump {ppm}", "quit"])
        except OSError as e:
            problem.append(f"monitor: {e}")

    try:
        result = run(dataclasses.replace(s), kernel, run_dir, wait_for=wait_for,
                     on_seen=take, monitor=sock_path, announce=announce)
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)
    if problem:
        return result, problem[0]
    if result.error:
        return result, result.error
    if not ppm.is_file() or ppm.stat().st_size == 0:
        return result, "QEMU wrote no screendump"
    return result, ""


# --- CLI ----------------------------------------------------------------------

def top_level_failure(serial: str) -> bool:
    """A suite of the KTAP reported "not ok" (Bochs's only verdict)."""
    return re.search(r"^not ok ", serial.replace("\r", ""), re.M) is not None


def cli_verdict(result: RunResult) -> tuple[int, str]:
    """`make run`'s exit status for a finished run, and what to tell the user."""
    e = result.ending
    if result.timed_out:
        return 124, (f"\nboot.py: {result.error}; the guest was killed "
                     f"(TIMEOUT=seconds changes the limit, 0 = none)")
    if e is Ending.NOT_STARTED:
        return 1, f"boot.py: {result.error}"
    if e is Ending.SHUTDOWN:
        return (1 if top_level_failure(result.serial) else 0), ""
    if e is Ending.SUCCESS:
        return 0, ""
    if e in (Ending.FAILURE, Ending.PANIC):
        return 1, "\nboot.py: the kernel reported failure (exit status 35)"
    if e is Ending.TRIPLE_FAULT:
        return 1, ("\nboot.py: QEMU exited without the kernel's isa-debug-exit "
                   "(a triple fault ends QEMU this way under -no-reboot)")
    if result.backend.name == "bochs":
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
        if mode == "gdb":
            if s.emu != "qemu":
                raise ConfigError("gdb mode needs EMU=qemu")
            s.timeout = 0  # the user takes as long as they like
    except ConfigError as e:
        print(f"boot.py: {e}", file=sys.stderr)
        return 2

    extra = ["-s", "-S"] if mode == "gdb" else []
    if mode == "gdb":
        print("QEMU waits for gdb on localhost:1234. Attach with:\n"
              f"    gdb {kernel} -ex 'target remote :1234'\n"
              "(the kernel starts in 32-bit mode: use hbreak for early breakpoints)",
              flush=True)

    def announce(cmd: str) -> None:
        print(f"# {s.describe()}\n{cmd}", flush=True)

    try:
        result = run(s, kernel, ROOT / "build" / "run", extra_args=extra,
                     stream=(s.emu == "bochs"), announce=announce)
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
