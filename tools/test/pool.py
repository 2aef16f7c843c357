"""The steps of `make test` (a host test, the mutants, a boot, a lab's
grades), PARALLEL at once, the longest first, each printed as it ends; and
what a step gives: its Outcome.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import sys
import time
import traceback
import typing
from pathlib import Path

from tools import ROOT
from tools.run import boot
from tools.test.ktap import Result, clean_lines

TEST_DIR = ROOT / "build" / "test"
PARALLEL = 2        # steps at once (the machine has 2 cores)
SLOWEST_SHOWN = 8   # steps named in the closing "# slowest" line


@dataclasses.dataclass
class Outcome:
    """What one step (a host binary, the mutants, a configuration) gives."""
    results: list[Result]
    tail: str = ""      # log lines to show under the results
    summary: str = ""   # for the "# <config>: ..." line
    heading: str = ""   # printed above the results
    seconds: float = 0  # how long the step took


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def tail(text: str) -> str:
    """The last 25 lines of a log, to show under its results."""
    return "\n".join("    | " + line for line in clean_lines(text.rstrip())[-25:])


@dataclasses.dataclass
class Step:
    """One thing make test does (a host test, the mutants, a boot, a lab's
    grades), with a guess of its seconds."""
    name: str
    work: typing.Callable[[], Outcome]
    cost: float = 60


def run_steps(steps: list[Step], results: list[Result]) -> None:
    """Every step, PARALLEL at once, the longest first so that the 2 cores
    stay busy to the end (most steps keep one core busy: Bochs, the
    simulator, a lab's grades): by the times of the last run in this tree
    where there are some, else by the guesses; each prints as soon as it is
    done."""
    try:
        last = json.loads((TEST_DIR / "times.json").read_text())
    except (OSError, ValueError):
        last = {}
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        try:
            futures = {pool.submit(timed, step): step
                       for step in sorted(steps, key=lambda st: -last.get(st.name, st.cost))}
            times = {}
            for future in concurrent.futures.as_completed(futures):
                report(future.result(), results)
                times[futures[future].name] = round(future.result().seconds, 1)
        except KeyboardInterrupt:
            # Start nothing more, and end what runs (in sessions of their
            # own, the emulators did not get the terminal's Ctrl-C).
            pool.shutdown(wait=False, cancel_futures=True)
            boot.stop_all()
            raise
    TEST_DIR.mkdir(parents=True, exist_ok=True)
    (TEST_DIR / "times.json").write_text(json.dumps(last | times, indent=1) + "\n")
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:SLOWEST_SHOWN]
    print("# slowest: " + ", ".join(f"{name} {t:.0f} s" for name, t in slowest))


def timed(step: Step) -> Outcome:
    """A step's outcome and time; a step that breaks fails alone."""
    started = time.monotonic()
    try:
        outcome = step.work()
    except Exception as e:  # noqa: BLE001  (a bug in a judge must not stop the others)
        outcome = Outcome([Result(step.name, "FAIL", f"the runner broke: {e!r}"[:300])],
                          "\n".join("    | " + line for line in
                                    traceback.format_exc().rstrip().splitlines()))
    outcome.seconds = time.monotonic() - started
    return outcome


def report(outcome: Outcome, results: list[Result]) -> None:
    """Print an outcome as it comes, and keep its results for the count."""
    results += outcome.results
    if outcome.heading:
        print(outcome.heading)
    for r in outcome.results:
        print(r.line())
    if outcome.tail:
        print(outcome.tail)
    sys.stdout.flush()
