#!/usr/bin/env python3
"""The QR pieces of lib/ (docs/qr.md) through the host tool qr_tool
(tests/host/qr_tool.c) and independent readers: zbarimg (package
zbar-tools) decodes the QR images, Python's zlib and base64 modules check
the compressor and the encoder.

QR cases: random bytes and text at all four levels and sampled versions
(1, 2, 7 where version information starts, 10 where the byte count grows
to 16 bits, 20, 27, 40, and a few drawn at random), each payload exactly
at the version's capacity, one byte more refused; the whole pipeline the
kernel uses (text -> zlib -> base64 -> QR codes -> zbarimg -> back)
on 100 KB of benchmark-like lines. Without zbarimg those cases say SKIP.
zlib cases: empty, 1 byte, repetitive, random and text inputs come back
from zlib.decompress, text shrinks (in blocks with their own Huffman
codes), random data stays under ZLIB_BOUND.
base64 cases: random lengths 0..300 equal base64.b64encode.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/qr). qr_tool is found in $HOST_BIN_DIR (the runner sets it to the
host binaries' directory), else build/host; make host-tests builds it.
QR_TEST_SEED=N repeats a run's random choices. Python 3 standard library.
"""

from __future__ import annotations

import base64
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TOOL = Path(os.environ.get("HOST_BIN_DIR") or ROOT / "build" / "host") / "qr_tool"
LEVELS = "LMQH"
VERSIONS = (1, 2, 7, 10, 20, 27, 40)
RANDOM_VERSIONS = 6    # versions drawn at random besides VERSIONS
SCALE = 2              # pixels per module: zbarimg reads 1 too, phones need more
TIMEOUT = 60           # seconds for one tool or decoder run
# ISO/IEC 18004 Table 7: bytes in byte mode, a few versions and levels.
TABLE7 = {(1, "L"): 17, (1, "M"): 14, (1, "Q"): 11, (1, "H"): 7, (2, "L"): 32,
          (7, "M"): 122, (10, "M"): 213, (40, "L"): 2953, (40, "M"): 2331,
          (40, "Q"): 1663, (40, "H"): 1273}
# The kernel's payload: the QR version and level docs/qr.md suggests.
PIPELINE_VERSION, PIPELINE_LEVEL = 25, "M"


class Skip(Exception):
    """The case cannot run here; the message says why."""


def run_cases(cases: list[tuple[str, object]], note: str = "") -> int:
    """Runs each (name, check) and prints its result in KTAP as it ends: a
    check returns '' when it passes, else the problems, one a line."""
    print("KTAP version 1")
    print(f"1..{len(cases)}")
    if note:
        print(f"# {note}")
    failed = 0
    for number, (name, check) in enumerate(cases, 1):
        try:
            problem = check()
        except Skip as e:
            print(f"ok {number} {name} # SKIP {e}")
            continue
        except (OSError, subprocess.SubprocessError, zlib.error, ValueError) as e:
            problem = f"{type(e).__name__}: {e}"
        for line in problem.splitlines():
            print(f"# {name}: {line}")
        print(f"{'not ok' if problem else 'ok'} {number} {name}")
        failed += bool(problem)
    print(f"# {len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


def tool(*args: str, data: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOL), *args], input=data, capture_output=True,
                          timeout=TIMEOUT)


def capacity(version: int, level: str) -> int:
    done = tool("capacity", "--ecc", level, "--version", str(version))
    if done.returncode:
        raise ValueError(f"qr_tool capacity {version}-{level}: {done.stderr.decode()}")
    return int(done.stdout)


