"""`make compare-linux`: some of shootdown's benchmarks beside their Linux
analogues, in the same emulated machine.

    python3 -m tools.bench.compare_linux <kernel.elf> <lbench> [--scale P]

Boots shootdown with the benchmarks of ROWS, then Debian's stock kernel
(tools/bench/linux_kernel.py) with an initramfs whose /init is <lbench>
(tools/bench/linux_bench/lbench.c, built static by the Makefile), which prints
its rows in the kernel's format. Both run under QEMU TCG, in the machine of
`make bench` (the same variables: MEM, CPU, QEMU_ARGS, TIMEOUT, ...; ACCEL
defaults to tcg here), twice (PASSES): the one-CPU rows on one CPU with
icount (ICOUNT=0: without), the cross-CPU rows on SMP CPUs (default: the
host's, at least 2) without icount, as Linux does not bring up a second CPU
under QEMU 7.2's icount. Prints one table of medians with shootdown/Linux
per row, and writes into <build>/compare-linux: shootdown-PASS.json and
linux-PASS.json (the results JSON of `make bench`, tools/bench/bench.py),
compare.txt (the table) and ratios.png/.svg/.gp (one chart, gnuplot).

--scale P (percent, default 100) scales both sides' samples and time
budgets (the kernel's bench_scale=); the test uses a small one. The exit
status is 1 when a row of ROWS has no value (missing or n/a) on either
side, or a run has a problem (tools/bench/bench.py's check).
Python 3.11 standard library.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tools.bench import bench, linux_kernel, plots
from tools.run import boot

# What is compared with what: (what, shootdown's row, Linux's row), each row
# (benchmark, parameters) as both sides print it; the rows of CROSS_CPU come
# from the pass with several CPUs, the others from the one-CPU pass. A local flush is compared
# with the method shootdown's default flush_ceiling (33, Linux's
# tlb_single_page_flush_ceiling) picks: page by page up to 33 pages, the
# whole context above.
ROWS = (
    ("null system call", ("syscall", "call=cpu_id"), ("syscall", "call=getppid")),
    ("thread switch", ("thread_switch", "threads=same_mm"),
     ("thread_switch", "threads=same_mm")),
    ("IPC round trip, 2 processes", ("ipc", "spaces=2,cpus=1"), ("ipc", "spaces=2,cpus=1")),
    ("IPC round trip, 2 threads", ("ipc", "spaces=1,cpus=1"), ("ipc", "spaces=1,cpus=1")),
    ("mm switch, 0 pages touched", ("mm_switch", "pcid=off,pages=0"),
     ("mm_switch", "pages=0")),
    ("mm switch, 512 pages touched", ("mm_switch", "pcid=off,pages=512"),
     ("mm_switch", "pages=512")),
    *((f"local flush, {n} of 512 pages",
       ("flush_local", f"pages={n},how={'pages' if n <= 33 else 'full'}"),
       ("flush_local", f"pages={n}")) for n in (1, 16, 32, 33, 64, 512)),
    ("1-page shootdown to 1 CPU", ("shootdown", "targets=1,state=active"),
     ("shootdown", "targets=1,state=active")),
    ("unmap 64 pages", ("batch_unmap", "mode=batched,pages=64,remote=0"),
     ("batch_unmap", "mode=batched,pages=64,remote=0")),
    ("unmap 64 pages, 2nd CPU", ("batch_unmap", "mode=batched,pages=64,remote=1"),
     ("batch_unmap", "mode=batched,pages=64,remote=1")),
    # Loops per second (more is better), unlike the rows above.
    *((f"tlb_flush2 {n} thread{'s' if n > 1 else ''}, loops/s",
       ("tlb_flush2", f"threads={n},invlpgb=off"), ("tlb_flush2", f"threads={n}"))
      for n in (1, 2)),
)
CROSS_CPU = ("1-page shootdown to 1 CPU", "unmap 64 pages, 2nd CPU",
             "tlb_flush2 1 thread, loops/s", "tlb_flush2 2 threads, loops/s")
# (name, CPUs: None for SMP's, icount: None for ICOUNT's (default on)).
PASSES = (("local", 1, None), ("cross", None, False))
EMULATOR_NOTE = "emulator costs (QEMU TCG): not hardware"
LINUX_CMDLINE = "console=ttyS0 quiet loglevel=3 panic=-1"
# A Linux boot under TCG takes seconds; its rows under a minute.
TIMEOUT = 600


# --- The machine --------------------------------------------------------------------

def pass_rows(name: str) -> list[tuple]:
    return [r for r in ROWS if (r[0] in CROSS_CPU) == (name == "cross")]


def machine(cmdline: list[str], cpus: int | None, icount: bool | None) -> boot.Settings:
    """make bench's machine, under TCG unless ACCEL says otherwise, with
    cpus CPUs and icount unless they are None."""
    s = boot.settings_from_env(boot.Settings(serial="file", accel="tcg", icount=True))
    if s.emu != "qemu":
        raise boot.ConfigError("make compare-linux runs QEMU only (EMU=qemu)")
    s.smp = cpus if cpus is not None else s.smp
    s.icount = icount if icount is not None else s.icount
    s.cmdline = s.cmdline + cmdline
    if s.icount and "icount" not in s.cmdline:
        s.cmdline.append("icount")
    if "TIMEOUT" not in boot.env_overrides():
        s.timeout = TIMEOUT
    return s.resolve()


def cpio_newc(files: list[tuple[str, int, bytes, tuple[int, int]]]) -> bytes:
    """An initramfs: (name, mode, data, (rdev major, minor)) in the newc
    cpio format the kernel unpacks, with its trailer."""
    out = bytearray()

    def pad() -> None:
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data, rdev) in enumerate(
            [*files, ("TRAILER!!!", 0, b"", (0, 0))], start=1):
        encoded = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, *rdev, len(encoded), 0)
        out.extend(b"070701" + b"".join(b"%08x" % f for f in fields) + encoded)
        pad()
        out.extend(data)
        pad()
    return bytes(out)


def initramfs(lbench: Path, path: Path) -> None:
    directory, char, program = 0o040755, 0o020600, 0o100755
    path.write_bytes(cpio_newc([("dev", directory, b"", (0, 0)),
                                ("dev/console", char, b"", (5, 1)),
                                ("init", program, lbench.read_bytes(), (0, 0))]))


def boot_linux(s: boot.Settings, vmlinuz: Path, initrd: Path, scale: int,
               run_dir: Path) -> tuple[bench.Run, dict]:
    """Linux with the benchmark program as /init; its output parsed as the
    kernel's. Runs QEMU as tools/run/boot.py does, with -kernel for the ISO."""
    run_dir.mkdir(parents=True, exist_ok=True)
    serial = run_dir / "serial.log"
    serial.unlink(missing_ok=True)
    args = [f"scale={scale}"] + (["icount"] if s.icount else [])
    cmd = [boot.QEMU, "-accel", s.accel, "-cpu", s.cpu, "-machine", s.machine,
           "-smp", str(s.smp), "-m", f"{s.mem_mib}M",
           *(["-icount", "shift=1"] if s.icount else []),
           "-kernel", str(vmlinuz), "-initrd", str(initrd),
           "-append", f"{LINUX_CMDLINE} -- {' '.join(args)}",
           "-serial", f"file:{serial}", "-display", "none", "-no-reboot", *s.qemu_args]
    (run_dir / "cmd").write_text(" ".join(cmd) + "\n")
    print(f"# Linux: {vmlinuz.name}, {s.describe()}, /init {' '.join(args)}", flush=True)
    start = time.monotonic()
    with open(run_dir / "qemu.log", "wb") as log:
        try:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, timeout=s.timeout or None)
            status = done.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
    text = boot.read(serial)
    sys.stdout.write(text)
    run = bench.parse(text)
    record = bench.record_of(run, machine=s.describe(), cmdline=args, kernel=vmlinuz.name,
                             serial_log=str(serial), exit=status,
                             duration_s=round(time.monotonic() - start, 1))
    if status == "timeout":
        record["problems"].append(f"Linux timed out after {s.timeout:g} s")
    return run, record


