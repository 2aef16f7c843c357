# SPDX-License-Identifier: MIT
"""Checks the kernel's layering (docs/architecture.md).

Reads the layers from docs/architecture.layers (a layer is one folder),
builds the include graph of the kernel's C and assembly files (#include and
%include lines; a module is foo.c with foo.h) and, from the compiled
objects, which file's symbols each file uses (calls and jumps from assembly
included), and fails, naming the files and both layers, on:
  - a layer line that names anything but one whole folder;
  - an include of a file in a higher layer;
  - a use of a symbol defined in a higher layer, unless a `provide` line
    declares it;
  - an include cycle between modules of different folders;
  - a kernel file that no layer claims;
  - a `register` or `provide` line the sources no longer bear out;
  - docs/architecture.dot differing from what the layers draw.

  python3 -m tools.check.layers [--objects BUILD]
                                     the checks above; the symbol check
                                     reads BUILD's objects (make's BUILD)
  python3 -m tools.check.layers --render
                                     rewrite docs/architecture.dot and .svg
  python3 -m tools.check.layers --headers SET "CC FLAGS..."
                                     also compile each header of SET alone
                                     (kernel, user or host; repeatable)

Silent when everything holds; exit status 1 and one line per problem
otherwise.
"""

import argparse
import concurrent.futures
import fnmatch
import os
import re
import shlex
import subprocess
import sys

import tools

ROOT = str(tools.ROOT)
LAYERS = "docs/architecture.layers"
DOT = "docs/architecture.dot"
SVG = "docs/architecture.svg"
# Not layered: own flags, and the host tests compile kernel files on purpose;
# tools/ holds programs for other systems (the Linux side of compare-linux).
UNLAYERED = ("tests/host/", "user/", "tools/")
INCLUDE = re.compile(r'^\s*[#%]\s*include\s+"([^"]+)"', re.M)
FOLDER = re.compile(r"^[a-z_]+/\*$")


class Layers:
    def __init__(self, path):
        self.names, self.patterns, self.notes = [], [], {}
        self.hooks = []
        self.problems = []
        with open(os.path.join(ROOT, path)) as f:
            for number, line in enumerate(f, 1):
                self.parse(path, number, line.split("#", 1)[0].strip())

    def parse(self, path, number, line):
        where = "%s:%d" % (path, number)
        if not line:
            return
        word, _, rest = line.partition(" ")
        if word == "layer":
            name, _, rest = rest.partition(":")
            globs, _, note = rest.partition("--")
            if not name.strip() or not globs.split():
                self.problems.append("%s: 'layer NAME: PATTERN...'" % where)
                return
            if len(globs.split()) != 1 or not FOLDER.match(globs.strip()):
                self.problems.append("%s: a layer is one folder, 'FOLDER/*'"
                                     % where)
                return
            self.names.append(name.strip())
            self.notes[name.strip()] = note.strip()
            self.patterns.append((globs.strip(), len(self.names) - 1))
        elif word in ("register", "provide") and len(rest.split()) == 3:
            self.hooks.append((word, *rest.split(), where))
        else:
            self.problems.append("%s: cannot read '%s'" % (where, line))

    def layer_of(self, path):
        """The layer index of path's folder, or None."""
        for glob, index in self.patterns:
            if fnmatch.fnmatchcase(path, glob):
                return index
        return None


def kernel_files():
    out = subprocess.check_output(["git", "ls-files", "*.c", "*.h", "*.asm",
                                   "*.inc"], cwd=ROOT, text=True)
    files = [f for f in out.split() if not f.startswith(UNLAYERED)]
    return [f for f in files if os.path.exists(os.path.join(ROOT, f))]


def read(path):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        return f.read()


def module(path):
    return os.path.splitext(path)[0]


def folder(path):
    return path.split("/", 1)[0]


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; the components of two or more."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def cycle_through(graph, members):
    """One cycle inside the component members, as a list of modules."""
    start = members[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node]):
            if nxt == start:
                return paths[node] + [start]
            if nxt in members and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    return members


