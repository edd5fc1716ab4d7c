"""core/v1 Events and events.k8s.io/v1 Events are one resource, stored once.

A real kube-apiserver serves both from ``/registry/events`` and converts between them field by
field (``pkg/apis/events/v1/conversion.go``), so an Event written through either group is read,
listed and watched through the other (``kubectl describe`` lists core/v1 events; slicectl
records events.k8s.io/v1 ones). Here they are stored in the core/v1 form and renamed on the
way in and out; members that are absent stay absent (the server writes no Go zero values).
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.types import ResourceType

EVENTS_V1 = ("events.k8s.io", "events")
CORE_EVENTS = ("", "events")

# core/v1 member -> events.k8s.io/v1 member; the others (reason, type, eventTime, series,
# action, related, reportingInstance, metadata) have one name in both
_RENAMED = (("involvedObject", "regarding"), ("message", "note"),
            ("source", "deprecatedSource"), ("firstTimestamp", "deprecatedFirstTimestamp"),
            ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"),
            ("reportingComponent", "reportingController"))
_TO_V1 = dict(_RENAMED)
_TO_CORE = {v1: core for core, v1 in _RENAMED}


def is_events_v1(rt: ResourceType) -> bool:
    return (rt.group, rt.plural) == EVENTS_V1


def _renamed(obj: dict[str, Any], names: dict[str, str], api_version: str) -> dict[str, Any]:
    out = {names.get(key, key): value for key, value in obj.items()}
    out["apiVersion"] = api_version
    return out


def to_events_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The stored (core/v1) Event as events.k8s.io/v1 serves it; metadata is shared."""
    return _renamed(obj, _TO_V1, "events.k8s.io/v1")


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event in the stored core/v1 form; metadata is shared."""
    return _renamed(obj, _TO_CORE, "v1")
