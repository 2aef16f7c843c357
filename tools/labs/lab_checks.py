"""The functional checks of the benchmark labs (L1, L6, L8) and of L0's
start-up record, for the grader
(tools/labs/grade.py, docs/labs.md) and by hand:

    python3 -m tools.labs.lab_checks reach LOG        L1: the tlb_reach rows of a boot's serial log
    python3 -m tools.labs.lab_checks samples LOG      L1: what each tlb_reach sample timed (the
                                                      injection kernel's log: make inject)
    python3 -m tools.labs.lab_checks crossover LOG    L6: flush_local's crossover line
    python3 -m tools.labs.lab_checks hwcompare [ROOT] L8: tools/bench/hwcompare.py on its fixtures
    python3 -m tools.labs.lab_checks startup LOG      L0: how each AP was started (the injection
                                                      kernel's log: make inject)
    python3 -m tools.labs.lab_checks selftest         these checks on made-up logs

Each check returns the problems it found, one line each; none is a pass.
The CLI prints them and exits 1 if there are any. No check ever applies a
timing threshold: emulated timings are not stable enough to grade on; the
checks only ask that the rows are there, well formed and consistent with
each other. Python 3.11 standard library only.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.bench import bench

# The harness's least sample count for a row (bench/harness.c:
# BENCH_SAMPLES_MIN, BENCH_SAMPLES_FLOOR), scaled by bench_scale= as
# bench_min_samples() does.
SAMPLES_MIN = 11
SAMPLES_DEFAULT = 1001  # the most a row takes at bench_scale=100
SAMPLES_FLOOR = 3
PERCENT = 100
# tlb_reach's working sets: 1 page doubling to at least this (16 MiB).
REACH_PAGES_LEAST = 4096
# How a stubbed region stops the kernel (lib/lab.h).
UNWRITTEN = "is not written yet"
# The fixtures of check_hwcompare, relative to the tree's root: the
# arguments of each run and the output it must print exactly.
HW_CASES = (
    (["tests/labs/hw-a.json", "tests/labs/hw-b.json"], "tests/labs/hw-expected.txt"),
    (["--published", "tests/labs/hw-a.json", "tests/labs/hw-b.json"],
     "tests/labs/hw-expected-published.txt"),
)
HW_TIMEOUT = 60  # seconds: the tool reads two small files
# Two slips print a table of the right shape from these fixtures, so a line
# that shows one says which: the words it starts with, and the rule it broke.
HW_SLIPS = (
    (["cr3", "noflush=0", "cycles", "2297"],
     "that is the second of the two `cr3 noflush=0` rows tests/labs/hw-a.json holds, and "
     "the first one counts"),
    (["invlpg", "entry=absent"],
     "tests/labs/hw-b.json lists invlpg's rows the other way round, and the table follows "
     "A's order"),
)


def min_samples(run: bench.Run) -> int:
    """bench_min_samples() of the run, from the scale in its env line."""
    scale = int(run.env.get("scale", PERCENT))
    return max(SAMPLES_MIN * scale // PERCENT, SAMPLES_FLOOR)


def max_samples(run: bench.Run) -> int:
    """bench_max_samples() of the run: a row stops sampling there."""
    scale = int(run.env.get("scale", PERCENT))
    return max(SAMPLES_DEFAULT * scale // PERCENT, SAMPLES_FLOOR)


def unwritten(serial_text: str) -> list[str]:
    """The lines where a stubbed lab region stopped the kernel."""
    return [line.strip() for line in bench.clean_lines(serial_text) if UNWRITTEN in line]


def check_bench_rows(serial_text: str, name: str, expected_params: list[str]) -> list[str]:
    """Benchmark `name` ran to its end and printed exactly the rows
    expected_params (parameter texts, "pages=1,tlb=warm"), in that order,
    each measured (not n/a), with at least the harness's least sample count
    and min <= p10 <= median <= p90; and its `results` line counts them."""
    run = bench.parse(serial_text)
    problems = [f"the kernel stopped: {line}" for line in unwritten(serial_text)]
    b = run.benchmarks.get(name)
    if not run.env:
        problems.append("no `bench: env` line: the benchmarks did not start")
    if b is None:
        return problems + [f"{name}: did not run (no `bench: {name} (...)` title line)"]
    if not b["complete"]:
        problems.append(f"{name}: no `bench: {name}: N results in T ms` line agreeing "
                        f"with its {len(b['results'])} rows (the benchmark did not finish)")
    least, most = min_samples(run), max_samples(run)
    rows = {}
    for row in b["results"]:
        if row["params_text"] in rows:
            problems.append(f"{name} {row['params_text']}: printed twice")
        rows[row["params_text"]] = row
    missing = [p for p in expected_params if p not in rows]
    if missing:
        problems.append(f"{name}: {len(missing)} of {len(expected_params)} rows missing: "
                        f"{' '.join(missing)}")
    for params in expected_params:
        row = rows.get(params)
        if row is None:
            continue
        if "na" in row:
            problems.append(f"{name} {params}: n/a ({row['na']})")
        else:
            if row["count"] < least:
                problems.append(f"{name} {params}: {row['count']} samples, the harness "
                                f"takes at least {least}")
            if row["count"] > most:
                problems.append(f"{name} {params}: {row['count']} samples, more than the "
                                f"{most} bench_scale= allows: sample while bench_more() asks")
            if not row["min"] <= row["p10"] <= row["median"] <= row["p90"]:
                problems.append(f"{name} {params}: min {row['min']}, p10 {row['p10']}, "
                                f"median {row['median']}, p90 {row['p90']} are not in order")
    extra = [p for p in rows if p not in expected_params]
    if extra:
        problems.append(f"{name}: unexpected rows {', '.join(extra)}")
    order = [p for p in rows if p in expected_params]
    if order != [p for p in expected_params if p in rows]:
        problems.append(f"{name}: rows out of order: {', '.join(order)}")
    return problems


def reach_counts(largest: int) -> list[int]:
    """1, 2, 4, ... up to the larger of largest and REACH_PAGES_LEAST."""
    counts, n = [], 1
    while n <= max(largest, REACH_PAGES_LEAST):
        counts.append(n)
        n *= 2
    return counts


def check_tlb_reach(serial_text: str) -> list[str]:
    """L1: tlb_reach printed `pages=N,tlb=warm` for N = 1 doubling to at
    least 4096 (more doublings are welcome), every one measured."""
    b = bench.parse(serial_text).benchmarks.get("tlb_reach")
    largest = 0
    for row in b["results"] if b else []:
        pages = row["params"].get("pages", "")
        if pages.isdigit():
            largest = max(largest, int(pages))
    expected = [f"pages={n},tlb=warm" for n in reach_counts(largest)]
    return check_bench_rows(serial_text, "tlb_reach", expected)


# The injection kernel's record of a row's samples (bench/probe.h).
PROBE = re.compile(r"^bench: probe (\S+) (\S+) batch=(\d+) shape=(\S+) samples=(\d+) "
                   r"unlike=(\d+)$")
# A shape's parts: a pass over N pages (i: interrupts on), a clock read,
# or "..." for more than the record holds.
SHAPE_PART = re.compile(r"(\d+)(i?)|([\[\]])|(\.\.\.)|,")


def probes(serial_text: str, name: str) -> dict[str, dict]:
    """The `bench: probe` lines of benchmark name, by the row's parameters."""
    found = {}
    for line in bench.clean_lines(serial_text):
        m = PROBE.match(line)
        if m and m.group(1) == name:
            found[m.group(2)] = {"batch": int(m.group(3)), "shape": m.group(4),
                                 "samples": int(m.group(5)), "unlike": int(m.group(6))}
    return found


