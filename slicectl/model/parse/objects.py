"""Pods, Nodes and EndpointSlices from their API JSON.

Pods keep only what decides an endpoint: IPs (canonical; invalid ones, and those no
EndpointSlice may list, such as loopback or link-local, dropped), readiness,
deletion, node, hostname/subdomain and the named container ports in lookup order (containers,
then restartable init containers), plus the Ready condition's lastTransitionTime. Slices keep
what decides whether a write is needed.

Pods are held by the hundred thousand, so their parse also decides sharing: repeated strings are
interned (namespace, phase, node, hostname, subdomain, timestamps, label keys and values), and
identical label maps and container-port tuples are one object (the pods of one ReplicaSet carry
the same labels and ports). Shared maps are never mutated (records are immutable).
"""

from __future__ import annotations

import socket
import sys
import weakref
from collections.abc import Mapping
from typing import Any

from slicectl.model.parse.common import (
    ParseError,
    endpoint_ip,
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
    ObjectVersion,
    OwnerRef,
    PodRecord,
    SliceRecord,
    TargetRef,
)
from slicectl.model.sharing import SharedValues


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


class SharedLabels(dict[str, str]):
    """A label map shared by every pod that carries exactly these labels (weakly cached)."""

    __slots__ = ("__weakref__",)


_LABELS: weakref.WeakValueDictionary[tuple[tuple[str, str], ...], SharedLabels] = (
    weakref.WeakValueDictionary()
)
_PORTS_MAX = 4096
_PORTS: SharedValues[tuple[ContainerPort, ...]] = SharedValues(_PORTS_MAX)
_NO_LABELS = SharedLabels()
_intern = sys.intern
_pton, _ntop, _AF_INET = socket.inet_pton, socket.inet_ntop, socket.AF_INET
# IPv4 prefixes of the addresses an EndpointSlice may not list (unspecified, loopback,
# link-local, link-local multicast), and of a few it may: the fast parse leaves them all to
# the checked one
_MAYBE_SPECIAL = ("0.", "127.", "169.254.", "224.0.0.")


def shared_labels(value: Any, what: str) -> Mapping[str, str]:
    """``metadata.labels`` as a shared, interned map (see the module docstring)."""
    if not value and (value is None or isinstance(value, Mapping)):
        return _NO_LABELS
    items = tuple(obj(value, what).items())
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items):
        raise ParseError(f"{what} must map strings to strings")
    found = _LABELS.get(items)
    if found is not None:
        return found
    labels = SharedLabels((_intern(k), _intern(v)) for k, v in items)
    _LABELS[tuple(labels.items())] = labels
    return labels


def _shared_ports(ports: list[ContainerPort]) -> tuple[ContainerPort, ...]:
    return _PORTS(tuple(ports))


def _interned(value: Any, what: str) -> str:
    return _intern(string(value, what))


def parse_pod(raw: Any) -> PodRecord:
    """A pod record; the hot path of the watch and of every relist (see :func:`_fast_pod`)."""
    return _fast_pod(raw) or _checked_pod(raw)


_RawPort = tuple[str, int, str]
_FAST_PORTS: dict[tuple[_RawPort, ...], tuple[ContainerPort, ...]] = {}


def _fast_ports(containers: Any, sidecars_of: Any, out: list[_RawPort]) -> bool:
    """Append the usable named ports of well-formed containers; False on any odd shape."""
    if containers is None:
        return True
    if type(containers) is not list:
        return False
    for c in containers:
        if type(c) is not dict:
            return False
        if sidecars_of and c.get("restartPolicy") != "Always":
            continue
        ports = c.get("ports")
        if ports is None:
            continue
        if type(ports) is not list:
            return False
        for port in ports:
            if type(port) is not dict:
                return False
            name, number, protocol = port.get("name"), port.get("containerPort"), port.get(
                "protocol")
            if (name is not None and type(name) is not str) or type(number) is not int or not (
                protocol is None or type(protocol) is str
            ):
                return False  # an unnamed port is common: skipped below, as the checked parse does
            if name and 0 < number < 65536:
                out.append((name, number, protocol or "TCP"))
    return True


