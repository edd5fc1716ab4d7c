"""Pod -> Endpoint: which pods are listed and what each endpoint says (SPEC section 3).

Decides inclusion (terminal pods and pods without IPs are left out; terminating pods stay),
the conditions (serving = Ready, terminating = deletionTimestamp, ready = serving and not
terminating), the addresses of one family, hostname, node, zone and targetRef. Pod IPs arrive
already canonical from :mod:`slicectl.model.parse`, so the family is read from the text.
"""

from __future__ import annotations

from slicectl.model.parse import shared_endpoint
from slicectl.model.records import (
    IPV4,
    IPV6,
    TERMINAL_PHASES,
    Endpoint,
    NodeRecord,
    PodRecord,
    TargetRef,
)

EndpointKey = tuple[str, str, tuple[str, ...], str]


def ip_family(ip: str) -> str:
    """IPv6 or IPv4 for a canonical IP (IPv4-mapped addresses were already made IPv4)."""
    return IPV6 if ":" in ip else IPV4


def pod_included(pod: PodRecord) -> bool:
    """Upstream ``ShouldPodBeInEndpoints(pod, includeTerminating=true)``."""
    return pod.phase not in TERMINAL_PHASES and bool(pod.pod_ips)


def pod_endpoints(
    pod: PodRecord, node: NodeRecord | None, selector_name: str
) -> dict[str, Endpoint]:
    """The endpoint of ``pod`` for each address family it has an IP of (one pass over its IPs).

    ``pod`` must already be included and in the selector's namespace. A missing ``node`` only
    means no zone: the pod is still listed (upstream skips it and retries).
    """
    by_family: dict[str, list[str]] = {}
    for ip in pod.pod_ips:
        by_family.setdefault(ip_family(ip), []).append(ip)
    if not by_family:
        return {}
    serving = pod.ready
    ready = serving and not pod.terminating
    target = TargetRef(namespace=pod.namespace, name=pod.name, uid=pod.uid)
    node_name = pod.node_name or None
    zone = node.zone if node is not None and node.zone else None
    hostname = pod.hostname if pod.hostname and pod.subdomain == selector_name else None
    return {
        family: shared_endpoint(tuple(addresses), ready, serving, pod.terminating, target,
                                node_name, zone, hostname)
        for family, addresses in by_family.items()
    }


def endpoint_sort_key(ep: Endpoint) -> EndpointKey:
    """A total, stable order for endpoints inside a slice (target, then addresses)."""
    target = ep.target
    return (
        target.namespace if target else "",
        target.name if target else "",
        ep.addresses,
        ep.hostname or "",
    )
