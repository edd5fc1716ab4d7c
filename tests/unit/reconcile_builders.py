"""Builders shared by the reconcile unit tests: records for pods, nodes, selectors and slices,
and a tiny in-memory "API" that applies a plan through the real render functions (create bodies,
RFC 6902 JSON patches, applied by the embedded server's own patch code) and parses the result
back, so tests see what a cluster would hold.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from slicectl.model.parse import parse_selector, parse_slice
from slicectl.model.records import (
    ContainerPort,
    NodeRecord,
    PodRecord,
    SelectorRecord,
    SelectorRef,
    SliceRecord,
)
from slicectl.reconcile import Plan, new_slice_body, slice_patch
from slicectl.sim.patch import JSON_PATCH, apply_patch
from slicectl.sim.resources import BUILTINS

ENDPOINTSLICE_TYPE = next(rt for rt in BUILTINS if rt.plural == "endpointslices")
SLICECTL_API = SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector", "endpointselectors")


def make_selector(
    name: str = "web",
    *,
    namespace: str = "default",
    uid: str = "sel-uid",
    match: Mapping[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    ip_families: list[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> SelectorRecord:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match or {"app": name})}}
    if ports is not None:
        spec["ports"] = ports
    if ip_families is not None:
        spec["ipFamilies"] = ip_families
    raw = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": "1",
            "generation": 1,
            "labels": dict(labels or {}),
        },
        "spec": spec,
    }
    record = parse_selector(raw, SLICECTL_API)
    assert record.error is None, record.error
    return record


def make_pod(
    name: str,
    *ips: str,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    ready: bool = True,
    terminating: bool = False,
    phase: str = "Running",
    node: str = "node-1",
    hostname: str = "",
    subdomain: str = "",
    ports: Iterable[ContainerPort] = (),
    uid: str | None = None,
) -> PodRecord:
    return PodRecord(
        namespace=namespace,
        name=name,
        uid=uid or f"uid-{name}",
        resource_version="1",
        labels=dict(labels if labels is not None else {"app": "web"}),
        phase=phase,
        pod_ips=ips,
        ready=ready,
        ready_transition=None,
        terminating=terminating,
        node_name=node,
        hostname=hostname,
        subdomain=subdomain,
        container_ports=tuple(ports),
    )


def ip4(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


def pods_range(n: int, start: int = 0, **kw: Any) -> list[PodRecord]:
    return [make_pod(f"pod-{i:05d}", ip4(i), **kw) for i in range(start, start + n)]


NODES = {"node-1": NodeRecord("node-1", "zone-a"), "node-2": NodeRecord("node-2", "zone-b")}


@dataclass
class FakeCluster:
    """EndpointSlices as JSON, changed only through plan bodies and patches."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    writes: int = 0

    @property
    def slices(self) -> list[SliceRecord]:
        return [parse_slice(o) for o in self.objects.values()]

    def add_raw(self, body: dict[str, Any]) -> SliceRecord:
        n = next(self.counter)
        meta = body.setdefault("metadata", {})
        meta.setdefault("name", f"{meta.get('generateName', 'slice-')}{n:04d}")
        meta.setdefault("uid", f"slice-uid-{n}")
        meta["resourceVersion"] = str(1000 + n)
        meta["generation"] = 1
        self.objects[meta["name"]] = body
        return parse_slice(body)

    def apply(self, selector: SelectorRecord, plan: Plan, trigger: str | None = None) -> None:
        for spec in plan.creates:
            self.add_raw(new_slice_body(selector, spec, trigger))
        for update in plan.updates:
            current = self.objects[update.existing.name]
            patch = slice_patch(selector, update, trigger)
            new, _ = apply_patch(current, orjson.dumps(patch), JSON_PATCH, ENDPOINTSLICE_TYPE)
            assert new["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"], (
                "the patch's resourceVersion precondition is not the cached one")
            version = int(current["metadata"]["resourceVersion"]) + 1
            new["metadata"]["resourceVersion"] = str(version)
            self.objects[update.existing.name] = new
        for record in plan.deletes:
            del self.objects[record.name]
        self.writes += plan.writes
