"""Draw a tlb_trace log as a timeline: one lane per CPU, the address space
each one has loaded (coloured spans, labelled with mm and ASID, hatched while
LAZY), every event as a mark whose shape and colour tell its kind, the
slot's generation against the mm's at each event (red when the slot is
behind), and an arrow from each flush request to every target's handling
of it. Writes NAME.svg and NAME.png with gnuplot: `make timeline`.

    python3 -m tools.run.timeline [LOG] [-o NAME] [--from T] [--to T] [--first N]
                      [--spacing even|time] [--title TEXT]
    python3 -m tools.run.timeline --boot <kernel.elf> [-o NAME] [...]

LOG is a serial log (default: standard input) in which the kernel's
`tlb: t=...` lines may be mixed with any other output, or the simulator's
trace (build/host/tlb_sim ... -v), whose lines carry the same text after its
own prefix. --boot boots the kernel first, with the machine from the
variables of tools/run/boot.py (SMP, CMDLINE, TIMEOUT, ...; CMDLINE must hold
tlb_trace), keeps its serial log beside NAME and draws it.

The trace format is docs/tlb.md's ("Watching it"). Python 3.11 standard
library and gnuplot only.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools.run import boot


# --- Reading the trace ---------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?=]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b.")
# Found anywhere in a line: another CPU's unfinished output (a line longer
# than kprintf's buffer goes out in pieces) or the simulator's step and CPU
# columns may come first.
TRACE_LINE = re.compile(
    r"tlb: t=(?P<t>\d+) cpu(?P<cpu>\d+) +(?P<kind>[a-z-]+) +mm(?P<mm>\d+) "
    r"asid(?P<asid>-?\d+) gen (?P<local>\d+|-)/(?P<current>\d+|-)"
    r"(?: (?P<link>.*?))?\s*$")
TARGET_LIST = re.compile(r"to (none|[\d,-]+(?:\.\.\.)?)$")
SENDER = re.compile(r"from cpu(\d+)$")
CR3 = re.compile(r"cr3 (flush|keep)$")

# The events that handle a request (they name its sender).
HANDLINGS = ("flush-pages", "flush-all", "up-to-date", "leave-lazy", "not-loaded")
# The events after which a CPU has another address space, ASID or laziness.
CHANGES = ("switch", "enter-lazy", "resume")
# Each kind's mark: gnuplot point type, colour, and what it means (the legend).
KINDS = {
    "request": (9, "#000000", "a flush sent"),
    "flush-pages": (7, "#1f77b4", "those pages dropped"),
    "flush-all": (5, "#d62728", "the whole context dropped"),
    "up-to-date": (6, "#2ca02c", "covered already: nothing"),
    "leave-lazy": (11, "#9467bd", "a lazy CPU leaves for mm0"),
    "not-loaded": (1, "#7f7f7f", "the mm left: nothing"),
    "catch-up": (13, "#ff7f0e", "behind on resume: flush"),
    "switch-behind": (15, "#e377c2", "slot stale: the load flushes"),
    "switch": (3, "#8c564b", "CR3 load"),
    "enter-lazy": (8, "#17becf", "a kernel thread on the mm"),
    "resume": (10, "#bcbd22", "back from lazy, no CR3 load"),
    "spurious": (4, "#393b79", "a spurious fault: page flushed, retried"),
}
UNKNOWN_KIND = (2, "#555555", "other")
# Span colours per context id; mm0 (the kernel mm) is grey.
KERNEL_MM_COLOUR = "#d9d9d9"
MM_COLOURS = ("#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#f7b6d2", "#dbdb8d",
              "#9edae5", "#c49c94")


class TraceError(Exception):
    """A log or an option the timeline cannot be drawn from."""


@dataclasses.dataclass
class Event:
    index: int                  # place in the log: orders events of equal time
    t: int
    cpu: int
    kind: str
    mm: int
    asid: int                   # -1: none (kernel mm, or not loaded here)
    local_gen: int | None       # None: the event did not read it ("-")
    mm_gen: int | None
    targets: list[int] = dataclasses.field(default_factory=list)  # request
    targets_cut: bool = False   # the kernel's list ended in "..."
    sender: int | None = None   # a handling: the CPU that sent the request
    cr3: str = ""               # switch: "flush" or "keep"

    @property
    def gen_text(self) -> str:
        def shown(g: int | None) -> str:
            return "-" if g is None else str(g)
        return f"{shown(self.local_gen)}/{shown(self.mm_gen)}"

    @property
    def behind(self) -> bool:
        """The slot is older than the mm (a request: the change it makes)."""
        return (self.kind != "request" and self.local_gen is not None
                and self.mm_gen is not None and self.local_gen < self.mm_gen)


def parse_targets(text: str) -> tuple[list[int], bool]:
    """ "to 1-3,6" -> [1, 2, 3, 6]; "to none" -> []; a trailing "..." says
    the kernel cut the list."""
    m = TARGET_LIST.match(text)
    if not m:
        raise ValueError(text)
    body, cut = m.group(1), m.group(1).endswith("...")
    if body == "none":
        return [], False
    cpus: list[int] = []
    for part in body.removesuffix("...").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return cpus, cut


def parse_line(line: str, index: int) -> Event | None:
    m = TRACE_LINE.search(line)
    if not m:
        return None
    e = Event(index, int(m["t"]), int(m["cpu"]), m["kind"], int(m["mm"]), int(m["asid"]),
              None if m["local"] == "-" else int(m["local"]),
              None if m["current"] == "-" else int(m["current"]))
    link = m["link"] or ""
    try:
        if e.kind == "request":
            e.targets, e.targets_cut = parse_targets(link)
        elif e.kind in HANDLINGS:
            e.sender = int(SENDER.match(link).group(1))
        elif e.kind == "switch":
            e.cr3 = CR3.match(link).group(1)
    except (AttributeError, ValueError):
        return None  # a line cut by other output: not drawn rather than wrong
    return e


def read_trace(text: str) -> list[Event]:
    lines = ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).split("\n")
    events = [e for i, line in enumerate(lines) if (e := parse_line(line, i))]
    return sorted(events, key=lambda e: (e.t, e.index))


# --- What is drawn ---------------------------------------------------------------------

@dataclasses.dataclass
class Span:
    """A CPU with one address space loaded, from x0 to x1."""
    cpu: int
    x0: float
    x1: float
    mm: int
    asid: int
    lazy: bool


@dataclasses.dataclass
class Arrow:
    request: Event
    handling: Event


def loaded_after(e: Event, state: tuple[int, int, bool] | None) -> tuple[int, int, bool] | None:
    """What the CPU has loaded (mm, ASID, lazy) after event e, given what it
    had before (None: not known yet). Only the CHANGES change it; other
    events may tell what was loaded all along."""
    if e.kind == "switch":
        return (e.mm, e.asid, False)
    if e.kind == "enter-lazy":
        return (e.mm, e.asid, True)
    if e.kind == "resume":
        return (e.mm, e.asid, False)
    if state is None and e.asid >= 0 and e.kind != "not-loaded":
        # the mm was loaded here before the trace began (lazy unknown: not)
        return (e.mm, e.asid, e.kind == "leave-lazy")
    return state


def match_arrows(events: list[Event]) -> list[Arrow]:
    """Each request to each of its targets, paired with the first handling on
    that target of a request from its sender that comes after it in the log
    (a CPU sends one request at a time, and each target handles them in
    order). The log's order, not the times: clocks of different CPUs may
    disagree by a little, the order of lines written one after the other may
    not. A target whose handling is not in the log gets no arrow."""
    arrows: list[Arrow] = []
    used: set[int] = set()
    by_log = sorted(events, key=lambda e: e.index)
    for i, req in enumerate(by_log):
        if req.kind != "request":
            continue
        for target in req.targets:
            handling = next((h for h in by_log[i + 1:]
                             if h.cpu == target and h.kind in HANDLINGS
                             and h.sender == req.cpu and h.mm == req.mm
                             and h.index not in used), None)
            if handling is not None:
                used.add(handling.index)
                arrows.append(Arrow(req, handling))
    return arrows


def window(events: list[Event], start: int | None, end: int | None,
           first: int | None) -> list[Event]:
    shown = [e for e in events
             if (start is None or e.t >= start) and (end is None or e.t <= end)]
    return shown[:first] if first is not None else shown


@dataclasses.dataclass
class Picture:
    events: list[Event]          # the window, in time order
    cpus: list[int]              # one lane each
    x: dict[int, float]          # event index -> x position
    x_range: tuple[float, float]
    spans: list[Span]
    arrows: list[Arrow]
    x_label: str


def lay_out(all_events: list[Event], shown: list[Event], spacing: str) -> Picture:
    """Positions: one slot per event (even) or the trace's clock (time).
    The events before the window say what each CPU had loaded when it
    opens; a CPU still unknown then shows from its first event that tells."""
    t0 = shown[0].t
    if spacing == "even":
        x = {e.index: float(i) for i, e in enumerate(shown)}
        x_range = (-0.5, len(shown) - 0.5)
        x_label = f"events in order (tics: trace time since t={t0})"
    else:
        x = {e.index: float(e.t - t0) for e in shown}
        last = max(x.values())
        margin = max(last * 0.02, 1.0)
        x_range = (-margin, last + margin)
        x_label = f"trace time since t={t0} (TSC cycles, or simulator steps)"
    shown_ids = {e.index for e in shown}
    cpus = sorted({e.cpu for e in shown} | {c for e in shown for c in e.targets})
    # What each CPU had loaded when the window opens.
    state: dict[int, tuple[int, int, bool] | None] = {}
    for e in all_events:
        if (e.t, e.index) >= (shown[0].t, shown[0].index):
            break
        state[e.cpu] = loaded_after(e, state.get(e.cpu))
    spans: list[Span] = []
    opened = {cpu: x_range[0] for cpu in cpus}
    for e in shown:
        before = state.get(e.cpu)
        after = loaded_after(e, before)
        if before is None and e.kind not in CHANGES:
            state[e.cpu] = after  # loaded since before the window, as it turns out
            continue
        if after != before:
            if before is not None:
                spans.append(Span(e.cpu, opened[e.cpu], x[e.index], *before))
            opened[e.cpu] = x[e.index]
        state[e.cpu] = after
    for cpu in cpus:
        if state.get(cpu) is not None:
            spans.append(Span(cpu, opened[cpu], x_range[1], *state[cpu]))
    arrows = [a for a in match_arrows(all_events)
              if a.request.index in shown_ids and a.handling.index in shown_ids
              and a.request.cpu != a.handling.cpu]
    return Picture(shown, cpus, x, x_range, spans, arrows, x_label)


# --- Drawing ----------------------------------------------------------------------------

LANE_HALF = 0.32   # half a lane's span band, in lane units
SLOT_PX = 16       # width of one event slot with even spacing
TIME_PX = 1400     # width of the plot area with time spacing
LANE_PX = 110


def quoted(text: str) -> str:
    """A gnuplot string constant."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Where an empty series puts its one point: far left of any plot, so it is