def _fast_pod(raw: Any) -> PodRecord | None:
    """The common, well-formed pod without the generic helpers' checks (4x cheaper).

    Any shape it does not expect (a missing section, a wrong type, a non-canonical IPv4, an
    IPv6 address, a label map seen for the first time) returns None, and :func:`_checked_pod`
    decides, with its errors and degradations; on what it accepts both give equal records.
    """
    if type(raw) is not dict:
        return None
    meta, spec, status = raw.get("metadata"), raw.get("spec"), raw.get("status")
    if type(meta) is not dict or type(spec) is not dict or type(status) is not dict:
        return None
    get = meta.get
    name, namespace, uid = get("name"), get("namespace"), get("uid")
    rv, created, labels_raw = get("resourceVersion"), get("creationTimestamp"), get("labels")
    if not (type(name) is str and name and type(namespace) is str and namespace
            and type(uid) is str and uid and type(rv) is str and type(created) is str):
        return None
    if labels_raw is None or labels_raw == {}:
        labels: Mapping[str, str] | None = _NO_LABELS
    elif type(labels_raw) is dict:
        try:
            labels = _LABELS.get(tuple(labels_raw.items()))
        except TypeError:  # an unhashable value
            return None
    else:
        return None
    if labels is None:
        return None
    get = status.get
    phase, pod_ips, conditions = get("phase"), get("podIPs"), get("conditions")
    ips: list[str] = []
    if pod_ips is not None:
        if type(pod_ips) is not list:
            return None
        for entry in pod_ips:
            ip = entry.get("ip") if type(entry) is dict else None
            if type(ip) is not str or ":" in ip:
                return None
            try:
                if _ntop(_AF_INET, _pton(_AF_INET, ip)) != ip:
                    return None
            except OSError:
                return None
            if ip.startswith(_MAYBE_SPECIAL):
                return None  # perhaps no endpoint address: the checked parse decides
            if ip not in ips:
                ips.append(ip)
    ready, ready_transition = False, None
    if conditions is not None:
        if type(conditions) is not list:
            return None
        for cond in conditions:
            if type(cond) is dict and cond.get("type") == "Ready":  # the first, as upstream
                ready = cond.get("status") == "True"
                when = cond.get("lastTransitionTime")
                ready_transition = _intern(when) if type(when) is str and when else None
                break
    get = spec.get
    node, hostname, subdomain = get("nodeName"), get("hostname"), get("subdomain")
    if not all(v is None or type(v) is str for v in (phase, node, hostname, subdomain)):
        return None
    raw_ports: list[_RawPort] = []
    if not (_fast_ports(get("containers"), False, raw_ports)
            and _fast_ports(get("initContainers"), True, raw_ports)):
        return None
    port_key = tuple(raw_ports)
    ports = _FAST_PORTS.get(port_key)
    if ports is None:
        if len(_FAST_PORTS) >= _PORTS_MAX:
            _FAST_PORTS.clear()
        ports = _FAST_PORTS[port_key] = _shared_ports([ContainerPort(*p) for p in raw_ports])
    return PodRecord(
        namespace=_intern(namespace),
        name=name,
        uid=uid,
        resource_version=rv,
        labels=labels,
        phase=_intern(phase) if phase else "",
        pod_ips=tuple(ips),
        ready=ready,
        ready_transition=ready_transition,
        terminating=meta.get("deletionTimestamp") is not None,
        node_name=_intern(node) if node else "",
        hostname=_intern(hostname) if hostname else "",
        subdomain=_intern(subdomain) if subdomain else "",
        container_ports=ports,
        creation_timestamp=_intern(created),
    )


