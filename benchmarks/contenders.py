"""The controllers a benchmark run compares, each started in its own process.

A contender is a command line: slicectl (``python -m slicectl run``, with its defaults or a
``--batch-period``) or a baseline (``python -m benchmarks.baselines.naive``). Each gets a fresh
process per scenario, watching only that scenario's namespace, so its CPU seconds and peak RSS
(from /proc) are its own and not the driver's or the API server's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import aiohttp

from benchmarks.apiserver import cpu_seconds, peak_rss_mb, samples, stop_process
from benchmarks.driver import MANAGED_BY, MAX_PER_SLICE


@dataclass(frozen=True)
class Contender:
    label: str
    kind: str  # "slicectl", "naive" or "upstream" (started by baselines.upstream.UpstreamPlan)
    batch_period: float | None = None  # None: slicectl's default
    extra: tuple[str, ...] = ()

    def command(self, kubeconfig: str, context: str | None, namespace: str,
                metrics_port: int | None = None) -> list[str]:
        """The command line; slicectl serves /metrics on ``metrics_port`` (loopback) if given."""
        where = ["--kubeconfig", kubeconfig] + (["--context", context] if context else [])
        if self.kind == "naive":
            return [sys.executable, "-m", "benchmarks.baselines.naive", *where,
                    "--namespace", namespace, "--managed-by", MANAGED_BY,
                    "--max-endpoints-per-slice", str(MAX_PER_SLICE)]
        cmd = [sys.executable, "-m", "slicectl", "run", *where,
               "--namespace", namespace, "--managed-by", MANAGED_BY,
               "--max-endpoints-per-slice", str(MAX_PER_SLICE),
               "--metrics-bind-address", f"127.0.0.1:{metrics_port}" if metrics_port else "0",
               "--health-probe-bind-address", "0",
               "--log-level", os.environ.get("BENCH_CONTROLLER_LOG_LEVEL", "warning"),
               "--log-format", "json"]
        if self.batch_period is not None:
            cmd += ["--batch-period", f"{self.batch_period:g}s"]
        return cmd + list(self.extra)


def batch_contender(seconds: float) -> Contender:
    return Contender(f"slicectl --batch-period {seconds:g}s", "slicectl", seconds)


DEFAULTS = Contender("slicectl (defaults)", "slicectl")
BATCH_ZERO = batch_contender(0.0)
NAIVE = Contender("naive", "naive")
UPSTREAM = Contender("kube-controller-manager", "upstream")
SWEEP = (0.0, 0.1, 0.25, 0.5, 1.0)


class ControllerProcess:
    """One contender's process; CPU seconds and peak RSS are read from /proc while it runs,
    and (slicectl's) rate-limit waits from its /metrics."""

    def __init__(self, command: list[str], log_path: str,
                 metrics_port: int | None = None) -> None:
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self.metrics_port = metrics_port

    async def rate_limit_wait(self) -> float | None:
        """Seconds the controller's foreground requests (slice writes, lists, watches) have
        waited for its client's rate-limit tokens so far, or None if it does not say."""
        if self.metrics_port is None:
            return None
        try:
            async with aiohttp.ClientSession() as session, session.get(
                    f"http://127.0.0.1:{self.metrics_port}/metrics",
                    timeout=aiohttp.ClientTimeout(total=5)) as resp:
                text = await resp.text()
        except (aiohttp.ClientError, OSError, TimeoutError):
            return None
        return next((value for labels, value in
                     samples(text, "slicectl_rate_limiter_wait_seconds_sum")
                     if labels.get("lane") == "foreground"), None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.proc.pid)

    def stop(self) -> None:
        stop_process(self.proc, 15)
        self._log.close()
