#!/usr/bin/env python3
"""tlb_trace on the IPC fast path: the kernel just built boots the ipc
benchmark (bench=ipc, a hundredth of the samples, one CPU, TCG) with
tlb_trace=on. Between two address spaces, every half of a round trip goes
fast and loads the other address space, so the row must count fast halves
that went straight back to user mode (ipc-direct), and the trace must
hold a "switch" line for each CR3 load the row counts (cr3-load): the fast
path's switches are traced as every other switch is. Within one address
space the fast halves load nothing.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/ipc-trace); the cases say SKIP without a kernel.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from tools.bench.bench import parse_row
from tools.run import boot
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent

# Where the runner (tools/test/run_tests.py) found the host programs: the
# kernel is beside them.
BUILD = Path(os.environ.get("HOST_BIN_DIR", HERE.parent.parent / "build" / "host")).parent
KERNEL = BUILD / "shootdown.elf"
TIMEOUT = 240
TRACE_SWITCH = re.compile(r"^tlb: t=\d+ cpu0 switch ", re.M)


def counters(row: str) -> dict[str, int]:
    """A result line's name=value counters, read by the benchmark tools'
    own parser (fields after the counters say where the row ran)."""
    return parse_row(row).get("counters", {})


def main() -> int:
    cases = Cases()
    names = ("two address spaces: the fast halves send the partner straight back",
             "two address spaces: a trace line for every CR3 load",
             "one address space: fast halves, and no CR3 load")
    if not KERNEL.is_file():
        for name in names:
            cases.skip(name, f"no kernel at {KERNEL}")
        return cases.report()
    settings = boot.Settings(smp=1, accel="tcg", cpu="max", timeout=TIMEOUT, serial="file",
                             cmdline=["bench=ipc", "bench_scale=1", "tlb_trace=on",
                                      "console=serial"])
    with tempfile.TemporaryDirectory() as run_dir:
        result = boot.run(settings, KERNEL, run_dir)
        serial = boot.read(Path(run_dir) / "serial.log")
    rows = {m.group(1): m.group(0) for m in
            re.finditer(r"^@ ipc\s+(spaces=\d,cpus=1)\s.*$", serial, re.M)}
    two, one = rows.get("spaces=2,cpus=1", ""), rows.get("spaces=1,cpus=1", "")
    why = f"{result.error or 'the boot ended'}; rows: {sorted(rows)}"
    c2, c1 = counters(two) if two else {}, counters(one) if one else {}
    cases.check(names[0], c2.get("ipc-direct", 0) > 0 and c2.get("cr3-load", 0) > 0,
                f"{why}; counters {c2}")
    # The row's own switches: after the line before it that starts "@ ".
    end = serial.find(two) if two else 0
    traced = len(TRACE_SWITCH.findall(serial[max(serial.rfind("\n@ ", 0, end), 0):end]))
    cases.check(names[1], two != "" and c2.get("cr3-load", 0) > 0 and traced >= c2["cr3-load"],
                f"{traced} switch lines traced for cr3-load={c2.get('cr3-load')}; {why}")
    cases.check(names[2], c1.get("ipc-direct", 0) > 0 and "cr3-load" not in c1,
                f"{why}; counters {c1}")
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
