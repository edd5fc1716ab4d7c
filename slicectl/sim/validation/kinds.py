"""Validation and defaulting of the other built-in kinds the embedded server serves.

Why: pods, nodes, namespaces, services, leases and events are stored for slicectl and its tests,
which never depend on the full upstream rules; each kind gets its object-meta rule (namespaces:
DNS label names, everything else: DNS subdomain) and the few required fields whose absence a
real server rejects, so a bad fixture fails here as it would on a cluster.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.names import dns1123_label_errors


def validate_pod(obj: dict[str, Any]) -> list[e.Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [e.required("spec.containers")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [e.required("spec.containers")]
    causes: list[e.Cause] = []
    names: set[str] = set()
    for i, container in enumerate(containers):
        path = f"spec.containers[{i}]"
        if not isinstance(container, dict):
            causes.append(e.invalid(path, container, "must be an object"))
            continue
        name = container.get("name") or ""
        if not name:
            causes.append(e.required(f"{path}.name"))
        else:
            causes.extend(e.invalid(f"{path}.name", name, m)
                          for m in dns1123_label_errors(str(name)))
            if name in names:
                causes.append(e.duplicate(f"{path}.name", name))
            names.add(str(name))
        if not container.get("image"):
            causes.append(e.required(f"{path}.image"))
    return causes


def validate_lease(obj: dict[str, Any]) -> list[e.Cause]:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds") if isinstance(spec, dict) else None
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        return [e.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")]
    return []


def validate_core_event(obj: dict[str, Any]) -> list[e.Cause]:
    involved = obj.get("involvedObject")
    if not isinstance(involved, dict):
        return [e.required("involvedObject")]
    namespace = (obj.get("metadata") or {}).get("namespace")
    other = involved.get("namespace")
    if other and namespace and other != namespace:
        return [e.invalid("involvedObject.namespace", other,
                          "does not match event.namespace")]
    return []


def validate_events_v1(obj: dict[str, Any]) -> list[e.Cause]:
    causes = [e.required(field) for field in
              ("eventTime", "reportingController", "reportingInstance", "action", "reason")
              if not obj.get(field)]
    note = obj.get("note")
    if isinstance(note, str) and len(note) > 1024:
        causes.append(e.too_long("note", 1024))
    if obj.get("type") not in (None, "Normal", "Warning"):
        causes.append(e.not_supported("type", obj.get("type"), ["Normal", "Warning"]))
    return causes


def default_pod(obj: dict[str, Any]) -> None:
    """The pod defaults ``SetDefaults_Pod*`` set that kubectl shows back."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        image = str(container.get("image") or "")
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def default_endpointslice(obj: dict[str, Any]) -> None:
    """``SetDefaults_EndpointPort``: protocol TCP, name "" when unset."""
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            port.setdefault("name", "")
