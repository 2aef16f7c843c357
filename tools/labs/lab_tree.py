"""Writes a student tree for one lab from the reference (docs/labs.md).

    python3 -m tools.labs.lab_tree LAB DEST      the tree for LAB (L0..L9) in DEST
    python3 -m tools.labs.lab_tree --list        each lab's marked regions
    python3 -m tools.labs.lab_tree --check       every marker in the tree well formed

The lab's marked regions become stubs that stop with a message naming the
lab and the function; every other lab's code stays as the reference.
Instructor material is left out: labs/teacher/, tools/labs/figures.py,
and every mutant whose patch names a file with a stubbed region (its
context lines are the reference code). Prose that gives a stubbed
region's answer, or a written question's, is rewritten (REWRITES). DEST
must not exist or be empty. Exit status: 0 done, 1 a malformed marker, a
rewrite that no longer matches, or nothing to stub, 2 bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tools import ROOT

LABS = tuple(f"L{n}" for n in range(10))
TEACHER_DIR = "labs/teacher/"
# Instructor material outside labs/teacher/: the figures' script explains
# the bugs it draws.
TEACHER_FILES = ("tools/labs/figures.py",)
MUTANT_DIR = "tests/mutants/"
LAB_FILE = ".lab"

# Where markers may be: the comment syntax of each kind of file.
C_LIKE = (".c", ".h", ".pml")
PYTHON = (".py",)

C_BEGIN = re.compile(r"^(\s*)/\* LAB\((L\d+)\) begin: (.*)$")
C_END = re.compile(r"^\s*/\* LAB\((L\d+)\) end \*/\s*$")
PY_BEGIN = re.compile(r"^(\s*)# LAB\((L\d+)\) begin: (.*)$")
PY_END = re.compile(r"^\s*# LAB\((L\d+)\) end\s*$")
# A comment that starts like a marker but is not one (in strings, or in
# prose, the words are only words).
C_ALMOST = re.compile(r"^\s*/\*\s*LAB\(")
PY_ALMOST = re.compile(r"^\s*#\s*LAB\(")
BUG_TOKEN = re.compile(r"\bTLB_BUG_([A-Z_]+)\b")
IDENT = re.compile(r"[A-Za-z_]\w*")


class MarkerError(Exception):
    """A marker that breaks the rules of docs/labs.md."""


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """In the trees of labs, the lines of path from the one that reads
    first (stripped) up to the next that starts with stop (stripped) become
    new. The reference keeps the explanation; a student tree keeps the
    contract and leaves the design to the student."""
    labs: tuple[str, ...]
    path: str
    first: str
    stop: str
    new: str


# Each text must be found as written: a rewrite that no longer matches the
# reference stops the tree (make test builds every lab's tree).
REWRITES = (
    Rewrite(LABS, "docs/tlb-simulator.md", "## Ordering mistakes it catches",
            "## Reproducing a failure", """\
## Ordering mistakes it catches

Left out of lab trees: the table of ordering mutants and what each breaks answers written questions of labs L4
and L5. `tests/mutants/` holds the mutants a tree keeps; `make mutants` runs them.

"""),
    Rewrite(("L3", "L4"), "mm/tlb.c", "* Whom a flush skips, and why that is safe",
            "* Rights that grow need no flush", """\
 * Whom a flush skips, and why that is safe
 *   A flush may leave out a CPU of mm->cpu_mask only when that CPU is
 *   sure to compare its slot's generation with mm's, and to flush if
 *   behind, before it next uses a translation of mm, and only when its
 *   page walker cannot reach a page table the change frees. Which of the
 *   states above give that guarantee, and which only seem to, is yours to
 *   argue (labs/L3-shootdown.md, labs/L4-lazy.md). "Orderings", below,
 *   says what a skipped CPU's comparison relies on.
 *
"""),
    Rewrite(("L4", "L5"), "mm/tlb.c", "*   A CPU handling the request (flush_tlb_here):",
            "* Whom a flush skips", """\
 *   A CPU handling the request (flush_tlb_here) may do nothing, drop the
 *   request's pages, drop its whole context, or, LAZY, leave for
 *   kernel_mm; whichever it does, I1 must hold after it (labs L4, L5).
 *
