#!/usr/bin/env python3
"""Variables that CPUs share without a lock open only through sync/shared.h.

tests/shared/plain_access.c holds, under -DPLAIN_<NAME>, one plain access
each (mm->tlb_gen++, if (c->is_lazy), ...), and under -DACCESSORS the same
variables reached through their accessors. With gcc and with clang, with
the kernel's half of sync/shared.h and with the TLB simulator's, the
accessors must compile and every plain access must fail, with an error on
that case's own line (not somewhere else, which would say nothing about the
case). And the wrapped member, shared_raw, is named only where the
accessors are: sync/shared.h and SIM_PEEK in tests/host/tlb_sim.h.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/plain-access); a compiler that is not installed makes its cases SKIP.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.test.ktap import Cases

HERE = Path(__file__).resolve().parent

SOURCE = HERE / "plain_access.c"
COMPILERS = ("gcc", "clang")
COMMON = ["-std=gnu11", "-I.", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
# The two halves of sync/shared.h, with the flags that pick them (the
# simulator's as the Makefile's tlb_sim rule gives them).
HALVES = {"kernel": ["-ffreestanding"],
          "simulator": ["-Itests/host/sim_include", "-DSHOOTDOWN_SIM", "-DMAX_CPUS=64"]}
CASE = re.compile(r"^#elif defined\((PLAIN_\w+)\)$")
# Where the wrapped member may be named: the accessors and SIM_PEEK.
RAW_MEMBER = "shared_raw"
RAW_ALLOWED = {"sync/shared.h", "tests/host/tlb_sim.h"}
TIMEOUT = 60


def plain_cases() -> dict[str, int]:
    """Each PLAIN_ case and the line of its access (the one after it)."""
    lines = SOURCE.read_text().splitlines()
    return {m.group(1): number + 1 for number, line in enumerate(lines, 1)
            if (m := CASE.match(line))}


def compile_case(cc: str, half: str, case: str) -> tuple[int, str]:
    r = subprocess.run([cc, *COMMON, *HALVES[half], f"-D{case}", str(SOURCE.relative_to(ROOT))],
                       cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    return r.returncode, r.stdout + r.stderr


def plain_access_problems(cc: str, half: str, cases: dict[str, int]) -> list[str]:
    problems = []
    for case, line in cases.items():
        status, text = compile_case(cc, half, case)
        if status == 0:
            problems.append(f"{case} compiles")
        elif f"plain_access.c:{line}:" not in text:
            first = next((t for t in text.splitlines() if "error" in t), text[:200])
            problems.append(f"{case} fails, but not on line {line}: {first}")
    return problems


def sources() -> list[Path]:
    """The tracked C sources and headers (every one outside build
    directories when there is no git)."""
    r = subprocess.run(["git", "ls-files", "*.c", "*.h"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode == 0:
        return [ROOT / name for name in r.stdout.splitlines()]
    return [p for p in ROOT.rglob("*.[ch]")
            if not any(part.startswith("build") for part in p.relative_to(ROOT).parts)]


def raw_member_problems() -> list[str]:
    problems = []
    for path in sources():
        name = path.relative_to(ROOT).as_posix()
        if name in RAW_ALLOWED or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if RAW_MEMBER in line:
                problems.append(f"{name}:{number}: {line.strip()}")
    return problems


def main() -> int:
    cases = Cases()
    plain = plain_cases()
    cases.check("plain_access.c has plain-access cases", len(plain) > 0,
                f"no '#elif defined(PLAIN_...)' lines in {SOURCE}")
    for cc in COMPILERS:
        for half in HALVES:
            prefix = f"{cc}, {half} half"
            if not shutil.which(cc):
                cases.skip(f"{prefix}: the accessors compile", f"no {cc}")
                cases.skip(f"{prefix}: every plain access is an error", f"no {cc}")
                continue
            status, text = compile_case(cc, half, "ACCESSORS")
            errors = [line for line in text.splitlines() if "error" in line]
            cases.check(f"{prefix}: the accessors compile", status == 0,
                        "\n".join(errors[:3]) or text[-300:])
            cases.check(f"{prefix}: every plain access is an error",
                        plain_access_problems(cc, half, plain))
    cases.check(f"{RAW_MEMBER} is named only in {', '.join(sorted(RAW_ALLOWED))}",
                raw_member_problems())
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
