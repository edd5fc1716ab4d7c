"""``meta.k8s.io/v1`` Table rendering: what ``kubectl get`` prints.

Why: kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the server's
columns verbatim, so the embedded server must produce the same columns a real one does: the
built-in printers' columns (pods: NAME READY STATUS RESTARTS AGE ...; endpointslices: NAME
ADDRESSTYPE PORTS ENDPOINTS AGE; ...) and, for custom resources, NAME plus the CRD's
``additionalPrinterColumns`` (NAME and AGE when it has none). Printer-column JSONPaths support
field paths, ``[n]`` indexes and ``[?(@.field=="value")]`` filters, which is what CRDs use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from slicectl.sim.types import ResourceType

Obj = dict[str, Any]
Column = tuple[str, str, str, int, Callable[[Obj], Any]]  # name, type, format, priority, cell


def to_table(
    rt: ResourceType,
    objects: list[Obj],
    list_meta: dict[str, Any],
    include_object: str = "Metadata",
) -> dict[str, Any]:
    """Render ``objects`` as a Table; ``include_object`` is None, Metadata or Object."""
    columns = _columns(rt)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [cell(obj) for *_, cell in columns]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": name, "type": type_, "format": fmt, "description": _DESCRIPTIONS.get(name, ""),
             "priority": priority}
            for name, type_, fmt, priority, _ in columns
        ],
        "rows": rows,
    }


_DESCRIPTIONS = {
    "Name": "Name must be unique within a namespace. Cannot be updated.",
    "Age": "CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
}


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def _age_of(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - then).total_seconds())


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name(obj: Obj) -> Any:
    return _meta(obj).get("name", "")


def _age(obj: Obj) -> str:
    return _age_of(_meta(obj).get("creationTimestamp"))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


NAME: Column = ("Name", "string", "name", 0, _name)
AGE: Column = ("Age", "string", "", 0, _age)


def _pod_ready(pod: Obj) -> str:
    statuses = _get(pod, "status", "containerStatuses") or []
    total = len(_get(pod, "spec", "containers") or [])
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    return f"{ready}/{total}"


def _pod_status(pod: Obj) -> str:
    if _meta(pod).get("deletionTimestamp"):
        return "Terminating"
    reason = _get(pod, "status", "reason") or _get(pod, "status", "phase") or "Pending"
    for status in _get(pod, "status", "containerStatuses") or []:
        waiting = _get(status, "state", "waiting", "reason")
        terminated = _get(status, "state", "terminated", "reason")
        if waiting or terminated:
            reason = waiting or terminated
    return str(reason)


def _pod_restarts(pod: Obj) -> int:
    return sum(int(s.get("restartCount") or 0)
               for s in _get(pod, "status", "containerStatuses") or [] if isinstance(s, dict))


def _node_status(node: Obj) -> str:
    ready = "Unknown"
    for cond in _get(node, "status", "conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if _get(node, "spec", "unschedulable"):
        ready += ",SchedulingDisabled"
    return ready


def _node_roles(node: Obj) -> str:
    labels = _meta(node).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    return ",".join(r for r in roles if r) or "<none>"


def _slice_ports(es: Obj) -> str:
    ports = es.get("ports") or []
    if not ports:
        return "<unset>"
    return ",".join(str(p.get("port")) if p.get("port") is not None else "<unset>"
                    for p in ports if isinstance(p, dict))


def _slice_endpoints(es: Obj) -> str:
    addresses = [a for ep in es.get("endpoints") or [] if isinstance(ep, dict)
                 for a in ep.get("addresses") or []]
    if not addresses:
        return "<unset>"
    shown = ",".join(addresses[:3])
    return shown + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")


def _service_ports(svc: Obj) -> str:
    parts = []
    for port in _get(svc, "spec", "ports") or []:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        parts.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(parts) or "<none>"


def _event_object(ev: Obj) -> str:
    ref = ev.get("involvedObject") or ev.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _pod_readiness_gates(pod: Obj) -> str:
    """printers.go: how many of the pod's readiness gates have a True condition, of all."""
    gates = _get(pod, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    true = {c.get("type") for c in _get(pod, "status", "conditions") or []
            if isinstance(c, dict) and c.get("status") == "True"}
    met = sum(1 for g in gates if isinstance(g, dict) and g.get("conditionType") in true)
    return f"{met}/{len(gates)}"


def _event_last_seen(ev: Obj) -> str:
    stamp = (ev.get("lastTimestamp") or _get(ev, "series", "lastObservedTime")
             or ev.get("eventTime") or _meta(ev).get("creationTimestamp"))
    return _age_of(stamp)


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): [
        NAME, ("Ready", "string", "", 0, _pod_ready), ("Status", "string", "", 0, _pod_status),
        ("Restarts", "string", "", 0, _pod_restarts), AGE,
        ("IP", "string", "", 1, lambda p: _get(p, "status", "podIP") or "<none>"),
        ("Node", "string", "", 1, lambda p: _get(p, "spec", "nodeName") or "<none>"),
        ("Nominated Node", "string", "", 1,
         lambda p: _get(p, "status", "nominatedNodeName") or "<none>"),
        ("Readiness Gates", "string", "", 1, _pod_readiness_gates),
    ],
    ("", "Node"): [
        NAME, ("Status", "string", "", 0, _node_status), ("Roles", "string", "", 0, _node_roles),
        AGE, ("Version", "string", "", 0,
              lambda n: _get(n, "status", "nodeInfo", "kubeletVersion") or ""),
    ],
    ("", "Namespace"): [
        NAME, ("Status", "string", "", 0, lambda n: _get(n, "status", "phase") or "Active"), AGE,
    ],
    ("", "Service"): [
        NAME, ("Type", "string", "", 0, lambda s: _get(s, "spec", "type") or "ClusterIP"),
        ("Cluster-IP", "string", "", 0, lambda s: _get(s, "spec", "clusterIP") or "<none>"),
        ("External-IP", "string", "", 0, lambda s: "<none>"),
        ("Port(s)", "string", "", 0, _service_ports), AGE,
    ],
    ("discovery.k8s.io", "EndpointSlice"): [
        NAME, ("AddressType", "string", "", 0, lambda e: e.get("addressType", "")),
        ("Ports", "string", "", 0, _slice_ports), ("Endpoints", "string", "", 0, _slice_endpoints),
        AGE,
    ],
    ("coordination.k8s.io", "Lease"): [
        NAME, ("Holder", "string", "", 0, lambda le: _get(le, "spec", "holderIdentity") or ""),
        AGE,
    ],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        NAME, ("Created At", "date", "", 0, lambda c: _meta(c).get("creationTimestamp")),
    ],
}
_EVENT_COLUMNS: list[Column] = [
    ("Last Seen", "string", "", 0, _event_last_seen),
    ("Type", "string", "", 0, lambda e: e.get("type", "")),
    ("Reason", "string", "", 0, lambda e: e.get("reason", "")),
    ("Object", "string", "", 0, _event_object),
    ("Message", "string", "", 0, lambda e: e.get("message") or e.get("note") or ""),
]


