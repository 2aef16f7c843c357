"""One results JSON as one self-contained HTML page (`make report`): the
environment, the headline summary, the policies in force, the charts
(tools/bench_plots.py, embedded as PNG data: URIs) and every benchmark's
table, all rows, n/a rows with their reason. No external file, link or
script: the page opens anywhere, mailed or copied alone.

headline(record) is the summary: one sentence per headline figure, from
the rows docs/bench.md ("The summary") names; the kernel's on-screen
summary uses the same rows and wording. Python 3.11 standard library.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import bench_plots

# --- The headline summary -----------------------------------------------------------
# Each figure, the rows it reads (benchmark, params): docs/bench.md lists
# the same, with the wording, so the kernel's summary can agree.
PCID_ROWS = (("mm_switch", "pcid=off,pages=512"), ("mm_switch", "pcid=on,pages=512"))
IPC_ROW = ("ipc", "spaces=2,cpus=1")
INVLPG_ROW = ("invlpg", "entry=present")
FULL_FLUSH_ROW = ("flush_full", "what=nonglobal,how=cr3")
SHOOTDOWN_ONE = ("shootdown", "targets=1,state=active")
LAZY_ROWS = (("idle_lazy", "lazy=off"), ("idle_lazy", "lazy=skip"))
EMULATOR_NAMES = {"tcg": "QEMU's TCG", "tcg+icount": "QEMU's TCG with icount",
                  "bochs": "Bochs"}


def find_row(record: dict, name: str, params: str) -> tuple[dict | None, str]:
    """The row (measured or n/a) and, when it is missing, why."""
    for bench in record["benchmarks"]:
        if bench["name"] == name:
            for row in bench["results"]:
                if row["params_text"] == params:
                    return row, ""
            return None, f"{name} has no row {params}"
    return None, f"{name} did not run"


def cost(row: dict) -> tuple[float, str]:
    """A row's median in ns where the run knew its TSC rate, else in its
    own unit."""
    if row.get("median_ns") is not None:
        return row["median_ns"], "ns"
    return row["median"], row.get("unit", "")


def amount(value: float, unit: str) -> str:
    return f"{round(value):,} {unit}"


def unmeasured(what: str, rows: list[tuple[str, str]], record: dict) -> str | None:
    """Why the figure cannot be given (a row missing or n/a), or None."""
    for name, params in rows:
        row, why = find_row(record, name, params)
        if row is None:
            return f"{what}: not in these results ({why})."
        if "na" in row:
            return f"{what}: not measurable here ({name} {params}: n/a: {row['na']})."
    return None


def measured(record: dict, name: str, params: str) -> tuple[float, str]:
    row, _ = find_row(record, name, params)
    assert row is not None and "na" not in row
    return cost(row)


def saving(record: dict, what: str, slow: tuple[str, str], fast: tuple[str, str]) -> str | None:
    """'saves N' or 'costs N more' of the fast row against the slow, or
    None where the units differ."""
    (a, unit_a), (b, unit_b) = measured(record, *slow), measured(record, *fast)
    if unit_a != unit_b:
        return None
    diff = a - b
    return (f"{what} saves {amount(diff, unit_a)}" if diff >= 0
            else f"{what} costs {amount(-diff, unit_a)} more")


def platform_sentence(record: dict) -> str:
    name = bench_plots.platform(record)
    cpus = bench_plots.cpu_count(record)
    if bench_plots.is_emulator(record):
        return (f"These are emulator costs: the platform is {name} "
                f"({EMULATOR_NAMES.get(name, name)}, {cpus} CPUs), so every figure is what the "
                "emulator takes to do the operation, not what a CPU takes.")
    return f"The platform is {name} ({cpus} CPUs): these are the costs of the CPU."


def pcid_sentence(record: dict) -> str:
    what = "PCID hit saving per address-space switch"
    why = unmeasured(what, list(PCID_ROWS), record)
    if why:
        return why
    text = saving(record, "A PCID hit", *PCID_ROWS)
    off, on = (amount(*measured(record, *r)) for r in PCID_ROWS)
    return (f"{text or what + ': the two rows are in different units'} per address-space "
            f"switch with 512 pages touched (mm_switch pages=512: {off} without PCID, "
            f"{on} with).")


def ipc_sentence(record: dict) -> str:
    what = "Cross-address-space IPC round trip"
    return unmeasured(what, [IPC_ROW], record) or (
        f"A cross-address-space IPC round trip (call and reply between two tasks on one CPU) "
        f"takes {amount(*measured(record, *IPC_ROW))} (ipc {IPC_ROW[1]}).")


def flush_cost_sentence(record: dict) -> str:
    parts = []
    why = unmeasured("INVLPG", [INVLPG_ROW], record)
    parts.append(why or f"INVLPG of one page in the TLB costs "
                        f"{amount(*measured(record, *INVLPG_ROW))} (invlpg {INVLPG_ROW[1]}).")
    why = unmeasured("Full flush", [FULL_FLUSH_ROW], record)
    parts.append(why or f"A full flush (CR3 reload, 512 user pages in the TLB) costs "
                        f"{amount(*measured(record, *FULL_FLUSH_ROW))} "
                        f"(flush_full {FULL_FLUSH_ROW[1]}).")
    return " ".join(parts)


def crossover_sentence(record: dict) -> str:
    crossover = record.get("crossover", {}).get("flush_local")
    ceiling = bench_plots.flush_ceiling(record)
    in_force = f"flush_ceiling is {ceiling}" if ceiling is not None else \
        "flush_ceiling is not in these results"
    if crossover is None:
        return (f"Local-flush crossover: not in these results (no flush_local crossover "
                f"line); {in_force}.")
    if crossover["result"] == "none":
        return (f"Page by page stays cheaper than flushing the whole context up to 512 pages "
                f"(flush_local crossover none): the measurement argues for no ceiling below "
                f"512; {in_force}.")
    if crossover["pages"] is None:
        return (f"Local-flush crossover: not measurable here (flush_local crossover n/a: "
                f"a row has no median); {in_force}.")
    at = crossover["pages"]
    counts = sorted({int(r["params"]["pages"]) for r in bench_plots.rows_of(record, "flush_local")
                     if "pages" in r["params"]})
    below = [c for c in counts if c < at]
    if not below:
        return (f"Flushing the whole context is never slower than page by page, from "
                f"{at} page{'s' if at != 1 else ''} on (flush_local crossover pages={at}): the "
                f"measurement argues for a flush_ceiling of 0; {in_force}.")
    low, high = below[-1], at - 1
    where = ("within that range" if ceiling is not None and low <= ceiling <= high else
             "below that range" if ceiling is not None and ceiling < low else
             "above that range" if ceiling is not None else "")
    return (f"Flushing the whole context is never slower than page by page from {at} pages on "
            f"(flush_local crossover pages={at}): the measurement argues for a flush_ceiling "
            f"between {low} and {high}; {in_force}" + (f", {where}." if where else "."))


def shootdown_sentence(record: dict) -> str:
    cpus = bench_plots.cpu_count(record)
    what = "One-page shootdown latency"
    all_row = ("shootdown", f"targets={max(cpus - 1, 1)},state=active")
    why = unmeasured(what, [SHOOTDOWN_ONE, all_row], record)
    if why:
        return why
    one = amount(*measured(record, *SHOOTDOWN_ONE))
    if cpus <= 2:
        return (f"A one-page shootdown to the one other CPU, running the address space, takes "
                f"{one} (shootdown {SHOOTDOWN_ONE[1]}); with 2 CPUs that is also all of them.")
    return (f"A one-page shootdown takes {one} to one other CPU and "
            f"{amount(*measured(record, *all_row))} to all {cpus - 1} others, every target "
            f"running the address space (shootdown {SHOOTDOWN_ONE[1]} and {all_row[1]}).")


def lazy_sentence(record: dict) -> str:
    what = "Lazy TLB saving per idle switch"
    why = unmeasured(what, list(LAZY_ROWS), record)
    if why:
        return why
    text = saving(record, "Lazy TLB", *LAZY_ROWS)
    off, skip = (amount(*measured(record, *r)) for r in LAZY_ROWS)
    return (f"{text or what + ': the two rows are in different units'} per switch between a "
            f"user thread and idle (idle_lazy: lazy=off {off}, lazy=skip {skip}).")


def headline(record: dict) -> list[str]:
    """The summary of a results record, one sentence per figure, in this
    order: the platform, PCID, IPC, INVLPG and full flush, the local-flush
    crossover, shootdowns, lazy TLB (docs/bench.md, "The summary")."""
    return [platform_sentence(record), pcid_sentence(record), ipc_sentence(record),
            flush_cost_sentence(record), crossover_sentence(record),
            shootdown_sentence(record), lazy_sentence(record)]


# --- The page ---------------------------------------------------------------------------

# The env fields first in the environment table; the rest follow as they are.
ENV_ORDER = ("platform", "cpus", "tsc_hz", "tsc_source", "invariant_tsc", "clock_overhead",
             "vendor", "family", "model", "stepping", "brand")
FEATURES = ("pcid", "invpcid", "pge", "x2apic", "tsc_deadline", "smep", "smap", "xsave")
COLUMNS = ("parameters", "unit", "median", "p10", "p90", "min", "count", "median ns", "insns",
           "TLB counters")
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
            + key_value_table(run))


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
             + f"<td class='params'>{esc(counters)}</td>")
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


def chart_html(chart: bench_plots.Chart, png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f"<figure data-chart='{esc(chart.name)}'><img alt='{esc(chart.title)}' "
            f"src='data:image/png;base64,{data}'><figcaption>{esc(chart.title)} "
            f"({esc(chart.source)})</figcaption></figure>")


def page(record: dict, source: Path, charts: list[tuple[bench_plots.Chart, Path]],
         chart_notes: list[str]) -> str:
    """The whole report; charts: [(chart, its PNG)], chart_notes: lines
    about them (the shootdown curve's source, gnuplot missing)."""
    label = bench_plots.platform_label(record)
    problems = "".join(f"<li class='problem'>{esc(p)}</li>" for p in record.get("problems", []))
    summary = "".join(f"<li>{esc(s)}</li>" for s in headline(record))
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
            + f"<h2 id='summary'>Summary</h2><ul id='summary-list'>{summary}</ul>"
            + policies(record)
            + f"<h2 id='charts'>Charts</h2>{notes}{figures}"
            + f"<h2 id='tables'>Tables</h2>{tables}"
            + "</body></html>\n")


def write(record: dict, source: Path, directory: Path, out: Path,
          newest: bool = True) -> tuple[int, int, list[str]]:
    """Draws the charts (when gnuplot is there) and writes the page to out:
    (rows, charts, notes). newest: source is the newest in directory."""
    notes = []
    charts: list[tuple[bench_plots.Chart, Path]] = []
    if bench_plots.have_gnuplot():
        charts, note = bench_plots.draw_all(record, source, directory, newest)
        if note:
            notes.append(note)
    else:
        notes.append("gnuplot is missing, so this report has no charts "
                     "(apt-get install gnuplot-nox, or make deps)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(record, source, charts, notes))
    return sum(len(b["results"]) for b in record["benchmarks"]), len(charts), notes
