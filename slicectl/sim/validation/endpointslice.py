"""``discovery.k8s.io/v1`` EndpointSlice validation, as ``pkg/apis/discovery/validation``.

Why: slicectl writes EndpointSlices; the embedded server must refuse exactly what a real one
refuses (and accept the rest), or tests against it would lie. Rules: addressType required, one
of IPv4/IPv6/FQDN and immutable; at most 1000 endpoints, each with 1..100 addresses valid for
the address type and not special-purpose (``ValidateNonSpecialIP``); nodeName a DNS subdomain;
hostname a DNS label; at most 16 deprecatedTopology labels; at most 8 zone hints, each a
distinct label value; at most 100 ports with unique names (DNS labels), protocol TCP/UDP/SCTP,
port 0..65535 and appProtocol a qualified name (the last two harsher than upstream, which
allows 20000 ports and checks no port range).
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.meta import validate_labels, validate_object_meta
from slicectl.sim.validation.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    ip_family_error,
    label_value_errors,
    qualified_name_errors,
    special_ip_errors,
)

ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 100
MAX_TOPOLOGY_LABELS = 16
MAX_ZONE_HINTS = 8


def validate_endpointslice(obj: dict[str, Any], old: dict[str, Any] | None) -> list[e.Cause]:
    causes = validate_object_meta(obj.get("metadata"), True, dns1123_subdomain_errors,
                                  kube_finalizers=True)
    address_type = obj.get("addressType") or ""
    if not address_type:
        causes.append(e.required("addressType"))
    elif address_type not in ADDRESS_TYPES:
        causes.append(e.not_supported("addressType", address_type, ADDRESS_TYPES))
    causes.extend(_endpoints(obj.get("endpoints"), str(address_type)))
    causes.extend(_ports(obj.get("ports")))
    if old is not None and old.get("addressType") != obj.get("addressType"):
        causes.append(e.invalid("addressType", address_type, "field is immutable"))
    return causes


def _endpoints(endpoints: Any, address_type: str) -> list[e.Cause]:
    if endpoints is None:
        return []
    if not isinstance(endpoints, list):
        return [e.invalid("endpoints", endpoints, "must be a list")]
    if len(endpoints) > MAX_ENDPOINTS:
        return [e.too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    causes: list[e.Cause] = []
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        if not isinstance(endpoint, dict):
            causes.append(e.invalid(path, endpoint, "must be an object"))
            continue
        causes.extend(_addresses(endpoint.get("addresses") or [], address_type,
                                 f"{path}.addresses"))
        topology = endpoint.get("deprecatedTopology")
        if isinstance(topology, dict) and len(topology) > MAX_TOPOLOGY_LABELS:
            causes.append(e.too_many(f"{path}.deprecatedTopology", len(topology),
                                     MAX_TOPOLOGY_LABELS))
        causes.extend(validate_labels(topology, f"{path}.deprecatedTopology"))
        hostname = endpoint.get("hostname")
        if hostname is not None:
            causes.extend(e.invalid(f"{path}.hostname", hostname, m)
                          for m in dns1123_label_errors(str(hostname)))
        node_name = endpoint.get("nodeName")
        if node_name is not None:
            causes.extend(e.invalid(f"{path}.nodeName", node_name, m)
                          for m in dns1123_subdomain_errors(str(node_name)))
        hints = endpoint.get("hints")
        if hints is not None:
            causes.extend(_hints(hints, f"{path}.hints"))
    return causes


def _hints(hints: Any, path: str) -> list[e.Cause]:
    """``validateHints``: at most 8 zones (nothing else checked past that), no zone twice, each
    name a label value (an empty one included)."""
    if not isinstance(hints, dict):
        return [e.invalid(path, hints, "must be an object")]
    zones = hints.get("forZones")
    if zones is None:
        return []
    if not isinstance(zones, list):
        return [e.invalid(f"{path}.forZones", zones, "must be a list")]
    if len(zones) > MAX_ZONE_HINTS:
        return [e.too_many(f"{path}.forZones", len(zones), MAX_ZONE_HINTS)]
    causes: list[e.Cause] = []
    seen: set[str] = set()
    for i, zone in enumerate(zones):
        name = zone.get("name") if isinstance(zone, dict) else None
        text = name if isinstance(name, str) else ""
        zone_path = f"{path}.forZones[{i}].name"
        if text in seen:
            causes.append(e.duplicate(zone_path, text))
        seen.add(text)
        causes.extend(e.invalid(zone_path, text, m) for m in label_value_errors(text))
    return causes


def _addresses(addresses: Any, address_type: str, path: str) -> list[e.Cause]:
    if not isinstance(addresses, list) or not addresses:
        return [e.required(path, "must contain at least 1 address")]
    causes: list[e.Cause] = []
    if len(addresses) > MAX_ADDRESSES:
        causes.append(e.too_many(path, len(addresses), MAX_ADDRESSES))
    for j, address in enumerate(addresses):
        item = f"{path}[{j}]"
        text = str(address)
        if address_type in ("IPv4", "IPv6"):
            family_error = ip_family_error(text, 4 if address_type == "IPv4" else 6)
            if family_error:
                causes.append(e.invalid(item, text, family_error))
            causes.extend(e.invalid(item, text, m) for m in special_ip_errors(text))
        elif address_type == "FQDN":
            causes.extend(_fqdn(item, text))
    return causes


def _ports(ports: Any) -> list[e.Cause]:
    if ports is None:
        return []
    if not isinstance(ports, list):
        return [e.invalid("ports", ports, "must be a list")]
    if len(ports) > MAX_PORTS:
        return [e.too_many("ports", len(ports), MAX_PORTS)]
    causes: list[e.Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"ports[{i}]"
        if not isinstance(port, dict):
            causes.append(e.invalid(path, port, "must be an object"))
            continue
        name = str(port.get("name") or "")
        if name:
            causes.extend(e.invalid(f"{path}.name", name, m) for m in dns1123_label_errors(name))
        if name in names:
            causes.append(e.duplicate(f"{path}.name", name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            causes.append(e.required(f"{path}.protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(e.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
        number = port.get("port")
        if number is not None and (
            not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= 65535
        ):
            causes.append(e.invalid(f"{path}.port", number,
                                    "must be between 0 and 65535, inclusive"))
        app_protocol = port.get("appProtocol")
        if app_protocol is not None:
            causes.extend(e.invalid(f"{path}.appProtocol", app_protocol, m)
                          for m in qualified_name_errors(str(app_protocol)))
    return causes


def _fqdn(path: str, value: str) -> list[e.Cause]:
    """``IsFullyQualifiedDomainName``: the first failure only, on the name without its final
    dot (or, for a label over 63 characters, on that label)."""
    if not value:
        return [e.required(path)]
    name = value.removesuffix(".")
    errs = dns1123_subdomain_errors(name)
    if errs:
        return [e.invalid(path, name, ",".join(errs))]
    labels = name.split(".")
    if len(labels) < 2:
        return [e.invalid(path, name, "should be a domain with at least two segments separated "
                                      "by dots")]
    for label in labels:
        errs = dns1123_label_errors(label)
        if errs:
            return [e.invalid(path, label, ",".join(errs))]
    return []
