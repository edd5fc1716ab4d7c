"""Read-back shapes, watch and list answers a real kube-apiserver v1.32.6 gave where the
embedded one was kinder (each request sent to both, 2026-11-28; expected: the real server's):

- an EndpointSlice comes back as Go's JSON round trip leaves it: ``endpoints`` and ``ports``
  always present, null when absent or sent as ``[]``; every endpoint's ``conditions`` present
  (``{}`` when none were sent); null or empty omitempty fields inside dropped;
- empty or null ``metadata`` labels, annotations, finalizers, ownerReferences and
  generateName are dropped (omitempty), for every kind (Pod, Lease, a custom resource too);
- field ownership still sees an ``[]`` sent (``f:endpoints``), so a PUT that sends
  ``endpoints: []`` over a stored null gets a new resourceVersion once, then none;
- an object that stops matching a watch's label selector is DELETED with its last state that
  matched (the old labels and content), at the event's resourceVersion;
- ``limit=-1`` (any limit of 0 or less) is no limit: every item, no continue token, served
  as an unlimited list is (a resourceVersion with it is NotOlderThan, not Exact);
- the items of a built-in kind's list (a LIST, and a deletecollection's answer) carry no
  ``kind`` and ``apiVersion`` (Go's typed list drops its items' TypeMeta); a custom resource's
  items keep theirs, and a GET or a watch event of any kind carries them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.sim.conftest import PODS, Raw, install_chart_crd, pod

SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
ESELS = "/apis/slicectl.io/v1alpha1/namespaces/default/endpointselectors"
EMPTY_META: dict[str, Any] = {"labels": {}, "annotations": {}, "finalizers": [],
                              "ownerReferences": [], "generateName": ""}
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def _slice(name: str, **fields: Any) -> dict[str, Any]:
    meta = fields.pop("metadata", {})
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, **meta}, "addressType": "IPv4", **fields}


async def _created_and_read(raw: Raw, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The create's answer, a GET's and the LIST item (all three the stored shape)."""
    code, created, _ = await raw.request("POST", path, body)
    assert code == 201, created
    name = created["metadata"]["name"]
    _, got, _ = await raw.request("GET", f"{path}/{name}")
    _, listed, _ = await raw.request("GET", path, fieldSelector=f"metadata.name={name}")
    return [created, got, listed["items"][0]]


async def test_endpointslice_lists_are_null_when_absent_or_empty(raw: Raw) -> None:
    for body in (_slice("absent"), _slice("empty", endpoints=[], ports=[]),
                 _slice("null", endpoints=None, ports=None)):
        for seen in await _created_and_read(raw, SLICES, body):
            assert "endpoints" in seen and seen["endpoints"] is None, seen
            assert "ports" in seen and seen["ports"] is None, seen


async def test_endpointslice_endpoint_shape(raw: Raw) -> None:
    body = _slice("eps", endpoints=[
        {"addresses": ["10.0.0.1"]},
        {"addresses": ["10.0.0.2"], "conditions": None, "hostname": None, "nodeName": None,
         "zone": "", "hints": {"forZones": []}, "targetRef": {"kind": "Pod", "name": "p",
                                                               "uid": ""}},
        {"addresses": ["10.0.0.3"], "conditions": {"ready": None, "serving": True},
         "hints": None}],
        ports=[{"port": None, "appProtocol": None}])
    for seen in await _created_and_read(raw, SLICES, body):
        assert seen["endpoints"] == [
            {"addresses": ["10.0.0.1"], "conditions": {}},
            {"addresses": ["10.0.0.2"], "conditions": {}, "zone": "", "hints": {},
             "targetRef": {"kind": "Pod", "name": "p"}},
            {"addresses": ["10.0.0.3"], "conditions": {"serving": True}}]
        assert seen["ports"] == [{"name": "", "protocol": "TCP"}]


async def test_json_patch_tests_the_stored_shape(raw: Raw) -> None:
    await raw.request("POST", SLICES, _slice("t", endpoints=[{"addresses": ["10.0.0.1"]}],
                                             ports=[]))
    for ops, want in (([{"op": "test", "path": "/ports", "value": None}], 200),
                      ([{"op": "test", "path": "/ports", "value": []}], 422),
                      ([{"op": "test", "path": "/endpoints/0/conditions", "value": {}}], 200),
                      ([{"op": "add", "path": "/ports/-", "value": {"port": 80}}], 422)):
        code, body, _ = await raw.request("PATCH", SLICES + "/t", ops, content_type=JSON_PATCH)
        assert code == want, (ops, body)