# clipped, and the series keeps its legend entry. (A series of NaN alone
# crashes gnuplot 5.4 in some mixes of vectors and labels.)
OUTSIDE = (-1e12, 0, 0, 0)


def datablock(name: str, rows: list[tuple], columns: int) -> str:
    """An inline datablock of rows of `columns` values."""
    rows = rows or [(*OUTSIDE[:columns - 1], "") if columns == 3 else OUTSIDE[:columns]]
    lines = [" ".join(quoted(v) if isinstance(v, str) else f"{v:g}" if isinstance(v, float)
                      else str(v) for v in row) for row in rows]
    return f"${name} << EOD\n" + "\n".join(lines) + "\nEOD\n"


def mm_colour(mm: int, order: list[int]) -> str:
    return KERNEL_MM_COLOUR if mm == 0 else MM_COLOURS[order.index(mm) % len(MM_COLOURS)]


def time_tics(pic: Picture, every: int) -> str:
    """With even spacing, every `every`-th slot is labelled with its time."""
    t0 = pic.events[0].t
    tics = [f"{quoted(str(e.t - t0))} {pic.x[e.index]:g}"
            for i, e in enumerate(pic.events) if i % every == 0]
    return "set xtics (" + ", ".join(tics) + ") rotate by 45 right font \",8\"\n"


