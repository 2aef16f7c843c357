"""Where a code path's instructions go: `make profile-path`.

Boots the kernel under QEMU TCG with -icount (one CPU) and a benchmark
selected, halted for gdb; gdb runs to the AFTER function once (none: not
at all), then stops at the AT function's SKIP+1st hit (functions of the
kernel or of the user program `bench`, which the IPC and system-call rows
run), then single-steps STEPS instructions. The path from
one hit to the next is one iteration: this prints how many of its
instructions ran in each function, the largest first, and with --flow the
order in which the functions came.

    python3 -m tools.run.path_profile [--bench ipc] [--after server_thread]
                          [--at round_trip] [--skip 100] [--steps 3000]
                          [--cmdline "ipc_fastpath=off"] [--flow]
                          [--json FILE] [KERNEL]

The defaults profile the IPC round trip within one address space (the
`ipc spaces=1,cpus=1` row, whose server thread starts in server_thread;
--after none lands in the two-space row before it). Every instruction counts one, as under icount: these are path lengths,
not cycles. Needs gdb (make deps installs it). Exit status: 0, 1 when the
path was not found (the symbol never hit twice within STEPS), 2 for bad
usage or a boot that failed.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tools import ROOT
from tools.run import boot

USER_ELF = ROOT / "build" / "user" / "bench.elf"
RUN_DIR = ROOT / "build" / "profile-path"
GDB_SECONDS = 600  # single-stepping over gdb's remote protocol is slow
START_SECONDS = 120  # the ISO is built first: slow on a busy host

# Runs inside gdb: the breakpoint, the skips, then one $pc per step.
GDB_SCRIPT = """
import gdb, os, time
gdb.execute("set pagination off")
deadline = time.monotonic() + float(os.environ["PROFILE_START_SECONDS"])
while True:  # QEMU listens once the ISO is built and it has started
    try:
        gdb.execute("target remote 127.0.0.1:" + os.environ["PROFILE_PORT"])
        break
    except gdb.error:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.2)
if os.environ["PROFILE_AFTER"]:  # first into the part of the run wanted
    gdb.execute("hbreak *" + os.environ["PROFILE_AFTER"])
    gdb.execute("continue")
    gdb.execute("delete")
gdb.execute("hbreak *" + os.environ["PROFILE_AT"])
gdb.execute("ignore $bpnum " + os.environ["PROFILE_SKIP"])
gdb.execute("continue")
gdb.execute("delete")
with open(os.environ["PROFILE_OUT"], "w") as out:
    for _ in range(int(os.environ["PROFILE_STEPS"])):
        out.write("%x\\n" % (int(gdb.parse_and_eval("$pc")) & (2**64 - 1)))
        gdb.execute("stepi", to_string=True)
gdb.execute("kill")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trace(kernel: Path, args: argparse.Namespace, address: int, after: int | None) -> list[int]:
    """Boots halted, lets gdb record the steps; the $pc of each."""
    port = free_port()
    settings = boot.Settings(smp=1, accel="tcg", icount=True,
                             cmdline=[f"bench={args.bench}", "icount", *args.cmdline.split()],
                             timeout=GDB_SECONDS + 60, serial="file")
    booted: dict = {}

    def run() -> None:
        try:
            booted["result"] = boot.run(settings, kernel, RUN_DIR,
                                        extra_args=["-gdb", f"tcp:127.0.0.1:{port}", "-S"])
        except (boot.ConfigError, RuntimeError, OSError) as e:
            booted["error"] = e

    emulator = threading.Thread(target=run, daemon=True)
    emulator.start()
    with tempfile.TemporaryDirectory() as tmp:
        script, steps = Path(tmp) / "profile.py", Path(tmp) / "steps"
        script.write_text(GDB_SCRIPT)
        env = dict(os.environ, PROFILE_PORT=str(port), PROFILE_AT=hex(address),
                   PROFILE_START_SECONDS=str(START_SECONDS),
                   PROFILE_AFTER=hex(after) if after is not None else "",
                   PROFILE_SKIP=str(args.skip), PROFILE_STEPS=str(args.steps),
                   PROFILE_OUT=str(steps))
        gdb_said = ""
        try:
            gdb_said = subprocess.run(["gdb", "-batch", "-nx", "-x", str(script)], env=env,
                                      capture_output=True, text=True,
                                      timeout=GDB_SECONDS).stderr
        except subprocess.TimeoutExpired:
            gdb_said = f"gdb took over {GDB_SECONDS} s"
        finally:
            boot.stop_all()
            emulator.join(10)
        if "error" in booted:
            raise RuntimeError(f"the boot failed: {booted['error']}")
        text = steps.read_text() if steps.exists() else ""
        if not text:
            raise RuntimeError("gdb recorded nothing: " + (gdb_said.strip()[-300:] or "?"))
    return [int(line, 16) for line in text.split()]


