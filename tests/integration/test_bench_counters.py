"""The benchmark's cross-check of slice writes: the server's own request counters.

``benchmarks.apiserver.slice_write_requests`` reads ``apiserver_request_total`` from /metrics
with the benchmark's client; the benchmark compares the difference across a run with the
writes its slice watch saw. Runs on the embedded server and on a real cluster alike.

``benchmarks.update_cost`` (one update's cost to the server, by request kind) runs here too.

It also reads how long a slicectl contender waited for its client's rate limit, from the
contender's own /metrics (``ControllerProcess.rate_limit_wait``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import update_cost
from benchmarks.apiserver import free_port, slice_write_requests
from benchmarks.contenders import ControllerProcess
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES
from slicectl.obs.health import HealthServer
from slicectl.obs.metrics import Metrics
from tests.integration.conftest import Cluster


def _slice(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"app": "counters"}},
        "addressType": "IPv4", "endpoints": [],
    }


async def test_each_kind_of_slice_write_is_counted(api: Cluster) -> None:
    before = await slice_write_requests(api.client)
    assert before is not None, "the server's /metrics could not be read"
    await api.client.create(ENDPOINTSLICES, _slice("counted"), api.namespace)
    await api.client.patch(ENDPOINTSLICES, "counted", {"metadata": {"labels": {"v": "2"}}},
                           api.namespace, patch_type="merge")
    await api.client.delete(ENDPOINTSLICES, "counted", api.namespace)
    after = await slice_write_requests(api.client)
    assert after is not None
    # A real cluster's own controllers may write slices meanwhile: at least ours are counted.
    for kind in ("c", "u", "d"):  # create, update (patch), delete
        assert after[kind] - before[kind] >= 1, (kind, before, after)


async def test_a_contenders_rate_limit_waits_are_read_from_its_metrics(tmp_path: Path) -> None:
    metrics = Metrics()
    port = free_port()
    server = HealthServer(metrics, metrics_bind_address=f"127.0.0.1:{port}",
                          health_probe_bind_address="0")
    await server.start()
    proc = ControllerProcess([sys.executable, "-c", "pass"], str(tmp_path / "log"), port)
    try:
        assert await proc.rate_limit_wait() == 0.0
        metrics.rate_limited(False, 1.5)
        metrics.rate_limited(True, 7.0)  # status writes: not the slice writes' wait
        assert await proc.rate_limit_wait() == 1.5
        await server.stop()
        assert await proc.rate_limit_wait() is None, "no /metrics: no figure, no failure"
    finally:
        proc.stop()
        await server.stop()
    blind = ControllerProcess([sys.executable, "-c", "pass"], str(tmp_path / "log2"))
    blind.stop()
    assert await blind.rate_limit_wait() is None


async def test_update_cost_times_both_kinds_of_update_and_cleans_up(
    api: Cluster, capsys: pytest.CaptureFixture[str],
) -> None:
    """``benchmarks.update_cost`` sends both patches of each update (it checks that they
    landed), reports each kind, and deletes the namespace it made."""
    await update_cost.run(api.kubeconfig, 3, 10)
    out = capsys.readouterr().out
    assert "3 updates of each kind, one 10-endpoint slice" in out
    for kind in ("json patch", "merge patch"):
        assert f"{kind:<12} n=3 " in out, out
    namespaces, _ = await api.client.list(NAMESPACES)
    left = [n["metadata"]["name"] for n in namespaces
            if n["metadata"]["name"].startswith("slicectl-update-cost-")
            and not n["metadata"].get("deletionTimestamp")]
    assert left == [], left