def passes(count: int) -> str:
    return f"{count} pass" + ("es" if count != 1 else "")


def shape_problems(shape: str, pages: int, batch: int) -> list[str]:
    """What is wrong with one tlb_reach sample of a row of `pages` pages,
    recorded as shape (bench/probe.h), the row begun with batch. Each
    problem is said without the row's numbers, so that the rows sharing it
    can be named together."""
    untimed, timed, after, clocks, on = [], [], [], 0, False
    for m in SHAPE_PART.finditer(shape if shape != "-" else ""):
        if m.group(1):
            [untimed, timed, after][min(clocks, 2)].append(int(m.group(1)))
            on = on or bool(m.group(2))
        elif m.group(3):
            clocks += 1
        elif m.group(4):
            return ["a sample does more than the record holds (over 8 passes and clock reads)"]
    if clocks != 2:
        return [f"a sample reads bench_clock() {clocks} times, not twice (start, end)"]
    problems = []
    if len(timed) != 1:
        over = "over the pages" if set(timed) == {pages} else "over other page counts"
        problems.append(f"the timed window holds {passes(len(timed))} {over}" +
                        (": the warm-up pass is timed" if len(timed) > 1 and not untimed else
                         ", not 1"))
    elif timed[0] != pages:
        problems.append("the timed pass reads another number of pages than the row's N")
    if not untimed and len(timed) < 2:
        problems.append("no untimed pass before the clock starts: the TLB is not warmed")
    elif untimed and set(untimed) != {pages}:
        problems.append("the untimed pass before the clock reads another number of pages "
                        "than the row's N")
    elif len(untimed) > 1:
        problems.append(f"{passes(len(untimed))} untimed before the clock starts, not 1")
    if after:
        problems.append(f"{passes(len(after))} after the clock stops")
    if on:
        problems.append("a pass runs with interrupts on: both belong in one "
                        "irq_save()/irq_restore() window")
    if timed == [pages] and batch != pages:
        problems.append(f"bench_begin's batch is {batch}, but the timed window reads the "
                        "row's N pages: the row reports a whole pass, not one page (batch N)")
    return problems


