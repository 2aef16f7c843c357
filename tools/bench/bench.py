"""Run the in-kernel benchmarks (bench/) and keep, compare and plot their
results: `make bench`, `make bench-compare`, `make plots`, `make report`.

    python3 -m tools.bench.bench run <kernel.elf>
            boot once, show the run, write <build>/bench/<timestamp>.json
    python3 -m tools.bench.bench compare <kernel.elf> A B
            boot with kernel options A, then B; print both side by side with
            B/A ratios (and keep both JSONs); A and B naming two results
            JSONs compare those, without a boot
    python3 -m tools.bench.bench plots [--dir D] [results.json]
            PNG and SVG charts with gnuplot (in D/plots), from the newest
            results in D (default build/bench)
    python3 -m tools.bench.bench report [--dir D] [-o OUT] [results.json]
            the same results as one HTML page, D/report.html
            (tools/bench/report.py)
    python3 -m tools.bench.bench check <serial.log>
            parse a run's output; say what is missing (exit status 1 if any)
    python3 -m tools.bench.bench import <serial.log>
            a serial log from elsewhere as a results JSON
    python3 -m tools.bench.bench import-qr <file|dir|->...
            the screen's QR codes (photos or screenshots, read with zbarimg,
            or their decoded text) as a results JSON

The machine comes from the same variables as tools/run/boot.py (EMU SMP MEM
ACCEL CPU FIRMWARE MACHINE MEDIA CMDLINE QEMU_ARGS ICOUNT TIMEOUT). ICOUNT=1
also passes `icount` to the kernel, so that it labels its results as counted
instructions. Without `bench=` in the options the kernel runs its default
job, every benchmark.

The kernel's output is read as docs/bench.md describes: `@ ` rows, one per
result, and `bench: ...` lines around them. Rows and env lines of kernels
from before the CPU fields (cpus=, apic=, ... on rows; `bench: cpu` lines)
parse too, without them. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

from tools.bench import plots, report
from tools.run import boot

SCHEMA = 1
# Fields of a result row after `@ name params`, in order (bench/harness.c).
ROW_FIELDS = ("unit", "median", "p10", "p90", "min", "count", "median_ns", "insns",
              "counters")
STATS = ("median", "p10", "p90", "min")
# Where a row ran, key=value after its counters (bench/cpus.h); older
# kernels print none of them.
WHERE_FIELDS = ("cpus", "apic", "types", "smt", "eff_mhz", "smi")
# A suite that takes longer than this is stuck (the default one takes well
# under a minute under TCG); Bochs is some 50 times slower.
TIMEOUT_QEMU = 600
TIMEOUT_BOCHS = 3600


# --- Parsing ----------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?=]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b.")
TITLE = re.compile(r"bench: (\S+) \((\S+)\): (.*)$")
DONE = re.compile(r"bench: (\S+): (\d+) results in (\d+) ms$")
# A figure a benchmark derives from its rows: flush_local's crossover
# (bench/flush.c): `pages=N`, `none` (page by page always cheaper) or `n/a`.
CROSSOVER = re.compile(r"bench: (\S+) crossover (pages=(\d+)|none|n/a) ceiling=(\d+)$")
# A CPU's place (bench/cpus.c): `bench: cpu N apic=A ... siblings=L`.
CPU_LINE = re.compile(r"bench: cpu (\d+) (.*)$")
CPU_NUMBERS = ("apic", "package", "core", "thread")
# The summary's sentences (bench/summary.c): `bench: summary KEY SENTENCE`.
SUMMARY = re.compile(r"bench: summary (\S+) (.*)$")


def clean_lines(text: str) -> list[str]:
    """Serial text as lines, without CRs and terminal escapes."""
    text = ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return [line.rstrip() for line in text.split("\n")]


def key_values(text: str, last: str | None = None) -> dict[str, str]:
    """'a=1 b=x y' -> {'a': '1', 'b': 'x'}; with last='b', b's value runs
    to the end of the line ('x y')."""
    out: dict[str, str] = {}
    if last:
        head, sep, tail = text.partition(f" {last}=")
        if sep:
            out[last] = tail
            text = head
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            out[key] = value
    return out


def number(text: str) -> int | float | None:
    if text == "-":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_params(text: str) -> dict[str, str]:
    return {} if text == "-" else dict(p.split("=", 1) for p in text.split(","))


def number_list(text: str) -> list[int]:
    """'0,2-4' -> [0, 2, 3, 4]: runs of consecutive numbers as a-b."""
    out: list[int] = []
    for part in text.split(","):
        first, sep, last = part.partition("-")
        out += range(int(first), int(last) + 1) if sep else [int(first)]
    return out


def parse_where(words: list[str]) -> dict:
    """A row's fields after its counters, `cpus=0,2 apic=0,4 types=- smt=none
    eff_mhz=n/a smi=n/a`, as {"cpus": [0, 2], "apic": [0, 4], "types": [],
    "smt": [], "eff_mhz": None, "smi": None}; types: one letter per CPU
    (P, E, ?) on a hybrid machine, else empty; smt: the groups of the
    row's CPUs that share a core. Keys this parser does not know are kept
    as text. Raises ValueError on a malformed field."""
    raw = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not value:
            raise ValueError(word)
        raw[key] = value
    where: dict = dict(raw)
    if "cpus" in raw:
        where["cpus"] = number_list(raw["cpus"])
    if "apic" in raw:
        where["apic"] = number_list(raw["apic"])
    if "types" in raw:
        where["types"] = [] if raw["types"] == "-" else list(raw["types"])
    if "smt" in raw:
        where["smt"] = ([] if raw["smt"] == "none" else
                        [[int(c) for c in g.split("+")] for g in raw["smt"].split(",")])
    for key in ("eff_mhz", "smi"):
        if key in raw:
            where[key] = None if raw[key] == "n/a" else int(raw[key])
    return where


class ParseError(Exception):
    pass


def parse_row(line: str) -> dict:
    """One `@ ` row as a dict; raises ParseError if it breaks the format."""
    words = line[2:].split()
    if len(words) < 3:
        raise ParseError(f"too few fields: {line!r}")
    name, params = words[0], words[1]
    try:
        row: dict = {"name": name, "params_text": params, "params": parse_params(params)}
    except ValueError:
        raise ParseError(f"bad parameters {params!r}: {line!r}") from None
    if words[2] == "n/a:":
        row["na"] = " ".join(words[3:]) or "?"
        return row
    if len(words) < 2 + len(ROW_FIELDS):
        raise ParseError(f"expected {2 + len(ROW_FIELDS)} fields: {line!r}")
    values = dict(zip(ROW_FIELDS, words[2:]))
    if len(words) > 2 + len(ROW_FIELDS):
        try:
            row["where"] = parse_where(words[2 + len(ROW_FIELDS):])
        except ValueError:
            raise ParseError(f"a field after the counters is not key=value: "
                             f"{line!r}") from None
    row["unit"] = values["unit"]
    try:
        for key in (*STATS, "count", "median_ns", "insns"):
            row[key] = number(values[key])
        row["counters"] = ({} if values["counters"] == "-" else
                           {k: int(v) for k, v in
                            (c.split("=", 1) for c in values["counters"].split(","))})
    except ValueError:
        raise ParseError(f"a field is not a number: {line!r}") from None
    if any(row[k] is None for k in (*STATS, "count")):
        raise ParseError(f"a statistic is missing: {line!r}")
    return row


@dataclasses.dataclass
class Run:
    """What one boot's serial output says about its benchmarks."""
    env: dict = dataclasses.field(default_factory=dict)
    options: dict = dataclasses.field(default_factory=dict)
    tlb: dict = dataclasses.field(default_factory=dict)
    benchmarks: dict = dataclasses.field(default_factory=dict)  # name -> dict
    # name -> {"result": "pages=N"|"none"|"n/a", "pages": N|None, "ceiling": C}
    crossover: dict = dataclasses.field(default_factory=dict)
    summary: list = dataclasses.field(default_factory=list)  # {"key", "text"}
    # One per `bench: cpu N ...` line: {"cpu": N, "apic": A, "package": P,
    # "core": C, "thread": T, "type": "-"|"P"|"E"|"?", "siblings": [..],
    # "topology": where CPUID told it}; empty from older kernels.
    cpus: list = dataclasses.field(default_factory=list)
    end: dict = dataclasses.field(default_factory=dict)
    problems: list = dataclasses.field(default_factory=list)

    @property
    def selected(self) -> list[str]:
        text = self.env.get("selected", "")
        return text.split(",") if text else []

    def missing(self) -> list[str]:
        """Why this run does not count as complete: one line per problem."""
        out = list(self.problems)
        if not self.env:
            out.append("no `bench: env` line: the benchmarks did not start")
        for name in self.selected:
            b = self.benchmarks.get(name)
            if b is None:
                out.append(f"{name}: did not run")
            elif not b["results"]:
                out.append(f"{name}: no results")
            elif not b["complete"]:
                out.append(f"{name}: did not finish")
            elif name == "flush_local" and name not in self.crossover:
                out.append(f"{name}: no `bench: {name} crossover` line")
        if self.env and not self.end:
            out.append("no `bench: end` line: the run stopped early")
        return out


def cpu_of(index: int, values: dict[str, str]) -> dict:
    """A `bench: cpu` line's fields as numbers and lists."""
    cpu: dict = {"cpu": index, **{k: int(values[k]) for k in CPU_NUMBERS}}
    cpu["type"] = values["type"]
    cpu["siblings"] = [] if values["siblings"] == "-" else number_list(values["siblings"])
    cpu["topology"] = values["topology"]
    return cpu


def parse(text: str) -> Run:
    run = Run()
    current = None
    for line in clean_lines(text):
        if line.startswith("bench: env "):
            run.env = key_values(line[len("bench: env "):], last="brand")
        elif line.startswith("options:") and run.env:
            run.options = key_values(line[len("options:"):])
        elif line.startswith("bench: tlb "):
            run.tlb = key_values(line[len("bench: tlb "):])
        elif line.startswith("bench: end "):
            run.end = {k: int(v) for k, v in key_values(line[len("bench: end "):]).items()}
        elif m := CPU_LINE.match(line):
            try:
                run.cpus.append(cpu_of(int(m.group(1)), key_values(m.group(2))))
            except (KeyError, ValueError):
                run.problems.append(f"a CPU line that does not parse: {line!r}")
        elif m := SUMMARY.match(line):
            run.summary.append({"key": m.group(1), "text": m.group(2)})
        elif m := DONE.match(line):
            b = run.benchmarks.get(m.group(1))
            if b is not None:
                b["complete"] = int(m.group(2)) == len(b["results"])
                b["ms"] = int(m.group(3))
                if not b["complete"]:
                    run.problems.append(f"{b['name']}: says {m.group(2)} results, "
                                        f"{len(b['results'])} were read")
        elif m := CROSSOVER.match(line):
            run.crossover[m.group(1)] = {
                "result": m.group(2),
                "pages": int(m.group(3)) if m.group(3) else None,
                "ceiling": int(m.group(4))}
        elif m := TITLE.match(line):
            current = {"name": m.group(1), "group": m.group(2),
                       "experiment": m.group(3), "results": [], "complete": False}
            run.benchmarks[current["name"]] = current
        elif line.startswith("@ "):
            try:
                row = parse_row(line)
            except ParseError as e:
                run.problems.append(str(e))
                continue
            if current is None or row["name"] != current["name"]:
                run.problems.append(f"a row outside its benchmark: {line!r}")
                continue
            current["results"].append(row)
    tsc_hz = int(run.env.get("tsc_hz", "0") or 0)
    for b in run.benchmarks.values():
        for row in b["results"]:
            if tsc_hz and row.get("unit") == "cycles":
                row["ns"] = {k: row[k] * 1e9 / tsc_hz for k in STATS}
    return run


# --- Running ------------------------------------------------------------------------

def results_dir(kernel: str | Path) -> Path:
    """<build>/bench, next to the kernel (build/bench for the default BUILD)."""
    return Path(kernel).resolve().parent / "bench"


def settings(extra: list[str]) -> boot.Settings:
    s = boot.settings_from_env(boot.Settings(serial="file"))
    s.cmdline = s.cmdline + list(extra)
    if s.icount and "icount" not in s.cmdline:
        s.cmdline.append("icount")
    if "TIMEOUT" not in boot.env_overrides():
        s.timeout = TIMEOUT_BOCHS if s.emu == "bochs" else TIMEOUT_QEMU
    return s.resolve()


def boot_once(kernel: str, extra: list[str], run_dir: Path, label: str) -> tuple[Run, dict]:
    """Boots with the benchmarks; returns the parsed run and a record of it."""
    s = settings(extra)
    print(f"# {label}{s.describe()}, kernel options: {' '.join(s.cmdline) or '(none)'}",
          flush=True)
    result = boot.run(s, kernel, run_dir, stream=True)
    run = parse(result.serial)
    record = record_of(run, machine=s.describe(), cmdline=s.cmdline,
                       serial_log=str(result.serial_path),
                       exit="timeout" if result.timed_out else result.status,
                       duration_s=round(result.duration, 1))
    if result.error:
        record["problems"].append(result.error)
    return run, record


def record_of(run: Run, **how: object) -> dict:
    """The results JSON of a parsed run; how: where and how it ran."""
    return {"schema": SCHEMA, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **how,
            "env": run.env, "options": run.options, "tlb": run.tlb, "end": run.end,
            "benchmarks": list(run.benchmarks.values()), "crossover": run.crossover,
            "summary": run.summary, "cpus": run.cpus, "problems": run.missing()}


def write_json(record: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def cmd_run(kernel: str) -> int:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = results_dir(kernel)
    run, record = boot_once(kernel, [], out / f"run-{stamp}", "")
    path = out / f"{stamp}.json"
    write_json(record, path)
    print(f"\nbench: {sum(len(b['results']) for b in record['benchmarks'])} results "
          f"in {record['duration_s']} s -> {path}")
    for problem in record["problems"]:
        print(f"bench: problem: {problem}", file=sys.stderr)
    return 1 if record["problems"] else 0


# --- Comparing ----------------------------------------------------------------------

def shown(row: dict | None) -> str:
    if row is None:
        return "-"
    if "na" in row:
        return "n/a"
    return f"{row['median']}"


def ratio(a: dict | None, b: dict | None) -> str:
    if not a or not b or "na" in a or "na" in b:
        return "-"
    if a["median"] == 0:
        return "-" if b["median"] else "1.00"
    return f"{b['median'] / a['median']:.2f}"


def cpus_of(row: dict | None) -> tuple:
    """The CPUs, APIC IDs and shared cores a row used (bench/cpus.h)."""
    where = (row or {}).get("where", {})
    return tuple(str(where.get(k)) for k in ("cpus", "apic", "smt"))


def paired(a: dict, b: dict) -> list[tuple[tuple[str, str], dict | None, dict | None]]:
    """Every (benchmark, parameters) of either record, with its row in A
    and in B (None where that run lacks it), in A's order."""
    def rows(record: dict) -> dict:
        return {(r["name"], r["params_text"]): r
                for bench in record["benchmarks"] for r in bench["results"]}

    ra, rb = rows(a), rows(b)
    keys = list(ra) + [k for k in rb if k not in ra]
    return [(k, ra.get(k), rb.get(k)) for k in keys]


def comparison(a: dict, b: dict, a_label: str, b_label: str) -> list[str]:
    """Both runs' medians side by side, row by row, with B/A."""
    lines = [f"A: {a_label}", f"B: {b_label}",
             f"{'benchmark':<16} {'parameters':<30} {'unit':<8} {'A median':>10} "
             f"{'B median':>10} {'B/A':>6}"]
    moved = []
    for key, row_a, row_b in paired(a, b):
        unit = (row_a or row_b).get("unit", "")
        lines.append(f"{key[0]:<16} {key[1]:<30} {unit:<8} {shown(row_a):>10} "
                     f"{shown(row_b):>10} {ratio(row_a, row_b):>6}")
        # A ratio of rows measured on different cores compares the cores.
        where_a, where_b = (report.where_text(r) if r else "-" for r in (row_a, row_b))
        if "-" not in (where_a, where_b) and cpus_of(row_a) != cpus_of(row_b):
            moved.append(f"{key[0]} {key[1]} ran elsewhere: A {where_a}; B {where_b}")
    lines += moved
    cross_a, cross_b = a.get("crossover", {}), b.get("crossover", {})
    for name in list(cross_a) + [n for n in cross_b if n not in cross_a]:
        ca, cb = cross_a.get(name), cross_b.get(name)
        lines.append(f"{name} crossover: A {ca['result'] if ca else '-'}, "
                     f"B {cb['result'] if cb else '-'}")
    return lines


def results_files(a: str, b: str) -> tuple[Path, Path] | None:
    """A and B as two results JSONs (a laptop's from import-qr, say), or
    None when they are kernel options."""
    paths = (Path(a), Path(b))
    if all(p.suffix == ".json" for p in paths):
        for p in paths:
            if not p.is_file():
                raise boot.ConfigError(f"{p}: no such results file")
        return paths
    return None


def cmd_compare(kernel: str, a_opts: str, b_opts: str) -> int:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = results_dir(kernel)
    records = []
    if files := results_files(a_opts, b_opts):
        records = [json.loads(p.read_text()) for p in files]
        print("\n".join(comparison(records[0], records[1], str(files[0]), str(files[1]))))
        return 0
    for label, opts in (("A", a_opts), ("B", b_opts)):
        _, record = boot_once(kernel, shlex.split(opts), out / f"run-{stamp}-{label}",
                              f"{label}: ")
        write_json(record, out / f"{stamp}-{label}.json")
        records.append(record)
    lines = comparison(records[0], records[1], a_opts or "(no options)",
                       b_opts or "(no options)")
    (out / f"{stamp}-compare.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    print(f"\nbench: {out / f'{stamp}-A.json'}, {out / f'{stamp}-B.json'}, "
          f"{out / f'{stamp}-compare.txt'}")
    problems = [f"{label}: {p}" for label, r in zip("AB", records) for p in r["problems"]]
    for problem in problems:
        print(f"bench: problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


# --- Plots and the report -----------------------------------------------------------

def chosen_results(path: str | None, directory: Path) -> tuple[Path, dict]:
    """The results file to draw or report: path, else the newest in
    directory; plots.PlotError with a clear message when none."""
    source = Path(path) if path else plots.newest_results(directory)
    if source is None:
        raise plots.PlotError(f"no results in {directory}: run make bench first")
    if not source.is_file():
        raise plots.PlotError(f"{source}: no such results file (make bench writes "
                                    f"them in {directory})")
    return source, plots.load(source)


def cmd_plots(path: str | None, directory: Path) -> int:
    if not plots.have_gnuplot():
        print("bench: gnuplot is missing (apt-get install gnuplot-nox, or make deps)",
              file=sys.stderr)
        return 1
    source, record = chosen_results(path, directory)
    made, note = plots.draw_all(record, source, directory, newest=path is None)
    for chart, png in made:
        print(f"bench: {png} (and .svg, .gp): {chart.title}")
    if note:
        print(f"bench: {note}")
    if not made:
        print(f"bench: {source} has no rows to chart", file=sys.stderr)
        return 1
    return 0


def cmd_report(path: str | None, directory: Path, out: str | None) -> int:
    source, record = chosen_results(path, directory)
    target = Path(out) if out else directory / "report.html"
    rows, charts, notes = report.write(record, source, directory, target,
                                             newest=path is None)
    for note in notes:
        print(f"bench: {note}")
    print(f"bench: {target}: {rows} results of {len(record['benchmarks'])} benchmarks "
          f"({source.name}), {charts} charts")
    return 0


# --- Tests (tools/test/run_tests.py) ----------------------------------------------------

def verdicts(run: Run, result: boot.RunResult) -> list[tuple[str, bool, str]]:
    """(benchmark, ok, why) for every selected benchmark, then the run's
    own problems (output that does not parse, no end, a bad exit)."""
    out = []
    for name in run.selected:
        b = run.benchmarks.get(name)
        why = ("did not run" if b is None else "no results" if not b["results"]
               else "did not finish" if not b["complete"] else "")
        out.append((name, not why, why))
    for problem in run.problems:
        out.append(("(output)", False, problem))
    if not run.env:
        out.append(("(run)", False, result.error or "the benchmarks did not start"))
    elif not run.end:
        out.append(("(run)", False, result.error or "no `bench: end` line"))
    elif not result.clean:
        out.append(("(exit)", False, f"the kernel did not end the run with success "
                                     f"(status {result.status})"))
    return out


def cpu_verdicts(run: Run, threads: int) -> list[tuple[str, bool, str]]:
    """Whether the record says what its CPUs are and the one-target rows
    kept off CPU 0's core (bench/cpus.h). threads: the threads per core
    the machine was given (QEMU's -smp threads=), 1 when not said.

      (cpus)    a `bench: cpu` line for every CPU; siblings named both
                ways, with equal package and core; with threads > 1,
                smt=on and threads - 1 siblings for each CPU;
      (target)  each `shootdown targets=1,...` row used CPU 0 and the
                env's target_cpu, not a sibling of CPU 0 unless every
                other CPU is one (and the env says target_core=sibling),
                and named the APIC ID the target's cpu line has."""
    cpus = {c["cpu"]: c for c in run.cpus}
    problems = []
    if len(cpus) != int(run.env.get("cpus", "0") or 0):
        problems.append(f"{len(cpus)} `bench: cpu` lines for cpus={run.env.get('cpus')}")
    for c in cpus.values():
        for s in c["siblings"]:
            other = cpus.get(s)
            if other is None or c["cpu"] not in other["siblings"] or (
                    other["package"], other["core"]) != (c["package"], c["core"]):
                problems.append(f"CPU {c['cpu']} names CPU {s} its sibling, which "
                                "does not agree")
        if threads > 1 and len(c["siblings"]) != threads - 1:
            problems.append(f"CPU {c['cpu']} has siblings {c['siblings']}, the machine "
                            f"{threads} threads per core")
    if threads > 1 and run.env.get("smt") != "on":
        problems.append(f"smt={run.env.get('smt')} on a machine with {threads} threads per core")
    out = [("(cpus)", not problems, "; ".join(problems))]
    if not cpus or 0 not in cpus:
        return out
    problems = []
    shared = set(cpus[0]["siblings"])
    others = [c for c in cpus if c != 0]
    for b in run.benchmarks.values():
        for row in b["results"]:
            if b["name"] != "shootdown" or row["params"].get("targets") != "1" or "na" in row:
                continue
            used = row.get("where", {}).get("cpus", [])
            label = f"{b['name']} {row['params_text']}"
            if len(used) != 2 or used[0] != 0:
                problems.append(f"{label} used CPUs {used}, not CPU 0 and one other")
                continue
            target = used[1]
            if str(target) != run.env.get("target_cpu"):
                problems.append(f"{label} flushed CPU {target}, the env says "
                                f"target_cpu={run.env.get('target_cpu')}")
            if target in shared and not set(others) <= shared:
                problems.append(f"{label} flushed CPU {target}, CPU 0's SMT sibling, "
                                "though another core is online")
            if target in shared and run.env.get("target_core") != "sibling":
                problems.append(f"{label} flushed CPU 0's sibling and the env says "
                                f"target_core={run.env.get('target_core')}")
            if row["where"].get("apic", [None, None])[1] != cpus[target]["apic"]:
                problems.append(f"{label} names APIC IDs {row['where'].get('apic')}, the "
                                f"`bench: cpu {target}` line {cpus[target]['apic']}")
    out.append(("(target)", not problems, "; ".join(problems)))
    return out


def threads_per_core(s: boot.Settings) -> int:
    """QEMU's threads= of the machine's topology, 1 when not given."""
    m = re.search(r"(?:^|,)threads=(\d+)", s.topology)
    return int(m.group(1)) if m else 1


def test_run(s: boot.Settings, kernel: str, run_dir: Path) -> list[tuple[str, bool, str]]:
    """Boots s with bench=all (unless its options choose) and judges it,
    with what it says of its CPUs (cpu_verdicts)."""
    s = dataclasses.replace(s, cmdline=list(s.cmdline))
    if not any(w.startswith("bench=") for w in s.cmdline):
        s.cmdline.insert(0, "bench=all")
    if s.icount and "icount" not in s.cmdline:
        s.cmdline.append("icount")
    result = boot.run(s, kernel, run_dir)
    run = parse(result.serial)
    return verdicts(run, result) + (cpu_verdicts(run, threads_per_core(s)) if run.env else [])


def test_compare(s: boot.Settings, kernel: str, run_dir: Path, a: str,
                 b: str) -> list[tuple[str, bool, str]]:
    """Two boots, A and B, and the side-by-side table: every row must have
    a value (or n/a) in both columns."""
    records = []
    for label, opts in (("A", a), ("B", b)):
        sb = dataclasses.replace(s, cmdline=list(s.cmdline) + shlex.split(opts))
        result = boot.run(sb, kernel, run_dir / label)
        run = parse(result.serial)
        bad = [v for v in verdicts(run, result) if not v[1]]
        if bad:
            return [(f"{label}:{bad[0][0]}", False, bad[0][2])]
        records.append({"benchmarks": list(run.benchmarks.values())})
    lines = comparison(records[0], records[1], a, b)
    (run_dir / "compare.txt").write_text("\n".join(lines) + "\n")
    pairs = paired(records[0], records[1])
    if not pairs:
        return [("columns", False, "the comparison has no rows")]
    for key, row_a, row_b in pairs:
        if row_a is None or row_b is None:
            return [("columns", False, f"{' '.join(key)} is only in "
                                        f"{'B' if row_a is None else 'A'}")]
    return [("columns", True, "")]


# --- Checking -----------------------------------------------------------------------

def cmd_check(log: str) -> int:
    run = parse(Path(log).read_text(errors="replace"))
    missing = run.missing()
    for line in missing:
        print(f"bench: {line}")
    results = sum(len(b["results"]) for b in run.benchmarks.values())
    print(f"bench: {len(run.benchmarks)} benchmarks, {results} results, "
          f"{len(missing)} problems")
    return 1 if missing else 0


def cmd_import(log: str, out: str | None) -> int:
    """A serial log captured elsewhere (a real PC's serial port, KVM) as a
    results JSON beside make bench's, for hwcompare, plots and compare."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError as e:
        print(f"bench: cannot read {log}: {e.strerror}", file=sys.stderr)
        return 2
    run = parse(text)
    if not run.benchmarks:
        print(f"bench: {log} holds no benchmark rows (lines '@ name params ...')",
              file=sys.stderr)
        return 1
    record = record_of(run, machine=run.env.get("platform", "unknown"), cmdline=[],
                       serial_log=str(Path(log).resolve()), exit=None, duration_s=None)
    path = Path(out) if out else results_dir(boot.ROOT / "build" / "kernel") / (
        "imported-" + time.strftime("%Y%m%d-%H%M%S") + ".json")
    write_json(record, path)
    rows = sum(len(b["results"]) for b in run.benchmarks.values())
    print(f"bench: {rows} rows of {len(run.benchmarks)} benchmarks -> {path}"
          + (f" ({len(record['problems'])} problems: {record['problems'][0]})"
             if record["problems"] else ""))
    return 0


# --- The screen's QR codes (bench/qr_codes.c, docs/qr.md) --------------------------

# One code's text: `shootdown K/N ID BASE64`; phone apps may wrap or quote it.
QR_TEXT = re.compile(r"shootdown (\d+)/(\d+) ([0-9a-f]{8}) ([A-Za-z0-9+/=]+)")
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".ppm", ".pgm", ".pbm", ".pnm", ".gif", ".bmp",
                  ".tif", ".tiff", ".webp"}


class QrError(Exception):
    pass


def zbarimg(image: Path) -> str:
    """The text of every code zbarimg (package zbar-tools) finds in an image."""
    if not shutil.which("zbarimg"):
        raise QrError("zbarimg is not installed: apt-get install zbar-tools (or make deps)")
    done = subprocess.run(["zbarimg", "-q", "--raw", str(image)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, errors="replace", timeout=120)
    # 4: no code found; the others say the image could not be read.
    if done.returncode not in (0, 4):
        raise QrError(f"{image}: zbarimg cannot read it (exit status {done.returncode})")
    return done.stdout


def qr_sources_text(sources: list[str]) -> str:
    """The text of the codes in images, text files, directories of them, or -."""
    out = []
    for source in sources:
        if source == "-":
            out.append(sys.stdin.read())
            continue
        path = Path(source)
        if not path.exists():
            raise QrError(f"{source}: no such file or directory")
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if f.suffix.lower() in IMAGE_SUFFIXES:
                out.append(zbarimg(f))
            else:
                out.append(f.read_text(errors="replace"))
    return "\n".join(out)


def decode_qr_text(text: str) -> tuple[str, str, int]:
    """The results text the codes carry, their run's ID and their count.
    Codes may come in any order, twice, and mixed with other text; a code
    missing or of another run is an error that says which."""
    runs: dict[str, dict] = {}
    for m in QR_TEXT.finditer(text):
        k, n, run_id, data = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        r = runs.setdefault(run_id, {"n": n, "parts": {}})
        if n != r["n"] or not 1 <= k <= n:
            raise QrError(f"run {run_id}: code {k}/{n} does not fit the others ({r['n']} codes)")
        if r["parts"].setdefault(k, data) != data:
            raise QrError(f"run {run_id}: two different codes {k}/{n}")
    if not runs:
        raise QrError("no shootdown QR code in the input (text `shootdown K/N ID ...`)")
    complete = [i for i, r in runs.items() if len(r["parts"]) == r["n"]]
    if len(runs) > 1 and len(complete) != 1:
        raise QrError("codes of several runs: " + ", ".join(
            f"{i} ({len(r['parts'])} of {r['n']})" for i, r in runs.items())
            + "; give the codes of one run")
    run_id = complete[0] if complete else next(iter(runs))
    r = runs[run_id]
    missing = [f"{k}/{r['n']}" for k in range(1, r["n"] + 1) if k not in r["parts"]]
    if missing:
        raise QrError(f"run {run_id}: {len(r['parts'])} of {r['n']} codes; missing "
                      + ", ".join(missing))
    try:
        packed = base64.b64decode("".join(r["parts"][k] for k in range(1, r["n"] + 1)),
                                  validate=True)
        results = zlib.decompress(packed)
    except (binascii.Error, zlib.error) as e:
        raise QrError(f"run {run_id}: the codes do not decode ({e}): a misread code?") from e
    if packed[-4:].hex() != run_id:
        raise QrError(f"run {run_id}: the data's checksum is {packed[-4:].hex()}")
    return results.decode(errors="replace"), run_id, r["n"]


def cmd_import_qr(sources: list[str], out: str | None) -> int:
    """The QR codes a machine with only a screen showed, as the results JSON
    make bench writes (for plots, reports, bench-compare, hwcompare)."""
    try:
        text, run_id, count = decode_qr_text(qr_sources_text(sources))
    except (QrError, OSError, subprocess.TimeoutExpired) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    run = parse(text)
    record = record_of(run, machine=run.env.get("platform", "unknown"), cmdline=[],
                       source=f"{count} QR codes, run {run_id}", exit=None, duration_s=None)
    path = Path(out) if out else results_dir(boot.ROOT / "build" / "kernel") / (
        "qr-" + time.strftime("%Y%m%d-%H%M%S") + ".json")
    write_json(record, path)
    rows = sum(len(b["results"]) for b in run.benchmarks.values())
    print(f"bench: {count} QR codes of run {run_id}: {rows} rows of {len(run.benchmarks)} "
          f"benchmarks -> {path}"
          + (f" ({len(record['problems'])} problems: {record['problems'][0]})"
             if record["problems"] else ""))
    return 0


def main(argv: list[str]) -> int:
    boot.interrupt_on_sigterm()
    parser = argparse.ArgumentParser(prog="python3 -m tools.bench.bench",
                                     description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="boot once and keep the results")
    p.add_argument("kernel")
    p = sub.add_parser("compare", help="two boots, side by side")
    p.add_argument("kernel")
    p.add_argument("a", help="kernel options of run A")
    p.add_argument("b", help="kernel options of run B")
    p = sub.add_parser("plots", help="PNG charts with gnuplot")
    p.add_argument("results", nargs="?", help="a results JSON (default: the newest)")
    p.add_argument("--dir", default=str(boot.ROOT / "build" / "bench"),
                   help="where the results are and the plots go")
    p = sub.add_parser("report", help="one self-contained HTML page of a run")
    p.add_argument("results", nargs="?", help="a results JSON (default: the newest)")
    p.add_argument("--dir", default=str(boot.ROOT / "build" / "bench"),
                   help="where the results are; the page goes there as report.html")
    p.add_argument("-o", "--output", help="the page to write (default: DIR/report.html)")
    p = sub.add_parser("check", help="parse a run's serial output")
    p.add_argument("log")
    p = sub.add_parser("import", help="a serial log from elsewhere as a results JSON")
    p.add_argument("log")
    p.add_argument("-o", "--output", help="the JSON to write (default: build/bench/imported-*.json)")
    p = sub.add_parser("import-qr", help="the screen's QR codes as a results JSON")
    p.add_argument("sources", nargs="+",
                   help="photos or screenshots of the codes, text files of their decoded "
                        "text, directories of them, or - for standard input")
    p.add_argument("-o", "--output", help="the JSON to write (default: build/bench/qr-*.json)")
    args = parser.parse_args(argv[1:])
    try:
        if args.command == "run":
            return cmd_run(args.kernel)
        if args.command == "compare":
            return cmd_compare(args.kernel, args.a, args.b)
        if args.command == "plots":
            return cmd_plots(args.results, Path(args.dir))
        if args.command == "report":
            return cmd_report(args.results, Path(args.dir), args.output)
        if args.command == "import":
            return cmd_import(args.log, args.output)
        if args.command == "import-qr":
            return cmd_import_qr(args.sources, args.output)
        return cmd_check(args.log)
    except (boot.ConfigError, plots.PlotError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        boot.stop_all()
        print("\nbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv))
