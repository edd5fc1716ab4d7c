"""Results -> ``results.json``, ``results.md`` (markdown tables) and PNG plots.

Plots (matplotlib, Agg backend, written next to the JSON):

- ``<scenario>-latency-cdf.png``: the latency CDF of each controller in that scenario;
- ``<scenario>-slices.png``: slice count over time per controller, with the ideal;
- ``<scenario>-batch-sweep.png`` (scenarios with the sweep): writes per change and p99 latency
  against ``--batch-period``; for a scenario of independent changes (flap) also the curve
  ``(1 - e^(-rW)) / (rW)`` at ``r`` per slice per second and the latency goal
  ``W + p99(batch 0)``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

HEADER = ["scenario", "controller", "pod changes", "slice writes c/u/d (watch)",
          "server requests c/u/d (409)", "writes / change", "latency p50 / p99 ms",
          "add p50 / p99 ms", "trigger p50 / p99 ms", "final slices / ideal (s to ideal)",
          "controller CPU s", "rate-limit wait s", "server CPU s", "peak RSS MB", "converge s",
          "correct"]


def _ms(summary: dict[str, Any] | None) -> str:
    if not summary or summary.get("p50") is None:
        return "-"
    return f"{summary['p50'] * 1000:.0f} / {summary['p99'] * 1000:.0f}"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def cells(r: dict[str, Any]) -> list[str]:
    if "error" in r or "status" in r:
        return [r["scenario"], r.get("controller", "-"), r.get("error") or r.get("status", "")]
    w, req = r["writes"], r["server_requests"]
    server = "-" if req is None else (
        f"{req['c'] + req['u'] + req['d']} = {req['c']}/{req['u']}/{req['d']} ({req['409']})")
    problems = r["problems"] + r["unpublished"]
    return [r["scenario"], r["controller"], str(r["pod_changes"]),
            f"{r['writes_total']} = {w['c']}/{w['u']}/{w['d']}", server,
            _num(r["writes_per_change"], "{:.3f}"), _ms(r["latency_all"]),
            _ms(r["latency"].get("add")), _ms(r["trigger"]), _slices(r),
            _num(r["controller_cpu_s"]), _num(r.get("rate_limit_wait_s")),
            _num(r["server_cpu_s"]), _num(r["peak_rss_mb"], "{:.0f}"),
            _num(r["converge_s"]), "yes" if problems == 0 and r["converge_s"] is not None
            else f"NO ({problems})"]


def _slices(r: dict[str, Any]) -> str:
    waited = r.get("compacted_s") or 0.0
    return f"{r['slices']} / {r['ideal']}" + (f" ({waited:.1f})" if waited >= 0.05 else "")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows:
        if "scenario" in r and "controller" in r:
            lines.append("| " + " | ".join(cells(r)) + " |")
    return "\n".join(lines)


def other_results(results: dict[str, Any]) -> str:
    """Scenarios that report their own figures (big-cluster): as a JSON block."""
    return "\n\n".join(f"### {name}\n\n```json\n{json.dumps(value, indent=2, default=str)}\n```"
                       for name, value in results.items())


def curve(r: float, w: float) -> float:
    """Writes per change for independent changes at rate ``r``, written once per window."""
    return 1.0 if r * w == 0 else (1 - math.exp(-r * w)) / (r * w)


def plots(rows: list[dict[str, Any]], out: Path, rates: dict[str, float]) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    ok = [r for r in rows if "error" not in r and "status" not in r]
    for scenario in dict.fromkeys(r["scenario"] for r in ok):
        runs = [r for r in ok if r["scenario"] == scenario]
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for r in runs:
            xs = sorted(x * 1000 for v in r["latency_samples"].values() for x in v)
            if xs:
                ax.step([max(x, 0.1) for x in xs], [(i + 1) / len(xs) for i in range(len(xs))],
                        where="post", label=r["controller"])
        ax.set_xscale("log")
        ax.set_xlabel("latency: pod write returned -> slice watch shows it (ms)")
        ax.set_ylabel("fraction of changes")
        ax.set_title(f"{scenario}: latency CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        written.append(_save(fig, out / f"{scenario}-latency-cdf.png"))

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for i, r in enumerate(runs):
            tl = r["timeline"]
            ax.step([t for t, _ in tl], [n for _, n in tl], where="post", label=r["controller"],
                    linestyle=("-", "--", ":", "-.")[i % 4], linewidth=2.0 - 0.2 * (i % 4))
        ax.set_ylim(bottom=0)
        if runs:
            ax.axhline(runs[0]["ideal"], color="grey", linestyle=":", label="ideal at the end")
        ax.set_xlabel("seconds since the scenario started")
        ax.set_ylabel("EndpointSlices")
        ax.set_title(f"{scenario}: slice count over time")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        written.append(_save(fig, out / f"{scenario}-slices.png"))

        sweep = sorted((r for r in runs if r["batch_period"] is not None),
                       key=lambda r: r["batch_period"])
        if len(sweep) >= 2:
            written.append(_sweep_plot(plt, scenario, sweep, rates.get(scenario), runs, out))
    return written


def _sweep_plot(plt: Any, scenario: str, sweep: list[dict[str, Any]], rate: float | None,
                runs: list[dict[str, Any]], out: Path) -> Path:
    """Writes per change and latency against W; the curve and the latency goal only where
    ``rate`` gives the scenario's independent changes per slice per second."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    ws = [r["batch_period"] for r in sweep]
    grid = [max(ws) * i / 100 for i in range(101)]
    if rate is not None:
        left.plot(grid, [curve(rate, w) for w in grid], color="grey",
                  label=f"(1 - e^(-rW))/(rW), r = {rate:g}/s per slice")
    left.plot(ws, [r["writes_per_change"] for r in sweep], "o-", label="slicectl, measured")
    extra = [r for r in runs if r["batch_period"] is None and r["writes_per_change"]]
    for i, r in enumerate(extra):
        left.axhline(r["writes_per_change"], linestyle="--", linewidth=0.8, color=f"C{i + 2}",
                     label=f"{r['controller']} ({r['writes_per_change']:.2f})")
    left.set_xlabel("--batch-period W (s)")
    left.set_ylabel("slice writes per change")
    if rate is not None:
        left.set_ylim(0, max(1.1, *(r["writes_per_change"] or 0 for r in runs)) * 1.05)
    else:  # a stream's few writes per change beside the naive baseline's one
        left.set_yscale("log")
    left.grid(True, alpha=0.3)
    left.legend(fontsize=7)
    p99 = [r["latency_all"]["p99"] * 1000 if r["latency_all"]["p99"] is not None else math.nan
           for r in sweep]
    p50 = [r["latency_all"]["p50"] * 1000 if r["latency_all"]["p50"] is not None else math.nan
           for r in sweep]
    base = sweep[0]["latency_all"]["p99"] if sweep[0]["batch_period"] == 0 else None
    right.plot(ws, p99, "o-", label="p99 measured")
    right.plot(ws, p50, "s-", label="p50 measured")
    if base is not None and rate is not None:  # flap's goal
        right.plot(grid, [(w + base) * 1000 for w in grid], color="grey", linestyle=":",
                   label="goal: W + p99(batch 0)")
    right.set_xlabel("--batch-period W (s)")
    right.set_ylabel("latency (ms)")
    right.grid(True, alpha=0.3)
    right.legend(fontsize=7)
    fig.suptitle(f"{scenario}: writes and latency against the batch window")
    return _save(fig, out / f"{scenario}-batch-sweep.png")


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path