def check_reach_samples(serial_text: str) -> list[str]:
    """L1, on the injection kernel: every tlb_reach sample reads the row's N
    pages once untimed, then once between the two clock reads, with
    interrupts off, in a row whose batch is N. The same problem in many
    rows is said once, naming the first."""
    problems = [f"the kernel stopped: {line}" for line in unwritten(serial_text)]
    b = bench.parse(serial_text).benchmarks.get("tlb_reach")
    if b is None:
        return problems + ["tlb_reach: did not run (no `bench: tlb_reach (...)` title line)"]
    if not b["results"]:
        return problems + ["tlb_reach: printed no rows"]
    found = probes(serial_text, "tlb_reach")
    if not found and not any("bench: probe " in line for line in bench.clean_lines(serial_text)):
        return problems + ["no `bench: probe` lines: the log is not from the injection kernel "
                           "(make inject), whose record of each sample this check reads"]
    rows_with: dict[str, list[str]] = {}
    for row in b["results"]:
        pages = row["params"].get("pages", "")
        if "na" in row or not pages.isdigit():
            continue
        probe = found.get(row["params_text"])
        if probe is None:
            said = ["no sample called reach_pass between bench_more() and bench_add()"]
        else:
            said = shape_problems(probe["shape"], int(pages), probe["batch"])
            if probe["unlike"]:
                said.append("some samples differ from the first: every sample must do the "
                            "same")
        for p in said:
            rows_with.setdefault(p, []).append(row["params_text"])
    for p, rows in rows_with.items():
        more = f" and {len(rows) - 1} more rows" if len(rows) > 1 else ""
        problems.append(f"tlb_reach {rows[0]}{more}: {p}")
    return problems


def crossover_index(by_page: list[int], full: list[int]) -> int:
    """The documented crossover (docs/bench.md), as bench/crossover.c finds it:
    the smallest i such that full[j] <= by_page[j] for every j >= i;
    len(full) when there is none."""
    i = len(full)
    while i > 0 and full[i - 1] <= by_page[i - 1]:
        i -= 1
    return i


