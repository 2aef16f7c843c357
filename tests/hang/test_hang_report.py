#!/usr/bin/env python3
"""What a QEMU run that times out says about its CPUs (tools/run/boot.py,
Qemu.hang_report): the kernel just built boots on 3 TCG CPUs with
test=boot done=halt, so that CPU 0 halts with interrupts off once the boot
suite passed and the others idle, and is stopped at a short time limit; the
error must then name every CPU at a kernel function, CPU 0 in halt_forever,
the serial log end with the same line and the monitor's whole answer be
kept. Without QEMU, against a stand-in monitor: the answer of a 64-bit, a
32-bit and a user-mode CPU reads as it should, addresses stay when nm
fails, and a monitor that is absent or silent leaves a plain timeout with
its reason, in bounded time.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/hang-report); the boot case says SKIP without a kernel.
"""
from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from tools.run import boot
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent

# Where the runner (tools/test/run_tests.py) found the host programs: the
# kernel is beside them.
BUILD = Path(os.environ.get("HOST_BIN_DIR", HERE.parent.parent / "build" / "host")).parent
KERNEL = BUILD / "shootdown.elf"
CPUS = 3
HALTED = "shootdown: done; halted (done=halt)"
# The kernel halts some 5 s after QEMU starts on a busy 2-core host; a host
# too slow for the first limit gets one more try with a longer one, so that
# the CPUs are in the kernel when the limit comes.
LIMITS = (10, 30)
# The monitor's answer, cut to the lines read: a kernel CPU with interrupts
# off, one still in 32-bit code, one in user mode.
REGISTERS = """\
info registers -a

CPU#0
RAX=0000000000000000 RBX=0000000000000000 RCX=0000000000000000 RDX=0000000000000000
RIP=ffffffff80001012 RFL=00000086 [--S--P-] CPL=0 II=0 A20=1 SMM=0 HLT=1
CS =0008 0000000000000000 ffffffff 00af9b00 DPL=0 CS64 [-RA]

CPU#1
EAX=00000000 EBX=00000000 ECX=00000000 EDX=00000000
EIP=0009f000 EFL=00000002 [-------] CPL=0 II=0 A20=1 SMM=0 HLT=0
CS =9f00 0009f000 0000ffff 00009b00

CPU#2
RIP=0000000000401000 RFL=00000202 [-------] CPL=3 II=0 A20=1 SMM=0 HLT=0
CS =002b 0000000000000000 ffffffff 00affb00 DPL=3 CS64 [-RA]
"""


class FakeMonitor:
    """A unix socket that greets and answers like QEMU's HMP monitor, with
    `answer` for `info registers -a` (None: accepts and never says a word)."""

    def __init__(self, path: str, answer: str | None) -> None:
        self.answer = answer
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        conn, _ = self.server.accept()
        if self.answer is None:
            time.sleep(60)  # the daemon thread dies with the test
            return
        conn.sendall(b"QEMU 7.2 monitor - type 'help' for more information\r\n(qemu) ")
        buf = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                reply = self.answer if line.strip() == b"info registers -a" else ""
                conn.sendall(reply.replace("\n", "\r\n").encode() + b"(qemu) ")


def report_from(answer: str | None, kernel: Path, run_dir: Path) -> tuple[str, float]:
    """Qemu.hang_report against a FakeMonitor, and its seconds."""
    with boot.monitor_socket() as sock:
        FakeMonitor(sock, answer)
        started = time.monotonic()
        text = boot.Qemu().hang_report(sock, kernel, run_dir)
        return text, time.monotonic() - started


def entries(error: str) -> dict[int, str]:
    """'...; CPUs at: cpu0 f+0x2 IF=0 hlt, cpu1-2 g IF=1 hlt' -> each CPU's place."""
    places = {}
    for ranges, place in re.findall(r"\bcpu([\d,-]+) (\S+) IF=[01]", error.split("CPUs at: ")[-1]):
        for part in ranges.split(","):
            first, _, last = part.partition("-")
            for i in range(int(first), int(last or first) + 1):
                places[i] = place
    return places


def hung_boot(run_dir: Path) -> boot.RunResult:
    """The boot that halts, stopped at its time limit; once more with a
    longer one if the host was too slow to reach the halt."""
    for limit in LIMITS:
        settings = boot.Settings(smp=CPUS, accel="tcg", cpu="max", timeout=limit, serial="file",
                                 cmdline=["test=boot", "done=halt", "console=serial"])
        result = boot.run(settings, KERNEL, run_dir)
        if HALTED in result.serial:
            break
    return result