"""),
    Rewrite(("L3", "L4"), "mm/tlb.c", "*   3. targets: the union, over the spaces, of the CPUs of each one's",
            "*   4. one request per target", """\
 *   3. targets: the union, over the spaces, of the CPUs of each one's
 *      cpu_mask that cpu_needs_flush picks for that space's request;
"""),
    Rewrite(("L3", "L4"), "docs/tlb.md", "Whom a flush skips, and why that is safe:",
            "## Unmapping in batches", """\
Whom a flush skips: a CPU may be left out only when it is sure to compare generations, and flush if behind, before
it next uses a translation of the mm, and when its page walker cannot reach a table the change frees. Which CPUs
those are is the design of labs L3 and L4.

"""),
    Rewrite(("L3", "L4"), "docs/tlb.md",
            "2. the targets are the union over the spaces of the CPUs in each one's `cpu_mask` that the usual rules pick for",
            "3. each target gets **one** request naming every space", """\
2. the targets are the union over the spaces of the CPUs in each one's `cpu_mask` that the usual rules pick for
   that space;
"""),
    Rewrite(("L3",), "docs/tlb.md", "`loaded_mm` and `is_lazy` are the two fields other CPUs read when deciding whom to interrupt. Every change of",
            "## A switch", """\
`loaded_mm` and `is_lazy` are the two fields other CPUs read when deciding whom to interrupt. Every change of
`loaded_mm` is a `load_mm` and passes through SWITCHING; only ACTIVE <-> LAZY changes `is_lazy` alone, with no CR3
load (`enter_lazy`, `leave_lazy` in `mm/tlb.c`). A kernel thread on a CPU in KERNEL leaves it there. SWITCHING is a
value of `loaded_mm` written before the CPU sets its bit in the next mm's mask and reads its generation.

"""),
    Rewrite(("L3", "L4"), "docs/tlb.md", "look at X.cpu_mask: 1, 2, 3?", "send request {X, range, new_gen 5}", """\
 choose targets in X.cpu_mask: 1, 2, 3 (lab L3, L4)
"""),
    Rewrite(("L4", "L5"), "docs/tlb.md", "A CPU handling a request: not loaded any more -> nothing; LAZY -> leave for the kernel mm; slot gen already equals the",
            "Kernel mappings are global (CR4.PGE)", """\
A CPU handling a request may do nothing, drop the request's pages, drop its whole context, or, LAZY, leave for the
kernel mm. Whichever it does, its slot's generation must never claim more than the flushes done there cover (I1 in
`mm/tlb.c`): the choice, and the generation it records, are the design of labs L4 and L5.

"""),
    Rewrite(("L4",), "mm/tlb.c", "*   lazy_skipped_by     a flusher looking at a LAZY CPU: may it leave that",
            "*   lazy_leave_backs_off", """\
 *   lazy_skipped_by     a flusher looking at a LAZY CPU: may it leave that
 *                       CPU out? Only under skip, and never when page tables
 *                       were freed. The LAZY CPU catches up by generation on
 *                       return.
"""),
    Rewrite(("L4",), "mm/tlb.c", "* A LAZY CPU that gets a request always leaves the mm, under every policy:",
            "*/", """\
 * What a LAZY CPU does with a request that reaches it is for lab L4 to
 * decide (labs/L4-lazy.md).
"""),
    Rewrite(("L4",), "docs/tlb.md", "Everything `lazy=` changes is one of three decisions, each a named predicate in `mm/tlb.c`: whether a CPU about to run",
            "Whom a flush skips", """\
