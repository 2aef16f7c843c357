#!/usr/bin/env python3
"""The labs' tools on crafted input: tools/labs/lab_tree.py's markers and stubs
(what must be refused, what a stub keeps so the tree compiles with -Werror,
C, Promela and Python) and the prose rewrites of a student tree,
tools/labs/grade.py's reading of KTAP (a stopped run fails its check even
when the tests it names passed; a stub's message is the reason given),
tools/labs/lab_tests.py's reading of the catalogue of student mistakes (a
malformed one is refused, saying why; the catalogue itself is well formed
and stays inside its labs' regions), and
tools/labs/lab_checks.py on made-up benchmark, hardware and start-up logs.

Prints KTAP, one result per case (tools/test/run_tests.py runs it as
host/lab-tools). Python 3.11 standard library; the compile case needs gcc.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools import ROOT
from tools.labs import grade, lab_checks, lab_tests, lab_tree
from tools.test.ktap import SkipCase, run_case_functions

C_SOURCE = """\
#include "lib/types.h"

static int helper(int x)
{
	return x + 1;
}

static int apply(int (*fn)(int), const char names[4], unsigned count,
		 void *ctx)
{
	/* LAB(L3) begin: call fn on count, as many times as names says
	 * keeps: helper */
	(void)ctx;
	return fn(helper((int)count)) + names[0];
	/* LAB(L3) end */
}

int partial(int a)
{
	int b = a * 2;

	/* LAB(L4) begin: double again; keeps: b */
	b *= 2;
	/* LAB(L4) end */
	return b;
}