def iteration(pcs: list[int], names: list[str], at: str) -> list[str] | None:
    """The functions of each step from the first entry into `at` to the
    next (an entry: a step in `at` after one outside it)."""
    entries = [i for i, n in enumerate(names) if n == at and (i == 0 or names[i - 1] != at)]
    if len(entries) < 2:
        return None
    return names[entries[0]:entries[1]]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kernel", nargs="?", default=str(ROOT / "build" / "shootdown.elf"))
    p.add_argument("--bench", default="ipc", help="the benchmark to boot with (bench=)")
    p.add_argument("--at", default="round_trip",
                   help="a function that starts each iteration (kernel or user/bench.c)")
    p.add_argument("--after", default="server_thread",
                   help="a function to reach once before counting hits of --at "
                        "(none: from the boot)")
    p.add_argument("--skip", type=int, default=100, help="hits of --at to let pass first")
    p.add_argument("--steps", type=int, default=3000, help="instructions to record")
    p.add_argument("--cmdline", default="", help="more kernel options, e.g. ipc_fastpath=off")
    p.add_argument("--flow", action="store_true", help="also print the functions in order")
    p.add_argument("--json", help="write {function: instructions} here too")
    args = p.parse_args(argv)
    if args.skip < 0 or args.steps < 2:
        print("path_profile: --skip must be 0 or more, --steps 2 or more", file=sys.stderr)
        return 2
    if not shutil.which("gdb"):
        print("path_profile: needs gdb (apt-get install gdb, or make deps)", file=sys.stderr)
        return 2
    kernel = Path(args.kernel)
    if not kernel.is_file() or not USER_ELF.is_file():
        print(f"path_profile: build first (no {kernel if not kernel.is_file() else USER_ELF})",
              file=sys.stderr)
        return 2
    table = boot.Symbols(boot.symbols(kernel) + boot.symbols(USER_ELF))
    by_name = {name: address for address, name in table.entries}
    for name in (args.at, args.after):
        if name != "none" and name not in by_name:
            print(f"path_profile: no function {name!r} in the kernel or in user/bench.c",
                  file=sys.stderr)
            return 2
    after = None if args.after == "none" else by_name[args.after]
    try:
        pcs = trace(kernel, args, by_name[args.at], after)
    except RuntimeError as e:
        print(f"path_profile: {e}", file=sys.stderr)
        return 2
    names = [(table.at(pc) or ("?", 0))[0] for pc in pcs]
    path = iteration(pcs, names, args.at)
    if path is None:
        print(f"path_profile: {args.at} did not run twice in {len(pcs)} recorded steps "
              f"(more --steps, or a --skip that lands in the row?)", file=sys.stderr)
        return 1
    counts = collections.Counter(path)
    options = " ".join([f"bench={args.bench}", *args.cmdline.split()])
    print(f"# {len(path)} instructions from {args.at} to its next entry "
          f"({options}; QEMU TCG, icount, one CPU)")
    for name, n in counts.most_common():
        print(f"{n:6d} {name}")
    if args.flow:
        print("# in order:")
        previous = None
        for name in path:
            if name != previous:
                print(f"  {name}")
            previous = name
    if args.json:
        Path(args.json).write_text(json.dumps(dict(counts.most_common()), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    boot.interrupt_on_sigterm()
    sys.exit(main(sys.argv[1:]))