async def test_empty_list_sent_is_owned_then_a_no_op(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", SLICES, _slice("own"))
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:addressType": {}}
    rvs = [created["metadata"]["resourceVersion"]]
    for _ in range(2):
        _, got, _ = await raw.request("GET", SLICES + "/own")
        code, put, _ = await raw.request("PUT", SLICES + "/own",
                                         {**got, "endpoints": [], "ports": []})
        assert code == 200 and put["endpoints"] is None and put["ports"] is None
        assert put["metadata"]["managedFields"][0]["fieldsV1"] == {
            "f:addressType": {}, "f:endpoints": {}, "f:ports": {}}
        rvs.append(put["metadata"]["resourceVersion"])
    assert rvs[0] != rvs[1] == rvs[2]


async def test_empty_metadata_is_dropped_for_every_kind(raw: Raw) -> None:
    await install_chart_crd(raw)
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l", **EMPTY_META}, "spec": {}}
    esel = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "s", **EMPTY_META},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    nulls = {key: None for key in EMPTY_META}
    for path, obj in ((SLICES, _slice("m", metadata=EMPTY_META)),
                      (SLICES, _slice("n", metadata=nulls)),
                      (PODS, pod("p", **EMPTY_META)), (LEASES, lease), (ESELS, esel)):
        for seen in await _created_and_read(raw, path, obj):
            assert not set(EMPTY_META) & set(seen["metadata"]), (path, seen["metadata"])
            for entry in seen["metadata"].get("managedFields") or []:
                assert "f:metadata" not in entry["fieldsV1"], entry
    # emptied by a later write: dropped too
    await raw.request("POST", SLICES, _slice("later", metadata={"labels": {"a": "b"},
                                                                 "annotations": {"x": "y"}}))
    code, patched, _ = await raw.request(
        "PATCH", SLICES + "/later", {"metadata": {"labels": {"a": None},
                                                  "annotations": {"x": None}}},
        content_type=MERGE)
    assert code == 200
    assert "labels" not in patched["metadata"] and "annotations" not in patched["metadata"]


async def test_watch_deleted_on_selector_exit_carries_the_old_object(raw: Raw) -> None:
    _, created, _ = await raw.request(
        "POST", SLICES, _slice("w", metadata={"labels": {"grp": "g"}, "annotations": {"x": "1"}},
                               endpoints=[{"addresses": ["10.0.0.1"]}]))
    rv = created["metadata"]["resourceVersion"]
    _, patched, _ = await raw.request(
        "PATCH", SLICES + "/w", {"metadata": {"labels": {"grp": "h"}, "annotations": {"x": "2"}},
                                 "endpoints": [{"addresses": ["10.0.0.2"]}]},
        content_type=MERGE)
    events = await raw.watch_lines(SLICES, 1, labelSelector="grp=g", resourceVersion=rv)
    assert [e["type"] for e in events] == ["DELETED"]
    gone = events[0]["object"]
    assert gone["metadata"]["labels"] == {"grp": "g"}
    assert gone["metadata"]["annotations"] == {"x": "1"}
    assert gone["endpoints"][0]["addresses"] == ["10.0.0.1"]
    assert gone["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]


async def test_live_watch_deleted_on_selector_exit_carries_the_old_object(raw: Raw) -> None:
    await raw.request("POST", SLICES, _slice("lw", metadata={"labels": {"grp": "g"}}))
    task = asyncio.create_task(raw.watch_lines(SLICES, 2, labelSelector="grp=g"))
    await asyncio.sleep(0.3)
    _, patched, _ = await raw.request("PATCH", SLICES + "/lw",
                                      {"metadata": {"labels": {"grp": "h"}}},
                                      content_type=MERGE)
    events = await task
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert events[1]["object"]["metadata"]["labels"] == {"grp": "g"}
    assert (events[1]["object"]["metadata"]["resourceVersion"]
            == patched["metadata"]["resourceVersion"])


async def test_negative_limit_is_no_limit(raw: Raw) -> None:
    _, first, _ = await raw.request("POST", PODS, pod("p0"))
    old_rv = first["metadata"]["resourceVersion"]
    for i in range(1, 5):
        await raw.request("POST", PODS, pod(f"p{i}"))
    for params in ({"limit": -1}, {"limit": -5}, {"limit": -1, "resourceVersion": "0"},
                   {"limit": -1, "resourceVersion": old_rv},
                   {"limit": 0, "resourceVersion": old_rv}):
        code, body, _ = await raw.request("GET", PODS, **params)
        assert code == 200, (params, body)
        assert len(body["items"]) == 5, params
        assert "continue" not in body["metadata"], params
        assert "remainingItemCount" not in body["metadata"], params
    # Exact still serves the old state, whatever the limit
    _, exact, _ = await raw.request("GET", PODS, limit=-1, resourceVersion=old_rv,
                                    resourceVersionMatch="Exact")
    assert [p["metadata"]["name"] for p in exact["items"]] == ["p0"]


async def test_built_in_list_items_carry_no_type_meta(raw: Raw) -> None:
    await install_chart_crd(raw)
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {}}
    esel = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "s"}, "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    for path, obj in ((SLICES, _slice("t")), (PODS, pod("p")), (LEASES, lease)):
        created, got, listed = await _created_and_read(raw, path, obj)
        assert (created["kind"], got["kind"]) == (obj["kind"], obj["kind"])
        assert "kind" not in listed and "apiVersion" not in listed, listed
    _, _, esel_listed = await _created_and_read(raw, ESELS, esel)
    assert (esel_listed["kind"], esel_listed["apiVersion"]) == ("EndpointSelector",
                                                                "slicectl.io/v1alpha1")
    (event,) = await raw.watch_lines(LEASES, 1)
    assert event["object"]["kind"] == "Lease"
    code, gone, _ = await raw.request("DELETE", LEASES)
    assert code == 200 and gone["kind"] == "LeaseList", gone
    assert [set(i) & {"kind", "apiVersion"} for i in gone["items"]] == [set()], gone
