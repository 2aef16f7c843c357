#!/usr/bin/env python3
"""tools/run/path_profile.py (make profile-path) on the kernel just built: the
IPC round trip within one address space, traced instruction by
instruction, must go through the fast path (ipc_fast_syscall and the switch
straight to the partner's user registers, switch_leave_to_frame; never the
general dispatcher's syscall_long_call), and with
ipc_fastpath=off through the general path (syscall_long_call and the general wait);
the round trip between two address spaces must load one (load_mm) and the
one within an address space must not; a symbol that does not exist is
refused with a message. No instruction
count is checked: they are path lengths, which changes may move.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/path-profile); the cases say SKIP without gdb or without a kernel.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent

# Where the runner (tools/test/run_tests.py) found the host programs: the
# kernel is beside them.
BUILD = Path(os.environ.get("HOST_BIN_DIR", HERE.parent.parent / "build" / "host")).parent
KERNEL = BUILD / "shootdown.elf"
TIMEOUT = 300
FAST = ("syscall_entry", "ipc_fast_syscall", "switch_leave_to_frame", "switch_finish_to_frame",
        "syscall_return")
GENERAL = ("syscall_long_call", "ipc_wait_locked", "sched_handoff_locked")


def profile(*args: str) -> tuple[int, str, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.json"
        r = subprocess.run([sys.executable, "-m", "tools.run.path_profile", str(KERNEL),
                            "--json", str(out), *args], cwd=ROOT,
                           capture_output=True, text=True, timeout=TIMEOUT)
        counts = json.loads(out.read_text()) if out.exists() else {}
    return r.returncode, r.stdout + r.stderr, counts


def main() -> int:
    cases = Cases()
    names = ("fast path: the round trip goes through ipc_fast_syscall",
             "general path: ipc_fastpath=off goes through syscall_long_call",
             "two address spaces load_mm on the way, one does not",
             "an unknown symbol is refused")
    why = ("no gdb" if not shutil.which("gdb") else
           f"no kernel at {KERNEL}" if not KERNEL.is_file() else "")
    if why:
        for name in names:
            cases.skip(name, why)
        return cases.report()
    status, text, fast = profile()
    cases.check(names[0], status == 0 and all(f in fast for f in FAST) and "syscall_long_call" not in fast,
                f"exit {status}; functions {sorted(fast)}; {text[-300:]}")
    status, text, general = profile("--cmdline", "ipc_fastpath=off")
    cases.check(names[1], status == 0 and all(f in general for f in GENERAL),
                f"exit {status}; functions {sorted(general)}; {text[-300:]}")
    status, text, two = profile("--after", "none")
    cases.check(names[2], status == 0 and "load_mm" in two and "load_mm" not in fast,
                f"exit {status}; two spaces: {sorted(two)}; one space: {sorted(fast)}")
    status, text, _ = profile("--at", "no_such_function_anywhere")
    cases.check(names[3], status == 2 and "no function" in text, f"exit {status}: {text[-200:]}")
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
