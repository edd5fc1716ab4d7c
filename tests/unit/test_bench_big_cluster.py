"""big-cluster's instruments (benchmarks/big_cluster*.py, its entry in benchmarks/__main__.py):
its figures come from a process that ran nothing else, and its percentiles are the ones every
other benchmark table uses."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

import benchmarks.big_cluster
from benchmarks.__main__ import big_cluster
from benchmarks.big_cluster_probes import LagSampler
from benchmarks.runner import percentile


async def _whoami(**kwargs: Any) -> dict[str, Any]:
    """Stands in for run_big_cluster: where it ran, and what it was given."""
    return {"pid": os.getpid(), "kwargs": sorted(kwargs)}


def test_big_cluster_runs_in_a_process_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """`--scenario all` runs big-cluster after the other scenarios; in the same process their
    freed heap absorbs the caches' growth (a full run read 699 B of RSS per pod, 964 B fresh)."""
    monkeypatch.setattr(benchmarks.big_cluster, "run_big_cluster", _whoami)
    args = argparse.Namespace(kubeconfig=None, quick=True, kcm_binary=None, kcm_kubeconfig=None)
    result = asyncio.run(big_cluster(args, False, tmp_path))
    assert result["kwargs"] == ["kcm_binary", "kcm_kubeconfig", "kubeconfig", "out", "quick",
                                "upstream"]
    assert result["pid"] != os.getpid()


def test_the_lag_p99_is_the_nearest_rank_one_as_in_every_other_table() -> None:
    sampler = LagSampler()
    sampler.samples = [i / 1000 for i in range(1, 101)]  # 1 .. 100 ms
    lag = asyncio.run(sampler.stop())
    assert lag["lag_p99_ms"] == pytest.approx(1000 * (percentile(sampler.samples, 0.99) or 0))
    assert lag["lag_p99_ms"] == pytest.approx(99.0)
