"""KTAP as the kernel (tests/ktest.c) and the host tests
(tests/host/host_test.h) print it, read into results: shared by
tools/test/run_tests.py and the lab grader (tools/labs/grade.py); and Cases, which
writes it for the host test scripts (tests/*/test_*.py)."""

from __future__ import annotations

import dataclasses
import re
import traceback


@dataclasses.dataclass
class Result:
    name: str
    status: str        # ok | skip | FAIL
    reason: str = ""
    log: str = ""      # where to look

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}"
        if self.status == "skip" and self.reason:
            text += f" ({self.reason})"
        elif self.status == "FAIL":
            text += f": {self.reason or 'failed'}"
            if self.log:
                text += f" (log: {self.log})"
        return text


def has_failure(results: list[Result]) -> bool:
    return any(r.status == "FAIL" for r in results)


# --- KTAP ----------------------------------------------------------------------------
# What the kernel (tests/ktest.c) and the host tests (tests/host/host_test.h)
# print: "KTAP version 1" and a plan, then per suite, 4 spaces deeper, its
# own version line, "# Subtest: <suite>", a plan and "ok N ID description
# [# SKIP why]" or "not ok ..." lines, with "# ..." diagnostics before the
# result they explain; the suite's own result line follows, back at the top.

ANSI = re.compile(r"\x1b\[[0-9;?=]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b.")
LINE_KINDS = (
    ("version", re.compile(r"K?TAP version \d+$")),
    ("subtest", re.compile(r"#\s*Subtest:\s*(.*?)\s*$")),
    ("plan", re.compile(r"1\.\.(\d+)\b")),
    ("result", re.compile(r"(not ok|ok)\s+(\d+)\b(?:\s*-)?\s*([^#]*?)\s*(?:#\s*(.*))?$")),
)


def clean_lines(text: str) -> list[str]:
    """Serial text as lines, without CRs, terminal escapes (OVMF and GRUB
    draw on COM1 before the kernel) and other control characters."""
    text = ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return ["".join(c for c in line if c == "\t" or c >= " ") for line in text.split("\n")]


@dataclasses.dataclass
class Case:
    number: int
    name: str
    ok: bool
    directive: str                      # e.g. "SKIP no hpet"
    diagnostics: list[str]              # the "# ..." lines before it
    suite: Suite | None = None          # the subtest this line reports


@dataclasses.dataclass
class Suite:
    """One KTAP document or subtest, at one indent."""
    indent: int
    name: str = ""
    plan: int | None = None
    cases: list[Case] = dataclasses.field(default_factory=list)
    ended: bool = False                 # its result line (or, at the top, its plan) was met
    running: Suite | None = None        # the subtest open where the output stopped
    diagnostics: list[str] = dataclasses.field(default_factory=list)  # for the next result
    reported: Suite | None = None       # a finished subtest, for the next result


def read_ktap(text: str) -> Suite | None:
    """The first KTAP document in `text`, or None. Nesting comes from
    indentation; lines that are not KTAP (kernel log messages) are ignored,
    as the spec asks, and what precedes the version line (also on its line)
    is firmware noise. Where the output stops (crash, hang), the suites
    still open are chained by `running`."""
    open_: list[Suite] = []
    for raw in clean_lines(text):
        line = raw.lstrip(" ")
        indent, line = len(raw) - len(line), line.rstrip()
        if not open_:
            if m := re.search(r"K?TAP version \d+$", line):
                open_.append(Suite(indent if m.start() == 0 else 0))
            continue
        if indent < open_[0].indent:
            continue
        for kind, pattern in LINE_KINDS:  # version, subtest, plan, result
            if m := pattern.match(line):
                break
        else:
            kind = "diagnostic" if line.startswith("#") else "other"  # other: not KTAP
        if kind not in ("diagnostic", "other") and indent > open_[-1].indent:
            open_.append(Suite(indent))  # a KTAP line deeper opens a subtest
        top = open_[-1]
        if kind == "version" and indent == open_[0].indent and open_[0].cases:
            break  # a second document: the kernel started again
        if kind == "subtest" and indent == top.indent and not top.cases:
            top.name = m.group(1)
        elif kind == "plan" and indent == top.indent and top.plan is None:
            top.plan = int(m.group(1))
        elif kind == "result":
            # One shallower than the open subtest reports that subtest.
            while open_[-1].indent > indent:
                child = open_.pop()
                child.ended = True
                open_[-1].reported = child
            top = open_[-1]
            if indent == top.indent:
                case = Case(int(m.group(2)), m.group(3).strip(), m.group(1) == "ok",
                            (m.group(4) or "").strip(), top.diagnostics, top.reported)
                if case.suite is not None and not case.suite.name:
                    case.suite.name = case.name
                top.cases.append(case)
                top.diagnostics, top.reported = [], None
        elif kind == "diagnostic":
            # Explains the result that follows at its level (KUnit prints
            # "# case: EXPECTATION FAILED ..." before "not ok").
            target = next(s for s in reversed(open_) if s.indent <= indent)
            target.diagnostics.append(line.lstrip("# ").rstrip())
    if not open_:
        return None
    for parent, child in zip(open_, open_[1:]):
        parent.running = child
    root = open_[0]
    root.ended = len(open_) == 1 and root.plan is not None and len(root.cases) >= root.plan
    return root


