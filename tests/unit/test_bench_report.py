"""The benchmark's plots (benchmarks/report.py): every swept scenario gets its sweep plot, and
the curve for independent changes is drawn only where a scenario's changes are independent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.report import curve, plots


def _run(scenario: str, controller: str, batch: float | None, writes: int) -> dict[str, Any]:
    samples = [0.05, 0.1, 0.2, 0.4]
    summary = {"p50": 0.1, "p99": 0.4}
    return {"scenario": scenario, "controller": controller, "batch_period": batch,
            "writes_per_change": writes / 200, "latency_samples": {"add": samples},
            "latency_all": summary, "timeline": [(0.0, 1), (1.0, 2)], "ideal": 2}


def _sweep(scenario: str) -> list[dict[str, Any]]:
    rows = [_run(scenario, "slicectl (defaults)", None, 10)]
    rows += [_run(scenario, f"slicectl --batch-period {w:g}s", w, n)
             for w, n in ((0.0, 40), (0.1, 12), (0.5, 8))]
    return rows


def _curves() -> int:
    """How many lines labelled as the curve the open figures hold."""
    import matplotlib.pyplot as plt

    count = 0
    for num in plt.get_fignums():
        for ax in plt.figure(num).axes:
            count += sum(1 for line in ax.get_lines() if "e^(-rW)" in str(line.get_label()))
    return count


def test_a_sweep_without_independent_changes_is_plotted_without_the_curve(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.pyplot as plt

    seen: list[int] = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: seen.append(_curves()))
    written = plots(_sweep("initial") + _sweep("flap"), tmp_path, {"flap": 0.1})
    names = {p.name for p in written}
    assert {"initial-batch-sweep.png", "flap-batch-sweep.png"} <= names
    assert all(p.stat().st_size > 0 for p in written)
    # Figures are "closed" in order (initial's CDF, slices, sweep, then flap's), and stay
    # open here, so each count covers every figure drawn so far.
    assert seen[2] == 0, "initial's sweep drew the curve for independent changes"
    assert seen[5] == 1, "flap's sweep lost its curve"
    close("all")


def test_the_curve_is_one_write_per_change_without_a_window_and_falls_with_it() -> None:
    assert curve(2.0, 0.0) == 1.0
    assert curve(2.0, 0.1) == pytest.approx(0.9063, abs=1e-4)
    assert curve(2.0, 1.0) < curve(2.0, 0.5) < curve(2.0, 0.1)