def main() -> int:
    cases = Cases()
    table = boot.Symbols([(0xFFFFFFFF80001000, "early"), (0xFFFFFFFF80001010, "halt_forever")])

    cpus = boot.parse_registers(REGISTERS)
    summary = boot.cpus_summary(cpus, table)
    want = "cpu0 halt_forever+0x2 IF=0 hlt, cpu1 eip=0x9f000 IF=0, cpu2 rip=0x401000 IF=1 CPL=3"
    cases.check("the answer of a 64-bit, a 32-bit and a user-mode CPU",
                summary == want, f"got {summary!r}, want {want!r}")
    # CPUs waiting for spinlocks name them: by data symbol, with the offset
    # into a static table, or by address for a lock on the heap.
    code = boot.Symbols([(0xFFFFFFFF80002000, boot.LOCK_WAIT), (0xFFFFFFFF80002040, "next")])
    data = boot.Symbols([(0xFFFFFFFF80100000, "console_lock"),
                         (0xFFFFFFFF80100100, "endpoint_table")])
    waiting = [boot.CpuAt(0, 0xFFFFFFFF80002009, True, False, 0, False, 0xFFFFFFFF80100000),
               boot.CpuAt(1, 0xFFFFFFFF80002009, True, False, 0, False, 0xFFFFFFFF80100148),
               boot.CpuAt(2, 0xFFFFFFFF80002009, True, False, 0, False, 0xFFFF800000123400)]
    summary = boot.cpus_summary(waiting, code, data)
    want = (f"cpu0 {boot.LOCK_WAIT}+0x9 IF=0 lock=console_lock, "
            f"cpu1 {boot.LOCK_WAIT}+0x9 IF=0 lock=endpoint_table+0x48, "
            f"cpu2 {boot.LOCK_WAIT}+0x9 IF=0 lock=0xffff800000123400")
    cases.check("CPUs waiting for spinlocks name the locks", summary == want,
                f"got {summary!r}, want {want!r}")
    cpu = boot.parse_registers("CPU#0\nRSI=0000000000000001 RDI=ffffffff80100000 RBP=0\n"
                               "RIP=ffffffff80002009 RFL=00000086 [--S--P-] CPL=0 HLT=0\n")[0]
    cases.check("the lock's address is read from RDI", cpu.rdi == 0xFFFFFFFF80100000,
                f"got {cpu.rdi!r}")
    idle = [boot.CpuAt(i, 0xFFFFFFFF80001014, True, True, 0, True) for i in (1, 2, 3, 5)]
    summary = boot.cpus_summary(idle, table)
    cases.check("CPUs at one place share an entry",
                summary == "cpu1-3,5 halt_forever+0x4 IF=1 hlt", f"got {summary!r}")

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        text, _ = report_from(REGISTERS, run_dir / "no-such.elf", run_dir)
        cases.check("without symbols (nm fails) the addresses stay, with the reason",
                    text.startswith("CPUs at: cpu0 rip=0xffffffff80001012 IF=0 hlt, ")
                    and "(no symbols: nm: " in text
                    and (run_dir / boot.HANG_REGISTERS).read_text().startswith("CPU#0\n"),
                    f"got {text!r}")
        text, _ = report_from("nothing like registers\n", run_dir / "no-such.elf", run_dir)
        cases.check("an answer without CPUs: unknown, with the reason",
                    text == "CPUs unknown (no CPU in the monitor's answer)", f"got {text!r}")
        boot.HANG_MONITOR_SECONDS = 1.0  # the stand-in never answers: no need to wait 6 s
        text, seconds = report_from(None, run_dir / "no-such.elf", run_dir)
        cases.check("a silent monitor: unknown within the time allowed",
                    text == "CPUs unknown (monitor: timed out)" and seconds < 3,
                    f"got {text!r} after {seconds:.1f} s")
        with boot.monitor_socket() as sock:
            text = boot.Qemu().hang_report(sock, KERNEL, run_dir)
        cases.check("no monitor at all: unknown, with the reason",
                    text == "CPUs unknown (monitor: No such file or directory)", f"got {text!r}")

    name = f"a QEMU run that times out names each of its {CPUS} CPUs at a kernel function"
    if not KERNEL.is_file():
        cases.skip(name, f"no kernel at {KERNEL}")
        return cases.report()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        result = hung_boot(run_dir)
        log = boot.read(run_dir / "serial.log")
        registers = boot.read(run_dir / boot.HANG_REGISTERS)
    functions = {n for _, n in boot.symbols(KERNEL)}
    places = entries(result.error)
    problems = []
    if not result.timed_out or not re.match(r"timed out after \d+ s; CPUs at: cpu", result.error):
        problems.append(f"not a timeout with the CPUs: {result.error or result.note()!r}")
    if HALTED not in result.serial:
        problems.append(f"the kernel did not reach {HALTED!r} within {LIMITS[-1]} s")
    if sorted(places) != list(range(CPUS)):
        problems.append(f"CPUs named: {sorted(places)}, not 0-{CPUS - 1}")
    problems += [f"cpu{i} at {p!r}, not at a kernel function" for i, p in sorted(places.items())
                 if p.split("+")[0] not in functions]
    if not places.get(0, "").startswith("halt_forever"):
        problems.append(f"cpu0 at {places.get(0)!r}, not in halt_forever")
    if not log.rstrip("\n").endswith(result.error + f" (every register: {boot.HANG_REGISTERS})"):
        problems.append(f"the serial log does not end with the summary: {log[-200:]!r}")
    if registers.count("CPU#") != CPUS:
        problems.append(f"{boot.HANG_REGISTERS} holds {registers.count('CPU#')} CPUs")
    cases.check(name, problems)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
