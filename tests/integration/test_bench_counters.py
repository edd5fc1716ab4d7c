"""The benchmark's cross-check of slice writes: the server's own request counters.

``benchmarks.apiserver.slice_write_requests`` reads ``apiserver_request_total`` from /metrics
with the benchmark's client; the benchmark compares the difference across a run with the
writes its slice watch saw. Runs on the embedded server and on a real cluster alike.
"""

from __future__ import annotations

from typing import Any

from benchmarks.apiserver import slice_write_requests
from slicectl.kube.resources import ENDPOINTSLICES
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
