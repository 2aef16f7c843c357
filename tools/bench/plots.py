"""The benchmark charts (`make plots`, and the charts of `make report`):
gnuplot scripts built from a results JSON (tools/bench/bench.py, docs/bench.md),
drawn to PNG and SVG in <results dir>/plots.

Every chart shows each row's median with its p10-p90 spread as an error
bar, in ns where the run knew its TSC rate. An axis is logarithmic where
the chart's values span more than LOG_DECADES decades. The local-flush chart
marks the flush_ceiling in force and the measured crossover; the shootdown
curve comes from the newest results with at least CURVE_CPUS CPUs, since a
2-CPU run has one target count only. Every title names the platform, and
says "emulator costs" where the platform is an emulator.

Python 3.11 standard library; drawing needs gnuplot.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

# Platforms (`bench: env platform=`) whose timings are an emulator's.
EMULATORS = ("tcg", "tcg+icount", "bochs")
# The fewest CPUs that make the shootdown rows a curve (1 to 3 targets).
CURVE_CPUS = 4
# An axis whose values span more than this many decades is logarithmic.
LOG_DECADES = 1.5
SIZE = (960, 600)
RESULTS_NAME = re.compile(r"\d{8}-\d{6}")

# The bar charts: file name, what, the benchmarks in it.
BAR_CHARTS = (
    ("prim", "Primitives", ("cr3", "invlpg", "invpcid", "flush_full", "ipi")),
    ("switch", "Context switches per policy",
     ("syscall", "thread_switch", "mm_switch", "idle_lazy", "cpumask", "ipc", "wakeup")),
    ("flush", "Flushes and shootdowns per policy",
     ("flush_info", "flush_concurrent", "batch_unmap", "madvise", "lazy_storm")),
    ("scale", "Context switches per second on every CPU", ("ctxsw_scale",)),
)


# Every chart's file name: those these results do not give are removed from
# plots/, so that none is left from an older run.
CHART_NAMES = ("flush_local", "shootdown", "tlb_reach", *(c[0] for c in BAR_CHARTS))


class PlotError(Exception):
    pass


# --- Reading results ----------------------------------------------------------------

def load(path: Path) -> dict:
    """A results JSON; PlotError with the reason if it is not one."""
    try:
        record = json.loads(path.read_text())
    except OSError as e:
        raise PlotError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise PlotError(f"{path} is not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("benchmarks"), list):
        raise PlotError(f"{path} is not a results file of make bench (no benchmarks)")
    return record


def results_files(directory: Path) -> list[Path]:
    """make bench's and make bench-compare's results in directory, newest
    first (their names start with the time they were made)."""
    return sorted((p for p in directory.glob("*.json") if RESULTS_NAME.match(p.name)),
                  reverse=True)


def newest_results(directory: Path) -> Path | None:
    files = results_files(directory)
    return files[0] if files else None


def cpu_count(record: dict) -> int:
    try:
        return int(record.get("env", {}).get("cpus", "0"))
    except ValueError:
        return 0


def curve_results(directory: Path, newest: dict | None = None,
                  newest_path: Path | None = None) -> tuple[Path, dict] | None:
    """The newest results with at least CURVE_CPUS CPUs and shootdown rows:
    newest (if it qualifies), else the newest such file in directory."""
    def qualifies(record: dict) -> bool:
        return cpu_count(record) >= CURVE_CPUS and bool(rows_of(record, "shootdown"))

    if newest is not None and newest_path is not None and qualifies(newest):
        return newest_path, newest
    for path in results_files(directory):
        try:
            record = load(path)
        except PlotError:
            continue
        if qualifies(record):
            return path, record
    return None


def rows_of(record: dict, name: str) -> list[dict]:
    """The measured rows (not n/a) of one benchmark."""
    for bench in record["benchmarks"]:
        if bench["name"] == name:
            return [r for r in bench["results"] if "na" not in r]
    return []


def platform(record: dict) -> str:
    return record.get("env", {}).get("platform", "") or "unknown platform"


def is_emulator(record: dict) -> bool:
    return platform(record) in EMULATORS


def platform_label(record: dict) -> str:
    """'tcg, emulator costs', 'kvm', ...: what every title says."""
    return platform(record) + (", emulator costs" if is_emulator(record) else "")


def stats(row: dict) -> tuple[float, float, float]:
    """(median, p10, p90) in ns where the row has them in ns (cycles at a
    known TSC rate), else in the row's own unit."""
    source = row.get("ns") or row
    return source["median"], source["p10"], source["p90"]


