"""The lecture figures of the teacher's kit (labs/teacher/figures/): `make figures`.

    python3 -m tools.labs.figures [-o DIR] [NAME...]

Each figure is drawn by the project's own tools, so a teacher can draw it
again after the code changes:

  cve-2025-37964   the simulator's first violation with the mutant
                   skip-switching-cpus (a flusher that leaves out a CPU in
                   the middle of a switch), its -v trace drawn by
                   tools/run/timeline.py
  lazy-fence       the same with order-leave-lazy-no-fence (leave_lazy
                   reads tlb_gen with no fence after is_lazy = false)
  shootdown        the reference simulator on a small race of its own, for
                   comparison: a remap while another CPU reads, then goes
                   lazy and comes back
  cpu-states       the states of one CPU's TLB (mm/tlb.c, docs/tlb.md)
  pairing          the switch/flush pairing ("Orderings" in mm/tlb.c)

The timelines build each mutant's simulator as `make mutants` does
(tools/test/mutants.py, in build/mutants/NAME/), find the first case that
fails, and replay it with -v. The two diagrams are gnuplot scripts
written here. Every figure is NAME.svg and NAME.png. Needs gnuplot, and a
C compiler for the simulators. Exit status: 0 done, 1 a figure failed.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from tools import ROOT
from tools.run import timeline
from tools.test import mutants

DEFAULT_DIR = ROOT / "labs" / "teacher" / "figures"

# A figure from a mutant: its name, the mutant, a title, and what the
# picture cannot show by itself (store buffers are not traced).
MUTANT_FIGURES = {
    "cve-2025-37964": (
        "skip-switching-cpus", "CVE-2025-37964: a switching CPU left out of a flush",
        "cpu1 has switched to mm1, but its store loaded_mm = mm1 is still in its store buffer: cpu0 reads "
        "SWITCHING and, with the mutant, sends its request to none"),
    "lazy-fence": (
        "order-leave-lazy-no-fence", "leave_lazy without its fence",
        "the returning CPU's is_lazy = false is still buffered when the flusher reads it: the flusher leaves "
        "it out, and the CPU's earlier read of tlb_gen missed the bump"),
}

# The reference simulator on a race written for the figure (docs/tlb-simulator.md,
# "Writing your own race"): CPU 0 remaps and unmaps mm1's pages while CPU 1
# reads them, goes lazy and comes back.
SHOOTDOWN_RACE = ["-W", "run 1, read 0, remap 1 0, unmap 1 1 2",
                  "-W", "run 1, read 0, read 1, kthread, run 1, read 0",
                  "-p", "asid_slots=2 lazy=skip flush_ceiling=2", "-s", "1", "-v"]


class FigureError(Exception):
    pass


def draw_trace(trace: str, stem: Path, title: str) -> list[Path]:
    events = timeline.read_trace(trace)
    if not events:
        raise FigureError(f"{stem.name}: the run printed no trace lines")
    pic = timeline.lay_out(events, events, "even")
    # The title's line breaks, past timeline.quoted (which escapes a "\\n").
    script = timeline.gnuplot_script(pic, title.replace("\n", "\x01"), "even")
    return timeline.render(script.replace("\x01", "\\n"), stem)


def reproduce_line(log: str) -> list[str]:
    for line in log.splitlines():
        _, found, command = line.partition("reproduce: ")
        if found:
            return shlex.split(command)
    raise FigureError("the failing case printed no `reproduce:` line")


def mutant_figure(name: str, stem: Path) -> list[Path]:
    mutant_name, title, caption = MUTANT_FIGURES[name]
    m = mutants.parse(mutants.ROOT / "tests" / "mutants" / f"{mutant_name}.mutant")
    outcome = mutants.run_mutant(m, mutants.source_files(), timeout=120)
    if outcome.result != "killed":
        raise FigureError(f"{mutant_name}: {outcome.result}: {outcome.reason}")
    src = mutants.WORK_DIR / m.name / "src"
    log = (mutants.WORK_DIR / m.name / "cases.log").read_text(errors="replace")
    command = reproduce_line(log.split(f"=== {outcome.case} (")[-1])
    if "-v" not in command:
        command.append("-v")
    trace, _ = mutants.run_killable(command, src, 120)
    case = " ".join(shlex.quote(a) for a in command[1:])
    failure = next((line.split("FAILURE: ", 1)[1] for line in trace.splitlines()
                    if "FAILURE: " in line), "")
    return draw_trace(trace, stem, f"{title}: tlb_sim {case}, with mutant {mutant_name}\n"
                      f"{caption}\n{failure}")


def shootdown_figure(stem: Path) -> list[Path]:
    sim = ROOT / "build" / "host" / "tlb_sim"
    subprocess.run(["make", "--no-print-directory", "-s", str(sim.relative_to(ROOT))],
                   cwd=ROOT, check=True, env=mutants.sub_env())
    done = subprocess.run([str(sim), *SHOOTDOWN_RACE], cwd=ROOT, capture_output=True, text=True)
    return draw_trace(done.stdout, stem, "the reference: a remap and an unmap while CPU 1 reads, "
                      "goes lazy and comes back")


# --- Diagrams --------------------------------------------------------------------------

def q(text: str) -> str:
    """text as a gnuplot string: newlines as \n, no enhanced-text markup."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# An arrow between two boxes: from, to, a sideways shift (two arrows
