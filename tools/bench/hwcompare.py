"""Compare two benchmark runs, row by row: the real-hardware day (lab L8).

    python3 -m tools.bench.hwcompare [--published] A.json B.json

A and B are results files as `make bench` writes them (tools/bench/bench.py:
build/bench/<timestamp>.json), typically one under TCG and one under KVM
or on bare metal. For every row both runs have (same benchmark, same
parameters) it prints the two medians and B/A; then the rows only one run
has. --published adds B's median in ns and a published figure for the
rows that have one, with its source: approximate figures from other
machines, to say whether B is in the right range, not to match it.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


# Published costs in ns of operations some rows measure alone, keyed by
# (benchmark, parameters). Each was measured on one machine, by someone
# else, with their own method: compare orders of magnitude.
#
# Sources (also printed, by their number):
#  1. Andy Lutomirski, Linux commit d8bced79af1d "x86/mm: If INVPCID is
#     available, use it to flush global mappings" (Linux 4.6, 2016): "On my
#     Skylake laptop, INVPCID function 2 (flush absolutely everything) takes
#     about 376ns, whereas saving flags, twiddling CR4.PGE to flush global
#     mappings, and restoring flags takes about 539ns." The CR4 figure
#     includes saving and restoring the flags, which our row does not.
#  2. The PCID series (Andy Lutomirski, Linux 4.14, 2017), as docs/bench.md
#     quotes it: an address-space switch with 512 pages touched after it,
#     1.8 us with PCID, 6.2 us without.
SOURCES = {
    1: "Linux 4.6, commit d8bced79af1d (Skylake laptop, 2016)",
    2: "Linux 4.14 PCID series, as docs/bench.md quotes it (2017)",
}
PUBLISHED = {
    ("invpcid", "type=all_global"): (376, 1),
    ("flush_full", "what=all,how=cr4_pge"): (539, 1),
    ("mm_switch", "pcid=on,pages=512"): (1800, 2),
    ("mm_switch", "pcid=off,pages=512"): (6200, 2),
}


def load(path: str | Path) -> dict:
    record = json.loads(Path(path).read_text())
    if not isinstance(record.get("benchmarks"), list):
        raise ValueError(f"{path}: not a results file (no benchmarks list)")
    return record


# compare_rows(a, b) pairs the rows of two results records (load()) by
# (benchmark name, parameters text: row["name"], row["params_text"]); where
# a record holds a pair twice, its first row counts and the later one is
# ignored. It returns (both, only_a, only_b):
#   both    one dict per pair present in both records, in A's order
#           whatever B's, with "name", "params", "unit" (A's row's, or B's
#           where A's row is n/a; None if both are), "a" and "b" (the
#           medians; None for an n/a row), "ratio" (b / a as a float; None
#           when a or b is None or a is 0) and "b_ns" (B's median_ns; None
#           where B has none);
#   only_a  (name, params) of the rows only A has, in A's order;
#   only_b  the same for B.
# Rows are record["benchmarks"][i]["results"][j]; an n/a row has "na"
# instead of the statistics.
def compare_rows(a: dict, b: dict) -> tuple[list[dict], list[tuple[str, str]],
                                             list[tuple[str, str]]]:
    # LAB(L8) begin: pair the rows of a and b as the comment above says
    def rows(record: dict) -> dict[tuple[str, str], dict]:
        out: dict[tuple[str, str], dict] = {}
        for bench in record["benchmarks"]:
            for row in bench["results"]:
                out.setdefault((row["name"], row["params_text"]), row)
        return out

    rows_a, rows_b = rows(a), rows(b)
    both = []
    for key, row_a in rows_a.items():
        row_b = rows_b.get(key)
        if row_b is None:
            continue
        median_a = None if "na" in row_a else row_a["median"]
        median_b = None if "na" in row_b else row_b["median"]
        both.append({
            "name": key[0], "params": key[1],
            "unit": row_a.get("unit") or row_b.get("unit"),
            "a": median_a, "b": median_b,
            "ratio": (median_b / median_a
                      if median_a and median_b is not None else None),
            "b_ns": None if "na" in row_b else row_b.get("median_ns"),
        })
    only_a = [k for k in rows_a if k not in rows_b]
    only_b = [k for k in rows_b if k not in rows_a]
    return both, only_a, only_b
    # LAB(L8) end


def describe(path: str, record: dict) -> str:
    env = record.get("env", {})
    what = " ".join(f"{k}={env[k]}" for k in ("platform", "cpus", "brand") if k in env)
    return f"{path} ({what or 'no env'})"


def shown(value: float | int | None, na: str = "n/a") -> str:
    return na if value is None else f"{value}"


def table(a_path: str, a: dict, b_path: str, b: dict, published: bool) -> list[str]:
    both, only_a, only_b = compare_rows(a, b)
    head = (f"{'benchmark':<16} {'parameters':<30} {'unit':<8} {'A median':>10} "
            f"{'B median':>10} {'B/A':>7}")
    if published:
        head += f" {'B ns':>10} {'published ns':>14}"
    lines = [f"A: {describe(a_path, a)}", f"B: {describe(b_path, b)}", head]
    cited = []
    for row in both:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        line = (f"{row['name']:<16} {row['params']:<30} {row['unit'] or '-':<8} "
                f"{shown(row['a']):>10} {shown(row['b']):>10} {ratio:>7}")
        if published:
            figure = PUBLISHED.get((row["name"], row["params"]))
            cell = "-"
            if figure:
                cell = f"~{figure[0]} [{figure[1]}]"
                if figure[1] not in cited:
                    cited.append(figure[1])
            line += f" {shown(row['b_ns'], '-'):>10} {cell:>14}"
        lines.append(line.rstrip())
    for label, keys in (("A", only_a), ("B", only_b)):
        for name, params in keys:
            lines.append(f"only in {label}: {name} {params}")
    lines.append(f"{len(both)} rows in both, {len(only_a)} only in A, "
                 f"{len(only_b)} only in B")
    for number in sorted(cited):
        lines.append(f"[{number}] {SOURCES[number]}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.bench.hwcompare",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--published", action="store_true",
                        help="add B in ns and published figures, with sources")
    parser.add_argument("a", help="results of run A (make bench)")
    parser.add_argument("b", help="results of run B")
    args = parser.parse_args(argv[1:])
    try:
        a, b = load(args.a), load(args.b)
    except (OSError, ValueError) as e:
        print(f"hwcompare: {e}", file=sys.stderr)
        return 2
    print("\n".join(table(args.a, a, args.b, b, args.published)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
