#!/usr/bin/env python3
"""The host side of the results screen: `python3 -m tools.bench.bench import-qr`'s decoder
and tools/test/results_screen.py's checks, on a small serial log written here
and codes cut from it as bench/qr_codes.c cuts them. The decoder must give
back the serial log's results from codes in any order, twice over or mixed
with other text, and refuse, saying why, a missing code, codes of two runs,
a misread character and a wrong checksum; the screen checks must pass the
screens the kernel draws and fail one with a row or a sentence missing.

Prints KTAP (tools/test/run_tests.py runs it as host/results-screen); Python
3.11 standard library. The kernel side, photographed, is the screendump
configurations' (tools/test/run_tests.py).
"""

from __future__ import annotations

import base64
import random
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from tools import ROOT
from tools.bench import bench
from tools.test import results_screen
from tools.test.ktap import Cases


SERIAL = """\
bench: shootdown benchmarks (docs/bench.md); rows: @ name params unit median p10 p90 min count
bench: env platform=tcg cpus=2 tsc_hz=2000000000 tsc_source=hpet invariant_tsc=0 \
clock_overhead=24 scale=10 vendor=AuthenticAMD family=15 model=107 stepping=1 pcid=0 \
invpcid=0 pge=1 x2apic=0 tsc_deadline=0 smep=1 smap=1 xsave=1 hypervisor=- \
selected=invlpg,ctxsw_scale brand=QEMU TCG CPU
options: console=both done=exit bench=invlpg,ctxsw_scale bench_scale=10
bench: tlb pcid=off invpcid=off lazy=skip flush_ceiling=33
bench: invlpg (prim): INVLPG of one 4 KiB user page
# benchmark        parameters                     unit        median
@ invlpg           entry=present                  cycles         442       441       466       392    101     221.0       - -
@ invlpg           entry=absent                   n/a: no such entry here
bench: invlpg: 2 results in 68 ms
bench: ctxsw_scale (scale): switches per second on all CPUs
@ ctxsw_scale      lazy_mm=refcount,cpus=2        switch/s    459653    442039    486407    348593     40         -       - ipi-sent=4
bench: ctxsw_scale: 1 results in 622 ms
bench: end benchmarks=2 results=3 seconds=1
bench: summary platform Platform: QEMU with TCG (software emulation), 2 CPUs, TSC 2000 MHz.
bench: summary flush Flushes: INVLPG of one page costs 221 ns; the full flush: not measured \
in this run (bench= left it out).
bench: summary note These are emulator costs, not a real CPU's.
"""

# The summary screen and the page, as bench/summary.c and bench/screen.c draw them.
SUMMARY_SCREEN = """\
shootdown: what the benchmarks found (3 rows)

Platform: QEMU with TCG (software emulation), 2 CPUs, TSC 2000 MHz.

* Flushes: INVLPG of one page costs 221 ns; the full flush: not measured in
  this run (bench= left it out).

These are emulator costs, not a real CPU's.""".splitlines()
PAGE = """\
shootdown results, page 1 of 1: rows 1-3 of 3
benchmark        parameters                         median       p10       p90
invlpg           entry=present                      221 ns    220 ns    233 ns
invlpg           entry=absent                    n/a: no such entry here
ctxsw_scale      lazy_mm=refcount,cpus=2 [switch/s]    459653    442039    486407
(then the complete results in 2 QR codes)""".splitlines()