def check_crossover(serial_text: str) -> list[str]:
    """L6: flush_local printed both series over the same page counts, and
    the crossover line it printed is the one its own medians give, with
    ceiling= the flush_ceiling the run's `bench: tlb` line has in force."""
    run = bench.parse(serial_text)
    b = run.benchmarks.get("flush_local")
    counts = []
    for row in b["results"] if b else []:
        pages = row["params"].get("pages", "")
        if row["params"].get("how") == "pages" and pages.isdigit():
            counts.append(int(pages))
    if b and not counts:
        return ["flush_local: no `pages=N,how=pages` rows"]
    expected = ([f"pages={n},how=pages" for n in counts] +
                [f"pages={n},how=full" for n in counts])
    problems = check_bench_rows(serial_text, "flush_local", expected)
    if b is None:
        return problems
    if counts != sorted(set(counts)):
        problems.append(f"flush_local: page counts not increasing: {counts}")
    line = run.crossover.get("flush_local")
    if line is None:
        return problems + ["flush_local: no `bench: flush_local crossover ... ceiling=C` line"]
    ceiling = run.tlb.get("flush_ceiling")
    if ceiling is None:
        problems.append("no flush_ceiling in the `bench: tlb` line")
    elif str(line["ceiling"]) != ceiling:
        problems.append(f"flush_local crossover: ceiling={line['ceiling']}, the policy in "
                        f"force has flush_ceiling={ceiling}")
    if problems:
        return problems  # the medians to recompute from are not all there
    rows = {r["params_text"]: r for r in b["results"]}
    by_page = [rows[f"pages={n},how=pages"]["median"] for n in counts]
    full = [rows[f"pages={n},how=full"]["median"] for n in counts]
    i = crossover_index(by_page, full)
    want = "none" if i == len(counts) else f"pages={counts[i]}"
    if line["result"] != want:
        problems.append(f"flush_local crossover: the line says {line['result']}, the "
                        f"medians say {want} (page by page {by_page}, whole context {full})")
    return problems


def hw_slip(want: str, got: str) -> str:
    """Which of HW_SLIPS a line that differs from the expected one shows,
    as the end of the problem's sentence ("" if none)."""
    for words, rule in HW_SLIPS:
        if got.split()[:len(words)] == words and want.split()[:len(words)] != words:
            return f": {rule}"
    return ""