def check_includes(layers, files, problems):
    names = layers.names
    graph, edge_files = {}, {}
    for path in files:
        mine = layers.layer_of(path)
        if mine is None:
            problems.append("%s: in no layer of %s" % (path, LAYERS))
            continue
        graph.setdefault(module(path), set())
        for inc in INCLUDE.findall(read(path)):
            if not os.path.exists(os.path.join(ROOT, inc)):
                problems.append("%s -> %s: no such file (includes are "
                                "relative to the repository root)"
                                % (path, inc))
                continue
            theirs = layers.layer_of(inc)
            if theirs is None:
                continue  # reported as a file of its own
            if theirs > mine:
                problems.append("%s -> %s: layer %s includes layer %s, "
                                "above it" % (path, inc, names[mine],
                                              names[theirs]))
            if module(inc) != module(path):
                graph[module(path)].add(module(inc))
                edge_files.setdefault((module(path), module(inc)), path)
    for members in strongly_connected(graph):
        if len({folder(m) for m in members}) < 2:
            continue  # a cycle inside one folder is that folder's business
        cycle = cycle_through(graph, members)
        steps = ", ".join("%s -> %s" % (edge_files[(a, b)], b)
                          for a, b in zip(cycle, cycle[1:]))
        problems.append("include cycle across folders: %s" % steps)


def object_symbols(build, files):
    """From BUILD's objects: which file defines each global symbol, and
    which symbols each file uses that it does not define."""
    defined, used = {}, {}
    for path in files:
        if not path.endswith((".c", ".asm")):
            continue
        obj = os.path.join(ROOT, build, module(path) + ".o")
        if not os.path.exists(obj):
            continue  # not part of the kernel (a host-only file)
        out = subprocess.check_output(["nm", obj], text=True)
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "U":
                used.setdefault(path, set()).add(fields[1])
            elif len(fields) == 3 and fields[1].isupper():
                defined[fields[2]] = path
    return defined, used


def check_symbols(layers, build, files, problems):
    """Every use of a symbol defined in a higher layer is declared by a
    `provide LOW FN HIGH` line whose LOW is in the user's layer or below
    (LOW declares FN; files above it reach FN through that declaration)."""
    names = layers.names
    provided = {}  # (FN, HIGH): the lowest layer declaring it
    for kind, low, fn, high, _ in layers.hooks:
        if kind == "provide" and layers.layer_of(low) is not None:
            provided[(fn, high)] = min(layers.layer_of(low),
                                       provided.get((fn, high), len(names)))
    defined, used = object_symbols(build, files)
    if not used:
        problems.append("no objects in %s: build the kernel first (make)"
                        % build)
    for path, symbols in sorted(used.items()):
        mine = layers.layer_of(path)
        for symbol in sorted(symbols):
            definer = defined.get(symbol)
            if definer is None or mine is None:
                continue  # the linker script's, or reported elsewhere
            theirs = layers.layer_of(definer)
            if theirs is not None and theirs > mine and \
                    provided.get((symbol, definer), len(names)) > mine:
                problems.append("%s uses %s of %s: layer %s calls up into "
                                "layer %s (declare it with a provide line)"
                                % (path, symbol, definer, names[mine],
                                   names[theirs]))


DEFINITION = r"^[A-Za-z_][^;(]*\b%s\s*\([^;]*$"
ASM_DEFINITION = r"^%s:"


def check_hooks(layers, problems):
    for kind, low, function, high, where in layers.hooks:
        for path in (low, high):
            if not os.path.exists(os.path.join(ROOT, path)):
                problems.append("%s: %s: no such file" % (where, path))
                return
        lo, hi = layers.layer_of(low), layers.layer_of(high)
        if lo is None or hi is None or lo >= hi:
            problems.append("%s: %s is not below %s" % (where, low, high))
        definer = low if kind == "register" else high
        pattern = ASM_DEFINITION if definer.endswith(".asm") else DEFINITION
        defines = re.compile(pattern % re.escape(function), re.M)
        mentions = re.compile(r"\b%s\b" % re.escape(function))
        definer, user = (low, high) if kind == "register" else (high, low)
        if not defines.search(read(definer)):
            problems.append("%s: %s does not define %s" % (where, definer,
                                                           function))
        if not mentions.search(read(user)):
            problems.append("%s: %s does not use %s" % (where, user,
                                                        function))