# How a failed check reads: the kernel's KEXPECT ("ID: expected COND at
# file:line: ...") and KUnit's "EXPECTATION FAILED".
FAILED_EXPECTATION = re.compile(r"^\S+: expected .+ at \S+:\d+|EXPECTATION FAILED")


def case_results(case: Case, name: str, log: str) -> list[Result]:
    """The results of one case: itself, or its subtest's leaves."""
    # A failed expectation is the cause; the notes a case printed before it
    # (its settings, its counts) only explain it, so they come after.
    skipped = case.directive.upper().startswith(("SKIP", "TODO"))
    failed = [d for d in case.diagnostics if FAILED_EXPECTATION.search(d)]
    lines = failed + [d for d in case.diagnostics if d not in failed]
    why = "; ".join(lines[:2])
    if len(lines) > 2:
        why += f" (+{len(lines) - 2} more lines)"
    if case.suite is not None:
        sub = leaf_results(case.suite, name, ".", log)
        # A suite that says "not ok" while no case failed (its setup
        # failed, say) must not vanish.
        if not case.ok and not skipped and not has_failure(sub):
            sub.append(Result(name, "FAIL", why or "suite reported not ok", log))
        return sub
    if skipped:
        return [Result(name, "skip", case.directive.partition(" ")[2].lstrip())]
    if case.ok:
        return [Result(name, "ok")]
    # Without diagnostics, a directive such as "# oops" is the reason.
    return [Result(name, "FAIL", (why or case.directive or "not ok")[:300], log)]


def leaf_results(suite: Suite, prefix: str, sep: str, log: str) -> list[Result]:
    """One Result per leaf case of `suite`; missing cases count as failed."""
    results = [r for case in suite.cases
               for r in case_results(case, f"{prefix}{sep}{case.name or f'#{case.number}'}", log)]
    reported = len(suite.cases)
    if suite.running is not None:
        reported += 1
        name = f"{prefix}{sep}{suite.running.name or f'#{reported}'}"
        sub = leaf_results(suite.running, name, ".", log)
        if not has_failure(sub):
            sub.append(Result(name, "FAIL", "the output stopped before this suite ended", log))
        results += sub
    if suite.plan is not None and reported < suite.plan:
        why = (f"missing: planned {suite.plan}, got {len(suite.cases)}" if suite.ended
               else "missing: the output stopped before it")
        results += [Result(f"{prefix}{sep}#{n}", "FAIL", why, log)
                    for n in range(reported + 1, suite.plan + 1)]
    elif suite.plan is None and not suite.ended and not has_failure(results):
        results.append(Result(f"{prefix}{sep}(rest)", "FAIL",
                              "the output stopped, with no plan to tell what was missing", log))
    return results


def ktap_results(prefix: str, text: str, log: str) -> tuple[list[Result], bool]:
    """The results of the KTAP in `text` (none without KTAP), and whether it
    was complete."""
    root = read_ktap(text)
    if root is None:
        return [], False
    results = leaf_results(root, prefix, "/", log) or [
        Result(prefix, "FAIL", "KTAP with no results", log)]
    return results, root.ended


class Cases:
    """The KTAP a host test script prints: one case per check, in order.
    check() takes a verdict (true passes) with why it failed, or a list of
    problems (empty passes: the first five say why); skip() says why a case
    cannot run here. report() prints it all and gives the exit status."""

    def __init__(self) -> None:
        self.results: list[tuple[str, str, str]] = []  # (ok | not ok | skip, name, why)

    def check(self, name: str, verdict: bool | list[str], why: str = "") -> None:
        if isinstance(verdict, list):
            ok, why = not verdict, "; ".join(verdict[:5])
        else:
            ok = bool(verdict)
        self.results.append(("ok" if ok else "not ok", name, why or "failed"))

    def skip(self, name: str, why: str) -> None:
        self.results.append(("skip", name, why))

    def report(self) -> int:
        print("KTAP version 1")
        print(f"1..{len(self.results)}")
        for number, (status, name, why) in enumerate(self.results, 1):
            if status == "skip":
                print(f"ok {number} {name} # SKIP {why}")
                continue
            if status != "ok":
                for line in why.splitlines() or [""]:
                    print(f"# {name}: {line}")
            print(f"{status} {number} {name}")
        return 0 if all(s != "not ok" for s, _, _ in self.results) else 1


class SkipCase(Exception):
    """Raised by a case function that cannot run here; its text is why."""


def run_case_functions(namespace: dict) -> int:
    """A host test script's main: runs each case_<name> function of
    `namespace` (a module's globals()) in order and prints KTAP, one result
    per case named by its function; returns the exit status (1 if any
    failed). A case fails by raising, and its exception's text (or the
    traceback) is its diagnostic; SkipCase makes it a SKIP."""
    cases = [(name[len("case_"):].replace("_", " "), fn) for name, fn in list(namespace.items())
             if name.startswith("case_") and callable(fn)]
    print("KTAP version 1")
    print(f"1..{len(cases)}")
    failed = 0
    for n, (name, fn) in enumerate(cases, 1):
        try:
            fn()
            print(f"ok {n} {name}")
        except SkipCase as e:
            print(f"ok {n} {name} # SKIP {e}")
        except Exception as e:  # noqa: BLE001  (any failure is this case's)
            failed += 1
            for line in (str(e) or traceback.format_exc()).splitlines():
                print(f"# {line}")
            print(f"not ok {n} {name}")
    return 1 if failed else 0