def boot_shootdown(s: boot.Settings, kernel: str, run_dir: Path) -> dict:
    print(f"# shootdown: {s.describe()}, kernel options: {' '.join(s.cmdline)}", flush=True)
    result = boot.run(s, kernel, run_dir, stream=True)
    record = bench.record_of(bench.parse(result.serial), machine=s.describe(),
                             cmdline=s.cmdline, serial_log=str(result.serial_path),
                             exit="timeout" if result.timed_out else result.status,
                             duration_s=round(result.duration, 1))
    if result.error:
        record["problems"].append(result.error)
    return record


# --- The comparison -------------------------------------------------------------------

def rows_by_key(record: dict) -> dict:
    return {(r["name"], r["params_text"]): r
            for b in record["benchmarks"] for r in b["results"]}


def shown(row: dict | None) -> str:
    if row is None:
        return "missing"
    if "na" in row:
        return "n/a"
    return f"{row['median']} [{row['p10']}-{row['p90']}] n={row['count']}"


def table(runs: dict) -> tuple[list[str], list[tuple[str, float]], list[str]]:
    """The table of the passes' records (runs: pass -> (shootdown's,
    Linux's)), (what, ratio) of every row with both medians, and the rows
    missing on a side."""
    lines = [f"{name} rows: {ours['machine']}; Linux {linux['kernel']}"
             for name, (ours, linux) in runs.items()]
    lines += [f"both columns: {EMULATOR_NOTE}; TSC cycles (loops/s where the row says so), "
              "median [p10-p90] n=count",
             f"{'':<30} {'shootdown row':<42} {'shootdown':>28}  {'Linux':>28} "
             f"{'shootdown/Linux':>15}"]
    ratios, missing = [], []
    for what, key_a, key_b in ROWS:
        ours, linux = runs["cross" if what in CROSS_CPU else "local"]
        ra, rb = rows_by_key(ours).get(key_a), rows_by_key(linux).get(key_b)
        for side, key, row in (("shootdown", key_a, ra), ("Linux", key_b, rb)):
            if row is None or "na" in row:
                missing.append(f"{side}: no value for {key[0]} {key[1]}"
                               + (f" (n/a: {row['na']})" if row else ""))
        ratio = "-"
        if ra and rb and "na" not in ra and "na" not in rb and rb["median"]:
            value = ra["median"] / rb["median"]
            ratios.append((what, value))
            ratio = f"{value:.3g}"
        lines.append(f"{what:<30} {key_a[0] + ' ' + key_a[1]:<42} {shown(ra):>28}  "
                     f"{shown(rb):>28} {ratio:>15}")
    return lines, ratios, missing