def dot_source(layers):
    """The picture: the layers stacked, each may use those below it."""
    def quote(text):
        return '"%s"' % text.replace('"', '\\"')  # keeps \n: new line

    lines = [
        "// Generated by tools/check/layers.py from %s: do not edit." %
        LAYERS,
        "// make docs renders it to %s." % SVG,
        "digraph layers {",
        "\trankdir=BT;",
        "\tnodesep=0.3;",
        "\tranksep=0.35;",
        '\tnode [shape=box, style="rounded,filled", fillcolor="#eef3fb", '
        'fontname="Helvetica", fontsize=11];',
        '\tedge [fontname="Helvetica", fontsize=9];',
        '\tlabel="solid: a layer includes the layers below it\\ndashed: '
        'a lower layer calls up through a function the higher one '
        'registered or defines";',
        '\tfontname="Helvetica";',
        '\tfontsize=10;',
    ]
    for i, name in enumerate(layers.names):
        globs = [g for g, index in layers.patterns if index == i]
        label = "%s\\n%s" % (name, " ".join(globs))
        if layers.notes[name]:
            label += "\\n" + layers.notes[name]
        lines.append("\t%s [label=%s];" % (quote(name), quote(label)))
    for lower, upper in zip(layers.names, layers.names[1:]):
        lines.append("\t%s -> %s [dir=back, arrowtail=normal];" %
                     (quote(lower), quote(upper)))
    calls = {}  # (lower, higher) layer: the functions that call up
    for kind, low, function, high, _ in layers.hooks:
        lo, hi = layers.layer_of(low), layers.layer_of(high)
        if lo is not None and hi is not None:
            names = calls.setdefault((lo, hi), [])
            if function not in names:
                names.append(function)
    for (lo, hi), functions in sorted(calls.items()):
        lines.append("\t%s -> %s [style=dashed, color=\"#a04000\", "
                     "fontcolor=\"#a04000\", constraint=false, "
                     "label=%s];" % (quote(layers.names[lo]),
                                     quote(layers.names[hi]),
                                     quote("\\n".join(functions))))
    lines.append("}")
    return "\n".join(lines) + "\n"


def check_headers(sets, files):
    """Compiles each header alone; returns the problems."""
    problems, jobs = [], []
    for name, command in sets:
        cc = [a for a in shlex.split(command) if a not in ("-MD", "-MP")]
        if name == "kernel":
            headers = [f for f in files if f.endswith(".h")]
        elif name == "user":
            headers = sorted(f for f in git_files("user/*.h"))
        elif name == "host":
            headers = sorted(f for f in git_files("tests/host/*.h"))
        else:
            problems.append("--headers: unknown set %s" % name)
            continue
        for header in headers:
            jobs.append((name, header, cc))

    def compile_one(job):
        name, header, cc = job
        source = '#include "%s"\n' % header
        if header == "tests/host/host_test.h":
            # By design it comes after the kernel headers under test.
            source = '#include "lib/types.h"\n' + source
        result = subprocess.run(cc + ["-fsyntax-only", "-x", "c", "-"],
                                input=source, cwd=ROOT, text=True,
                                capture_output=True)
        if result.returncode:
            lines = result.stderr.strip().splitlines()
            errors = [l for l in lines if "error" in l] or lines or ["?"]
            return "%s: does not compile alone (%s flags): %s" % (
                header, name, errors[0])
        return None

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        problems += [p for p in pool.map(compile_one, jobs) if p]
    return problems


def git_files(pattern):
    out = subprocess.check_output(["git", "ls-files", pattern], cwd=ROOT,
                                  text=True)
    return out.split()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", metavar="FILE",
                        help="check against FILE instead of %s (and do not "
                        "compare the picture: tests of the checker)" % LAYERS)
    parser.add_argument("--objects", metavar="BUILD",
                        help="also check symbol uses in BUILD's objects")
    parser.add_argument("--render", action="store_true",
                        help="rewrite %s and %s" % (DOT, SVG))
    parser.add_argument("--headers", nargs=2, action="append", default=[],
                        metavar=("SET", "CC"),
                        help="compile each header of SET (kernel, user, "
                        "host) alone with the command CC")
    args = parser.parse_args()

    layers = Layers(args.layers or LAYERS)
    problems = list(layers.problems)
    source = dot_source(layers)
    if args.render:
        with open(os.path.join(ROOT, DOT), "w") as f:
            f.write(source)
        subprocess.run(["dot", "-Tsvg", "-o", os.path.join(ROOT, SVG),
                        os.path.join(ROOT, DOT)], check=True)
        return 0
    files = kernel_files()
    check_includes(layers, files, problems)
    check_hooks(layers, problems)
    if args.objects:
        check_symbols(layers, args.objects, files, problems)
    try:
        committed = read(DOT)
    except OSError:
        committed = None
    if committed != source and not args.layers:
        problems.append("%s is stale: it does not draw %s (make docs)" %
                        (DOT, LAYERS))
    problems += check_headers(args.headers, files)
    for problem in problems:
        print("check-layers: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