int use(void)
{
	return apply(helper, "abc", 1, 0) + partial(1);
}
"""


def regions(path: str, text: str):
    return lab_tree.regions_of(path, text.split("\n"))


def stub(path: str, text: str, lab: str) -> str:
    lines = text.split("\n")
    chosen = [r for r in lab_tree.regions_of(path, lines) if r.lab == lab]
    return "\n".join(lab_tree.stubbed(path, lines, chosen))


def refused(text: str, why: str, path: str = "x.c") -> None:
    try:
        regions(path, text)
    except lab_tree.MarkerError as e:
        assert why in str(e), f"refused for another reason: {e}"
        return
    raise AssertionError(f"accepted; should be refused ({why})")


# --- lab-tree ---------------------------------------------------------------------


def case_regions_parsed() -> None:
    found = regions("x.c", C_SOURCE)
    assert [(r.lab, r.what, r.keeps) for r in found] == [
        ("L3", "call fn on count, as many times as names says", ["helper"]),
        ("L4", "double again", ["b"])], found


def case_parameters_of_a_whole_body() -> None:
    lines = C_SOURCE.split("\n")
    whole, part = lab_tree.regions_of("x.c", lines)
    assert lab_tree.c_parameters(lines, whole) == ["fn", "names", "count", "ctx"]
    assert lab_tree.c_parameters(lines, part) == [], "a region inside a body has no parameters"


def case_c_stub() -> None:
    out = stub("x.c", C_SOURCE, "L3")
    for want in ("(void)fn;", "(void)names;", "(void)count;", "(void)ctx;", "(void)helper;",
                 'LAB_UNWRITTEN("L3", "labs/L3-shootdown.md");', '#include "lib/lab.h"', "/* LAB(L4) begin"):
        assert want in out, f"stub lacks {want!r}:\n{out}"
    assert "fn(helper" not in out, "the reference code is still there"
    assert out.index('#include "lib/lab.h"') > out.index('#include "lib/types.h"')


def case_c_stub_compiles() -> None:
    if not shutil.which("gcc"):
        raise SkipCase("no gcc")
    for lab in ("L3", "L4"):
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "x.c"
            source.write_text(stub("x.c", C_SOURCE, lab))
            proc = subprocess.run(["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT),
                                   "-c", str(source), "-o", str(Path(tmp) / "x.o")],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, f"lab {lab}'s stub does not compile:\n{proc.stderr}"


def case_promela_and_python_stubs() -> None:
    pml = ("proctype flusher() {\n\tx = 1;\n\t/* LAB(L7) begin: choose targets */\n\ty = 2;\n"
           "\t/* LAB(L7) end */\n\tz = 3\n}\n")
    out = stub("m.pml", pml, "L7")
    assert 'printf("lab L7: flusher is not written yet (labs/L7-model.md)' in out, out
    assert "assert(false)" in out, out
    assert "y = 2" not in out and "lib/lab.h" not in out, out
    py = ("def pair(a, b):\n    # LAB(L8) begin: pair them\n    return a, b\n    # LAB(L8) end\n")
    out = stub("t.py", py, "L8")
    assert ('raise NotImplementedError("lab L8: pair() is not written yet '
            '(labs/L8-hardware.md)') in out, out
    assert "return a, b" not in out, out


def case_malformed_markers_refused() -> None:
    refused("/* LAB(L3) begin: a */\n/* LAB(L4) begin: b */\n/* LAB(L4) end */\n"
            "/* LAB(L3) end */\n", "begins inside")
    refused("x;\n/* LAB(L3) end */\n", "end without its begin")
    refused("/* LAB(L3) begin: a */\nx;\n", "never ends")
    refused("/* LAB(L3) begin: a */\nx;\n/* LAB(L4) end */\n", "end without its begin")
    refused("/* LAB(L10) begin: a */\n/* LAB(L10) end */\n", "no lab L10")
    refused("/* LAB(L3) begin: */\n/* LAB(L3) end */\n", "say what to write")
    refused("/* LAB(L3) begin: a; keeps: not a name */\n/* LAB(L3) end */\n", "is not a name")
    refused("/* LAB(L3) begin: a\n x;\n", "never closed")
    refused("\t/* LAB(L3) end*/\n", "malformed")


def case_prose_may_name_markers() -> None:
    assert regions("README.md", "write between `/* LAB(L3) begin: ... */` markers\n") == []


# --- grade's reading of KTAP --------------------------------------------------------


KTAP_OK = "KTAP version 1\n1..2\nok 1 TLB0001 a\nok 2 TLB0002 b\n"


def case_grade_reads_ktap() -> None:
    assert grade.ktap_verdict(KTAP_OK, 0, ()).status == "PASS"
    assert grade.ktap_verdict(KTAP_OK, 0, ("TLB0002",)).status == "PASS"
    v = grade.ktap_verdict(KTAP_OK, 0, ("TLB0003",))
    assert v.status == "FAIL" and "TLB0003" in v.why, v
    assert grade.ktap_verdict(KTAP_OK, 1, ()).status == "FAIL", "a failing exit status passed"
    assert grade.ktap_verdict(KTAP_OK, None, ()).status == "FAIL", "a timeout passed"
    assert grade.ktap_verdict("no KTAP here\n", 0, ()).status == "FAIL"


def case_grade_stopped_run_fails() -> None:
    stopped = ("KTAP version 1\n1..3\nok 1 TLB0001 a\n"
               "PANIC: lab L3: cpu_needs_flush() is not written yet (labs/L3-shootdown.md)\n")
    v = grade.ktap_verdict(stopped, 0, ("TLB0001",))
    assert v.status == "FAIL", "the named test passed before the crash, and so did the check"
    v = grade.ktap_verdict("KTAP version 1\n1..1\nnot ok 1 TLB0001 a\n"
                           "# lab L3: send_request() is not written yet\n", 1, ())
    assert v.status == "FAIL" and "send_request() is not written yet" in v.why, v


def case_grade_names_the_failed_expectation_first() -> None:
    # The oracle prints its settings and counts before the failure: the
    # failure must still lead the reason, or a cut line loses it.
    notes = "    # pcid=0 invpcid=0 " + "x" * 280 + "\n    # 9 checks by 4 threads\n"
    failing = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: tlb\n    1..1\n"
               + notes + "    # TLB0001: expected !stale at tests/kernel/tlb_oracle.c:400: "
               "CPU 2 round 7: read saw old\n    not ok 1 TLB0001 a\nnot ok 1 tlb\n")
    v = grade.ktap_verdict(failing, 0, ("TLB0001",))
    assert v.status == "FAIL" and "CPU 2 round 7" in v.why, v


def case_rewrites_match_the_reference() -> None:
    for lab in lab_tree.LABS:
        for path, rws in lab_tree.rewrites_for(lab).items():
            lines = (ROOT / path).read_text().split("\n")
            out = lab_tree.rewritten(path, lines, rws)
            for rw in rws:
                assert rw.new.split("\n")[0] in out, f"{lab} {path}: {rw.first!r} not rewritten"


def case_stale_rewrite_refused() -> None:
    rw = lab_tree.Rewrite(("L3",), "x.md", "## Gone", "## Next", "## Gone\n")
    try:
        lab_tree.rewritten("x.md", ["# Title", "## Next"], [rw])
    except lab_tree.MarkerError as e:
        assert "REWRITES" in str(e), e
        return
    raise AssertionError("a rewrite whose first line is missing was applied")


def case_rewrite_keeps_the_text_around() -> None:
    rw = lab_tree.Rewrite(("L3",), "x.md", "## Answer", "## Next", "## Answer\n\nLeft out.\n\n")
    out = lab_tree.rewritten("x.md", ["# T", "", "## Answer", "", "secret", "", "## Next", "more"], [rw])
    assert out == ["# T", "", "## Answer", "", "Left out.", "", "## Next", "more"], out


def case_l6_tree_crossover_agrees() -> None:
    """L6's tree computes the crossover from its definition; it must agree
    with the reference's scan."""
    rw = next(r for r in lab_tree.REWRITES if r.path == "tools/labs/lab_checks.py")
    ns: dict = {}
    exec(rw.new, ns)  # noqa: S102  (our own text)
    import itertools
    for n in range(5):
        for full in itertools.product(range(3), repeat=n):
            for by_page in itertools.product(range(3), repeat=n):
                want = lab_checks.crossover_index(list(by_page), list(full))
                got = ns["crossover_index"](list(by_page), list(full))
                assert got == want, (by_page, full, got, want)