def ratio_chart(ratios: list[tuple[str, float]], title: str) -> plots.Chart:
    bars = [(i, what, value) for i, (what, value) in enumerate(ratios)]
    script = plots.datablock("bars", bars)
    script += plots.header(title, "compare-linux", "", "shootdown / Linux (median)")
    script += plots.y_axis([v for _, _, v in bars])
    script += ("set style fill solid 0.5 border\nset boxwidth 0.7\nset grid noxtics ytics\n"
               "set xtics rotate by 35 right font ',8' noenhanced\n"
               f"set xrange [-0.7:{len(bars) - 0.3}]\nset bmargin 12\nset lmargin 12\n"
               "set key right top\n"
               "plot $bars using 1:3:xtic(2) with boxes title 'shootdown / Linux', "
               "1 with lines dt 2 lc rgb 'black' title 'equal'\n")
    return plots.Chart("ratios", title, script, "compare-linux")


def main(argv: list[str]) -> int:
    boot.interrupt_on_sigterm()
    parser = argparse.ArgumentParser(prog="python3 -m tools.bench.compare_linux",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("kernel")
    parser.add_argument("lbench", help="the static Linux benchmark program")
    parser.add_argument("--scale", type=int, default=100,
                        help="percent of each row's samples and time (1 to 1000)")
    parser.add_argument("--out", help="where results and logs go "
                                      "(default: compare-linux beside the kernel)")
    args = parser.parse_args(argv[1:])
    if not 1 <= args.scale <= 1000:
        print("compare-linux: --scale: 1 to 1000 (percent)", file=sys.stderr)
        return 2
    out = Path(args.out or Path(args.kernel).resolve().parent / "compare-linux").resolve()
    runs = {}
    try:
        vmlinuz = linux_kernel.kernel(Path(args.kernel).resolve().parent)
        out.mkdir(parents=True, exist_ok=True)
        initramfs(Path(args.lbench), out / "initramfs.cpio")
        print(f"compare-linux: {EMULATOR_NOTE}", flush=True)
        for name, cpus, icount in PASSES:
            if name == "cross" and machine([], cpus, icount).smp < 2:
                raise boot.ConfigError("the cross-CPU rows need SMP=2 or more")
            benchmarks = ",".join(dict.fromkeys(r[1][0] for r in pass_rows(name)))
            ours_s = machine([f"bench={benchmarks}", f"bench_scale={args.scale}"], cpus,
                             icount)
            ours = boot_shootdown(ours_s, args.kernel, out / f"run-shootdown-{name}")
            _, linux = boot_linux(machine([], cpus, icount), vmlinuz,
                                  out / "initramfs.cpio", args.scale, out / f"run-linux-{name}")
            bench.write_json(ours, out / f"shootdown-{name}.json")
            bench.write_json(linux, out / f"linux-{name}.json")
            runs[name] = (ours, linux)
    except (linux_kernel.KernelError, boot.ConfigError) as e:
        print(f"compare-linux: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        boot.stop_all()
        print("\ncompare-linux: interrupted", file=sys.stderr)
        return 130
    lines, ratios, missing = table(runs)
    (out / "compare.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    made = ""
    if ratios and plots.have_gnuplot():
        chart = ratio_chart(ratios, f"shootdown / Linux (medians): {EMULATOR_NOTE}")
        made = f", {plots.draw(chart, out, plots.png_terminal())[1]}"
    print(f"\ncompare-linux: {out}/{{shootdown,linux}}-{{local,cross}}.json, "
          f"{out / 'compare.txt'}{made}")
    problems = [f"{side} ({name} rows): {p}" for name, records in runs.items()
                for side, record in zip(("shootdown", "Linux"), records)
                for p in record["problems"]] + missing
    for problem in problems:
        print(f"compare-linux: problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
