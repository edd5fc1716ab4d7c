"""Deletion: garbage collection by ownerReferences, propagation policies, finalizers, namespaces."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sim.conftest import PODS, Raw, pod

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
MERGE = "application/merge-patch+json"


def owned_by(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                 "uid": meta["uid"]}]}


async def _until_gone(raw: Raw, path: str) -> bool:
    for _ in range(100):
        code, _, _ = await raw.request("GET", path)
        if code == 404:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_background_gc_deletes_dependents(raw: Raw) -> None:
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    await raw.request("POST", PODS, pod("dep", **owned_by(owner)))
    await raw.request("DELETE", PODS + "/owner")
    assert await _until_gone(raw, PODS + "/dep")


async def test_orphan_keeps_dependents(raw: Raw) -> None:
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    await raw.request("POST", PODS, pod("dep", **owned_by(owner)))
    code, body, _ = await raw.request("DELETE", PODS + "/owner", {"propagationPolicy": "Orphan"})
    assert code == 200 and "orphan" in body["metadata"]["finalizers"]
    assert await _until_gone(raw, PODS + "/owner")
    code, dep, _ = await raw.request("GET", PODS + "/dep")
    assert code == 200 and "ownerReferences" not in dep["metadata"]


async def test_foreground_waits_for_dependents(raw: Raw) -> None:
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    await raw.request("POST", PODS, pod("dep", **owned_by(owner), finalizers=["x/hold"]))
    code, body, _ = await raw.request("DELETE", PODS + "/owner",
                                      {"propagationPolicy": "Foreground"})
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await asyncio.sleep(0.2)
    code, _, _ = await raw.request("GET", PODS + "/owner")
    assert code == 200
    await raw.request("PATCH", PODS + "/dep", {"metadata": {"finalizers": None}},
                      content_type=MERGE)
    assert await _until_gone(raw, PODS + "/owner")


async def test_dependent_of_missing_owner_is_collected(raw: Raw) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "no-such-uid"}}
    await raw.request("POST", PODS, pod("dep", **owned_by(ghost)))
    assert await _until_gone(raw, PODS + "/dep")


async def test_finalizers_hold_object(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p", finalizers=["example.com/x"]))
    code, body, _ = await raw.request("DELETE", PODS + "/p")
    assert code == 200 and body["metadata"]["deletionTimestamp"]
    code, held, _ = await raw.request("GET", PODS + "/p")
    assert code == 200 and held["metadata"]["finalizers"] == ["example.com/x"]
    code, body, _ = await raw.request("PATCH", PODS + "/p", {"metadata": {"finalizers": []}},
                                      content_type=MERGE)
    assert code == 200
    code, _, _ = await raw.request("GET", PODS + "/p")
    assert code == 404


async def test_graceful_pod_deletion(srv: Any, raw: Raw) -> None:
    await raw.request("POST", PODS, pod("p", node="n1"))
    code, body, _ = await raw.request("DELETE", PODS + "/p", gracePeriodSeconds=1)
    assert body["metadata"]["deletionGracePeriodSeconds"] == 1
    code, _, _ = await raw.request("GET", PODS + "/p")
    assert code == 200
    assert await _until_gone(raw, PODS + "/p")


async def test_namespace_deletion_removes_contents(raw: Raw) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
    code, body, _ = await raw.request("POST", "/api/v1/namespaces", ns)
    assert code == 201 and body["status"]["phase"] == "Active"
    await raw.request("POST", "/api/v1/namespaces/doomed/pods", pod("p"))
    code, body, _ = await raw.request("DELETE", "/api/v1/namespaces/doomed")
    assert code == 200 and body["status"]["phase"] == "Terminating"
    code, body, _ = await raw.request("POST", "/api/v1/namespaces/doomed/pods", pod("q"))
    assert code in (403, 404)
    assert await _until_gone(raw, "/api/v1/namespaces/doomed")
    _, listed, _ = await raw.request("GET", "/api/v1/namespaces/doomed/pods")
    assert listed["items"] == []


async def test_lease_put_creates(raw: Raw) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
    code, body, _ = await raw.request("PUT", LEASES + "/l", lease)
    assert code == 201 and body["spec"]["holderIdentity"] == "me"


async def test_the_garbage_collector_acts_after_a_while(srv: Any, raw: Raw) -> None:
    """A real collector acts once its informers see the deletion: the dependent is still
    there right after the owner's DELETE returns, then goes."""
    srv.lifecycle.gc_delay = (0.3, 0.3)
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    await raw.request("POST", PODS, pod("dep", **owned_by(owner)))
    await raw.request("DELETE", PODS + "/owner")
    code, _, _ = await raw.request("GET", PODS + "/dep")
    assert code == 200
    assert await _until_gone(raw, PODS + "/dep")


async def test_without_a_garbage_collector_dependents_stay(srv: Any, raw: Raw) -> None:
    """``gc_delay=None`` is a cluster with no controller-manager (envtest)."""
    srv.lifecycle.gc_delay = None
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    await raw.request("POST", PODS, pod("dep", **owned_by(owner)))
    await raw.request("DELETE", PODS + "/owner")
    await asyncio.sleep(0.3)
    code, dep, _ = await raw.request("GET", PODS + "/dep")
    assert code == 200 and dep["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