Everything `lazy=` changes is one of three decisions, each a named predicate in `mm/tlb.c`: whether a CPU about to run
a kernel thread keeps the user mm loaded (`lazy_keeps_mm`: not under `off`, nor during `dynamic`'s back-off); whether a
flush may leave a LAZY CPU out (`lazy_skipped_by`: only under `skip`, never when page tables were freed); and whether a
LAZY CPU that a request sent to the kernel mm then stays non-lazy for `lazy_backoff` switches (`lazy_leave_backs_off`:
only under `dynamic`). Each `tlb_bug=` is one `INJECTED(tlb, ...)` test in `mm/` (`lib/inject.h`: only the injection
kernel, `make inject`, and the simulator have them); `ack_before_flush` is built from the generic calls in
`mm/tlb_bug_ack.c` (`docs/tlb-bugs.md`).

"""),
    Rewrite(("L6",), "tools/labs/lab_checks.py", "def crossover_index(by_page: list[int], full: list[int]) -> int:",
            "def check_crossover", """\
def crossover_index(by_page: list[int], full: list[int]) -> int:
    \"\"\"The documented crossover (docs/bench.md), from its definition.\"\"\"
    n = len(full)
    return next(i for i in range(n + 1)
                if all(f <= p for f, p in zip(full[i:n], by_page[i:n])))


"""),
    Rewrite(("L9",), "mm/tlb_global_asid.c",
            "* Free ones are handed out in increasing order from `next_free`. When none is", "*/", """\
 * When a freed one may be handed out again, and at what cost, is lab L9's
 * design (labs/L9-broadcast.md): a space that gets one must find no entry
 * of an earlier holder in any TLB.
"""),
    Rewrite(("L9",), "mm/tlb_global_asid.c",
            "* Every freed one becomes free: first no TLB may hold an entry tagged", "*/", """\
 * Every freed one becomes free again (labs/L9-broadcast.md).
"""),
    Rewrite(("L9",), "mm/tlb.c", "*   Reclaimed  only when the allocator runs out of never-used ones: one",
            "*   Transition", """\
 *   Reclaimed  by the allocator, once no TLB can hold an entry tagged
 *          with one (lab L9). Handing a freed one out earlier would give
 *          the next space the dead one's entries.
"""),
    Rewrite(("L9",), "mm/tlb.c", "*     4. one INVLPGB of the PCID per invlpgb_max_pages pages, or one of",
            "*     5. during the transition", """\
 *     4. the INVLPGBs of the range in the PCID, then the wait for them
 *        (lab L9, labs/L9-broadcast.md);
"""),
    Rewrite(("L9",), "docs/tlb.md",
            "| reuse | only after a **wrap-around**: when no never-used one is left, one INVLPGB drops every non-global entry of every PCID on every CPU, TLBSYNC waits, and every freed one is free again (one broadcast per wrap, not one per teardown) |",
            "", """\
| reuse | only once no TLB can hold an entry tagged with it, at a cost that lab L9 bounds (`labs/L9-broadcast.md`) |
"""),
    Rewrite(("L9",), "docs/tlb.md",
            "**Flushing** such a space: the page tables change; `tlb_gen` is bumped (a locked add, so the stores are visible before",
            "**The transition.**", """\
**Flushing** such a space: the page tables change; `tlb_gen` is bumped (a locked add, so the stores are visible before
any INVLPGB, and CPUs still on dynamic ASIDs keep comparing it); then the INVLPGBs of the range in the PCID, and the
wait for them, which lab L9 designs (`labs/L9-broadcast.md`).

"""),
)


@dataclasses.dataclass
class Region:
    path: str
    lab: str
    first: int  # index of the begin line (0-based)
    last: int  # index of the end line
    body: int  # index of the first line after the begin comment
    indent: str
    what: str
    keeps: list[str]

    def where(self) -> str:
        return f"{self.path}:{self.first + 1}"


def marker_syntax(path: str):
    if path.endswith(C_LIKE):
        return C_BEGIN, C_END, C_ALMOST
    if path.endswith(PYTHON):
        return PY_BEGIN, PY_END, PY_ALMOST
    return None


def parse_begin(lines: list[str], i: int, match: re.Match, python: bool) -> tuple[str, int]:
    """The begin comment's text, which may go on over lines, and its last line."""
    text = match.group(3)
    if python:
        return text.strip(), i
    j = i
    while "*/" not in lines[j]:
        j += 1
        if j == len(lines):
            raise MarkerError("begin comment never closed")
        text += " " + lines[j].strip().lstrip("*").strip()
    return text[: text.rindex("*/")].strip(), j


def split_keeps(text: str) -> tuple[str, list[str]]:
    what, _, keeps = text.partition("keeps:")
    names = [k.strip() for k in keeps.split(",") if k.strip()]
    for name in names:
        if not IDENT.fullmatch(name):
            raise MarkerError(f"keeps: {name!r} is not a name")
    return what.strip().rstrip(";").strip(), names


def regions_of(path: str, lines: list[str]) -> list[Region]:
    syntax = marker_syntax(path)
    if not syntax:  # prose may name markers; only code carries them
        return []
    begin_re, end_re, almost_re = syntax
    python = path.endswith(PYTHON)
    found: list[Region] = []
    open_region: Region | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        begin = begin_re.match(line)
        end = end_re.match(line)
        if begin:
            if open_region:
                raise MarkerError(f"{path}:{i + 1}: LAB({begin.group(2)}) begins inside "
                                  f"LAB({open_region.lab}) from line {open_region.first + 1}")
            try:
                text, last_comment = parse_begin(lines, i, begin, python)
                what, keeps = split_keeps(text)
            except MarkerError as e:
                raise MarkerError(f"{path}:{i + 1}: {e}") from None
            if not what:
                raise MarkerError(f"{path}:{i + 1}: say what to write after 'begin:'")
            open_region = Region(path, begin.group(2), i, -1, last_comment + 1,
                                 begin.group(1), what, keeps)
            i = last_comment + 1
            continue
        if end:
            if not open_region or open_region.lab != end.group(1):
                raise MarkerError(f"{path}:{i + 1}: LAB({end.group(1)}) end without its begin")
            open_region.last = i
            found.append(open_region)
            open_region = None
        elif almost_re.match(line):
            raise MarkerError(f"{path}:{i + 1}: malformed LAB marker: {line.strip()}")
        i += 1
    if open_region:
        raise MarkerError(f"{open_region.where()}: LAB({open_region.lab}) never ends")
    for r in found:
        if r.lab not in LABS:
            raise MarkerError(f"{r.where()}: no lab {r.lab} (labs are {LABS[0]}..{LABS[-1]})")
    return found


# --- Stubs -----------------------------------------------------------------------


def c_parameters(lines: list[str], region: Region) -> list[str]:
    """A whole-body region's parameters: the names in the signature above."""
    if region.first == 0 or lines[region.first - 1].rstrip() != "{":
        return []
    if region.last + 1 >= len(lines) or lines[region.last + 1].rstrip() != "}":
        return []
    start = region.first - 1
    while start > 0 and "(" not in lines[start]:
        start -= 1
    while start > 0 and not re.match(r"^[A-Za-z_]", lines[start]):
        start -= 1
    signature = " ".join(line.strip() for line in lines[start:region.first - 1])
    open_at = signature.index("(")
    depth, params, current = 0, [], ""
    for ch in signature[open_at + 1:]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                params.append(current)
                break
            depth -= 1
        if ch == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += ch
    names = []
    for param in params:
        param = param.strip()
        if param in ("void", "", "..."):
            continue
        pointer = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", param)
        if pointer:
            names.append(pointer.group(1))
            continue
        idents = IDENT.findall(re.sub(r"\[.*?\]", "", param))
        if idents:
            names.append(idents[-1])
    return names


def enclosing_name(lines: list[str], region: Region, pattern: str) -> str:
    for line in reversed(lines[: region.first]):
        m = re.match(pattern, line)
        if m:
            return m.group(1)
    return "this part"


def comment(indent: str, text: str, python: bool) -> list[str]:
    """text as a comment at indent, wrapped to the 80 columns of the style."""
    width = 80 - len(indent.expandtabs(8)) - 3
    lines = textwrap.wrap(text, width) or [""]
    if python:
        return [f"{indent}# {line}" for line in lines]
    if len(lines) == 1:
        return [f"{indent}/* {lines[0]} */"]
    return ([f"{indent}/* {lines[0]}"] + [f"{indent} * {line}" for line in lines[1:-1]]
            + [f"{indent} * {lines[-1]} */"])


def handout(lab: str) -> str:
    """The lab's handout, labs/<lab>-<topic>.md, which a stub's message
    names; labs/README.md for a lab without one."""
    found = sorted((ROOT / "labs").glob(f"{lab}-*.md"))
    return f"labs/{found[0].name}" if len(found) == 1 else "labs/README.md"


def stub_lines(lines: list[str], region: Region) -> list[str]:
    ind = region.indent
    lab = region.lab
    what = f"LAB({lab}) to write: {region.what}"
    read = handout(lab)
    if region.path.endswith(".pml"):
        where = enclosing_name(lines, region, r"^\s*(?:active\s+(?:\[\d+\]\s+)?)?(?:proctype|inline)\s+(\w+)")
        return [*comment(ind, what, False),
                f'{ind}printf("lab {lab}: {where} is not written yet ({read})\\n");',
                f"{ind}assert(false)"]
    if region.path.endswith(PYTHON):
        where = enclosing_name(lines, region, r"^\s*def\s+(\w+)")
        return [*comment(ind, what, True),
                f'{ind}raise NotImplementedError("lab {lab}: {where}() is not written yet '
                f'({read})")']
    names = c_parameters(lines, region) + region.keeps
    out = comment(ind, what, False)
    out += [f"{ind}(void){name};" for name in dict.fromkeys(names)]
    out.append(f'{ind}LAB_UNWRITTEN("{lab}", "{read}");')
    return out


def rewritten(path: str, lines: list[str], rewrites: list[Rewrite]) -> list[str]:
    for rw in rewrites:
        starts = [i for i, line in enumerate(lines) if line.strip() == rw.first.strip()]
        if len(starts) != 1:
            raise MarkerError(f"{path}: the rewrite for lab trees finds {len(starts)} lines "
                              f"reading {rw.first!r}, not one: update REWRITES in "
                              "tools/labs/lab_tree.py")
        first = starts[0]
        stop = next((i for i in range(first + 1, len(lines))
                     if lines[i].strip().startswith(rw.stop.strip())), None)
        if stop is None:
            raise MarkerError(f"{path}: no line starting {rw.stop!r} after {rw.first!r}: "
                              "update REWRITES in tools/labs/lab_tree.py")
        lines = lines[:first] + rw.new.rstrip("\n").split("\n") + [""] * rw.new.endswith("\n\n") \
            + lines[stop:]
    return lines


def rewrites_for(lab: str) -> dict[str, list[Rewrite]]:
    out: dict[str, list[Rewrite]] = {}
    for rw in REWRITES:
        if lab in rw.labs:
            out.setdefault(rw.path, []).append(rw)
    return out


def add_lab_include(lines: list[str]) -> list[str]:
    if any(line.startswith('#include "lib/lab.h"') for line in lines):
        return lines
    last = max((n for n, line in enumerate(lines) if line.startswith("#include ")), default=None)
    if last is None:
        raise MarkerError("a C file with a stubbed region includes nothing: cannot add lib/lab.h")
    return lines[: last + 1] + ['#include "lib/lab.h"'] + lines[last + 1:]


def stubbed(path: str, lines: list[str], regions: list[Region]) -> list[str]:
    out: list[str] = []
    at = 0
    for r in sorted(regions, key=lambda r: r.first):
        out += lines[at:r.first]
        out += stub_lines(lines, r)
        at = r.last + 1
    out += lines[at:]
    if path.endswith((".c", ".h")):
        out = add_lab_include(out)
    return out


# --- The tree --------------------------------------------------------------------


def tracked_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                                capture_output=True, text=True).stdout
        files = [f for f in listed.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            rel_dir = Path(dirpath).relative_to(ROOT)
            dirnames[:] = [d for d in dirnames
                           if not d.startswith((".git", "build")) or d == ".ci"]
            files += [str(rel_dir / f) if str(rel_dir) != "." else f for f in filenames]
    return sorted(f for f in files if (ROOT / f).is_file())


def read_lines(path: str) -> list[str] | None:
    try:
        return (ROOT / path).read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError:
        return None


def all_regions(files: list[str]) -> dict[str, list[Region]]:
    out: dict[str, list[Region]] = {}
    for path in files:
        if path.startswith(TEACHER_DIR) or path.startswith(MUTANT_DIR):
            continue
        lines = read_lines(path)
        if lines is None:
            continue
        regions = regions_of(path, lines)
        if regions:
            out[path] = regions
    return out


def mutant_files(path: str) -> list[str]:
    return [line[len("file:"):].strip() for line in (ROOT / path).read_text().splitlines()
            if line.startswith("file:")]


def write_tree(lab: str, dest: Path) -> int:
    files = tracked_files()
    regions = all_regions(files)
    chosen = {p: [r for r in rs if r.lab == lab] for p, rs in regions.items()}
    chosen = {p: rs for p, rs in chosen.items() if rs}
    if not chosen:
        print(f"lab-tree: no region of lab {lab} is marked in this tree", file=sys.stderr)
        return 1
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        print(f"lab-tree: {dest} exists and is not an empty directory: choose a new DEST",
              file=sys.stderr)
        return 2
    rewrites = rewrites_for(lab)
    missing = sorted(set(rewrites) - set(files))
    if missing:
        raise MarkerError(f"REWRITES name files the tree does not have: {', '.join(missing)}")
    left_out: list[str] = []
    bugs: set[str] = set()
    for path in files:
        if path.startswith(TEACHER_DIR) or path in TEACHER_FILES:
            left_out.append(path)
            continue
        if path.startswith(MUTANT_DIR) and path.endswith(".mutant") and \
                any(f in chosen for f in mutant_files(path)):
            left_out.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path in chosen or path in rewrites:
            lines = read_lines(path)
            for r in chosen.get(path, []):
                for line in lines[r.body:r.last]:
                    bugs.update(b.lower() for b in BUG_TOKEN.findall(line))
            if path in chosen:
                lines = stubbed(path, lines, chosen[path])
            lines = rewritten(path, lines, rewrites.get(path, []))
            target.write_text("\n".join(lines), encoding="utf-8")
            shutil.copymode(ROOT / path, target)
        else:
            shutil.copy2(ROOT / path, target)
    bugs.discard("none")
    bugs.discard("count")
    (dest / LAB_FILE).write_text(
        "# Written by make lab-tree (docs/labs.md): the lab this tree is for, and the\n"
        "# tlb_bug= switches whose hooks were in the code it left for you to write.\n"
        f"lab={lab}\nbugs={' '.join(sorted(bugs))}\n", encoding="utf-8")
    count = sum(len(rs) for rs in chosen.values())
    print(f"lab-tree: {dest}: lab {lab}, {count} regions to write in "
          + ", ".join(f"{p} ({len(rs)})" for p, rs in sorted(chosen.items())))
    teacher = sum(1 for p in left_out if p.startswith(TEACHER_DIR) or p in TEACHER_FILES)
    print(f"lab-tree: left out {teacher} files of instructor material and "
          f"{len(left_out) - teacher} mutants of the stubbed files")
    print(f"lab-tree: next: cd {dest} && git init && git add -A && git commit -m 'lab {lab}'; "
          f"then make grade LAB={lab}")
    return 0


def list_regions() -> int:
    regions = all_regions(tracked_files())
    for lab in LABS:
        mine = [r for rs in regions.values() for r in rs if r.lab == lab]
        print(f"{lab}: {len(mine)} regions")
        for r in mine:
            print(f"  {r.where():28} {r.what}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", nargs="?", help="L0..L9")
    parser.add_argument("dest", nargs="?", help="where to write the tree")
    parser.add_argument("--list", action="store_true", help="list each lab's regions")
    parser.add_argument("--check", action="store_true", help="check every marker")
    args = parser.parse_args(argv)
    try:
        if args.list:
            return list_regions()
        if args.check:
            regions = all_regions(tracked_files())
            for lab in LABS:
                for path, rws in rewrites_for(lab).items():
                    rewritten(path, read_lines(path), rws)
            print(f"lab-tree: {sum(len(r) for r in regions.values())} regions in "
                  f"{len(regions)} files, markers well formed; {len(REWRITES)} rewrites apply")
            return 0
        if not args.lab or not args.dest:
            print("usage: make lab-tree LAB=L3 DEST=dir (labs/README.md)", file=sys.stderr)
            return 2
        if args.lab not in LABS:
            print(f"lab-tree: LAB={args.lab!r}: the labs are {', '.join(LABS)}", file=sys.stderr)
            return 2
        return write_tree(args.lab, Path(args.dest).resolve())
    except MarkerError as e:
        print(f"lab-tree: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