def _checked_pod(raw: Any) -> PodRecord:
    meta, label = identity(raw, "Pod")
    spec = obj(raw.get("spec"), f"{label} spec")
    status = obj(raw.get("status"), f"{label} status")
    ips: list[str] = []
    for entry in list_of(status.get("podIPs"), f"{label} status.podIPs"):
        ip = endpoint_ip(entry.get("ip")) if isinstance(entry, Mapping) else None
        if ip is not None and ip not in ips:
            ips.append(ip)
    ready, ready_transition = False, None
    for cond in list_of(status.get("conditions"), f"{label} status.conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":  # the first: upstream's
            ready = cond.get("status") == "True"  # podutil.IsPodReady (GetPodConditionFromList)
            when = cond.get("lastTransitionTime")
            ready_transition = _intern(when) if isinstance(when, str) and when else None
            break
    containers = list_of(spec.get("containers"), f"{label} spec.containers")
    sidecars = [
        c
        for c in list_of(spec.get("initContainers"), f"{label} spec.initContainers")
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    ]
    ports = _container_ports(containers, f"{label} spec.containers")
    ports += _container_ports(sidecars, f"{label} spec.initContainers")
    return PodRecord(
        namespace=_intern(meta["namespace"]),
        name=meta["name"],
        uid=meta["uid"],
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
        labels=shared_labels(meta.get("labels"), f"{label} metadata.labels"),
        phase=_interned(status.get("phase"), f"{label} status.phase"),
        pod_ips=tuple(ips),
        ready=ready,
        ready_transition=ready_transition,
        terminating=meta.get("deletionTimestamp") is not None,
        node_name=_interned(spec.get("nodeName"), f"{label} spec.nodeName"),
        hostname=_interned(spec.get("hostname"), f"{label} spec.hostname"),
        subdomain=_interned(spec.get("subdomain"), f"{label} spec.subdomain"),
        container_ports=_shared_ports(ports),
        creation_timestamp=_interned(meta.get("creationTimestamp"), f"{label} creationTimestamp"),
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


# Slice endpoints by their parsed values (see _fast_endpoint), and the endpoints the planner
# builds (shared_endpoint); cleared when full. An endpoint record is immutable, so sharing one
# between slices, between versions of a slice and with the planner is safe.
_ENDPOINTS: dict[tuple[Any, ...], Endpoint] = {}
_ENDPOINTS_MAX = 16_384


def _remember(key: tuple[Any, ...], endpoint: Endpoint) -> Endpoint:
    if len(_ENDPOINTS) >= _ENDPOINTS_MAX:
        _ENDPOINTS.clear()
    _ENDPOINTS[key] = endpoint
    return endpoint


def shared_endpoint(addresses: tuple[str, ...], ready: bool, serving: bool, terminating: bool,
                    target: TargetRef | None, node_name: str | None, zone: str | None,
                    hostname: str | None) -> Endpoint:
    """The endpoint record with these values, built by the planner from a pod: the same
    record the watch echo of a slice listing it parses to (its key is the one
    :func:`_fast_endpoint` gives the endpoint as rendered), so a sync that compares its
    desired endpoints with a slice's finds most of them by identity, not by comparing
    fields (a flip in a 200-pod selector compared 200 pairs field by field)."""
    key = (addresses, ready, serving, terminating, target is not None,
           *((target.namespace, target.name, target.uid, target.kind) if target is not None
             else (None, None, None, None)),
           node_name, zone, hostname)
    found = _ENDPOINTS.get(key)
    if found is not None:
        return found
    return _remember(key, Endpoint(
        addresses=addresses, ready=ready, serving=serving, terminating=terminating,
        target=target, node_name=node_name, zone=zone, hostname=hostname))


def _fast_endpoint(ep: Any) -> Endpoint | None:
    """The common, well-formed endpoint without the generic helpers' checks and messages (a
    slice's watch echo carries up to 1,000 of them); None for any other shape, which
    :func:`_slice_endpoint` then decides. On what it accepts both give equal records.

    An endpoint equal to one parsed recently is that same record: a slice written for one
    readiness flip comes back on the watch with all its other endpoints unchanged, and looking
    them up costs a fifth of building them. The lookup comes before the checks of the values,
    keyed by the values as they are: a cached key holds only strings and Nones its checks
    accepted, and nothing else equals a string or None, so a hit needs no check."""
    if type(ep) is not dict:
        return None
    get = ep.get
    addresses, cond, ref = get("addresses"), get("conditions"), get("targetRef")
    if type(addresses) is not list or type(cond) is not dict:
        return None
    namespace = name = uid = kind = None
    if ref is not None:
        if type(ref) is not dict:
            return None
        if ref:
            namespace, name, uid, kind = (ref.get("namespace"), ref.get("name"), ref.get("uid"),
                                          ref.get("kind"))
    node, zone, hostname = get("nodeName"), get("zone"), get("hostname")
    ready = cond.get("ready")
    serving = cond.get("serving", ready) is not False
    terminating = cond.get("terminating") is True
    key = (tuple(addresses), ready is not False, serving, terminating, bool(ref), namespace,
           name, uid, kind, node, zone, hostname)
    try:
        found = _ENDPOINTS.get(key)
    except TypeError:  # an unhashable value, which no check accepts
        return None
    if found is not None:
        return found
    for a in addresses:
        if type(a) is not str:
            return None
    for v in (node, zone, hostname, namespace, name, uid, kind):
        if v is not None and type(v) is not str:
            return None
    return _remember(key, Endpoint(
        addresses=key[0],
        ready=key[1],
        serving=serving,
        terminating=terminating,
        target=TargetRef(namespace or "", name or "", uid or "", kind or "") if ref else None,
        node_name=node or None,
        zone=zone or None,
        hostname=hostname or None,
    ))


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
        _fast_endpoint(e) or _slice_endpoint(e, f"{label} endpoints[{i}]")
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


def parse_version(raw: Any, kind: str) -> ObjectVersion:
    """The identity and version of a namespaced object, reading nothing but its metadata."""
    meta, label = identity(raw, kind)
    return ObjectVersion(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
        generation=integer(meta.get("generation")) or 0,
    )