# between the same boxes run side by side), its label, and where the label
# goes (x, y, justification).
Arrow = tuple[str, str, float, str, float, float, str]


def diagram(width: int, height: int, boxes: dict[str, tuple[float, float, str]],
            arrows: list[Arrow], notes: list[tuple[float, float, str]], title: str,
            box_size: tuple[float, float] = (22.0, 16.0)) -> str:
    """A gnuplot script: boxes by name (centre x, y in 0..100, label), the
    arrows between them, and notes (x, y, text), left-justified."""
    out = [f"# figure {width} {height}", "unset key", "unset border", "unset tics",
           "set xrange [0:100]", "set yrange [0:100]", "set margins 0,0,0,2",
           f"set title {q(title)} noenhanced"]
    half_w, half_h = box_size[0] / 2, box_size[1] / 2
    for n, (x, y, label) in enumerate(boxes.values(), 1):
        out.append(f"set object {n} rect center {x},{y} size {2 * half_w},{2 * half_h} "
                   'fc rgb "#eef3fa" fs solid 1.0 border lc rgb "#1f3b66" lw 1.5')
        out.append(f"set label {q(label)} at {x},{y} center front noenhanced")

    def edge(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
        """Where the line from a box's centre towards (x1, y1) leaves the box."""
        dx, dy = x1 - x0, y1 - y0
        scale = min(half_w / abs(dx) if dx else 1e9, half_h / abs(dy) if dy else 1e9)
        return x0 + dx * scale, y0 + dy * scale

    for a, b, shift, label, lx, ly, just in arrows:
        (ax, ay, _), (bx, by, _) = boxes[a], boxes[b]
        ox, oy = (0.0, shift) if abs(bx - ax) > abs(by - ay) else (shift, 0.0)
        sx, sy = edge(ax + ox, ay + oy, bx + ox, by + oy)
        ex, ey = edge(bx + ox, by + oy, ax + ox, ay + oy)
        out.append(f"set arrow from {sx:.2f},{sy:.2f} to {ex:.2f},{ey:.2f} head filled "
                   'size screen 0.012,20 lc rgb "#333333" lw 1.2')
        out.append(f'set label {q(label)} at {lx},{ly} {just} font ",9" tc rgb "#333333" '
                   "front noenhanced")
    for x, y, text in notes:
        out.append(f'set label {q(text)} at {x},{y} left font ",9" front noenhanced')
    out.append("plot -1 notitle")
    return "\n".join(out) + "\n"


def cpu_states_figure(stem: Path) -> list[Path]:
    boxes = {
        "kernel": (13, 72, "KERNEL\nloaded_mm = kernel_mm\nPCID 0"),
        "switching": (47, 72, "SWITCHING\nloaded_mm =\nTLB_MM_SWITCHING"),
        "active": (80, 72, "ACTIVE on X\nloaded_mm = X\nis_lazy false"),
        "lazy": (80, 30, "LAZY on X\nloaded_mm = X\nis_lazy true"),
    }
    arrows = [
        ("kernel", "switching", 3, "load_mm(X)", 30, 80, "center"),
        ("switching", "kernel", -3, "load_mm(kernel_mm)", 30, 62, "center"),
        ("switching", "active", 3, "CR3 loaded", 63.5, 80, "center"),
        ("active", "switching", -3, "load_mm(Y),\nor kernel_mm", 63.5, 60, "center"),
        ("active", "lazy", -3, "enter_lazy: a kernel\nthread, and\nlazy_keeps_mm()", 76, 51, "right"),
        ("lazy", "active", 3, "leave_lazy:\nfence, compare\ngens, catch up", 84, 51, "left"),
        ("lazy", "switching", 0, "a request (lazy=ipi|dynamic,\nor tables freed), teardown:\n"
         "load_mm(kernel_mm)", 60, 38, "right"),
    ]
    notes = [
        (3, 27, "A flusher reads loaded_mm (acquire), then is_lazy:"),
        (3, 21, "  SWITCHING: always a target (CVE-2025-37964)"),
        (3, 15, "  another mm: left out, its slot for X is behind"),
        (3, 9, "  LAZY: left out under lazy=skip unless tables are freed"),
        (3, 3, "Every change of loaded_mm is a load_mm and passes through SWITCHING."),
    ]
    return timeline.render(diagram(900, 520, boxes, arrows, notes,
                                   "The states of one CPU's TLB (mm/tlb.c, docs/tlb.md)"), stem)


def pairing_figure(stem: Path) -> list[Path]:
    boxes = {
        "s1": (22, 80, "store loaded_mm =\nSWITCHING"),
        "s2": (22, 59, "locked BTS: its bit\nin X's cpu_mask"),
        "s3": (22, 38, "load X's tlb_gen\n(4, or 5?)"),
        "f1": (78, 80, "store the PTEs\n(unmap a page of X)"),
        "f2": (78, 59, "locked add:\nX's tlb_gen 4 -> 5"),
        "f3": (78, 38, "load cpu_mask, then\neach CPU's loaded_mm"),
    }
    arrows = [
        ("s1", "s2", 0, "then", 24, 69.5, "left"), ("s2", "s3", 0, "then", 24, 48.5, "left"),
        ("f1", "f2", 0, "then", 80, 69.5, "left"), ("f2", "f3", 0, "then", 80, 48.5, "left"),
    ]
    notes = [
        (7, 93, "Switching CPU: switch_mm_irqs_off into X"),
        (62, 93, "Flushing CPU: flush_tlb_mm_range on X"),
        (3, 21, "A store then a load of another variable is the one order x86 may break: the locked"),
        (3, 16, "operations keep it, and they fall in one total order. BTS first: the flusher sees the bit"),
        (3, 11, "and SWITCHING, and must send. Add first: the switcher reads 5, its slot is behind, its"),
        (3, 6, "CR3 load flushes. Skip SWITCHING, and the first case loses its flush."),
    ]
    return timeline.render(diagram(900, 520, boxes, arrows, notes,
                                   "The switch/flush pairing (\"Orderings\" in mm/tlb.c)",
                                   box_size=(28.0, 13.0)), stem)


FIGURES = {
    "cve-2025-37964": lambda stem: mutant_figure("cve-2025-37964", stem),
    "lazy-fence": lambda stem: mutant_figure("lazy-fence", stem),
    "shootdown": shootdown_figure,
    "cpu-states": cpu_states_figure,
    "pairing": pairing_figure,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", default=str(DEFAULT_DIR), metavar="DIR")
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(FIGURES))
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(f"no figure {', '.join(unknown)}: the figures are {', '.join(FIGURES)}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in args.names or FIGURES:
        try:
            paths = FIGURES[name](out / name)
        except (FigureError, timeline.TraceError, mutants.MutantError, OSError,
                subprocess.CalledProcessError) as e:
            print(f"figures: {name}: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"figures: {name}: {' '.join(str(p) for p in paths)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
