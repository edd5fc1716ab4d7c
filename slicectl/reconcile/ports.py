"""Selector ports -> the port list of a pod's endpoint, and the canonical form of port lists.

A numeric ``targetPort`` is used as is; a name is looked up per pod by name *and* protocol in
containers, then restartable init containers (the order of ``PodRecord.container_ports``), and
a name missing on a pod drops that port for that pod (missing on every pod, it is reported:
:func:`unresolved_ports`). Port lists are normalised (sorted) so that
nil, empty and reordered lists are the same group key and never cause a write.
"""

from __future__ import annotations

from collections.abc import Iterable

from slicectl.model.records import ContainerPort, EndpointPort, PodRecord, SelectorPort

PortKey = tuple[str, str, int, str]


def find_port(pod: PodRecord, port: SelectorPort) -> int | None:
    """Upstream ``FindPort``: the number ``port.target_port`` means on ``pod``, if any."""
    target = port.target_port
    if isinstance(target, int):
        return target
    return _named_port(pod.container_ports, target, port.protocol)


def _named_port(ports: tuple[ContainerPort, ...], name: str, protocol: str) -> int | None:
    for cp in ports:
        if cp.name == name and cp.protocol == protocol:
            return cp.port
    return None


def _port_key(p: EndpointPort) -> PortKey:
    return (p.name, p.protocol, -1 if p.port is None else p.port, p.app_protocol or "")


def normalize_ports(ports: Iterable[EndpointPort] | None) -> tuple[EndpointPort, ...]:
    """A canonical, hashable port list: None and [] are equal, order does not matter."""
    return tuple(sorted(ports or (), key=_port_key))


def resolve_ports(
    pod: PodRecord, selector_ports: tuple[SelectorPort, ...]
) -> tuple[EndpointPort, ...]:
    """The normalised port list of ``pod``'s endpoints (ports that do not resolve are left out)."""
    if not selector_ports:
        return ()
    out: list[EndpointPort] = []
    for sp in selector_ports:
        number = find_port(pod, sp)
        if number is not None:
            out.append(EndpointPort(sp.name, number, sp.protocol, sp.app_protocol))
    return normalize_ports(out)


def unresolved_ports(
    selector_ports: tuple[SelectorPort, ...], listed: Iterable[tuple[EndpointPort, ...]]
) -> list[SelectorPort]:
    """The named selector ports that no endpoint got, given the port lists of the groups that
    hold endpoints: a name no selected pod declares (a typo, say). None without endpoints."""
    named = [sp for sp in selector_ports if isinstance(sp.target_port, str)]
    groups = list(listed) if named else []
    if not groups:
        return []
    found = {(p.name, p.protocol) for ports in groups for p in ports}
    return [sp for sp in named if (sp.name, sp.protocol) not in found]


def numeric_ports(selector_ports: tuple[SelectorPort, ...]) -> tuple[EndpointPort, ...] | None:
    """The port list shared by every pod when no port is named, else None (resolve per pod)."""
    if any(isinstance(sp.target_port, str) for sp in selector_ports):
        return None
    return normalize_ports(
        EndpointPort(sp.name, int(sp.target_port), sp.protocol, sp.app_protocol)
        for sp in selector_ports
    )
