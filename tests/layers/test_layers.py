#!/usr/bin/env python3
"""The layer checker (tools/check/layers.py) passes this tree and fails
broken copies of its layer file.

The tree is checked with the kernel's objects (make's BUILD, beside the
host binaries in $HOST_BIN_DIR), so calls and jumps are seen as well as
includes. Each broken copy removes or changes one line and must fail with
the message that names what broke: a jump from assembly into a higher
layer, a C call up through a provided function, a layer that is a file
rather than a folder, and two layers in the wrong order.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/layers).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("HOST_BIN_DIR", ROOT / "build" / "host")).parent
LAYERS = ROOT / "docs" / "architecture.layers"
TIMEOUT = 120


def check(layers: Path | None = None) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "tools.check.layers", "--objects", str(BUILD)]
    if layers:
        cmd += ["--layers", str(layers)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    return r.returncode, r.stdout + r.stderr


def broken(text: str, old: str, new: str) -> str | None:
    """text with its one line old replaced by new, or None if old is not
    a line of it."""
    lines = text.splitlines()
    if old not in lines:
        return None
    return "\n".join(new if line == old else line for line in lines) + "\n"


# (case, the line changed, what it becomes, a word of the expected message)
MUTATIONS = [
    ("a jump from assembly into a higher layer is caught",
     "provide boot/entry.asm kmain init/main.c", "",
     "boot/entry.asm uses kmain of init/main.c"),
    ("a call up without its provide line is caught",
     "provide trap/trap.h lapic_eoi apic/lapic.c", "",
     "trap/trap.c uses lapic_eoi of apic/lapic.c"),
    ("a layer that is one file is refused",
     "layer uapi: uapi/* -- what user programs see: system calls, the benchmark ABI",
     "layer uapi: uapi/syscall.h uapi/bench.h -- the ABI",
     "a layer is one folder"),
]


def main() -> int:
    cases = Cases()
    if not (BUILD / "init" / "main.o").exists():
        cases.skip("the tree passes", f"no kernel objects in {BUILD} (make all)")
        return cases.report()
    status, text = check()
    cases.check("the tree passes", status == 0, text[-600:])
    original = LAYERS.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        for name, old, new, expected in MUTATIONS:
            text = broken(original, old, new)
            if text is None:
                cases.check(name, False, f"no line {old!r} in {LAYERS}")
                continue
            path = Path(tmp) / "layers"
            path.write_text(text)
            status, out = check(path)
            cases.check(name, status != 0 and expected in out,
                        f"exit status {status}: {out[-400:] or 'no output'}")
        # boot moved above mm: mm's includes of boot/ now look up.
        lines = original.splitlines()
        mm = next((line for line in lines if line.startswith("layer mm:")), None)
        boot = next((line for line in lines if line.startswith("layer boot:")), None)
        if mm and boot:
            swapped = [boot if line == mm else mm if line == boot else line for line in lines]
            path = Path(tmp) / "swapped"
            path.write_text("\n".join(swapped) + "\n")
            status, out = check(path)
            cases.check("two layers out of order are caught",
                        status != 0 and "layer mm includes layer boot" in out,
                        f"exit status {status}: {out[-400:]}")
        else:
            cases.check("two layers out of order are caught", False,
                        f"no 'layer mm:' or 'layer boot:' line in {LAYERS}")
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