def unit_of(rows: list[dict]) -> str:
    if rows and all(r.get("ns") for r in rows):
        return "ns"
    units = {r.get("unit", "") for r in rows}
    return units.pop() if len(units) == 1 else "mixed units"


def series(rows: list[dict], x: str, **match: str) -> list[tuple[float, float, float, float]]:
    """(x, median, p10, p90) of the rows whose parameters include match,
    by x."""
    return sorted((float(r["params"][x]), *stats(r)) for r in rows
                  if x in r["params"] and all(r["params"].get(k) == v for k, v in match.items()))


# --- Chart scripts ------------------------------------------------------------------

@dataclasses.dataclass
class Chart:
    name: str      # file name without suffix
    title: str
    script: str    # gnuplot commands after the terminal, with the data inline
    source: str    # the results file it draws


def quoted(text: str) -> str:
    """A gnuplot string constant."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def datablock(name: str, rows: list[tuple]) -> str:
    lines = [" ".join(quoted(v) if isinstance(v, str) else f"{v:.6g}" for v in row)
             for row in rows]
    return f"${name} << EOD\n" + "\n".join(lines) + "\nEOD\n"


def spans_decades(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) > 1 and math.log10(max(positive) / min(positive)) > LOG_DECADES


def y_values(points: list[tuple]) -> list[float]:
    """Every median, p10 and p90 of (x, median, p10, p90) points."""
    return [v for p in points for v in p[1:4]]


def header(title: str, source: str, xlabel: str, ylabel: str) -> str:
    return (f"set title {quoted(title + ' - ' + source)} noenhanced\n"
            f"set xlabel {quoted(xlabel)} noenhanced\nset ylabel {quoted(ylabel)} noenhanced\n"
            "set key noenhanced left top box opaque\nset grid\n")


def y_axis(values: list[float]) -> str:
    return "set logscale y 10\n" if spans_decades(values) else "set yrange [0:*]\n"


def x_range(xs: list[float]) -> tuple[float, float]:
    lo, hi = min(xs), max(xs)
    return lo / 1.5, hi * 1.5


def flush_local_chart(record: dict, source: str) -> Chart | None:
    """Pages flushed against the cost, per method, the policy's
    flush_ceiling and the measured crossover marked."""
    rows = rows_of(record, "flush_local")
    pages, full = series(rows, "pages", how="pages"), series(rows, "pages", how="full")
    if not pages and not full:
        return None
    xs = [p[0] for p in pages + full]
    values = y_values(pages + full)
    log_x = spans_decades(xs)
    lo_x, hi_x = x_range(xs) if log_x else (0, max(xs) * 1.05)
    log_y = spans_decades(values)
    lo_y, hi_y = (min(values) / 1.3, max(values) * 1.3) if log_y else (0, max(values) * 1.1)
    title = f"Local flush of N of 512 pages, then reading all 512: {platform_label(record)}"
    script = datablock("pages", pages) + datablock("full", full)
    script += header(title, source, "pages flushed", f"{unit_of(rows)} (median, p10-p90)")
    script += ("set logscale x 2\n" if log_x else "") + ("set logscale y 10\n" if log_y else "")
    script += f"set xrange [{lo_x:.6g}:{hi_x:.6g}]\nset yrange [{lo_y:.6g}:{hi_y:.6g}]\n"
    plots = [f"$pages using 1:2:3:4 with yerrorlines lw 2 title {quoted('page by page')}",
             f"$full using 1:2:3:4 with yerrorlines lw 2 title {quoted('whole context')}"]

    def mark(name: str, x: float, what: str, style: str) -> None:
        nonlocal script
        if lo_x < x < hi_x:
            script += datablock(name, [(x, lo_y), (x, hi_y)])
            plots.append(f"${name} using 1:2 with lines {style} title {quoted(what)}")
        else:
            plots.append(f"keyentry with lines {style} title "
                         f"{quoted(what + ' (outside the measured range)')}")

    ceiling = flush_ceiling(record)
    if ceiling is None:
        plots.append("keyentry with lines dt 2 title "
                     f"{quoted('flush_ceiling: not in these results')}")
    else:
        mark("ceiling", ceiling, f"flush_ceiling = {ceiling} (the policy in force)",
             "dt 2 lw 2 lc rgb 'black'")
    crossover = record.get("crossover", {}).get("flush_local")
    if crossover and crossover.get("pages") is not None:
        mark("crossover", crossover["pages"],
             f"measured crossover: {crossover['pages']} pages", "dt 3 lw 2 lc rgb 'red'")
    else:
        plots.append("keyentry with lines dt 3 lw 2 lc rgb 'red' title "
                     f"{quoted('measured crossover: ' + crossover_words(crossover))}")
    script += "plot " + ", \\\n     ".join(plots) + "\n"
    return Chart("flush_local", title, script, source)


def flush_ceiling(record: dict) -> int | None:
    """The flush_ceiling in force: the `bench: tlb` line's, else the
    crossover line's."""
    text = record.get("tlb", {}).get("flush_ceiling")
    if text is None:
        crossover = record.get("crossover", {}).get("flush_local") or {}
        return crossover.get("ceiling")
    try:
        return int(text)
    except ValueError:
        return None