class Decoder:
    """zbarimg on image files; binary payloads need its -Sbinary (zbar
    0.23.1 and later). Probed once with a binary and a text code: only a
    zbarimg that reads the text but not the binary one lacks -Sbinary (one
    that reads neither sees a broken encoder, which must fail, not skip)."""

    def __init__(self, tmp: Path) -> None:
        self.path = shutil.which("zbarimg")
        self.tmp = tmp
        self.count = 0
        self.binary = self.text = False
        if self.path:
            binary, text = bytes(range(255, 155, -1)), b"probe: text"
            self.binary = self.decode_raw(self.image(binary, 5, "L")) == binary
            self.text = self.decode_raw(self.image(text, 1, "L")) == text

    def need(self, binary: bool) -> None:
        if not self.path:
            raise Skip("zbarimg not installed (package zbar-tools: make deps)")
        if binary and not self.binary and self.text:
            raise Skip("this zbarimg has no -Sbinary: binary payloads unchecked")

    def image(self, data: bytes, version: int, level: str) -> Path:
        done = tool("qr", "--ecc", level, "--version", str(version),
                    "--scale", str(SCALE), data=data)
        if done.returncode:
            raise ValueError(f"qr_tool refused {len(data)} bytes at {version}-{level}: "
                             f"{done.stderr.decode().strip()}")
        self.count += 1
        path = self.tmp / f"qr{self.count}.pgm"
        path.write_bytes(done.stdout)
        return path

    def decode_raw(self, path: Path) -> bytes | None:
        done = subprocess.run([self.path, "--nodbus", "--raw", "-q", "-Sbinary", str(path)],
                              capture_output=True, timeout=TIMEOUT)
        return done.stdout if done.returncode == 0 else None

    def roundtrip(self, data: bytes, version: int, level: str) -> str:
        """'' if zbarimg reads data back from its QR code, else why not."""
        got = self.decode_raw(self.image(data, version, level))
        if got == data:
            return ""
        if got is None:
            return f"{version}-{level}, {len(data)} bytes: zbarimg found no code"
        return (f"{version}-{level}, {len(data)} bytes: decoded {len(got)} bytes, "
                f"first difference at {next((i for i, (a, b) in enumerate(zip(got, data)) if a != b), min(len(got), len(data)))}")


def text_payload(rng: random.Random, n: int) -> bytes:
    words = ("flush", "pages", "ns", "cpu", "ipi", "lazy", "pcid", "tlb_gen", "=", " ")
    out = ""
    while len(out) < n:
        out += rng.choice(words) + str(rng.randrange(1000))
    return out[:n].encode()


def bench_text(rng: random.Random, size: int) -> bytes:
    """Lines like the benchmarks print."""
    lines = []
    total = 0
    while total < size:
        line = (f"bench: {rng.choice(['flush', 'switch', 'reach', 'scale'])} "
                f"cpus={rng.choice([1, 2, 4, 8])} pages={rng.choice([1, 8, 33, 512])} "
                f"ns_min={rng.randrange(100, 5000)} ns_med={rng.randrange(100, 9000)} "
                f"ipis={rng.randrange(0, 1 << 16)} pcid={rng.choice(['on', 'off'])}\n")
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:size]


def sampled_versions(rng: random.Random) -> list[int]:
    others = [v for v in range(1, 41) if v not in VERSIONS]
    return sorted(set(VERSIONS) | set(rng.sample(others, RANDOM_VERSIONS)))


def check_capacity_table(_: random.Random) -> str:
    wrong = [f"{v}-{e}: {capacity(v, e)}, Table 7 says {n}"
             for (v, e), n in TABLE7.items() if capacity(v, e) != n]
    return "\n".join(wrong)


def check_random_at_capacity(dec: Decoder, rng: random.Random, versions: list[int]) -> str:
    dec.need(binary=True)
    problems = []
    for v in versions:
        for e in LEVELS:
            data = rng.randbytes(capacity(v, e))
            problems.append(dec.roundtrip(data, v, e))
    return "\n".join(p for p in problems if p)


def check_text(dec: Decoder, rng: random.Random, versions: list[int]) -> str:
    """Text of random lengths up to the capacity, a level per version."""
    dec.need(binary=False)
    problems = []
    for v in versions:
        e = rng.choice(LEVELS)
        problems.append(dec.roundtrip(text_payload(rng, rng.randrange(capacity(v, e) + 1)), v, e))
    return "\n".join(p for p in problems if p)


def check_over_capacity(_: random.Random) -> str:
    problems = []
    for v in VERSIONS:
        for e in LEVELS:
            n = capacity(v, e) + 1
            done = tool("qr", "--ecc", e, "--version", str(v), data=b"x" * n)
            if done.returncode != 1 or b"do not fit" not in done.stderr or done.stdout:
                problems.append(f"{v}-{e}: {n} bytes gave exit {done.returncode}, "
                                f"{len(done.stdout)} bytes out, {done.stderr[:100]!r}")
    big = tool("qr", "--ecc", "L", data=b"x" * 2954)
    if big.returncode != 1:
        problems.append(f"2954 bytes with no version given: exit {big.returncode}")
    return "\n".join(problems)


