"""Check the kernel's results screen (bench/screen.c) against its serial log.

A machine with only a screen shows the summary, every row in pages, then QR
codes of the complete results. The tests photograph each with QEMU's
screendump as the kernel announces it on serial (`screen: summary`,
`screen: page K/N`, `screen: qr K/N`) and check, from the serial log:

  summary  every `bench: summary` sentence is on the summary screen;
  pages    every row (`@ name params ...`) is on one of the pages, and every
           page announced was photographed;
  qr       the codes, read with zbarimg and decoded as `tools/bench/bench.py
           import-qr` does, give the same results JSON as the serial log.

Used by tools/test/run_tests.py (kind "screendump"); python3 standard library.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.bench import bench

# What a page shows of a row before its figures (bench/screen.c show_row).
NAME_COLUMNS, PARAMS_COLUMNS = 16, 31
# The parts of a results JSON that come from the kernel (not from the host).
KERNEL_PARTS = ("env", "options", "tlb", "end", "benchmarks", "crossover", "summary", "cpus")
ANNOUNCE = re.compile(r"screen: (summary|page (\d+)/(\d+)|qr (\d+)/(\d+))$")


def shot_name(line: str) -> str | None:
    """The picture a serial line announces: summary, page<K> or qr<K>."""
    m = ANNOUNCE.match(line)
    if not m:
        return None
    if m.group(2):
        return f"page{m.group(2)}"
    if m.group(4):
        return f"qr{m.group(4)}"
    return "summary"


def screen_lines(ppm: Path, font: Path) -> list[str]:
    """The text of each row of character cells, as fbcon drew it: read from
    the screendump in our font, or, on a text screen, from the characters
    tools/run/boot.py read from video memory beside it (SHOT.txt)."""
    text = ppm.with_suffix(".txt")
    if text.is_file():
        return text.read_text().splitlines()
    done = subprocess.run([sys.executable, "-m", "tools.test.check_screendump", "--list",
                           "--origin", "0,0", str(ppm), str(font)], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if done.returncode:
        raise OSError(done.stderr.strip() or f"check_screendump failed on {ppm}")
    return [line.rstrip() for line in done.stdout.splitlines()]


def announced(serial: str, kind: str) -> int:
    """How many pages (kind "page") or codes ("qr") the kernel announced."""
    counts = [int(m.group(1)) for m in re.finditer(rf"^screen: {kind} \d+/(\d+)\r?$",
                                                    serial, re.M)]
    return max(counts, default=0)


def check_summary(run: bench.Run, lines: list[str]) -> str:
    """Why the summary screen lacks a sentence of the serial summary, or ""."""
    if not run.summary:
        return "the serial log has no `bench: summary` line"
    shown = " ".join(" ".join(lines).split())
    for s in run.summary:
        sentence = " ".join(s["text"].split())
        if sentence not in shown:
            return f"the summary screen lacks its {s['key']} sentence: {sentence[:70]!r}"
    return ""


def row_on_page(row: dict) -> str:
    """The start of the page line for a row: name and parameters, padded."""
    params = row["params_text"] if "na" in row or row.get("unit") == "cycles" else (
        f"{row['params_text']} [{row['unit']}]")
    return f"{row['name'][:NAME_COLUMNS]:<{NAME_COLUMNS}} {params[:PARAMS_COLUMNS]:<{PARAMS_COLUMNS}}"


def check_pages(run: bench.Run, pages: list[list[str]], expected: int) -> str:
    """Why the pages do not show every row exactly as announced, or ""."""
    if expected == 0:
        return "the kernel announced no page of rows"
    if len(pages) != expected:
        return f"{len(pages)} of {expected} pages were photographed"
    shown = [line for page in pages for line in page]
    for b in run.benchmarks.values():
        for row in b["results"]:
            start = row_on_page(row)
            if not any(line[:len(start)].rstrip() == start.rstrip() for line in shown):
                return f"no page shows the row {row['name']} {row['params_text']}"
    return ""


def check_qr(serial: str, codes: list[Path], expected: int) -> str:
    """Why the codes do not decode to the serial log's results, or ""."""
    if expected == 0:
        return "the kernel announced no QR code"
    if len(codes) != expected:
        return f"{len(codes)} of {expected} QR codes were photographed"
    try:
        text, _, count = bench.decode_qr_text(bench.qr_sources_text([str(c) for c in codes]))
    except bench.QrError as e:
        return str(e)
    if count != expected:
        return f"the codes say they are {count}, the kernel announced {expected}"
    from_qr = bench.record_of(bench.parse(text))
    from_serial = bench.record_of(bench.parse(serial))
    for part in KERNEL_PARTS:
        if from_qr[part] != from_serial[part]:
            return f"the codes' {part} differs from the serial log's"
    if not from_serial["benchmarks"]:
        return "the serial log has no benchmark"
    return ""


def verdicts(serial: str, shots: dict[str, Path], font: Path) -> list[tuple[str, bool, str]]:
    """(name, ok, why) for the summary, the pages and the codes."""
    run = bench.parse(serial)
    out = []
    try:
        summary = shots.get("summary")
        why = check_summary(run, screen_lines(summary, font)) if summary else \
            "the summary was not photographed (no `screen: summary` line)"
        out.append(("summary", not why, why))
        pages = [screen_lines(shots[f"page{k}"], font)
                 for k in range(1, announced(serial, "page") + 1) if f"page{k}" in shots]
        why = check_pages(run, pages, announced(serial, "page"))
        out.append(("pages", not why, why))
    except (OSError, subprocess.TimeoutExpired) as e:
        out.append(("screen", False, f"cannot read a screendump: {e}"))
    codes = [shots[f"qr{k}"] for k in range(1, announced(serial, "qr") + 1) if f"qr{k}" in shots]
    why = check_qr(serial, codes, announced(serial, "qr"))
    out.append(("qr", not why, why))
    return out