# --- the catalogue of student mistakes ------------------------------------------------


MISTAKE_DIFF = """\
diff --git a/mm/tlb.c b/mm/tlb.c
--- a/mm/tlb.c
+++ b/mm/tlb.c
@@ -1,1 +1,1 @@
-x
+y
"""


def mistake_refused(text: str, why: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.patch"
        path.write_text(text)
        try:
            lab_tests.parse_mistake(path, "L3")
        except lab_tests.MistakeError as e:
            assert why in str(e) and "bad.patch" in str(e), f"refused for another reason: {e}"
            return
    raise AssertionError(f"accepted; should be refused ({why})")


def case_malformed_mistakes_refused() -> None:
    mistake_refused("# I thought one thing.\n" + MISTAKE_DIFF, "no '# caught-by:")
    mistake_refused("# caught-by: simulator\n" + MISTAKE_DIFF, "no description")
    mistake_refused("# I thought.\n# caught-by: simulator\n# caught-by: oracle\n" + MISTAKE_DIFF,
                    "a second '# caught-by:'")
    mistake_refused("# I thought.\n# caught-by:\n" + MISTAKE_DIFF, "names no check")
    mistake_refused("# I thought.\n# caught-by: no such check\n" + MISTAKE_DIFF,
                    "no check of lab L3")
    mistake_refused("# I thought.\n# caught-by: simulator\nnot a diff\n", "a unified diff")


def case_well_formed_mistake_read() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "good.patch"
        path.write_text("# I thought.\n#\n# Why not.\n# caught-by: simulator\n" + MISTAKE_DIFF)
        m = lab_tests.parse_mistake(path, "L3")
    assert (m.name, m.caught_by) == ("good", "simulator"), m
    assert m.description == "I thought. Why not." and m.diff.startswith("diff --git"), m


def case_mistake_applied_inside_this_repository() -> None:
    # The scratch tree sits in build/, inside this repository: a patch
    # must change it, or fail, never succeed having done nothing.
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
        tree = Path(tmp).relative_to(Path.cwd()) if Path(tmp).is_relative_to(Path.cwd()) \
            else Path(tmp)
        (tree / "mm").mkdir()
        (tree / "mm" / "tlb.c").write_text("x\n")
        assert lab_tests.apply_patch(MISTAKE_DIFF, tree) == ""
        assert (tree / "mm" / "tlb.c").read_text() == "y\n", "the patch changed nothing"
        assert "does not apply" in lab_tests.apply_patch(MISTAKE_DIFF, tree), \
            "a patch whose old lines are gone was accepted"


def case_mistakes_stay_in_their_regions() -> None:
    for lab in grade.LABS:
        for path in lab_tests.mistake_paths(lab):
            m = lab_tests.parse_mistake(path, lab)
            problem = lab_tests.outside_regions(m)
            assert not problem, f"{path.name}: {problem}"
    first = (ROOT / "mm" / "tlb.c").read_text().split("\n")[0]  # outside every region
    outside = lab_tests.Mistake("L3", "x", Path("x.patch"), "", "simulator",
                                f"--- a/mm/tlb.c\n+++ b/mm/tlb.c\n@@ -1,1 +1,1 @@\n-{first}\n+b\n")
    assert "outside the LAB(L3) regions" in lab_tests.outside_regions(outside)
    # A patch made before its file moved by a line still applies (git apply
    # finds the lines), but its regions were judged by stale numbers.
    m = lab_tests.parse_mistake(lab_tests.mistake_paths("L3")[0], "L3")
    moved = re.sub(r"^@@ -(\d+)", lambda h: f"@@ -{int(h.group(1)) + 1}", m.diff, flags=re.M)
    stale = dataclasses.replace(m, diff=moved)
    assert "make the mistake again" in lab_tests.outside_regions(stale), "stale line numbers passed"


def case_stale_mistake_made_again() -> None:
    # The file moves under a mistake (a line added above it) and the last
    # context line of its last hunk changes (code after the region): remake
    # finds the change by its lines and writes today's numbers, which the
    # region check then accepts.
    m = lab_tests.parse_mistake(lab_tests.mistake_paths("L3")[0], "L3")
    path = lab_tests._file_changes(m.diff)[0][0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / path).parent.mkdir(parents=True)
        lines = (ROOT / path).read_text().split("\n")
        last = re.findall(r"^@@ -(\d+),(\d+)", m.diff, flags=re.M)[-1]
        start, end = int(last[0]) - 1, int(last[0]) - 1 + int(last[1])  # 0-based, end excluded
        lines[end - 1] = lines[end - 1] + " /* changed */"
        (root / path).write_text("\n".join(["/* moved */"] + lines))
        moved = dataclasses.replace(m, diff=m.diff)
        assert "make the mistake again" in lab_tests.outside_regions(moved, root)
        (root / "again.patch").write_text(lab_tests.remake_mistake(m, root))
        again = lab_tests.parse_mistake(root / "again.patch", "L3")
        assert lab_tests.outside_regions(again, root) == "", "the remade mistake is refused"
        assert again.description == m.description and again.caught_by == m.caught_by
        (root / path).write_text("\n".join(lines[:start] + lines[end:]))
        try:
            lab_tests.remake_mistake(m, root)
        except lab_tests.MistakeError as e:
            assert "not found once" in str(e)
        else:
            raise AssertionError("a mistake whose lines are gone was made again")


def case_mistakes_left_out_of_lab_trees() -> None:
    assert lab_tests.MISTAKES_DIR.startswith(lab_tree.TEACHER_DIR), \
        "the catalogue must sit under labs/teacher/, which make lab-tree leaves out"


# --- the functional checks (benchmark labs, L0's start-up) ---------------------


def case_bench_checks_on_made_up_logs() -> None:
    problems = lab_checks.selftest()
    assert not problems, "; ".join(problems)



def main() -> int:
    return run_case_functions(globals())


if __name__ == "__main__":
    sys.exit(main())
