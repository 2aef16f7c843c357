#!/usr/bin/env python3
"""The option table of docs/options.md, as the kernel prints it.

    python3 -m tools.check.options_doc [KERNEL]          check the page against the kernel (KTAP)
    python3 -m tools.check.options_doc --write [KERNEL]  rewrite the page's table (make options-doc)

The kernel's `help` option prints every option of its registry as a row of
a Markdown table, between the lines `help: begin` and `help: end`, and
ends. This script boots KERNEL (default: build/shootdown.elf) once that way
under QEMU (TCG, one CPU, serial only) and compares those rows with the
lines between the page's two markers, or writes them there. The help texts
live beside each option in the sources, so that is where a row is edited.

The check is host/options-doc of make test; it says SKIP without a kernel.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.run import boot
from tools.test.ktap import Cases, clean_lines

PAGE = ROOT / "docs" / "options.md"
BEGIN = "<!-- BEGIN GENERATED OPTIONS TABLE: make options-doc writes it from the kernel -->"
END = "<!-- END GENERATED OPTIONS TABLE -->"
TIMEOUT = 120


def default_kernel() -> Path:
    """The kernel beside run-tests.py's host programs, or the default build's."""
    host_bins = os.environ.get("HOST_BIN_DIR")
    build = Path(host_bins).parent if host_bins else ROOT / "build"
    return build / "shootdown.elf"


def kernel_table(kernel: Path) -> tuple[list[str], str]:
    """The rows the kernel prints for `help`, or [] and why there are none."""
    settings = boot.Settings(smp=1, accel="tcg", cpu="max", timeout=TIMEOUT, serial="file",
                             cmdline=["help", "console=serial"])
    with tempfile.TemporaryDirectory() as run_dir:
        result = boot.run(settings, kernel, run_dir)
        lines = clean_lines(boot.read(Path(run_dir) / "serial.log"))
    if "help: begin" not in lines or "help: end" not in lines:
        return [], f"no table in the serial log ({result.error or 'the boot ended'})"
    first = lines.index("help: begin") + 1
    return lines[first:lines.index("help: end", first)], ""


def split_page(text: str) -> tuple[str, list[str], str]:
    """The page before its table (through BEGIN), the table, and the rest."""
    head, sep, rest = text.partition(BEGIN + "\n")
    table, sep2, tail = rest.partition(END + "\n")
    if not sep or not sep2:
        raise ValueError(f"{PAGE.relative_to(ROOT)} lacks the lines {BEGIN!r} and {END!r}")
    return head + sep, table.splitlines(), sep2 + tail


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the page's table")
    parser.add_argument("kernel", nargs="?", type=Path, default=default_kernel())
    args = parser.parse_args(argv)
    head, page_rows, tail = split_page(PAGE.read_text())
    name = "docs/options.md's table is what the kernel's registry prints"
    if not args.kernel.is_file():
        if args.write:
            sys.exit(f"options_doc: no kernel at {args.kernel} (make all builds one)")
        cases = Cases()
        cases.skip(name, f"no kernel at {args.kernel}")
        return cases.report()
    rows, why = kernel_table(args.kernel)
    if args.write:
        if not rows:
            sys.exit(f"options_doc: {why}")
        PAGE.write_text(head + "".join(row + "\n" for row in rows) + tail)
        print(f"options_doc: {PAGE.relative_to(ROOT)}: {len(rows) - 2} options")
        return 0
    cases = Cases()
    differ = [(old, new) for old, new in zip(page_rows, rows) if old != new]
    problems = [why] if why else []
    if differ:
        problems.append(f"{len(differ)} rows differ; the first: the page has {differ[0][0]!r}, "
                        f"the kernel prints {differ[0][1]!r}")
    if not why and len(page_rows) != len(rows):
        problems.append(f"the page has {len(page_rows)} rows, the kernel prints {len(rows)}")
    if problems and not why:
        problems.append("make options-doc rewrites the table")
    cases.check(name, problems)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
