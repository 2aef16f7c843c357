#!/usr/bin/env python3
"""make report and make plots (tools/bench/bench.py, report.py,
plots.py) on checked-in results, no emulator booted:

  fixture-2cpu.json  a whole `make bench` run (TCG, 2 CPUs), the newest
  fixture-8cpu.json  the shootdown and ctxsw_scale rows of a
                     `make bench SMP=8` run (TCG), an older one

The report must hold every row of its results (each name and parameters,
with its median or n/a reason), the summary's sentences, the environment
and the policy lines, and every chart drawn, as data: URIs of the very PNGs
in plots/; nothing in it may point outside the page. The charts must have
p10-p90 error bars, the local-flush chart the flush_ceiling and crossover
marks at their page counts, and with only the 2-CPU run make plots must say
that make bench SMP=8 gives the shootdown curve. The checkers are also run
on a page with a row and a chart taken out: they must notice.

Rows and env lines of both formats parse (bench.py parse): without the CPU
fields, as the fixtures' kernel printed them, and with them (cpus=, apic=,
types=, smt=, eff_mhz=, smi= after the counters; `bench: cpu` lines), and
the report and the comparison show where each row ran.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/bench-report). Chart cases say SKIP where gnuplot is missing.
"""

from __future__ import annotations

import base64
import copy
import html.parser
import json
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tools import ROOT
from tools.bench import bench, plots, report
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent
TWO_CPUS = HERE / "fixture-2cpu.json"
EIGHT_CPUS = HERE / "fixture-8cpu.json"
# The names the fixtures get in a results directory: the 8-CPU run older.
OLDER, NEWER = "20261201-100000.json", "20261202-100000.json"
CHARTS = ("flush_local", "shootdown", "tlb_reach", "prim", "switch", "flush", "scale")
SVG = "{http://www.w3.org/2000/svg}"
GNUPLOT = shutil.which("gnuplot") is not None
# The report's cases that read its charts (SKIP without gnuplot).
CHART_CASES = ("report: every chart embedded",
               "report: error bars (p10-p90) on the curves and bars",
               "report: flush_ceiling and crossover marked on the local-flush chart",
               "report: shootdown curve from the 8-CPU run, and says why")


def bench_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.bench.bench", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


# --- Reading the page back -----------------------------------------------------------

