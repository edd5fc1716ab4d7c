"""The fault suite's switches: ``--long`` for full sizes, and the results table at the end.

CI-sized by default (the whole directory in a few minutes on two idle cores); ``--long`` runs
the sizes RELIABILITY.md reports (20 kills, 10-minute soak, ...). Each scenario records one row
(:func:`tests.reliability.stack.record`); the rows are printed as a Markdown table after the run
and, with ``SLICECTL_RELIABILITY_REPORT=path``, written there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from tests.reliability.stack import RESULTS


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="reliability suite: run the full-size scenarios")


@dataclass(frozen=True)
class Sizes:
    long: bool
    pods: int  # pods kept per namespace by the churn
    fault_seconds: float  # how long a fault lasts while the churn runs
    kills: int  # SIGKILLs of slicectl
    failovers: int  # leader kills under churn
    fuzz_examples: int  # hypothesis examples per fuzz target
    soak_seconds: float


CI = Sizes(False, pods=30, fault_seconds=5.0, kills=5, failovers=2, fuzz_examples=25,
           soak_seconds=30.0)
LONG = Sizes(True, pods=150, fault_seconds=30.0, kills=20, failovers=6, fuzz_examples=200,
             soak_seconds=600.0)


@pytest.fixture
def sizes(request: pytest.FixtureRequest) -> Sizes:
    return LONG if request.config.getoption("--long", default=False) else CI


def table() -> str:
    head = ("| scenario | fault | load held | faults survived | inputs tried | endpoints lost "
            "/ duplicated | time to converge |\n|---|---|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r.scenario} | {r.fault} | {r.load} | {r.survived} | {r.inputs} | "
        f"{r.lost} / {r.duplicated} | {r.converge:.1f} s{f' ({r.notes})' if r.notes else ''} |\n"
        for r in RESULTS)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS:
        return
    text = table()
    terminalreporter.write_sep("=", "reliability results")
    terminalreporter.write(text)
    out = os.environ.get("SLICECTL_RELIABILITY_REPORT")
    if out:
        with open(out, "w") as fh:
            fh.write(text)