def check_bad_arguments(_: random.Random) -> str:
    problems = []
    for args in (["qr", "--version", "0"], ["qr", "--version", "41"], ["qr", "--ecc", "X"],
                 ["qr", "--scale", "0"], ["qr", "--bogus"], ["nothing"], ["zlib", "extra"]):
        done = tool(*args)
        if done.returncode != 2 or not done.stderr:
            problems.append(f"qr_tool {' '.join(args)}: exit {done.returncode}, "
                            f"stderr {done.stderr[:80]!r}")
    return "\n".join(problems)


def check_pipeline(dec: Decoder, rng: random.Random) -> str:
    """The kernel's path: text, zlib, base64, cut into QR codes; read back."""
    dec.need(binary=False)
    text = bench_text(rng, 100_000)
    packed = base64.b64encode(compress(text))
    chunk = capacity(PIPELINE_VERSION, PIPELINE_LEVEL)
    got = b""
    for i in range(0, len(packed), chunk):
        part = packed[i:i + chunk]
        read = dec.decode_raw(dec.image(part, PIPELINE_VERSION, PIPELINE_LEVEL))
        if read != part:
            return f"code {i // chunk}: zbarimg read {read[:40] if read else read!r}"
        got += read
    if zlib.decompress(base64.b64decode(got, validate=True)) != text:
        return "the text read back differs"
    print(f"# pipeline: {len(text)} bytes of text in {-(-len(packed) // chunk)} QR codes "
          f"({PIPELINE_VERSION}-{PIPELINE_LEVEL}, {len(packed)} base64 characters)")
    return ""


def compress(data: bytes) -> bytes:
    done = tool("zlib", data=data)
    if done.returncode:
        raise ValueError(f"qr_tool zlib: {done.stderr.decode().strip()}")
    return done.stdout


def zlib_bound(n: int) -> int:
    return n + 5 * (n // 16384 + 1) + 6  # ZLIB_BOUND in lib/deflate.h


# RFC 1951 3.2.5: the smallest length and distance of each code.
LENGTH_BASES = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67,
                83, 99, 115, 131, 163, 195, 227, 258, 259)
DISTANCE_BASES = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513,
                  769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577, 32769)


def every_code(rng: random.Random) -> bytes:
    """A match of every length code and of every distance code, each with
    random extra bits and at the code's largest value too. The match
    source starts with a marker found nowhere else, so the only match is
    the one planted; the rest is text, so that the whole compresses and
    is not sent stored."""
    out = bytearray()
    filler = bench_text(rng, 70_000)

    def plant(distance: int, length: int) -> None:
        marker = b"\0\x80" + bytes([len(out) % 251])
        at = rng.randrange(len(filler) - distance)
        out.extend(marker + filler[at:at + distance - len(marker)])
        for _ in range(length):
            out.append(out[-distance])
        out.extend(b"\n")

    for i in range(len(LENGTH_BASES) - 1):
        lo, hi = LENGTH_BASES[i], LENGTH_BASES[i + 1] - 1
        plant(rng.randrange(40, 100), rng.randrange(lo, hi + 1))
        plant(rng.randrange(40, 100), hi)
    for i in range(3, len(DISTANCE_BASES) - 1):  # distances 1-3 are shorter than a marker
        lo, hi = DISTANCE_BASES[i], DISTANCE_BASES[i + 1] - 1
        plant(rng.randrange(lo, hi + 1), rng.randrange(3, 259))
        plant(hi, 10)
    return bytes(out)


def skewed(rng: random.Random) -> bytes:
    """Byte counts in the Fibonacci sequence, shuffled: their Huffman tree
    is deeper than the 15 bits deflate allows, so the lengths must be
    limited."""
    counts, symbols = [1, 1], []
    while sum(counts) < 16384:
        counts.append(counts[-1] + counts[-2])
    for byte, count in enumerate(counts):
        symbols += [byte] * count
    rng.shuffle(symbols)
    return bytes(symbols[:16384])


