"""Validation and defaulting of the other built-in kinds the embedded server serves.

Why: pods, nodes, namespaces, services, leases and events are stored for slicectl and its tests,
which never depend on the full upstream rules; each kind gets its object-meta rule (namespaces:
DNS label names, everything else: DNS subdomain) and the few required fields whose absence a
real server rejects, so a bad fixture fails here as it would on a cluster. Pods get upstream's
rules for what slicectl reads from them: container names and images, container ports
(``validateContainerPorts``, init containers' too), ``nodeName``, ``hostname``, and on a status
write ``status.podIPs`` (``validatePodIPs``), the addresses slicectl publishes. Also the
EndpointSlice defaults and the shape an admitted EndpointSlice is stored (and read back) in,
as Go's JSON round trip leaves it (:func:`endpointslice_stored_shape`).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from slicectl.sim.validation import errors as e
from slicectl.sim.validation.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    go_len,
    parse_ip_sloppy,
    port_name_errors,
    qualified_name_errors,
)


def validate_pod(obj: dict[str, Any]) -> list[e.Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [e.required("spec.containers")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [e.required("spec.containers")]
    causes: list[e.Cause] = []
    names: set[str] = set()
    for i, container in enumerate(containers):  # validateContainers' order, per container
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
        if not container.get("image"):
            causes.append(e.required(f"{path}.image"))
        causes.extend(_container_ports(container.get("ports"), f"{path}.ports"))
        if name and name in names:
            causes.append(e.duplicate(f"{path}.name", name))
        names.add(str(name))
    for i, init in enumerate(spec.get("initContainers") or []):  # validateInitContainers
        if isinstance(init, dict):
            causes.extend(_container_ports(init.get("ports"),
                                           f"spec.initContainers[{i}].ports"))
    node, hostname = spec.get("nodeName"), spec.get("hostname")
    if node:  # validatePodSpec's order: the node, then the hostname
        causes.extend(e.invalid("spec.nodeName", node, m)
                      for m in dns1123_subdomain_errors(str(node)))
    if hostname:
        causes.extend(e.invalid("spec.hostname", hostname, m)
                      for m in dns1123_label_errors(str(hostname)))
    for i, container in enumerate(containers):  # validateContainersOnlyForPod, after the spec
        image = container.get("image") if isinstance(container, dict) else None
        if isinstance(image, str) and image != image.strip():
            causes.append(e.invalid(f"spec.containers[{i}].image", image,
                                    "must not have leading or trailing whitespace"))
    return causes


PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
PORT_RANGE = "must be between 1 and 65535, inclusive"


def _container_ports(ports: Any, path: str) -> list[e.Cause]:
    """``validateContainerPorts``: a name (unique within the container) is an IANA_SVC_NAME,
    ``containerPort`` is required and a port number, as is a ``hostPort`` when set, and the
    protocol (defaulted to TCP before) is TCP, UDP or SCTP."""
    causes: list[e.Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(port, dict):
            continue
        at = f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            errs = port_name_errors(name)
            causes.extend(e.invalid(f"{at}.name", name, m) for m in errs)
            if not errs and name in names:
                causes.append(e.duplicate(f"{at}.name", name))
            names.add(name)
        number = port.get("containerPort")
        if not number:
            causes.append(e.required(f"{at}.containerPort"))
        elif isinstance(number, int) and not 0 < number < 65536:
            causes.append(e.invalid(f"{at}.containerPort", number, PORT_RANGE))
        host = port.get("hostPort")
        if host and isinstance(host, int) and not 0 < host < 65536:
            causes.append(e.invalid(f"{at}.hostPort", host, PORT_RANGE))
        protocol = port.get("protocol")
        if not protocol:
            causes.append(e.required(f"{at}.protocol"))
        elif protocol not in PORT_PROTOCOLS:
            causes.append(e.not_supported(f"{at}.protocol", protocol, PORT_PROTOCOLS))
    return causes


NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def validate_pod_ips(obj: dict[str, Any]) -> list[e.Cause]:
    """``validatePodIPs`` of a status update: every IP valid (``ParseIPSloppy``), and when
    there are several, one of each family (an IPv4-mapped IPv6 address is IPv4), none twice.
    An invalid IP among several also fails the dual-stack check, with its internal error."""
    status = obj.get("status")
    entries = status.get("podIPs") if isinstance(status, dict) else None
    if not isinstance(entries, list):
        return []
    ips = [str(p.get("ip") or "") if isinstance(p, dict) else "" for p in entries]
    parsed = [parse_ip_sloppy(ip) for ip in ips]
    causes = [e.invalid(f"status.podIPs[{i}]", ip, NOT_AN_IP)
              for i, (ip, addr) in enumerate(zip(ips, parsed, strict=True)) if addr is None]
    if len(ips) < 2:
        return causes
    bad = next((i for i, addr in enumerate(parsed) if addr is None), None)
    if bad is not None:
        causes.append(e.internal("status.podIPs", "failed to check for dual stack with "
                                 f"error:invalid IP[{bad}]: {ips[bad]}"))
    v6 = {isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is None for a in parsed}
    if bad is not None or v6 != {True, False} or len(ips) > 2:
        printed = "[]core.PodIP{" + ", ".join(_go_pod_ip(ip) for ip in ips) + "}"
        causes.append(e.invalid_printed("status.podIPs", printed,
                                        "may specify no more than one IP for each IP family"))
    seen: set[str] = set()
    for i, ip in enumerate(ips):
        if ip in seen:
            causes.append(e.duplicate_printed(f"status.podIPs[{i}]", _go_pod_ip(ip)))
        seen.add(ip)
    return causes


def _go_pod_ip(ip: str) -> str:
    """A ``core.PodIP`` as Go's ``%#v`` prints it."""
    return f"core.PodIP{{IP:{e.go_quote(ip)}}}"