class Page(html.parser.HTMLParser):
    """What the checks need of a report: per benchmark table its rows'
    cells by data-row, the summary's items, the figures' data URIs, and
    every URL-like attribute."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list[str]]] = {}
        self.summary: list[str] = []
        self.figures: dict[str, str] = {}   # data-chart -> img src
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.tags: list[str] = []
        self._table = self._row = self._cell = self._item = None
        self._figure = None
        self._in_summary = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        for key in ("src", "href", "action", "data", "poster", "srcset"):
            if key in a:
                self.urls.append((tag, key, a[key] or ""))
        if tag == "table" and "data-benchmark" in a:
            self._table = self.tables.setdefault(a["data-benchmark"], {})
        elif tag == "tr" and self._table is not None and "data-row" in a:
            self._row = self._table.setdefault(a["data-row"], [])
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "ul" and a.get("id") == "summary-list":
            self._in_summary = True
        elif tag == "li" and self._in_summary:
            self._item = []
        elif tag == "figure":
            self._figure = a.get("data-chart", "")
        elif tag == "img" and self._figure is not None:
            self.figures[self._figure] = a.get("src", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "li" and self._item is not None:
            self.summary.append("".join(self._item))
            self._item = None
        elif tag == "ul":
            self._in_summary = False
        elif tag == "figure":
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._item is not None:
            self._item.append(data)


def shown(value: object) -> str:
    return "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)


def missing_rows(page: Page, record: dict) -> list[str]:
    """Every row of record not in its benchmark's table with its median
    (or its n/a reason)."""
    out = []
    for bench in record["benchmarks"]:
        table = page.tables.get(bench["name"])
        if table is None:
            out.append(f"no table for {bench['name']}")
            continue
        for row in bench["results"]:
            key = f"{row['name']} {row['params_text']}"
            cells = table.get(key)
            if cells is None:
                out.append(f"no row {key}")
            elif "na" in row:
                if cells[1:] != [f"n/a: {row['na']}"]:
                    out.append(f"{key}: {cells[1:]} is not its n/a reason")
            elif cells[0] != row["params_text"] or cells[2] != shown(row["median"]) or \
                    cells[3] != shown(row["p10"]) or cells[4] != shown(row["p90"]):
                out.append(f"{key}: cells {cells[:5]} are not its params, median, p10, p90")
    return out


def outside_refs(text: str, page: Page) -> list[str]:
    """Whatever would make the page load something from elsewhere."""
    out = [f"<{tag} {key}={value[:40]!r}>" for tag, key, value in page.urls
           if not (value.startswith("data:") or value.startswith("#"))]
    out += [f"a <{tag}> element" for tag in ("script", "link", "iframe", "object", "embed")
            if tag in page.tags]
    for pattern in (r"url\(\s*['\"]?(?!data:|#)", r"@import", r"(?:src|href)\s*=\s*['\"]?https?:"):
        if re.search(pattern, text, re.I):
            out.append(f"matches {pattern}")
    return out


def missing_charts(page: Page, chart_dir: Path, names: tuple[str, ...]) -> list[str]:
    """Every chart (its PNG in chart_dir) embedded, byte for byte."""
    out = []
    for name in names:
        src = page.figures.get(name)
        png = chart_dir / f"{name}.png"
        if not png.is_file():
            out.append(f"{png.name} was not drawn")
        elif src is None:
            out.append(f"no figure for {name}")
        elif src != "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode():
            out.append(f"the figure of {name} is not {png.name}")
    return out


# --- Reading the charts back ---------------------------------------------------------------

def plot_groups(svg: Path) -> dict[str, ET.Element]:
    """gnuplot's SVG keeps each series in a group titled as its legend
    entry: title -> group. (An opaque key is drawn again after the plot,
    in groups of the same titles: the first of a title is the series.)"""
    groups: dict[str, ET.Element] = {}
    for g in ET.parse(svg).getroot().iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        if g.get("id", "").startswith("gnuplot_plot_") and title is not None:
            groups.setdefault(title.text or "", g)
    return groups


def point_xs(group: ET.Element) -> list[float]:
    """The x of each point mark of a series."""
    xs = []
    for use in group.iter(f"{SVG}use"):
        m = re.search(r"translate\(([-\d.]+),", use.get("transform", ""))
        if m:
            xs.append(float(m.group(1)))
    return xs


def vertical_segments(group: ET.Element) -> list[tuple[float, float, float]]:
    """(x, y1, y2) of every vertical line segment the series draws."""
    out = []
    for path in group.iter(f"{SVG}path"):
        moves = re.findall(r"([ML])\s*([-\d.]+),([-\d.]+)", path.get("d", ""))
        for (_, x1, y1), (kind, x2, y2) in zip(moves, moves[1:]):
            if kind == "L" and x1 == x2 and y1 != y2:
                out.append((float(x1), float(y1), float(y2)))
    return out


def near(a: float, b: float) -> bool:
    return abs(a - b) < 0.6


def error_bar_problems(svg: Path, series: str, points: int) -> list[str]:
    """Each of the series' points (not its legend sample) has a vertical
    bar through it."""
    group = plot_groups(svg).get(series)
    if group is None:
        return [f"{svg.name} has no series {series!r}"]
    xs = point_xs(group)[:points]
    bars = vertical_segments(group)
    if len(xs) != points:
        return [f"{series!r}: {len(xs)} points drawn, {points} rows"]
    lacking = [x for x in xs if not any(near(x, bx) for bx, _, _ in bars)]
    return [f"{series!r}: {len(lacking)} of {points} points have no error bar"] if lacking else []


def mark_problems(svg: Path, title: str, x_pixel: float) -> list[str]:
    """A legend entry title whose series is a vertical line at x_pixel."""
    group = plot_groups(svg).get(title)
    if group is None:
        return [f"no series {title!r} in {svg.name} (it has {sorted(plot_groups(svg))})"]
    if not any(near(x, x_pixel) and abs(y1 - y2) > 100 for x, y1, y2 in vertical_segments(group)):
        return [f"{title!r} is not a vertical line at the x of its page count"]
    return []


def gp_bar_problems(gp: Path, record: dict) -> list[str]:
    """The bar chart's script plots error bars from the rows' p10 and p90."""
    text = gp.read_text()
    if not re.search(r"using 1:3:4:5 with yerrorbars", text):
        return [f"{gp.name} plots no yerrorbars from p10 and p90"]
    out = []
    for line in re.findall(r'^\d+ "([^"]+)" (\S+) (\S+) (\S+)$', text, re.M):
        name, params = line[0].split(" ", 1)
        row = next((r for r in plots.rows_of(record, name) if r["params_text"] == params),
                   None)
        if row is None or "na" in row:
            out.append(f"{gp.name} has a bar for {line[0]}, not a measured row")
            continue
        med, p10, p90 = plots.stats(row)
        if [f"{v:.6g}" for v in (med, p10, p90)] != list(line[1:]):
            out.append(f"{gp.name}: {line[0]} is drawn as {line[1:]}")
    return out or ([] if "EOD" in text else [f"{gp.name} has no data"])


# --- The cases ------------------------------------------------------------------------

def check_report(cases: Cases, work: Path) -> None:
    results = work / "results"
    results.mkdir()
    shutil.copy(EIGHT_CPUS, results / OLDER)
    shutil.copy(TWO_CPUS, results / NEWER)
    record = json.loads(TWO_CPUS.read_text())
    done = bench_py("report", "--dir", str(results))
    out = results / "report.html"
    cases.check("report: writes report.html", done.returncode == 0 and out.is_file(),
                f"status {done.returncode}: {done.stderr.strip()}")
    if not out.is_file():
        return
    text = out.read_text()
    page = Page(text)
    cases.check("report: every row of every benchmark, with its figures",
                missing_rows(page, record))
    cases.check("report: self-contained (no outside URL, script or stylesheet)",
                outside_refs(text, page))
    want = [s["text"] for s in record["summary"]]
    cases.check("report: the kernel's summary, sentence for sentence",
                [f"not in the summary: {s[:60]!r}" for s in want if s not in page.summary]
                + ([] if len(page.summary) == len(want) else [f"{len(page.summary)} items"])
                + ([] if want else ["the fixture has no summary"]))
    cases.check("report: the summary says these are emulator costs (tcg)",
                any(s.startswith("These are emulator costs") for s in page.summary),
                f"items: {page.summary}")
    env = record["env"]
    cases.check("report: the environment and the policy lines", [
        f"missing {what}" for what, needle in (
            ("platform", f"<td>{env['platform']}</td>"), ("CPUs", f"<td>{env['cpus']}</td>"),
            ("TSC", f"<td>{env['tsc_hz']}</td>"), ("brand", env["brand"]),
            ("features", "pge smep smap xsave"),
            ("options line", "options: " + " ".join(f"{k}={v}" for k, v in
                                                     record["options"].items())),
            ("tlb line", "bench: tlb " + " ".join(f"{k}={v}" for k, v in record["tlb"].items())))
        if needle not in text])
    if not GNUPLOT:
        for name in CHART_CASES:
            cases.skip(name, "gnuplot is missing")
        check_checkers(cases, text, record, None)
        return
    chart_dir = results / "plots"
    cases.check(CHART_CASES[0], missing_charts(page, chart_dir, CHARTS)
                + [f"an extra figure {n}" for n in page.figures if n not in CHARTS])
    flush = plots.rows_of(record, "flush_local")
    svg = chart_dir / "flush_local.svg"
    counts = {how: sum(r["params"]["how"] == how for r in flush) for how in ("pages", "full")}
    problems = (error_bar_problems(svg, "page by page", counts["pages"])
                + error_bar_problems(svg, "whole context", counts["full"]))
    curve = json.loads(EIGHT_CPUS.read_text())
    problems += error_bar_problems(chart_dir / "shootdown.svg", "active targets",
                                   plots.cpu_count(curve) - 1)
    for name in ("prim", "switch", "flush", "scale"):
        problems += gp_bar_problems(chart_dir / f"{name}.gp", record)
    cases.check(CHART_CASES[1], problems)
    pages = sorted(int(r["params"]["pages"]) for r in flush if r["params"]["how"] == "pages")
    xs = point_xs(plot_groups(svg).get("page by page", ET.Element("g")))
    ceiling = int(record["tlb"]["flush_ceiling"])
    crossover = record["crossover"]["flush_local"]["pages"]
    problems = []
    for title, at in ((f"flush_ceiling = {ceiling} (the policy in force)", ceiling),
                      (f"measured crossover: {crossover} pages", crossover)):
        if at not in pages or len(xs) < len(pages):
            problems.append(f"no point at {at} pages to place {title!r} against")
        else:
            problems += mark_problems(svg, title, xs[pages.index(at)])
    cases.check(CHART_CASES[2], problems)
    cases.check(CHART_CASES[3],
                "(8 CPUs)" in (chart_dir / "shootdown.gp").read_text() and OLDER in
                (chart_dir / "shootdown.gp").read_text() and
                f"the newest results ({NEWER}) have 2 CPUs" in done.stdout and
                "make bench SMP=8" in done.stdout, done.stdout.strip()[-300:])
    check_checkers(cases, text, record, chart_dir)


def check_checkers(cases: Cases, text: str, record: dict, chart_dir: Path | None) -> None:
    """The row and chart checks fail on a page with one of each taken out."""
    rows = re.findall(r"<tr data-row='[^']*'>.*?</tr>", text)
    dropped = text.replace(rows[len(rows) // 2], "", 1) if rows else text
    cases.check("checker: a page with a row dropped fails",
                bool(missing_rows(Page(dropped), record)),
                "the row check passed a page without one row")
    if chart_dir is None:
        cases.skip("checker: a page with a chart dropped fails", "gnuplot is missing")
        return
    figure = re.search(r"<figure data-chart='shootdown'>.*?</figure>", text)
    cut = text.replace(figure.group(0), "") if figure else text
    cases.check("checker: a page with a chart dropped fails",
                bool(missing_charts(Page(cut), chart_dir, CHARTS)),
                "the chart check passed a page without the shootdown chart")


def check_few_cpus(cases: Cases, work: Path) -> None:
    results = work / "few"
    results.mkdir()
    shutil.copy(TWO_CPUS, results / NEWER)
    if not GNUPLOT:
        cases.skip("plots: with 2 CPUs only, says make bench SMP=8", "gnuplot is missing")
        return
    done = bench_py("plots", "--dir", str(results))
    line = (f"the newest results ({NEWER}) have 2 CPUs, too few for a shootdown curve (at "
            f"least 4), and no other results have enough; make bench SMP=8 gives the curve")
    cases.check("plots: with 2 CPUs only, says make bench SMP=8",
                done.returncode == 0 and line in done.stdout and
                not (results / "plots" / "shootdown.png").exists(),
                f"status {done.returncode}, output: {done.stdout.strip()[-300:]}")


def check_no_results(cases: Cases, work: Path) -> None:
    empty = work / "empty"
    empty.mkdir()
    done = bench_py("report", "--dir", str(empty))
    cases.check("report: no results says run make bench first",
                done.returncode != 0 and "run make bench first" in done.stderr and
                not (empty / "report.html").exists(), f"status {done.returncode}: {done.stderr}")


def check_variants(cases: Cases, work: Path) -> None:
    """The chart where the run said none; the summary of older results."""
    record = json.loads(TWO_CPUS.read_text())
    none = copy.deepcopy(record)
    none["crossover"]["flush_local"].update(result="none", pages=None)
    if GNUPLOT:
        chart = plots.flush_local_chart(none, "none.json")
        svg = plots.draw(chart, work / "none", plots.png_terminal())[0]
        title = "measured crossover: none (page by page is cheaper even at 512 pages)"
        cases.check("plots: crossover none is in the legend", title in plot_groups(svg),
                    f"legend: {sorted(plot_groups(svg))}")
    else:
        cases.skip("plots: crossover none is in the legend", "gnuplot is missing")
    older = copy.deepcopy(record)
    del older["summary"]
    said = report.summary(older)
    cases.check("summary: results without one say so",
                len(said) == 1 and "carry no summary" in said[0], said)


# A made-up log: an SMT machine whose CPU 1 is CPU 0's sibling, hybrid,
# with APERF/MPERF and an SMI counter; one row of each format.
ROWS_LOG = """\
bench: env platform=none cpus=4 tsc_hz=3000000000 smt=on hybrid=on target_cpu=2 \
target_apic=4 target_core=other eff_clock=aperf_mperf smi_count=17 selected=shootdown brand=X Y
bench: cpu 0 apic=0 package=0 core=0 thread=0 type=P siblings=1 topology=0x1f
bench: cpu 1 apic=1 package=0 core=0 thread=1 type=P siblings=0 topology=0x1f
bench: cpu 2 apic=4 package=0 core=2 thread=0 type=P siblings=- topology=0x1f
bench: cpu 3 apic=32 package=0 core=16 thread=0 type=E siblings=- topology=0x1f
bench: shootdown (flush): one page
@ shootdown targets=1,state=active cycles 900 800 1000 700 11 300.0 - ipi-sent=11
@ shootdown targets=2,state=active cycles 1200 1100 1300 1000 11 400.0 - - cpus=0-2 \
apic=0-1,4 types=PPP smt=0+1 eff_mhz=4712 smi=2
@ shootdown targets=3,state=active n/a: out of memory
bench: shootdown: 3 results in 10 ms
bench: end benchmarks=1 results=3 seconds=1
""".replace("\\\n", "")


def check_row_fields(cases: Cases) -> None:
    run = bench.parse(ROWS_LOG)
    rows = run.benchmarks["shootdown"]["results"]
    cases.check("rows: old and new rows parse, n/a too",
                not run.problems and len(rows) == 3, str(run.problems))
    cases.check("rows: a row without the CPU fields has none", "where" not in rows[0],
                str(rows[0]))
    want = {"cpus": [0, 1, 2], "apic": [0, 1, 4], "types": ["P", "P", "P"],
            "smt": [[0, 1]], "eff_mhz": 4712, "smi": 2}
    cases.check("rows: the CPU fields decoded", rows[1].get("where") == want,
                str(rows[1].get("where")))
    cases.check("rows: env keeps its new fields, brand still last",
                run.env.get("target_cpu") == "2" and run.env.get("smi_count") == "17"
                and run.env.get("brand") == "X Y", str(run.env))
    cases.check("rows: bench: cpu lines", [c["apic"] for c in run.cpus] == [0, 1, 4, 32]
                and run.cpus[0]["siblings"] == [1] and run.cpus[2]["siblings"] == []
                and run.cpus[3]["type"] == "E", str(run.cpus))
    broken = bench.parse(ROWS_LOG.replace("smi=2", "smi"))
    cases.check("rows: a CPU field that is not key=value is a problem",
                any("key=value" in p for p in broken.problems), str(broken.problems))
    text = report.where_text(rows[1])
    cases.check("rows: the report's where column is compact",
                text == "cpu 0-2 apic 0-1,4 PPP smt 0+1 4712MHz smi 2", text)
    cases.check("rows: an old row's where is -", report.where_text(rows[0]) == "-")
    record = bench.record_of(run)
    moved = copy.deepcopy(record)
    moved["benchmarks"][0]["results"][1]["where"]["cpus"] = [0, 2, 3]
    same = bench.comparison(record, record, "A", "B")
    differ = bench.comparison(record, moved, "A", "B")
    cases.check("rows: the comparison says when a row ran on other CPUs",
                not any("ran elsewhere" in line for line in same)
                and any(line.startswith("shootdown targets=2,state=active ran elsewhere")
                        for line in differ), "\n".join(differ))
    one = ("@ shootdown targets=1,state=active cycles 900 800 1000 700 11 300.0 - - "
           "cpus=0,{cpu} apic=0,{apic} types=PP smt={smt} eff_mhz=4712 smi=0")
    good = bench.parse(ROWS_LOG.replace("@ shootdown targets=1,state=active cycles 900 800 1000 "
                                        "700 11 300.0 - ipi-sent=11",
                                        one.format(cpu=2, apic=4, smt="none")))
    bad = bench.parse(ROWS_LOG.replace("@ shootdown targets=1,state=active cycles 900 800 1000 "
                                       "700 11 300.0 - ipi-sent=11",
                                       one.format(cpu=1, apic=1, smt="0+1")))
    verdict = dict((name, ok) for name, ok, _ in bench.cpu_verdicts(good, 1))
    cases.check("rows: one target on another core passes the CPU checks",
                verdict == {"(cpus)": True, "(target)": True},
                str(bench.cpu_verdicts(good, 1)))
    verdict = dict((name, (ok, why)) for name, ok, why in bench.cpu_verdicts(bad, 1))
    cases.check("rows: one target on CPU 0's sibling fails while another core is online",
                not verdict["(target)"][0] and "sibling" in verdict["(target)"][1], str(verdict))


# tlb_flush2's rows as the kernel prints them: loops per second with the
# wasted-IPI counters at zero too, and the row of a failed self-check.
FLUSH2_ROWS = (
    "@ tlb_flush2       threads=2,invlpgb=off          loops/s         40        34        40 "
    "       34      3         -       - ipi-sent=37,ipi-recv=37,partial=72,pages=288,"
    "ipi-unloaded=0,ipi-covered=0 cpus=0-1 apic=0-1 types=- smt=none eff_mhz=n/a smi=n/a",
    "@ tlb_flush2       threads=2,invlpgb=off          n/a: FAILED: stale read, a TLB "
    "coherence bug",
    "@ tlb_flush2       threads=2,invlpgb=on           n/a: no INVLPGB",
)


def check_flush2_rows(cases: Cases) -> None:
    measured, failed, absent = (bench.parse_row(line) for line in FLUSH2_ROWS)
    cases.check("rows: tlb_flush2 counts loops/s, its wasted IPIs even at zero",
                measured["unit"] == "loops/s" and measured["median"] == 40
                and measured["counters"].get("ipi-unloaded") == 0
                and measured["counters"].get("ipi-covered") == 0
                and measured["params"] == {"threads": "2", "invlpgb": "off"}, str(measured))
    cases.check("rows: a failed self-check is an n/a row with its reason",
                failed.get("na") == "FAILED: stale read, a TLB coherence bug", str(failed))
    cases.check("rows: invlpgb=on without INVLPGB says why",
                absent.get("na") == "no INVLPGB", str(absent))


def main() -> int:
    cases = Cases()
    check_row_fields(cases)
    check_flush2_rows(cases)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        check_no_results(cases, work)
        check_report(cases, work)
        check_few_cpus(cases, work)
        check_variants(cases, work)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