def check_zlib_roundtrip(rng: random.Random) -> str:
    inputs = {"empty": b"", "1 byte": b"\x00", "repetitive": b"abc" * 20000, "ab": b"ab" * 1000,
              "one byte repeated": b"\xff" * 70000, "random": rng.randbytes(100_000),
              "text": bench_text(rng, 100_000),
              "mixed": rng.randbytes(3000) + b"x" * 40000 + rng.randbytes(40000),
              "every length and distance code": every_code(rng),
              "skewed": skewed(rng)}
    inputs.update({f"random {n}": rng.randbytes(n) for n in (2, 3, 4, 258, 259, 65535, 65536)})
    problems = []
    for name, data in inputs.items():
        out = compress(data)
        try:
            if zlib.decompress(out) != data:
                problems.append(f"{name}: zlib.decompress gives other bytes")
        except zlib.error as e:
            problems.append(f"{name}: zlib.decompress: {e}")
        if len(out) > zlib_bound(len(data)):
            problems.append(f"{name}: {len(out)} bytes, over ZLIB_BOUND {zlib_bound(len(data))}")
    return "\n".join(problems)


def first_block_type(z: bytes) -> int:
    """BTYPE of the first deflate block: bits 1-2 after the 2-byte header."""
    return z[2] >> 1 & 3


def check_zlib_ratio(rng: random.Random) -> str:
    """Loose bounds: text to under 25 %, runs to almost nothing; each
    block form where it is the smallest: dynamic codes for text, fixed
    for a few bytes, stored for random data."""
    text = bench_text(rng, 100_000)
    packed = compress(text)
    ratio = len(packed) / len(text)
    runs = len(compress(b"abc" * 20000))
    print(f"# zlib: benchmark text to {ratio:.1%}, 60000 repeated bytes to {runs} bytes "
          f"(Python's zlib level 9: {len(zlib.compress(text, 9)) / len(text):.1%})")
    problems = []
    if ratio > 0.25:
        problems.append(f"benchmark text only shrank to {ratio:.1%}")
    if runs > 300:
        problems.append(f"'abc' * 20000 took {runs} bytes")
    for name, data, btype in (("text", text, 2), ("9 bytes", b"Wikipedia", 1),
                              ("random", rng.randbytes(5000), 0)):
        got = first_block_type(compress(data))
        if got != btype:
            problems.append(f"{name}: first block of type {got}, not {btype}")
    return "\n".join(problems)


def check_base64(rng: random.Random) -> str:
    problems = []
    for n in list(range(0, 20)) + [rng.randrange(20, 300) for _ in range(20)]:
        data = rng.randbytes(n)
        done = tool("base64", data=data)
        want = base64.b64encode(data)
        if done.returncode or done.stdout != want:
            problems.append(f"{n} bytes: {done.stdout[:40]!r}, want {want[:40]!r}")
    return "\n".join(problems)


def main() -> int:
    seed = int(os.environ.get("QR_TEST_SEED") or 18004)
    rng = random.Random(seed)
    versions = sampled_versions(rng)
    with tempfile.TemporaryDirectory(prefix="qr-test-") as tmp:
        if not TOOL.is_file():
            return run_cases([("qr_tool", lambda: f"no {TOOL}: build it with make host-tests")])
        dec = Decoder(Path(tmp))
        note = f"seed {seed} (QR_TEST_SEED), versions {' '.join(map(str, versions))}"
        return run_cases([
            ("capacity_table7", lambda: check_capacity_table(rng)),
            ("random_bytes_at_capacity", lambda: check_random_at_capacity(dec, rng, versions)),
            ("text_payloads", lambda: check_text(dec, rng, versions)),
            ("over_capacity_refused", lambda: check_over_capacity(rng)),
            ("bad_arguments_refused", lambda: check_bad_arguments(rng)),
            ("pipeline_zlib_base64", lambda: check_pipeline(dec, rng)),
            ("zlib_roundtrip", lambda: check_zlib_roundtrip(rng)),
            ("zlib_compresses_text", lambda: check_zlib_ratio(rng)),
            ("base64_matches_python", lambda: check_base64(rng)),
        ], note)


if __name__ == "__main__":
    sys.exit(main())