def check_hwcompare(repo_root: str | Path) -> list[str]:
    """L8: the tree's tools/bench/hwcompare.py prints, on the fixtures in
    tests/labs/, exactly the expected output."""
    root = Path(repo_root)
    tool = root / "tools" / "bench" / "hwcompare.py"
    if not tool.is_file():
        return [f"{tool}: missing"]
    problems = []
    for args, expected_path in HW_CASES:
        shown = " ".join(["python3 -m tools.bench.hwcompare", *args])
        try:
            result = subprocess.run([sys.executable, "-m", "tools.bench.hwcompare", *args],
                                    cwd=root, capture_output=True, text=True,
                                    timeout=HW_TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append(f"{shown}: still running after {HW_TIMEOUT} s")
            continue
        if result.returncode:
            last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            problems.append(f"{shown}: exit status {result.returncode}: {last}")
            continue
        want = (root / expected_path).read_text().splitlines()
        got = result.stdout.splitlines()
        for n, (w, g) in enumerate(zip(want, got), 1):
            if w != g:
                problems.append(f"{shown}: line {n} is {g!r}, expected {w!r} "
                                f"({expected_path}){hw_slip(w, g)}")
                break
        else:
            if len(got) != len(want):
                problems.append(f"{shown}: {len(got)} lines, expected {len(want)} "
                                f"({expected_path})")
    return problems


# The boot summary line (init/main.c) and the census's CPU table.
BOOT_LINE = re.compile(r"^boot: cpus=(\d+) .*\baccel=(\w+)")
CPU_ROW = re.compile(r"^cpus:\s+(\S+)\s+(\d+)\s+(\S.*)$")
EMULATORS = ("tcg", "bochs")


def check_hardware_log(serial_text: str) -> list[str]:
    """L8: a serial log of the day on real hardware (a PC, or KVM): the
    kernel says it ran on no emulator, the census lists every CPU with a
    state and counts the online ones in the boot line, and the benchmarks
    ran to their end with rows that parse."""
    lines = bench.clean_lines(serial_text)
    problems = [f"the kernel stopped: {line}" for line in unwritten(serial_text)]
    boot = next((m for m in map(BOOT_LINE.match, lines) if m), None)
    if boot is None:
        return problems + ["no `boot: cpus=N ... accel=...` line: not a shootdown boot log"]
    if boot.group(2) in EMULATORS:
        problems.append(f"accel={boot.group(2)}: this log is from an emulator; the day needs a real "
                        "PC (accel=none) or KVM (accel=kvm)")
    rows = [m for m in map(CPU_ROW.match, lines) if m and m.group(1) != "index"]
    if not rows:
        problems.append("no census: the `cpus: index  APIC ID  state` table is missing")
    online = sum(1 for m in rows if m.group(3).startswith("online"))
    if rows and online != int(boot.group(1)):
        problems.append(f"the census shows {online} CPUs online, the boot line cpus={boot.group(1)}")
    run = bench.parse(serial_text)
    if not run.benchmarks:
        problems.append("no benchmark rows: boot the default job (or bench=all) to the end")
    else:
        problems += [f"benchmarks: {p}" for p in run.missing()]
    return problems


# The injection kernel's record of each AP's start-up (apic/startup_probe.h).
START_PROBE = re.compile(r"^smp: probe apic_id=(\d+) ipis=(\S*) init_wait=(\w+) answered=(\S+)$")
NO_ANSWER = "no answer to INIT-SIPI-SIPI"  # the census's state (init/smp_boot.c)


def check_start_up(serial_text: str) -> list[str]:
    """L0, on the injection kernel: every AP the census shows online or not
    answering got an INIT, then its first STARTUP at least 10 ms later by the
    kernel's own TSC delay; one shown online had announced itself before the
    boot CPU moved on; one not answering got INIT again last (parked)."""
    lines = bench.clean_lines(serial_text)
    problems = [f"the kernel stopped: {line}" for line in unwritten(serial_text)]
    found = {m.group(1): m for m in map(START_PROBE.match, lines) if m}
    rows = [m for m in map(CPU_ROW.match, lines) if m and m.group(1) != "index"]
    if not found:
        return problems + ["no `smp: probe` lines: the log is not from the injection kernel "
                           "(make inject), whose record of each start-up this check reads"]
    if not rows:
        return problems + ["no census: the `cpus: index  APIC ID  state` table is missing"]
    for row in rows:
        apic_id, state = row.group(2), row.group(3).strip()
        if state != NO_ANSWER and (state != "online" or row.group(1) == "0"):
            continue
        probe = found.get(apic_id)
        if probe is None:
            problems.append(f"APIC ID {apic_id} is {state!r} but was sent no INIT or STARTUP")
            continue
        ipis, wait, answered = probe.group(2), probe.group(3), probe.group(4)
        if wait == "none":
            problems.append(f"APIC ID {apic_id}: no INIT before the first STARTUP ({ipis})")
        elif wait != "ok":
            problems.append(f"APIC ID {apic_id}: the first STARTUP came less than 10 ms after "
                            f"the INIT ({ipis}): the AP may not be ready for it")
        if state == "online" and answered != "yes":
            problems.append(f"APIC ID {apic_id} is reported online, but had not announced "
                            f"itself when the boot CPU moved on ({ipis}): an AP is online "
                            "once it says so")
        last = ipis.split(",")[-1]
        if state == NO_ANSWER and not last.startswith("INIT") and last != "...":
            problems.append(f"APIC ID {apic_id} did not answer and was left as it was "
                            f"({ipis}): it may still wake later, on the next CPU's stack")
    return problems


# --- Self-test: the checks on logs made up to pass or fail -----------------------

def made_up_log(flush: dict[int, tuple[int, int]], crossover: str, ceiling: int = 33,
                policy_ceiling: int = 33, reach_largest: int = REACH_PAGES_LEAST) -> str:
    """A serial log with tlb_reach rows up to reach_largest and flush_local
    rows {pages: (median page by page, median whole context)}."""
    def row(name: str, params: str, median: int) -> str:
        return f"@ {name} {params} cycles {median} {median} {median} {median} 11 1.0 - -"

    reach = [row("tlb_reach", f"pages={n},tlb=warm", 5) for n in reach_counts(reach_largest)
             if n <= reach_largest]
    local = ([row("flush_local", f"pages={n},how=pages", m[0]) for n, m in flush.items()] +
             [row("flush_local", f"pages={n},how=full", m[1]) for n, m in flush.items()])
    return "\n".join([
        "bench: env platform=tcg cpus=1 tsc_hz=1000000000 scale=100 selected=tlb_reach,"
        "flush_local brand=made up",
        f"bench: tlb pcid=off flush_ceiling={policy_ceiling}",
        "bench: tlb_reach (prim): made up", *reach,
        f"bench: tlb_reach: {len(reach)} results in 1 ms",
        "bench: flush_local (flush): made up", *local,
        f"bench: flush_local crossover {crossover} ceiling={ceiling}",
        f"bench: flush_local: {len(local)} results in 1 ms",
        f"bench: end benchmarks=2 results={len(reach) + len(local)} seconds=0", ""])


def probed_log(shape: str, batch: int = 0, unlike: int = 0) -> str:
    """A made-up log of tlb_reach with the injection kernel's record of each
    row: shape with {n} for the row's pages, batch (0: the pages)."""
    lines = []
    for line in made_up_log({1: (1, 2)}, "none").split("\n"):
        lines.append(line)
        m = re.match(r"^@ tlb_reach pages=(\d+),tlb=warm ", line)
        if m:
            n = int(m.group(1))
            lines.append(f"bench: probe tlb_reach pages={n},tlb=warm batch={batch or n} "
                         f"shape={shape.format(n=n)} samples=100 unlike={unlike}")
    return "\n".join(lines)


def made_up_census(accel: str, online: int, listed: int, benchmarks: str) -> str:
    """A boot log's census and boot line, then benchmark output."""
    rows = [f"cpus: {i if i < online else '-':>5} {i * 2:>8}  "
            + ("online" if i < online else "absent (not enabled in the MADT)")
            for i in range(listed)]
    return "\n".join(["cpus: index  APIC ID  state", *rows,
                      f"boot: cpus={online} apic=xapic pcid=1 invpcid=1 invlpgb=0 accel={accel} mem_mib=8000",
                      benchmarks])


def made_up_start_up(online: str, silent: str = "") -> str:
    """A census of the boot CPU, APIC ID 1 (state online, its probe line
    online) and, with silent, APIC ID 2 not answering (its probe line)."""
    rows = ["cpus: index  APIC ID  state", "cpus:     0        0  online",
            "cpus:     1        1  online"]
    probes = [f"smp: probe apic_id=1 {online}"]
    if silent:
        rows.append(f"cpus:     -        2  {NO_ANSWER}")
        probes.append(f"smp: probe apic_id=2 {silent}")
    return "\n".join(probes + rows)


def selftest() -> list[str]:
    """The checks pass on consistent made-up logs and fail on broken ones."""
    cheap_late = {1: (10, 50), 2: (20, 50), 33: (60, 50), 64: (40, 50), 128: (90, 50)}
    started = "ipis=INIT,STARTUP+10001us,STARTUP+202us init_wait=ok answered=yes"
    rows = made_up_log(cheap_late, "pages=128")
    cases = [
        ("crossover at the last win", check_crossover(made_up_log(cheap_late, "pages=128")),
         True),
        ("crossover none", check_crossover(made_up_log({1: (1, 2), 2: (3, 4)}, "none")), True),
        ("crossover from the first", check_crossover(made_up_log({1: (5, 5), 2: (9, 5)},
                                                                 "pages=1")), True),
        ("wrong crossover", check_crossover(made_up_log(cheap_late, "pages=33")), False),
        ("wrong ceiling", check_crossover(made_up_log(cheap_late, "pages=128", ceiling=0)),
         False),
        ("reach to 4096", check_tlb_reach(made_up_log(cheap_late, "pages=128")), True),
        ("reach to 8192", check_tlb_reach(made_up_log(cheap_late, "pages=128",
                                                      reach_largest=8192)), True),
        ("reach to 2048", check_tlb_reach(made_up_log(cheap_late, "pages=128",
                                                      reach_largest=2048)), False),
        ("stubbed kernel", check_tlb_reach("panic: lab L1: reach_rows() is not written yet\n"),
         False),
        ("samples as written", check_reach_samples(probed_log("{n}[{n}]")), True),
        ("warm-up timed", check_reach_samples(probed_log("[{n},{n}]")), False),
        ("no warm-up", check_reach_samples(probed_log("[{n}]")), False),
        ("warm-up with interrupts on", check_reach_samples(probed_log("{n}i[{n}]")), False),
        ("batch 1", check_reach_samples(probed_log("{n}[{n}]", batch=1)), False),
        ("samples unlike", check_reach_samples(probed_log("{n}[{n}]", unlike=3)), False),
        ("no probes", check_reach_samples(rows), False),
        ("samples of a stubbed kernel", check_reach_samples(
            "bench: tlb_reach (prim): made up\npanic: lab L1: reach_rows() is not written yet\n"),
         False),
        ("a PC's log", check_hardware_log(made_up_census("none", 4, 5, rows)), True),
        ("a KVM log", check_hardware_log(made_up_census("kvm", 2, 2, rows)), True),
        ("an emulator's log", check_hardware_log(made_up_census("tcg", 2, 2, rows)), False),
        ("a census that disagrees", check_hardware_log(made_up_census("none", 3, 3, rows)
                                                       .replace("cpus=3", "cpus=2")), False),
        ("no benchmarks", check_hardware_log(made_up_census("none", 2, 2, "")), False),
        ("start-up as written", check_start_up(made_up_start_up(
            started, "ipis=INIT,STARTUP+10001us,STARTUP+202us,INIT+2000001us init_wait=ok "
            "answered=no")), True),
        ("no wait after INIT", check_start_up(made_up_start_up(
            started.replace("init_wait=ok", "init_wait=short"))), False),
        ("no INIT", check_start_up(made_up_start_up(
            "ipis=STARTUP,STARTUP+202us init_wait=none answered=yes")), False),
        ("online before it answered", check_start_up(made_up_start_up(
            started.replace("answered=yes", "answered=no"))), False),
        ("a silent AP left running", check_start_up(made_up_start_up(
            started, "ipis=INIT,STARTUP+10001us,STARTUP+202us init_wait=ok answered=no")),
         False),
        ("start-up not probed", check_start_up(made_up_census("none", 2, 2, "")), False),
    ]
    return [f"selftest {name}: expected {'a pass' if want else 'problems'}, got "
            f"{problems or 'a pass'}" for name, problems, want in cases
            if (not problems) != want]


def main(argv: list[str]) -> int:
    usage = ("usage: tools/labs/lab_checks.py reach LOG | samples LOG | crossover LOG | hardware LOG | "
             "startup LOG | hwcompare [ROOT] | selftest")
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    command, args = argv[1], argv[2:]
    checks = {"reach": check_tlb_reach, "samples": check_reach_samples,
              "crossover": check_crossover,
              "hardware": check_hardware_log, "startup": check_start_up}
    if command in checks and len(args) == 1:
        problems = checks[command](Path(args[0]).read_text(errors="replace"))
    elif command == "hwcompare" and len(args) <= 1:
        problems = check_hwcompare(args[0] if args else ROOT)
    elif command == "selftest" and not args:
        problems = selftest()
    else:
        print(usage, file=sys.stderr)
        return 2
    for problem in problems:
        print(f"lab_checks: {problem}")
    print(f"lab_checks: {command}: {'FAIL' if problems else 'PASS'} "
          f"({len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