def crossover_words(crossover: dict | None) -> str:
    """What a crossover without a page count means (docs/bench.md)."""
    if crossover is None:
        return "not in these results"
    if crossover["result"] == "none":
        return "none (page by page is cheaper even at 512 pages)"
    if crossover["result"] == "n/a":
        return "n/a (a row has no median)"
    return crossover["result"]


def shootdown_chart(record: dict, source: str) -> Chart | None:
    rows = rows_of(record, "shootdown")
    kinds = (("active targets", {"state": "active"}),
             ("lazy targets, lazy=skip", {"state": "lazy", "lazy": "skip"}),
             ("lazy targets, lazy=ipi", {"state": "lazy", "lazy": "ipi"}))
    data = [(what, series(rows, "targets", **match)) for what, match in kinds]
    data = [(what, points) for what, points in data if points]
    if not data:
        return None
    values = [v for _, points in data for v in y_values(points)]
    title = (f"One-page shootdown against the number of target CPUs "
             f"({cpu_count(record)} CPUs): {platform_label(record)}")
    script = "".join(datablock(f"s{i}", points) for i, (_, points) in enumerate(data))
    script += header(title, source, "target CPUs", f"{unit_of(rows)} (median, p10-p90)")
    script += y_axis(values) + "set xtics 1\nset offsets 0.3, 0.3, 0, 0\n"
    script += "plot " + ", \\\n     ".join(
        f"$s{i} using 1:2:3:4 with yerrorlines lw 2 title {quoted(what)}"
        for i, (what, _) in enumerate(data)) + "\n"
    return Chart("shootdown", title, script, source)


def reach_chart(record: dict, source: str) -> Chart | None:
    """tlb_reach (warm) and refill (cold): the cost per page read against
    the pages read."""
    warm = series(rows_of(record, "tlb_reach"), "pages")
    cold = series(rows_of(record, "refill"), "pages", tlb="cold")
    if not warm and not cold:
        return None
    rows = rows_of(record, "tlb_reach") + rows_of(record, "refill")
    title = f"Reading one word of each of N pages, per page: {platform_label(record)}"
    script = datablock("warm", warm) + datablock("cold", cold)
    script += header(title, source, "pages read", f"{unit_of(rows)} per page (median, p10-p90)")
    xs = [p[0] for p in warm + cold]
    if spans_decades(xs):
        lo_x, hi_x = x_range(xs)
        script += f"set logscale x 2\nset xrange [{lo_x:.6g}:{hi_x:.6g}]\n"
    script += y_axis(y_values(warm + cold))
    plots = []
    if warm:
        plots.append(f"$warm using 1:2:3:4 with yerrorlines lw 2 title "
                     f"{quoted('tlb_reach: TLB warm')}")
    if cold:
        plots.append(f"$cold using 1:2:3:4 with yerrorlines lw 2 title "
                     f"{quoted('refill: right after a flush')}")
    script += "plot " + ", \\\n     ".join(plots) + "\n"
    return Chart("tlb_reach", title, script, source)