def _columns(rt: ResourceType) -> list[Column]:
    if rt.is_custom:
        if not rt.printer_columns:
            return [NAME, AGE]
        return [NAME, *(_printer_column(c) for c in rt.printer_columns)]
    if rt.kind == "Event":
        return _EVENT_COLUMNS
    return _BUILTIN.get((rt.group, rt.kind), [NAME, AGE])


def _printer_column(spec: dict[str, Any]) -> Column:
    path = str(spec.get("jsonPath", ""))
    type_ = str(spec.get("type", "string"))

    def cell(obj: Obj) -> Any:
        values = jsonpath(obj, path)
        if not values:
            return None
        value = values[0]
        if type_ == "date":
            return _age_of(value)
        if isinstance(value, dict | list):
            return json.dumps(value, separators=(",", ":"))
        return value

    return (str(spec.get("name", "")), type_, str(spec.get("format", "")),
            int(spec.get("priority", 0)), cell)


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)\s*==\s*[\"']([^\"']*)[\"']\)\]|\[\*\]")


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Values at a simple JSONPath (``.a.b``, ``[0]``, ``[*]``, ``[?(@.k=="v")]``)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.removeprefix("$")
    values = [obj]
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if not m:
            return []
        pos = m.end()
        field, index, key, wanted = m.groups()
        nxt: list[Any] = []
        for value in values:
            if field is not None and isinstance(value, dict) and field in value:
                nxt.append(value[field])
            elif index is not None and isinstance(value, list) and int(index) < len(value):
                nxt.append(value[int(index)])
            elif key is not None and isinstance(value, list):
                nxt.extend(v for v in value if str(_get(v, *key.split("."))) == wanted)
            elif field is None and index is None and key is None and isinstance(value, list):
                nxt.extend(value)
        values = nxt
    return values
