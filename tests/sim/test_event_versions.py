"""core/v1 and events.k8s.io/v1 Events are one resource, as on a real kube-apiserver.

There both versions are served from one storage (``/registry/events``), converted field by
field (``pkg/apis/events/v1/conversion.go``): an Event written through one group is read,
listed, watched and field-selected through the other. ``kubectl describe`` lists core/v1
events about the object, so an Event slicectl records through events.k8s.io/v1 must show up
there. Expected shapes captured from a real v1.32.6 (the reviewer's namespace
``kubectl-a``)."""

from __future__ import annotations

from typing import Any

from tests.sim.conftest import Raw

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"
REGARDING = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
             "name": "sel", "namespace": "default", "uid": "u-1"}


def new_style(name: str) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "regarding": REGARDING, "reason": "InvalidSpec", "note": "port missing",
            "type": "Warning", "action": "Reconcile",
            "reportingController": "slicectl.io/endpointselector-controller",
            "reportingInstance": "slicectl-0", "eventTime": "2026-11-28T21:00:00.000000Z"}


def old_style(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": REGARDING, "reason": "Testing", "message": "hello world",
            "type": "Normal", "count": 1, "source": {"component": "kubectl-review"},
            "firstTimestamp": "2026-11-28T21:00:00Z", "lastTimestamp": "2026-11-28T21:00:00Z"}


async def test_an_events_v1_event_is_a_core_event(raw: Raw) -> None:
    code, created, _ = await raw.request("POST", V1, new_style("e1"))
    assert code == 201, created
    code, core, _ = await raw.request("GET", f"{CORE}/e1")
    assert code == 200, core
    assert core["apiVersion"] == "v1"
    assert core["metadata"]["uid"] == created["metadata"]["uid"]
    assert core["involvedObject"] == REGARDING
    assert (core["message"], core["reportingComponent"], core["reportingInstance"]) == (
        "port missing", "slicectl.io/endpointselector-controller", "slicectl-0")
    assert {"regarding", "note", "reportingController"}.isdisjoint(core)
    # kubectl describe's query: core/v1 events selected by the involved object
    selector = "involvedObject.name=sel,involvedObject.namespace=default,involvedObject.uid=u-1"
    code, listed, _ = await raw.request("GET", CORE, fieldSelector=selector)
    assert code == 200, listed
    assert [e["metadata"]["name"] for e in listed["items"]] == ["e1"]
    assert listed["items"][0]["message"] == "port missing"


async def test_a_core_event_is_an_events_v1_event(raw: Raw) -> None:
    code, created, _ = await raw.request("POST", CORE, old_style("e2"))
    assert code == 201, created
    code, v1, _ = await raw.request("GET", f"{V1}/e2")
    assert code == 200, v1
    assert v1["apiVersion"] == "events.k8s.io/v1"
    assert (v1["regarding"], v1["note"], v1["deprecatedSource"], v1["deprecatedCount"],
            v1["deprecatedFirstTimestamp"], v1["deprecatedLastTimestamp"]) == (
        REGARDING, "hello world", {"component": "kubectl-review"}, 1,
        "2026-11-28T21:00:00Z", "2026-11-28T21:00:00Z")
    assert {"involvedObject", "message", "source", "count"}.isdisjoint(v1)
    code, listed, _ = await raw.request("GET", V1, fieldSelector="regarding.name=sel")
    assert code == 200, listed
    assert [e["metadata"]["name"] for e in listed["items"]] == ["e2"]


async def test_writes_through_either_group_meet(raw: Raw) -> None:
    code, created, _ = await raw.request("POST", V1, new_style("e3"))
    assert code == 201, created
    series = {"count": 2, "lastObservedTime": "2026-11-28T21:10:00.000000Z"}
    code, patched, _ = await raw.request("PATCH", f"{CORE}/e3", {"series": series},
                                         content_type="application/merge-patch+json")
    assert code == 200, patched
    assert (patched["series"], patched["message"]) == (series, "port missing")
    # through events.k8s.io the stored event is compared in its own fields: only the series
    # changes (the real server's immutable fields are checked against the converted object)
    later = {**series, "count": 3}
    code, v1, _ = await raw.request("PATCH", f"{V1}/e3", {"series": later},
                                    content_type="application/merge-patch+json")
    assert code == 200, v1
    assert (v1["series"], v1["note"]) == (later, "port missing")
    code, core, _ = await raw.request("GET", f"{CORE}/e3")
    assert (core["series"], core["metadata"]["resourceVersion"]) == (
        later, v1["metadata"]["resourceVersion"])
    code, body, _ = await raw.request("POST", CORE, old_style("e3"))
    assert code == 409, body
    code, body, _ = await raw.request("DELETE", f"{CORE}/e3")
    assert code == 200, body
    code, body, _ = await raw.request("GET", f"{V1}/e3")
    assert code == 404, body


async def test_a_core_write_is_watched_through_events_v1(raw: Raw) -> None:
    code, listed, _ = await raw.request("GET", V1)
    assert code == 200, listed
    code, created, _ = await raw.request("POST", CORE, old_style("e4"))
    assert code == 201, created
    events = await raw.watch_lines(V1, 1, resourceVersion=listed["metadata"]["resourceVersion"])
    assert [e["type"] for e in events] == ["ADDED"]
    obj = events[0]["object"]
    assert (obj["apiVersion"], obj["metadata"]["name"], obj["note"]) == (
        "events.k8s.io/v1", "e4", "hello world")