def validate_lease(obj: dict[str, Any]) -> list[e.Cause]:
    """``ValidateLeaseSpec``: a positive duration, transitions never negative."""
    spec = obj.get("spec") or {}
    spec = spec if isinstance(spec, dict) else {}
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(e.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(e.invalid("spec.leaseTransitions", transitions,
                                "must be greater than or equal to 0"))
    return causes


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


# ValidateEventCreate / ValidateEventUpdate of pkg/apis/core/validation/events.go, for writes
# through events.k8s.io/v1; lengths are Go's len (UTF-8 bytes), paths the internal field names
EVENT_LIMITS = (("reportingInstance", "reportingInstance", 128), ("action", "action", 128),
                ("reason", "reason", 128))
EVENT_NOTE_LIMIT = 1024
EVENT_IMMUTABLE = ("regarding", "reason", "note", "deprecatedSource",
                   "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount",
                   "type", "eventTime", "action", "related", "reportingController",
                   "reportingInstance")


def validate_events_v1(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[e.Cause]:
    causes = _legacy_event(obj)
    if old is not None:
        if obj.get("series") != old.get("series"):
            causes.extend(_event_series(obj))
        causes.extend(e.invalid(f, obj.get(f), "field is immutable")
                      for f in EVENT_IMMUTABLE if obj.get(f) != old.get(f))
        return causes
    causes.extend(_event_series(obj))
    if not obj.get("eventTime"):
        causes.append(e.required("eventTime"))
    if obj.get("type") not in ("Normal", "Warning"):
        causes.append(e.invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
    for f in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount",
              "deprecatedSource"):
        if obj.get(f):
            causes.append(e.invalid(f, "", "needs to be unset"))
    return causes


def _legacy_event(obj: dict[str, Any]) -> list[e.Cause]:
    """``legacyValidateEvent`` for an event with an eventTime (every events.k8s.io/v1 one)."""
    causes: list[e.Cause] = []
    raw = obj.get("regarding")
    regarding = raw if isinstance(raw, dict) else {}
    namespace = (obj.get("metadata") or {}).get("namespace")
    if not regarding.get("namespace") and namespace not in ("default", "kube-system"):
        causes.append(e.invalid("involvedObject.namespace", "", "does not match event.namespace"))
    controller = obj.get("reportingController")
    if not controller:
        causes.append(e.required("reportingController"))
    else:
        causes.extend(e.invalid("reportingController", controller, m)
                      for m in qualified_name_errors(str(controller)))
    for field, path, limit in EVENT_LIMITS:
        value = str(obj.get(field) or "")
        if not value:
            causes.append(e.required(path))
        elif go_len(value) > limit:
            causes.append(e.invalid(path, "", f"can have at most {limit} characters"))
    if go_len(str(obj.get("note") or "")) > EVENT_NOTE_LIMIT:
        causes.append(e.invalid("message", "", f"can have at most {EVENT_NOTE_LIMIT} characters"))
    return causes


def _event_series(obj: dict[str, Any]) -> list[e.Cause]:
    series = obj.get("series")
    if series is None:
        return []
    series = series if isinstance(series, dict) else {}
    count = series.get("count")
    causes = []
    if not isinstance(count, int) or count < 2:
        causes.append(e.invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(e.required("series.lastObservedTime"))
    return causes


def default_pod(obj: dict[str, Any]) -> None:
    """The pod defaults ``SetDefaults_Pod*`` set that kubectl shows back, and the v1 status
    conversion of its IPs (:func:`convert_pod_ips`)."""
    convert_pod_ips(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
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


def convert_pod_ips(obj: dict[str, Any]) -> None:
    """``podIP``/``hostIP`` through the v1 <-> internal PodStatus conversion (KEP-563,
    KEP-2681): the singular field, when set, is the first of the plural list (alone in it when
    the list was empty or disagreed with it), and it is given back as the list's first entry,
    or not at all when the list is empty. A client that writes only ``podIP`` (an old kubelet,
    a hand-written status) thus gets ``podIPs`` too, as on a real server."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for one, many in (("podIP", "podIPs"), ("hostIP", "hostIPs")):
        single, plural = status.get(one), status.get(many)
        if single and not (isinstance(plural, list) and plural and isinstance(plural[0], dict)
                           and plural[0].get("ip") == single):
            status[many] = plural = [{"ip": single}]
        first = plural[0] if isinstance(plural, list) and plural else None
        if isinstance(first, dict) and first.get("ip"):
            status[one] = first["ip"]
        else:
            status.pop(one, None)


def endpointslice_stored_shape(obj: dict[str, Any]) -> None:
    """An admitted EndpointSlice as the real server gives it back, after Go's JSON round trip:
    ``endpoints`` and ``ports`` (``[]T`` without omitempty) always present, null when absent
    (an ``[]`` sent is read back as null too, but only once field ownership has seen it:
    :func:`endpointslice_empty_lists`); every endpoint's ``conditions`` (a
    non-pointer struct) always present, ``{}`` when none were sent; the omitempty pointers,
    maps and lists inside (``hostname``, ``nodeName``, ``zone``, ``hints``, ``targetRef``,
    ``conditions.ready``, ``hints.forZones``, ``ports[].port``, ...) absent when null, as are
    empty ``deprecatedTopology``, ``hints.forZones`` and ``targetRef`` strings (a ``zone`` of
    "" stays: it is a pointer)."""
    for key in ("endpoints", "ports"):
        if obj.get(key) is None:
            obj[key] = None
    for endpoint in obj["endpoints"] or []:
        if not isinstance(endpoint, dict):
            continue
        _drop(endpoint, (None,))
        conditions = endpoint.get("conditions")
        if isinstance(conditions, dict):
            _drop(conditions, (None,))
        else:
            endpoint["conditions"] = {}
        if endpoint.get("deprecatedTopology") == {}:
            del endpoint["deprecatedTopology"]
        if isinstance(endpoint.get("hints"), dict):
            _drop(endpoint["hints"], (None, []))
        if isinstance(endpoint.get("targetRef"), dict):
            _drop(endpoint["targetRef"], (None, ""))
    for port in obj["ports"] or []:
        if isinstance(port, dict):
            _drop(port, (None,))


def endpointslice_empty_lists(obj: dict[str, Any]) -> None:
    """An EndpointSlice's empty ``endpoints``/``ports`` become null, as storage (protobuf)
    gives them back; field ownership, recorded before, still saw the ``[]`` sent."""
    for key in ("endpoints", "ports"):
        if obj.get(key) == []:
            obj[key] = None


def _drop(fields: dict[str, Any], empty: tuple[Any, ...]) -> None:
    """Remove the keys whose value is one of ``empty`` (same type too: 0 is not "")."""
    for key in [k for k, v in fields.items()
                if any(v == blank and type(v) is type(blank) for blank in empty)]:
        del fields[key]


def default_endpointslice(obj: dict[str, Any]) -> None:
    """``SetDefaults_EndpointPort``: protocol TCP, name "" when unset (a JSON null decodes to
    unset)."""
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            for key, default in (("protocol", "TCP"), ("name", "")):
                if port.get(key) is None:
                    port[key] = default
