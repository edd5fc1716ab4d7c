"""Finalizer names as a real kube-apiserver v1.32.6 judges them, kind by kind.

Captured from that server (built from source, on loopback, 2026-11-24) with ``dryRun=All``
creates: Kubernetes' own ObjectMeta validation, which EndpointSlice, Pod, Namespace, Node
and events.k8s.io Event use, also wants a finalizer without a ``/`` to be a standard one
(``kubernetes``, ``orphan``, ``foregroundDeletion``); Lease, core Event and
CustomResourceDefinition use apimachinery's alone, which checks the qualified-name form only.
An events.k8s.io Event is validated as the core Event it is stored as, so its 422 names
``Event`` with no group.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw

NS = "finalizers"
NOT_STANDARD = "name is neither a standard finalizer name nor is it fully qualified"


def _bodies() -> dict[str, tuple[str, dict[str, Any]]]:
    regarding = {"kind": "Pod", "name": "p", "namespace": NS}
    return {
        "EndpointSlice.discovery.k8s.io": (
            f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices",
            {"addressType": "IPv4", "endpoints": []}),
        "Pod": (f"/api/v1/namespaces/{NS}/pods",
                {"spec": {"containers": [{"name": "c", "image": "i"}]}}),
        "Namespace": ("/api/v1/namespaces", {}),
        "Node": ("/api/v1/nodes", {}),
        "Event": (f"/apis/events.k8s.io/v1/namespaces/{NS}/events", {
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "a/b",
            "reportingInstance": "i", "action": "A", "reason": "R", "regarding": regarding,
            "type": "Normal", "note": "n"}),
        "Lease.coordination.k8s.io": (f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases",
                                      {}),
        "core Event": (f"/api/v1/namespaces/{NS}/events", {
            "involvedObject": regarding, "reason": "R", "message": "m", "type": "Normal",
            "source": {"component": "c"}, "count": 1}),
    }


@pytest.fixture
async def ns(raw: Raw) -> Raw:
    code, body, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    assert code == 201, body
    return raw


@pytest.mark.parametrize("kind", list(_bodies()))
async def test_a_finalizer_without_a_slash_must_be_standard_where_kubernetes_validates(
        ns: Raw, kind: str) -> None:
    path, body = _bodies()[kind]
    meta = {"name": "fin-x", "finalizers": ["x.io/y", "bar", "kubernetes", "orphan"]}
    code, answer, _ = await ns.request("POST", path, {**body, "metadata": meta}, dryRun="All")
    if kind in ("Lease.coordination.k8s.io", "core Event"):
        assert code == 201, answer
        return
    assert (code, answer["message"]) == (
        422, f'{kind} "fin-x" is invalid: metadata.finalizers[1]: Invalid value: "bar": '
             f"{NOT_STANDARD}")
    assert answer["details"]["causes"] == [{"reason": "FieldValueInvalid",
                                            "message": f'Invalid value: "bar": {NOT_STANDARD}',
                                            "field": "metadata.finalizers[1]"}]
    assert ("group" in answer["details"]) == ("." in kind)


async def test_a_name_that_is_no_qualified_name_is_told_at_both_places(ns: Raw) -> None:
    path, body = _bodies()["Pod"]
    meta = {"name": "fin-x", "finalizers": ["a/b/c", "-bad"]}
    code, answer, _ = await ns.request("POST", path, {**body, "metadata": meta}, dryRun="All")
    assert code == 422
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "metadata.finalizers", "metadata.finalizers", "metadata.finalizers[1]"]
    assert answer["details"]["causes"][2]["message"].endswith(NOT_STANDARD)