def bar_chart(record: dict, source: str, name: str, what: str,
              benchmarks: tuple[str, ...]) -> Chart | None:
    """One bar per measured row of the benchmarks: the median, and its
    p10-p90 as an error bar."""
    rows = [r for b in benchmarks for r in rows_of(record, b)]
    if not rows:
        return None
    bars = [(i, f"{r['name']} {r['params_text']}", *stats(r)) for i, r in enumerate(rows)]
    values = [v for bar in bars for v in bar[2:]]
    title = f"{what}: {platform_label(record)}"
    script = datablock("bars", bars)
    script += header(title, source, "", f"{unit_of(rows)} (median, p10-p90)")
    script += y_axis(values)
    script += ("set style fill solid 0.5 border\nset boxwidth 0.7\nset grid noxtics ytics\n"
               "set xtics rotate by 35 right font ',8' noenhanced\n"
               f"set xrange [-0.7:{len(bars) - 0.3}]\n"
               f"set bmargin {min(14, 3 + max(len(b[1]) for b in bars) // 5)}\n"
               f"set lmargin {max(12, len(bars[0][1]) * 6 // 10)}\nset key right top\n"
               "plot $bars using 1:3:xtic(2) with boxes title 'median', "
               "$bars using 1:3:4:5 with yerrorbars lc rgb 'black' ps 0 title 'p10-p90'\n")
    return Chart(name, title, script, source)


def charts(record: dict, source: str,
           curve: tuple[str, dict] | None) -> list[Chart]:
    """Every chart these results give; the shootdown curve from curve
    (name, record), when there is one."""
    out = [flush_local_chart(record, source)]
    if curve is not None:
        out.append(shootdown_chart(curve[1], curve[0]))
    out.append(reach_chart(record, source))
    out += [bar_chart(record, source, *spec) for spec in BAR_CHARTS]
    return [c for c in out if c is not None]


def curve_note(record: dict, source: str, curve: tuple[str, dict] | None,
               newest: bool = True) -> str | None:
    """The line make plots prints when the results drawn (the newest, or
    chosen) are not the curve's: None when they are."""
    cpus = cpu_count(record)
    if cpus >= CURVE_CPUS and rows_of(record, "shootdown"):
        return None
    which = "the newest results" if newest else "these results"
    newest_text = (f"{which} ({source}) have {cpus} CPU{'s' if cpus != 1 else ''}, "
                   f"too few for a shootdown curve (at least {CURVE_CPUS})")
    if curve is None:
        return (f"{newest_text}, and no other results have enough; make bench SMP=8 gives "
                "the curve")
    return (f"{newest_text}: the shootdown curve is from {curve[0]} ({cpu_count(curve[1])} "
            "CPUs); make bench SMP=8 gives a newer one")


# --- Drawing --------------------------------------------------------------------------

def have_gnuplot() -> bool:
    return shutil.which("gnuplot") is not None


def png_terminal() -> str:
    """pngcairo (antialiased) where gnuplot has it, png (libgd) otherwise."""
    probe = subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True,
                           text=True)
    return "pngcairo" if probe.returncode == 0 and not probe.stderr.strip() else "png"


def draw(chart: Chart, directory: Path, png: str) -> list[Path]:
    """chart as NAME.gp (the script), NAME.svg and NAME.png in directory."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / chart.name
    stem.with_suffix(".gp").write_text(chart.script)
    out = []
    for path, terminal in ((stem.with_suffix(".svg"), "svg"), (stem.with_suffix(".png"), png)):
        text = (f"set terminal {terminal} size {SIZE[0]},{SIZE[1]} font 'sans,10'\n"
                f"set output {quoted(str(path))}\n{chart.script}")
        done = subprocess.run(["gnuplot"], input=text, text=True, capture_output=True)
        if done.returncode != 0 or not path.is_file():
            raise PlotError(f"gnuplot failed drawing {path}:\n{done.stderr.strip()}")
        out.append(path)
    return out


def draw_all(record: dict, source: Path, directory: Path,
             newest: bool = True) -> tuple[list[tuple[Chart, Path]], str | None]:
    """Draws every chart of record (from the file source; newest: the
    newest in directory) in directory/plots: [(chart, its PNG)], and the
    note about the shootdown curve (or None). The curve comes from source
    if it has CURVE_CPUS CPUs, else from the newest such results in
    directory."""
    found = curve_results(directory, record, source)
    curve = (found[0].name, found[1]) if found else None
    png = png_terminal()
    made = []
    for chart in charts(record, source.name, curve):
        paths = draw(chart, directory / "plots", png)
        made.append((chart, paths[1]))
    drawn = {chart.name for chart, _ in made}
    for name in CHART_NAMES:
        if name not in drawn:
            for suffix in (".gp", ".svg", ".png"):
                (directory / "plots" / name).with_suffix(suffix).unlink(missing_ok=True)
    return made, curve_note(record, source.name, curve, newest)
