"""A count quota refuses creates past it as kube-apiserver's ResourceQuota admission does.

The expected answer is a real kube-apiserver v1.32.6's (2026-11-28): a namespace's
ResourceQuota with ``count/endpointslices.discovery.k8s.io: "1"`` (status hard and used set, as
kube-controller-manager's quota controller sets them), and a second EndpointSlice created with
``generateName``.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import Raw

NS = "default"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
RESOURCE = "endpointslices.discovery.k8s.io"


def slice_body() -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": "q-"}, "addressType": "IPv4", "endpoints": []}


async def test_a_create_past_the_quota_is_forbidden_as_the_real_server_says(
        srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.quota.limit(NS, RESOURCE, 1, name="eps")
    code, first, _ = await raw.request("POST", SLICES, slice_body())
    assert code == 201, first
    code, answer, _ = await raw.request("POST", SLICES, slice_body())
    name = answer["details"]["name"]
    assert name.startswith("q-") and len(name) == 7  # the generated name, before storage
    count = f"count/{RESOURCE}"
    assert (code, answer["reason"], answer["message"], answer["details"]) == (
        403, "Forbidden",
        f'{RESOURCE} "{name}" is forbidden: exceeded quota: eps, requested: {count}=1, '
        f"used: {count}=1, limited: {count}=1",
        {"name": name, "group": "discovery.k8s.io", "kind": "endpointslices"})


async def test_updates_and_deletes_pass_and_a_deletion_frees_the_quota(
        srv: EmbeddedApiServer, raw: Raw) -> None:
    srv.quota.limit(NS, RESOURCE, 1)
    code, first, _ = await raw.request("POST", SLICES, slice_body())
    assert code == 201, first
    path = f"{SLICES}/{first['metadata']['name']}"
    code, _, _ = await raw.request("PATCH", path, {"metadata": {"labels": {"a": "b"}}},
                                   content_type="application/merge-patch+json")
    assert code == 200
    assert (await raw.request("POST", SLICES, slice_body()))[0] == 403
    assert (await raw.request("POST", "/apis/discovery.k8s.io/v1/namespaces/kube-system/"
                                      "endpointslices", slice_body()))[0] == 201  # its own
    code, _, _ = await raw.request("DELETE", path)
    assert code == 200
    assert (await raw.request("POST", SLICES, slice_body()))[0] == 201
    srv.quota.limit(NS, RESOURCE, None)
    assert (await raw.request("POST", SLICES, slice_body()))[0] == 201