def codes_of(text: str, count: int) -> list[str]:
    """The codes' texts as bench/qr_codes.c makes them: zlib, base64, cut
    evenly, `shootdown K/N ID DATA`, ID the stream's Adler-32."""
    packed = zlib.compress(text.encode())
    data = base64.b64encode(packed).decode()
    per = -(-len(data) // count)
    run_id = packed[-4:].hex()
    return [f"shootdown {k + 1}/{count} {run_id} {data[k * per:(k + 1) * per]}"
            for k in range(count)]


def refused(text: str) -> str:
    """The decoder's complaint about text, or "" if it accepted it."""
    try:
        bench.decode_qr_text(text)
    except bench.QrError as e:
        return str(e)
    return ""


def check_decoder(cases: Cases) -> None:
    serial = bench.record_of(bench.parse(SERIAL))
    codes = codes_of(SERIAL, 5)
    shuffled = codes + codes[:2]
    random.Random(13).shuffle(shuffled)
    mixed = "\n".join(f"QR-Code:{c}\nsome other text" for c in shuffled)
    try:
        text, run_id, count = bench.decode_qr_text(mixed)
        record = bench.record_of(bench.parse(text))
        same = [p for p in results_screen.KERNEL_PARTS if record[p] != serial[p]]
        cases.check("decode: shuffled, twice over, among other text", not same and count == 5,
                    f"differs in {same}, count {count}")
    except bench.QrError as e:
        cases.check("decode: shuffled, twice over, among other text", False, str(e))
    why = refused("\n".join(codes[:2] + codes[3:]))
    cases.check("decode: a missing code is named", "missing 3/5" in why, why or "accepted")
    other = codes_of(SERIAL.replace("442", "443"), 3)
    why = refused("\n".join(codes + other))
    cases.check("decode: two complete runs are refused", "several runs" in why,
                why or "accepted")
    try:
        chosen = bench.decode_qr_text("\n".join(codes + other[:1]))[1]
    except bench.QrError as e:
        chosen = str(e)
    cases.check("decode: a stray code of another run is left out",
                chosen == codes[0].split()[2], chosen)
    k, n, run_id, data = codes[1].split(" ", 3)
    flipped = data[:10] + ("A" if data[10] != "A" else "B") + data[11:]
    why = refused("\n".join([codes[0], f"{k} {n} {run_id} {flipped}", *codes[2:]]))
    cases.check("decode: a misread character is refused", "do not decode" in why or
                "checksum" in why, why or "accepted")
    wrong = [c.replace(run_id, "00000000") for c in codes]
    why = refused("\n".join(wrong))
    cases.check("decode: a wrong checksum is refused", "checksum" in why, why or "accepted")
    cases.check("decode: no code at all is refused", "no shootdown QR code" in refused("hello"),
                refused("hello"))


def check_screens(cases: Cases) -> None:
    run = bench.parse(SERIAL)
    why = results_screen.check_summary(run, SUMMARY_SCREEN)
    cases.check("summary: the screen shows every sentence", not why, why)
    changed = [line.replace("221 ns", "212 ns") for line in SUMMARY_SCREEN]
    why = results_screen.check_summary(run, changed)
    cases.check("summary: a changed figure fails", "flush" in why, why or "passed")
    why = results_screen.check_pages(run, [PAGE], 1)
    cases.check("pages: every row, n/a and other units too", not why, why)
    why = results_screen.check_pages(run, [PAGE[:3] + PAGE[4:]], 1)
    cases.check("pages: a missing row fails", "entry=absent" in why, why or "passed")
    why = results_screen.check_pages(run, [PAGE], 2)
    cases.check("pages: a page not photographed fails", "1 of 2 pages" in why, why or "passed")


def check_laptop_results(cases: Cases) -> None:
    """Codes saved as text (a phone app's export) become a results JSON that
    bench-compare takes as it takes make bench's."""
    with tempfile.TemporaryDirectory(prefix="results-screen-") as tmp:
        codes, out = Path(tmp) / "codes.txt", Path(tmp) / "laptop.json"
        codes.write_text("\n".join(codes_of(SERIAL, 3)) + "\n")
        done = subprocess.run([sys.executable, "-m", "tools.bench.bench", "import-qr", str(codes),
                               "-o", str(out)], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
        cases.check("import-qr: a text file of codes gives a results JSON",
                    done.returncode == 0 and out.is_file(), done.stderr.strip())
        done = subprocess.run([sys.executable, "-m", "tools.bench.bench", "compare", "-",
                               str(out), str(out)], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
        ratios = [line.split()[-1] for line in done.stdout.splitlines()
                  if line.startswith("invlpg ") and "cycles" in line]
        cases.check("bench-compare: two results JSONs, side by side, no boot",
                    done.returncode == 0 and ratios == ["1.00"], done.stdout + done.stderr)


def main() -> int:
    cases = Cases()
    check_decoder(cases)
    check_screens(cases)
    check_laptop_results(cases)
    return cases.report()


if __name__ == "__main__":
    sys.exit(main())
