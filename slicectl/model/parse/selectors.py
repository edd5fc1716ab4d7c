"""EndpointSelectors of every flavour from their API JSON, validated.

An invalid spec never raises: the record carries ``error`` (a message for the Ready condition and
the Warning event) and an empty selector. Checks mirror what the API server would reject on the
slices we would write (port names, appProtocol) so an invalid selector fails loudly once instead
of failing every slice write. ``targetPort`` (slicectl.io, discovery.k8s.io) and ``port``
(gateway XEndpointSelector) are both accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from slicectl.model.parse.common import (
    PROTOCOLS,
    ParseError,
    dns_label_error,
    iana_svc_name_error,
    identity,
    integer,
    obj,
    str_map,
    string,
)
from slicectl.model.records import ADDRESS_FAMILIES, SelectorPort, SelectorRecord, SelectorRef
from slicectl.model.selector import (
    Selector,
    SelectorError,
    from_label_selector,
    label_key_error,
    label_value_error,
)

# The CRDs' maxItems and the EndpointSlice API's documented limit (v1.32 validates 20000).
_MAX_SLICE_PORTS = 100


def _selector_port(raw: Any, where: str) -> SelectorPort | str:
    """One ``spec.ports[]`` entry, or why it is invalid."""
    if not isinstance(raw, Mapping):
        return f"{where} must be an object"
    target = raw.get("targetPort", raw.get("port"))
    if integer(target) is not None:
        if not 0 < target < 65536:
            return f"{where}.targetPort {target} must be between 1 and 65535"
    elif isinstance(target, str):
        if err := iana_svc_name_error(target):
            return f"{where}.targetPort: {err}"
    else:
        return f"{where}.targetPort (or port) is required: a port number or a container port name"
    name, app = raw.get("name") or "", raw.get("appProtocol")
    protocol = raw.get("protocol") or "TCP"
    if not isinstance(name, str):
        return f"{where}.name must be a string"
    if name and (err := dns_label_error(name)):
        return f"{where}.name: {err}"
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        return f"{where}.protocol {protocol!r} must be one of TCP, UDP, SCTP"
    if app is not None and (not isinstance(app, str) or label_key_error(app)):
        return f"{where}.appProtocol {app!r} must be a qualified name"
    return SelectorPort(target_port=target, name=name, protocol=protocol, app_protocol=app)


_Spec = tuple[Selector, tuple[str, ...], tuple[SelectorPort, ...]]


def _selector_spec(spec: Mapping[str, Any], name: str) -> _Spec | str:
    """(selector, ip_families, ports) from a spec, or why the spec is invalid."""
    if err := label_value_error(name):
        return f"metadata.name cannot be used as a slice label value: {err}"
    if spec.get("selector") is None:
        return "spec.selector is required"
    try:
        selector = from_label_selector(spec.get("selector"))
    except SelectorError as exc:
        return f"spec.selector: {exc}"
    if selector.empty:
        return "spec.selector must not be empty"
    families = spec.get("ipFamilies") or []
    if not isinstance(families, list) or any(f not in ADDRESS_FAMILIES for f in families):
        return f"spec.ipFamilies {families!r} must list IPv4 and/or IPv6"
    if len(set(families)) != len(families):
        return f"spec.ipFamilies {families!r} must not repeat a family"
    raw_ports = spec.get("ports") or []
    if not isinstance(raw_ports, list):
        return "spec.ports must be a list"
    if len(raw_ports) > _MAX_SLICE_PORTS:
        return f"spec.ports has {len(raw_ports)} entries, at most {_MAX_SLICE_PORTS} are allowed"
    ports: list[SelectorPort] = []
    for i, raw in enumerate(raw_ports):
        port = _selector_port(raw, f"spec.ports[{i}]")
        if isinstance(port, str):
            return port
        ports.append(port)
    if len(ports) > 1:
        names = [p.name for p in ports]
        if len(set(names)) != len(names):
            return "spec.ports names must be unique (and set) when there is more than one port"
    return selector, tuple(families), tuple(ports)


def parse_selector(raw: Any, api: SelectorRef) -> SelectorRecord:
    """An EndpointSelector of any flavour; an invalid spec gives a record with ``error`` set."""
    meta, label = identity(raw, api.kind)
    generation = meta.get("generation")
    try:
        spec_or_error = _selector_spec(obj(raw.get("spec"), f"{label} spec"), meta["name"])
    except ParseError as exc:
        spec_or_error = str(exc)
    status = raw.get("status")
    record = SelectorRecord(
        api=api,
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        resource_version=string(meta.get("resourceVersion"), f"{label} resourceVersion"),
        generation=integer(generation) or 0,
        labels=str_map(meta.get("labels"), f"{label} metadata.labels"),
        selector=Selector(),
        creation_timestamp=string(meta.get("creationTimestamp"), f"{label} creationTimestamp"),
        deleting=meta.get("deletionTimestamp") is not None,
        status=dict(status) if isinstance(status, Mapping) else {},
    )
    if isinstance(spec_or_error, str):
        return replace(record, error=spec_or_error)
    selector, families, ports = spec_or_error
    return replace(record, selector=selector, ip_families=families, ports=ports)
