#!/usr/bin/env python3
"""The timeline renderer (tools/run/timeline.py) draws a known trace: known.log,
written by hand, drawn to SVG and PNG, and the SVG read back for what must
be there: one lane per CPU, one mark per event, an arrow per target of each
request (none to the sender itself), a distinct mark per kind. A log without
trace lines, and a log that is not there, are refused with a clear message.

Prints KTAP, one result per case, as the host test binaries do
(tools/test/run_tests.py runs it as host/timeline). Python 3.11 standard library;
the renderer needs gnuplot.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from tools import ROOT
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent
KNOWN_LOG = HERE / "known.log"

# What known.log holds (its last trace line is cut short: not an event).
LANES = 3
MARKS = {"switch": 7, "enter-lazy": 2, "request": 6, "flush-pages": 6, "leave-lazy": 1,
         "switch-behind": 2, "not-loaded": 1, "flush-all": 2, "up-to-date": 2,
         "resume": 1, "catch-up": 1}
# Requests to 1-2, to 0,2, to 1, to 0, to 1, to none; the sender's own
# handling of each gets no arrow.
ARROWS = 2 + 2 + 1 + 1 + 1
SPANS = ("span: mm0 (kernel mm)", "span: mm1", "span: mm3", "span: lazy (kernel thread)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"


def timeline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.run.timeline", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def plot_groups(svg: Path) -> dict[str, ET.Element]:
    """gnuplot's SVG keeps each plot series in a group titled as its legend
    entry: title -> group."""
    groups = {}
    for g in ET.parse(svg).getroot().iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        if g.get("id", "").startswith("gnuplot_plot_") and title is not None:
            groups[title.text or ""] = g
    return groups


def count(group: ET.Element, tag: str) -> int:
    return sum(1 for _ in group.iter(f"{SVG}{tag}"))


def check_known(cases: Cases, out: Path) -> None:
    stem = out / "known"
    done = timeline(str(KNOWN_LOG), "-o", str(stem), "--title", "known.log")
    svg, png = stem.with_suffix(".svg"), stem.with_suffix(".png")
    cases.check("renders", done.returncode == 0 and svg.is_file() and png.is_file(),
                f"exit status {done.returncode}: {done.stderr.strip()[:200]}")
    if not svg.is_file():
        return
    cases.check("png_signature", png.is_file() and png.read_bytes()[:8] == PNG_SIGNATURE,
                "no PNG, or not PNG's signature")
    root = ET.parse(svg).getroot()
    lanes = sorted({"".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")}
                   & {f"cpu{n}" for n in range(64)})
    cases.check("lanes", lanes == [f"cpu{n}" for n in range(LANES)],
                f"lane labels {lanes}, expected cpu0..cpu{LANES - 1}")

    groups = plot_groups(svg)
    # Each event series: its marks, plus one in the legend.
    marks, styles = Counter(), {}
    for title, g in groups.items():
        if m := re.match(r"event: (\S+) ", title):
            uses = list(g.iter(f"{SVG}use"))
            marks[m.group(1)] = len(uses) - 1
            styles[m.group(1)] = {(u.get(XLINK_HREF), u.get("color")) for u in uses}
    cases.check("one_mark_per_event", dict(marks) == MARKS,
                f"marks {dict(marks)}, expected {MARKS}")
    single = all(len(s) == 1 for s in styles.values())
    distinct = len({next(iter(s)) for s in styles.values() if s}) == len(styles)
    cases.check("kinds_distinct", single and distinct and len(styles) == len(MARKS),
                f"styles per kind {styles}")

    arrows = groups.get("arrow: request to a target's handling")
    drawn = count(arrows, "polygon") - 1 if arrows is not None else None
    cases.check("arrows_are_targets", drawn == ARROWS,
                f"{drawn} arrows (arrow heads), expected {ARROWS}")
    missing = [s for s in SPANS if s not in groups]
    cases.check("spans", not missing, f"no series {missing}")
    cases.check("summary", f"{sum(MARKS.values())} of {sum(MARKS.values())} events, "
                f"{LANES} lanes, {ARROWS} arrows" in done.stdout,
                f"printed {done.stdout.strip()!r}")


def check_window(cases: Cases, out: Path) -> None:
    stem = out / "first"
    done = timeline(str(KNOWN_LOG), "-o", str(stem), "--first", "5")
    marks = sum(len(list(g.iter(f"{SVG}use"))) - 1
                for title, g in plot_groups(stem.with_suffix(".svg")).items()
                if title.startswith("event: ")) if done.returncode == 0 else None
    cases.check("first_n", marks == 5, f"{marks} marks with --first 5 "
                f"(exit status {done.returncode}: {done.stderr.strip()[:200]})")
    stem = out / "window"
    done = timeline(str(KNOWN_LOG), "-o", str(stem), "--from", "300", "--to", "408")
    cases.check("from_to", done.returncode == 0 and "11 of 31 events" in done.stdout,
                f"printed {done.stdout.strip()!r} {done.stderr.strip()[:200]!r}")


def check_refusals(cases: Cases, out: Path) -> None:
    empty = out / "no-trace.log"
    empty.write_text("boot: cpus=2\nKTAP version 1\n1..0\nshootdown: done\n")
    done = timeline(str(empty), "-o", str(out / "empty"))
    cases.check("refuses_no_trace", done.returncode == 1
                and "no tlb trace lines" in done.stderr and "tlb_trace" in done.stderr
                and not (out / "empty.svg").exists(),
                f"exit status {done.returncode}: {done.stderr.strip()[:200]!r}")
    done = timeline(str(out / "absent.log"), "-o", str(out / "absent"))
    cases.check("refuses_missing_log", done.returncode == 1
                and "absent.log: no such file" in done.stderr,
                f"exit status {done.returncode}: {done.stderr.strip()[:200]!r}")


def main() -> int:
    cases = Cases()
    with tempfile.TemporaryDirectory(prefix="timeline-test-") as tmp:
        out = Path(tmp)
        check_known(cases, out)
        check_window(cases, out)
        check_refusals(cases, out)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