def plot_width(pic: Picture, spacing: str) -> int:
    """The plot area's width in pixels."""
    return SLOT_PX * len(pic.events) if spacing == "even" else TIME_PX


def gnuplot_script(pic: Picture, title: str, spacing: str) -> str:
    """Everything as plot series, so that each part is one group in the SVG
    (titled as in the legend: the test reads them): a series per mm's
    spans, one of lazy overlays, one per event kind's marks, the arrows,
    and the labels (generations, mm and ASID)."""
    lane_y = {cpu: i for i, cpu in enumerate(pic.cpus)}
    mms = sorted({s.mm for s in pic.spans} - {0})
    blocks, series = [], []

    def box(x0: float, x1: float, y: float, half: float) -> tuple:
        return ((x0 + x1) / 2, y, (x1 - x0) / 2, half)

    for mm in ([0] if any(s.mm == 0 for s in pic.spans) else []) + mms:
        rows = [box(s.x0, s.x1, lane_y[s.cpu], LANE_HALF) for s in pic.spans if s.mm == mm]
        blocks.append(datablock(f"mm{mm}", rows, 4))
        name = "mm0 (kernel mm)" if mm == 0 else f"mm{mm}"
        series.append(f"$mm{mm} using 1:2:3:4 with boxxyerror fs solid 0.85 noborder "
                      f"lc rgb {quoted(mm_colour(mm, mms))} title {quoted('span: ' + name)}")
    lazy = [box(s.x0, s.x1, lane_y[s.cpu], LANE_HALF) for s in pic.spans if s.lazy]
    blocks.append(datablock("lazy", lazy, 4))
    series.append("$lazy using 1:2:3:4 with boxxyerror fs transparent pattern 4 noborder "
                  "lc rgb \"#404040\" title \"span: lazy (kernel thread)\"")
    # Span labels, where a span is wide enough for its label (some 7 px a
    # character at 8 points).
    px_per_x = plot_width(pic, spacing) / (pic.x_range[1] - pic.x_range[0])
    labels = [((s.x0 + s.x1) / 2, lane_y[s.cpu] + LANE_HALF * 0.55, text)
              for s in pic.spans
              if (s.x1 - s.x0) * px_per_x >= 7 * len(
                  text := f"mm{s.mm}" + (f" asid{s.asid}" if s.asid >= 0 else ""))]
    blocks.append(datablock("spanlabels", labels, 3))
    series.append("$spanlabels using 1:2:3 with labels font \",8\" tc rgb \"#303030\" notitle")

    kinds = list(KINDS) + sorted({e.kind for e in pic.events} - set(KINDS))
    for kind in kinds:
        rows = [(pic.x[e.index], lane_y[e.cpu]) for e in pic.events if e.kind == kind]
        if not rows:
            continue
        point, colour, meaning = KINDS.get(kind, UNKNOWN_KIND)
        blocks.append(datablock(f"kind_{kind.replace('-', '_')}", rows, 2))
        series.append(f"$kind_{kind.replace('-', '_')} using 1:2 with points pt {point} ps 1.6 "
                      f"lc rgb {quoted(colour)} title {quoted(f'event: {kind} ({meaning})')}")

    arrows = [(pic.x[a.request.index], lane_y[a.request.cpu],
               pic.x[a.handling.index] - pic.x[a.request.index],
               lane_y[a.handling.cpu] - lane_y[a.request.cpu]) for a in pic.arrows]
    blocks.append(datablock("arrows", arrows, 4))
    series.append("$arrows using 1:2:3:4 with vectors head filled size screen 0.008,20 "
                  "lw 1 lc rgb \"#505050\" title \"arrow: request to a target's handling\"")

    for name, colour, wanted in (("gen_behind", "#d00000", True), ("gen_ok", "#000000", False)):
        rows = [(pic.x[e.index], lane_y[e.cpu] - LANE_HALF - 0.04, e.gen_text)
                for e in pic.events if e.behind == wanted]
        blocks.append(datablock(name, rows, 3))
        what = ("red L/M: the slot's generation behind the mm's" if wanted
                else "L/M: slot's / mm's generation (request: old/new)")
        series.append(f"${name} using 1:2:3 with labels rotate by 90 left font \",8\" "
                      f"tc rgb {quoted(colour)} title {quoted(what)}")

    n = len(pic.events)
    plot_w = plot_width(pic, spacing)
    width, height = max(plot_w, 1100) + 120, LANE_PX * len(pic.cpus) + 300
    ytics = ", ".join(f"{quoted(f'cpu{cpu}')} {y}" for cpu, y in lane_y.items())
    script = "".join(blocks)
    # Enhanced text off for what the trace or the user wrote (an "_" would
    # be a subscript); off for the whole terminal, gnuplot's SVG would lose
    # the legend titles of its plot groups.
    script += (f"set title {quoted(title)} noenhanced\n"
               f"set xlabel {quoted(pic.x_label)} noenhanced\n"
               f"set xrange [{pic.x_range[0]:g}:{pic.x_range[1]:g}]\n"
               f"set yrange [{len(pic.cpus) - 0.5:g}:-0.75]\n"
               f"set ytics ({ytics})\nset ytics scale 0\n"
               "set grid noxtics noytics\nset border 3\nset tics nomirror\n"
               "set key noenhanced outside below center horizontal Left reverse font \",9\" "
               "width 2 maxrows 5\n"
               "set lmargin 9\n")
    if spacing == "even":
        script += time_tics(pic, max(1, round(n / max(plot_w / 60, 1))))
    script += "plot " + ", \\\n     ".join(series) + "\n"
    return f"# size {width} {height}\n" + script


