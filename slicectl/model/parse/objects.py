"""Pods, Nodes and EndpointSlices from their API JSON.

Pods keep only what decides an endpoint: IPs (canonical, invalid ones dropped), readiness,
deletion, node, hostname/subdomain and the named container ports in lookup order (containers,
then restartable init containers). Slices keep what decides whether a write is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slicectl.model.parse.common import (
    ParseError,
    canonical_ip,
    identity,
    integer,
    list_of,
    obj,
    str_map,
    string,
)
from slicectl.model.records import (
    LABEL_ZONE,
    ContainerPort,
    Endpoint,
    EndpointPort,
    NodeRecord,
    OwnerRef,
    PodRecord,
    SliceRecord,
    TargetRef,
)


def _container_ports(containers: list[Any], what: str) -> list[ContainerPort]:
    out: list[ContainerPort] = []
    for container in containers:
        if not isinstance(container, Mapping):
            raise ParseError(f"{what} entries must be objects")
        for port in list_of(container.get("ports"), f"{what}[].ports"):
            if not isinstance(port, Mapping):
                continue
            name, number = port.get("name"), integer(port.get("containerPort"))
            if not isinstance(name, str) or not name or number is None or not 0 < number < 65536:
                continue  # unusable for a named lookup
            protocol = port.get("protocol") or "TCP"
            out.append(ContainerPort(name, number, protocol if isinstance(protocol, str) else ""))
    return out


def parse_pod(raw: Any) -> PodRecord:
    meta, label = identity(raw, "Pod")
    spec = obj(raw.get("spec"), f"{label} spec")
    status = obj(raw.get("status"), f"{label} status")
    ips: list[str] = []
    for entry in list_of(status.get("podIPs"), f"{label} status.podIPs"):
        ip = canonical_ip(entry.get("ip")) if isinstance(entry, Mapping) else None
        if ip is not None and ip not in ips:
            ips.append(ip)
    ready, ready_transition = False, None
    for cond in list_of(status.get("conditions"), f"{label} status.conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
            when = cond.get("lastTransitionTime")
            ready_transition = when if isinstance(when, str) and when else None
    containers = list_of(spec.get("containers"), f"{label} spec.containers")
    sidecars = [
        c
        for c in list_of(spec.get("initContainers"), f"{label} spec.initContainers")
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    ]
    ports = _container_ports(containers, f"{label} spec.containers")
    ports += _container_ports(sidecars, f"{label} spec.initContainers")
    return PodRecord(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
        labels=str_map(meta.get("labels"), f"{label} metadata.labels"),
        phase=string(status.get("phase"), f"{label} status.phase"),
        pod_ips=tuple(ips),
        ready=ready,
        ready_transition=ready_transition,
        terminating=meta.get("deletionTimestamp") is not None,
        node_name=string(spec.get("nodeName"), f"{label} spec.nodeName"),
        hostname=string(spec.get("hostname"), f"{label} spec.hostname"),
        subdomain=string(spec.get("subdomain"), f"{label} spec.subdomain"),
        container_ports=tuple(ports),
        creation_timestamp=string(meta.get("creationTimestamp"), f"{label} creationTimestamp"),
    )


def parse_node(raw: Any) -> NodeRecord:
    """A Node or its PartialObjectMetadata (only metadata is read)."""
    meta, label = identity(raw, "Node", namespaced=False)
    zone = str_map(meta.get("labels"), f"{label} metadata.labels").get(LABEL_ZONE)
    return NodeRecord(
        name=meta["name"],
        zone=zone or None,
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
    )


def _slice_endpoint(raw: Any, what: str) -> Endpoint:
    ep = obj(raw, what)
    raw_addresses = list_of(ep.get("addresses"), f"{what}.addresses")
    addresses = tuple(a for a in raw_addresses if isinstance(a, str))
    cond = obj(ep.get("conditions"), f"{what}.conditions")
    # API semantics: nil ready/serving mean "unknown, treat as ready"; nil terminating is false.
    ready = cond.get("ready") is not False
    serving = cond.get("serving", cond.get("ready")) is not False
    ref = obj(ep.get("targetRef"), f"{what}.targetRef") or None
    target = None
    if ref is not None:
        target = TargetRef(
            namespace=string(ref.get("namespace"), f"{what}.targetRef.namespace"),
            name=string(ref.get("name"), f"{what}.targetRef.name"),
            uid=string(ref.get("uid"), f"{what}.targetRef.uid"),
            kind=string(ref.get("kind"), f"{what}.targetRef.kind"),
        )
    return Endpoint(
        addresses=addresses,
        ready=ready,
        serving=serving,
        terminating=cond.get("terminating") is True,
        target=target,
        node_name=string(ep.get("nodeName"), f"{what}.nodeName") or None,
        zone=string(ep.get("zone"), f"{what}.zone") or None,
        hostname=string(ep.get("hostname"), f"{what}.hostname") or None,
    )


def _slice_port(raw: Any, what: str) -> EndpointPort:
    port = obj(raw, what)
    app = port.get("appProtocol")
    return EndpointPort(
        name=string(port.get("name"), f"{what}.name"),
        port=integer(port.get("port")),
        protocol=string(port.get("protocol"), f"{what}.protocol") or "TCP",
        app_protocol=app if isinstance(app, str) else None,
    )


def _controller_owner(refs: list[Any]) -> OwnerRef | None:
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return OwnerRef(
                api_version=str(ref.get("apiVersion", "")),
                kind=str(ref.get("kind", "")),
                name=str(ref.get("name", "")),
                uid=str(ref.get("uid", "")),
            )
    return None


def parse_slice(raw: Any) -> SliceRecord:
    meta, label = identity(raw, "EndpointSlice")
    endpoints = [
        _slice_endpoint(e, f"{label} endpoints[{i}]")
        for i, e in enumerate(list_of(raw.get("endpoints"), f"{label} endpoints"))
    ]
    ports = [
        _slice_port(p, f"{label} ports[{i}]")
        for i, p in enumerate(list_of(raw.get("ports"), f"{label} ports"))
    ]
    return SliceRecord(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
        generation=integer(meta.get("generation")) or 0,
        address_type=string(raw.get("addressType"), f"{label} addressType"),
        labels=str_map(meta.get("labels"), f"{label} metadata.labels"),
        annotations=str_map(meta.get("annotations"), f"{label} metadata.annotations"),
        owner=_controller_owner(list_of(meta.get("ownerReferences"), f"{label} ownerReferences")),
        ports=tuple(ports),
        endpoints=tuple(endpoints),
        terminating=meta.get("deletionTimestamp") is not None,
    )
