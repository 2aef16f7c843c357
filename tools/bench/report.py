"""One results JSON as one self-contained HTML page (`make report`): the
environment, the headline summary, the policies in force, the charts
(tools/bench/plots.py, embedded as PNG data: URIs) and every benchmark's
table, all rows, n/a rows with their reason. No external file, link or
script: the page opens anywhere, mailed or copied alone.

The summary is the kernel's own (bench/summary.c), kept in the results
JSON from its `bench: summary` lines. Python 3.11 standard library.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

from tools.bench import plots

# --- Where a row ran --------------------------------------------------------------------

def compact_list(numbers: list[int]) -> str:
    """[0, 2, 3, 4] -> '0,2-4', as the kernel writes lists."""
    parts, i = [], 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(f"{numbers[i]}-{numbers[j]}" if j > i else str(numbers[i]))
        i = j + 1
    return ",".join(parts)


def where_text(row: dict) -> str:
    """A row's CPUs in a few characters: 'cpu 0,2 apic 0,4 PE smt 0+1 2400MHz
    smi 3'; the core types only on a hybrid machine, smt only where two of
    the row's CPUs share a core, the clock and SMIs only where measured;
    '-' for rows of kernels that did not say."""
    where = row.get("where")
    if not where or "cpus" not in where:
        return "-"
    parts = [f"cpu {compact_list(where['cpus'])}"]
    if where.get("apic") and where["apic"] != where["cpus"]:
        parts.append(f"apic {compact_list(where['apic'])}")
    if where.get("types"):
        parts.append("".join(where["types"]))
    if where.get("smt"):
        parts.append("smt " + ",".join("+".join(map(str, g)) for g in where["smt"]))
    if where.get("eff_mhz") is not None:
        parts.append(f"{where['eff_mhz']}MHz")
    if where.get("smi") is not None:
        parts.append(f"smi {where['smi']}")
    return " ".join(parts)


def cpus_table(record: dict) -> str:
    """The `bench: cpu` lines as a table: which CPU is which core."""
    cpus = record.get("cpus", [])
    if not cpus:
        return ("<p>The kernel that measured these results did not say where its CPUs "
                "sit (no <code>bench: cpu</code> lines).</p>")
    head = "".join(f"<th>{c}</th>" for c in ("CPU", "APIC ID", "package", "core", "thread",
                                              "type", "SMT siblings", "from CPUID"))
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(v)}</td>" for v in (
            c["cpu"], c["apic"], c["package"], c["core"], c["thread"], c["type"],
            compact_list(c["siblings"]) or "-", c["topology"])) + "</tr>"
        for c in cpus)
    return f"<table id='cpus'><tr>{head}</tr>{rows}</table>"


# --- The summary -----------------------------------------------------------------------

def summary(record: dict) -> list[str]:
    """The kernel's own summary (bench/summary.c, `bench: summary` lines),
    sentence for sentence as its screen shows it: one source of wording."""
    sentences = [s["text"] for s in record.get("summary", [])]
    return sentences or ["These results carry no summary: the kernel that measured them "
                         "printed none (results from before the summary screen)."]


# --- The page ---------------------------------------------------------------------------

# The env fields first in the environment table; the rest follow as they are.
ENV_ORDER = ("platform", "cpus", "tsc_hz", "tsc_source", "invariant_tsc", "clock_overhead",
             "vendor", "family", "model", "stepping", "brand", "smt", "hybrid", "target_cpu",
             "target_apic", "target_core", "eff_clock", "smi_count")
FEATURES = ("pcid", "invpcid", "pge", "x2apic", "tsc_deadline", "smep", "smap", "xsave")
COLUMNS = ("parameters", "unit", "median", "p10", "p90", "min", "count", "median ns", "insns",
           "TLB counters", "where")
STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 80em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #999; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #a33; } code, td.params { font-family: monospace; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ccc; }
.problem { color: #a33; } .note { background: #ffd; padding: 0.5em; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def key_value_table(values: dict, order: tuple[str, ...] = ()) -> str:
    keys = [k for k in order if k in values] + [k for k in values if k not in order]
    cells = "".join(f"<tr><th>{esc(k)}</th><td>{esc(values[k])}</td></tr>" for k in keys)
    return f"<table>{cells}</table>"


def line_of(prefix: str, values: dict) -> str:
    """An `options:` or `bench: tlb` line as the kernel printed it."""
    return prefix + " " + " ".join(f"{k}={v}" for k, v in values.items())


def environment(record: dict, source: Path) -> str:
    env = record.get("env", {})
    present = [f for f in FEATURES if env.get(f) == "1"]
    absent = [f for f in FEATURES if env.get(f) == "0"]
    run = {"results": source.name, "made": record.get("time", ""),
           "machine": record.get("machine", ""),
           "kernel options": " ".join(record.get("cmdline", [])) or "(none)",
           "run took": f"{record.get('duration_s')} s" if record.get("duration_s") else "-"}
    return ("<h2 id='environment'>Environment</h2>"
            f"<p>CPU features present: <code>{esc(' '.join(present) or 'none')}</code>; absent: "
            f"<code>{esc(' '.join(absent) or 'none')}</code></p>"
            + key_value_table({k: v for k, v in env.items() if k not in FEATURES}, ENV_ORDER)
            + key_value_table(run) + cpus_table(record))


def policies(record: dict) -> str:
    options, tlb = record.get("options", {}), record.get("tlb", {})
    return ("<h2 id='policies'>Policies in force</h2>"
            "<p>The command line's options, then the TLB policy actually in force (after "
            "CPUID: <code>pcid=on</code> on a CPU without PCID is in force as off):</p>"
            f"<pre id='options-line'>{esc(line_of('options:', options))}</pre>"
            f"<pre id='tlb-line'>{esc(line_of('bench: tlb', tlb))}</pre>"
            + key_value_table(tlb))


def number_cell(value: object) -> str:
    text = "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)
    return f"<td class='num'>{esc(text)}</td>"


def row_html(row: dict) -> str:
    key = esc(f"{row['name']} {row['params_text']}")
    params = f"<td class='params'>{esc(row['params_text'])}</td>"
    if "na" in row:
        return (f"<tr data-row='{key}'>{params}<td class='na' colspan='{len(COLUMNS) - 1}'>"
                f"n/a: {esc(row['na'])}</td></tr>")
    counters = ",".join(f"{k}={v}" for k, v in row.get("counters", {}).items()) or "-"
    cells = (f"<td>{esc(row.get('unit', ''))}</td>"
             + "".join(number_cell(row.get(k)) for k in ("median", "p10", "p90", "min", "count",
                                                           "median_ns", "insns"))
             + f"<td class='params'>{esc(counters)}</td>"
             + f"<td class='params'>{esc(where_text(row))}</td>")
    return f"<tr data-row='{key}'>{params}{cells}</tr>"


def benchmark_table(bench: dict, record: dict) -> str:
    name = bench["name"]
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    rows = "".join(row_html(r) for r in bench["results"])
    done = (f"{len(bench['results'])} results in {bench['ms']} ms" if "ms" in bench else
            f"{len(bench['results'])} results; did not finish")
    extra = ""
    crossover = record.get("crossover", {}).get(name)
    if crossover:
        extra = (f"<p>Measured crossover: <code>{esc(crossover['result'])}</code>, "
                 f"flush_ceiling in force: <code>{esc(crossover['ceiling'])}</code></p>")
    return (f"<section id='bench-{esc(name)}'><h3>{esc(name)} ({esc(bench['group'])})</h3>"
            f"<p>{esc(bench['experiment'])} ({esc(done)})</p>"
            f"<table data-benchmark='{esc(name)}'><tr>{head}</tr>{rows}</table>{extra}</section>")


def chart_html(chart: plots.Chart, png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f"<figure data-chart='{esc(chart.name)}'><img alt='{esc(chart.title)}' "
            f"src='data:image/png;base64,{data}'><figcaption>{esc(chart.title)} "
            f"({esc(chart.source)})</figcaption></figure>")


def page(record: dict, source: Path, charts: list[tuple[plots.Chart, Path]],
         chart_notes: list[str]) -> str:
    """The whole report; charts: [(chart, its PNG)], chart_notes: lines
    about them (the shootdown curve's source, gnuplot missing)."""
    label = plots.platform_label(record)
    problems = "".join(f"<li class='problem'>{esc(p)}</li>" for p in record.get("problems", []))
    sentences = "".join(f"<li>{esc(s)}</li>" for s in summary(record))
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in chart_notes)
    figures = "".join(chart_html(c, png) for c, png in charts)
    tables = "".join(benchmark_table(b, record) for b in record["benchmarks"])
    contents = " | ".join(f"<a href='#{a}'>{t}</a>" for a, t in (
        ("environment", "Environment"), ("summary", "Summary"), ("policies", "Policies"),
        ("charts", "Charts"), ("tables", "Tables")))
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>shootdown benchmarks: {esc(label)} ({esc(source.name)})</title>"
            f"<style>{STYLE}</style></head><body>"
            f"<h1>shootdown benchmarks: {esc(label)}</h1><p>{esc(source.name)}: "
            f"{sum(len(b['results']) for b in record['benchmarks'])} results of "
            f"{len(record['benchmarks'])} benchmarks. {contents}</p>"
            + (f"<p class='problem'>Problems of this run:</p><ul>{problems}</ul>"
               if problems else "")
            + environment(record, source)
            + f"<h2 id='summary'>Summary</h2><ul id='summary-list'>{sentences}</ul>"
            + policies(record)
            + f"<h2 id='charts'>Charts</h2>{notes}{figures}"
            + f"<h2 id='tables'>Tables</h2>{tables}"
            + "</body></html>\n")


def write(record: dict, source: Path, directory: Path, out: Path,
          newest: bool = True) -> tuple[int, int, list[str]]:
    """Draws the charts (when gnuplot is there) and writes the page to out:
    (rows, charts, notes). newest: source is the newest in directory."""
    notes = []
    charts: list[tuple[plots.Chart, Path]] = []
    if plots.have_gnuplot():
        charts, note = plots.draw_all(record, source, directory, newest)
        if note:
            notes.append(note)
    else:
        notes.append("gnuplot is missing, so this report has no charts "
                     "(apt-get install gnuplot-nox, or make deps)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(record, source, charts, notes))
    return sum(len(b["results"]) for b in record["benchmarks"]), len(charts), notes