def png_terminal() -> str:
    """pngcairo (antialiased, as the SVG looks) where gnuplot has it, png
    (libgd) otherwise."""
    probe = subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True,
                           text=True)
    return "pngcairo" if probe.returncode == 0 and not probe.stderr.strip() else "png"


def render(script: str, stem: Path) -> list[Path]:
    """The one script, drawn to NAME.svg and to NAME.png."""
    width, height = (int(v) for v in script.split("\n", 1)[0].split()[2:4])
    outputs = [(stem.with_suffix(".svg"), f"svg size {width},{height} font \"sans,10\""),
               (stem.with_suffix(".png"),
                f"{png_terminal()} size {width},{height} font \"sans,10\"")]
    for path, terminal in outputs:
        text = f"set terminal {terminal}\nset output {quoted(str(path))}\n{script}"
        done = subprocess.run(["gnuplot"], input=text, text=True, capture_output=True)
        if done.returncode != 0 or not path.is_file():
            raise TraceError(f"gnuplot failed drawing {path}:\n{done.stderr.strip()}")
    return [p for p, _ in outputs]


# --- Command line -------------------------------------------------------------------------

def boot_log(kernel: str, stem: Path) -> str:
    """Boot once with the machine the environment describes; the serial log
    stays beside the pictures (stem's directory)."""
    s = boot.settings_from_env(boot.Settings()).resolve()
    if "tlb_trace" not in s.cmdline:
        raise TraceError("--boot: CMDLINE must hold tlb_trace (else nothing is traced)")
    run_dir = stem.parent
    print(f"# {s.describe()}, options: {' '.join(s.cmdline)}", flush=True)
    result = boot.run(s, kernel, run_dir)
    if result.error and not result.serial:
        raise TraceError(f"--boot: {result.error}")
    if result.timed_out:
        print(f"timeline: {result.error}; drawing what the log has", file=sys.stderr)
    print(f"# serial log: {run_dir / 'serial.log'}")
    return result.serial


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m tools.run.timeline",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("log", nargs="?", help="serial log or simulator trace (default: stdin)")
    p.add_argument("--boot", metavar="KERNEL", help="boot this kernel first and draw its log")
    p.add_argument("-o", "--output", default="build/timeline/timeline", metavar="NAME",
                   help="writes NAME.svg and NAME.png (default: %(default)s)")
    p.add_argument("--from", dest="start", type=int, metavar="T",
                   help="only events at trace time T or later")
    p.add_argument("--to", dest="end", type=int, metavar="T",
                   help="only events at trace time T or earlier")
    p.add_argument("--first", type=int, metavar="N", help="only the first N events (of the window)")
    p.add_argument("--spacing", choices=("even", "time"), default="even",
                   help="x axis: one slot per event in order (default), or the trace's clock")
    p.add_argument("--title", help="the picture's title (default: the log's name)")
    args = p.parse_args(argv[1:])
    if args.log and args.boot:
        p.error("give a LOG or --boot, not both")
    if args.first is not None and args.first < 1:
        p.error("--first needs N >= 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    stem = Path(args.output)
    try:
        if stem.suffix in (".svg", ".png"):
            stem = stem.with_suffix("")
        stem.parent.mkdir(parents=True, exist_ok=True)
        if args.boot:
            text, source = boot_log(args.boot, stem), f"boot of {args.boot}"
        elif args.log:
            path = Path(args.log)
            if not path.is_file():
                raise TraceError(f"{args.log}: no such file (give a serial log, e.g. "
                                 "build/run/serial.log after make run CMDLINE='... tlb_trace')")
            text, source = path.read_text(errors="replace"), args.log
        elif sys.stdin.isatty():
            raise TraceError("give a serial log, or pipe a trace in (tools/run/timeline.py --help)")
        else:
            text, source = sys.stdin.read(), "standard input"
        events = read_trace(text)
        if not events:
            raise TraceError(f"{source}: no tlb trace lines ('tlb: t=... cpuN ...'); "
                             "boot with tlb_trace on the command line")
        shown = window(events, args.start, args.end, args.first)
        if not shown:
            raise TraceError(f"{source}: {len(events)} trace events, none in the window "
                             f"(times {events[0].t}..{events[-1].t})")
        if shutil.which("gnuplot") is None:
            raise TraceError("gnuplot is missing (apt-get install gnuplot-nox, or make deps)")
        pic = lay_out(events, shown, args.spacing)
        title = args.title or f"tlb_trace: {source}"
        paths = render(gnuplot_script(pic, title, args.spacing), stem)
    except TraceError as e:
        print(f"timeline: {e}", file=sys.stderr)
        return 1
    except (boot.ConfigError, OSError, RuntimeError) as e:
        print(f"timeline: {e}", file=sys.stderr)
        return 1
    if any(e.targets_cut for e in shown):
        print("timeline: a request's target list was cut short in the log ('...'): "
              "arrows to the CPUs left out are missing", file=sys.stderr)
    print(f"timeline: {len(shown)} of {len(events)} events, {len(pic.cpus)} lanes, "
          f"{len(pic.arrows)} arrows: {' '.join(str(p) for p in paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
