"""Selector + pods + nodes -> the endpoints that should exist, grouped the way slices are.

A group is (address family, normalised port list): every slice holds endpoints of one family
with one port list. Within a group endpoints are keyed by their upstream identity (addresses,
hostname, pod namespace/name), which is how existing slice contents are matched in linear time.
Also decides the address families: ``spec.ipFamilies``, else every family among the pods.
Groups are filled oldest pod first (:func:`age_order`), the order new endpoints are placed in;
the sort key is precomputed once per pod record (``PodRecord.order``), never per sync.
The caller hands in the selector's pods from the selector -> pods index, so a sync costs
O(selected pods); any other pods are filtered out here, so passing more is only slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from slicectl.model.records import (
    ADDRESS_FAMILIES,
    Endpoint,
    EndpointPort,
    NodeRecord,
    PodRecord,
    SelectorRecord,
)
from slicectl.reconcile.endpoints import pod_endpoints, pod_included
from slicectl.reconcile.ports import numeric_ports, resolve_ports

GroupKey = tuple[str, tuple[EndpointPort, ...]]
Identity = tuple[tuple[str, ...], str | None, str | None, str | None]


@dataclass(slots=True)
class DesiredState:
    families: tuple[str, ...]  # the address families the selector publishes
    groups: dict[GroupKey, dict[Identity, Endpoint]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(len(eps) for eps in self.groups.values())


def selected_pods(selector: SelectorRecord, pods: Iterable[PodRecord]) -> Iterable[PodRecord]:
    """The pods of ``pods`` in the selector's namespace that it selects and that are listed."""
    namespace, match = selector.namespace, selector.selector.matches
    for pod in pods:
        if pod.namespace == namespace and pod_included(pod) and match(pod.labels):
            yield pod


age_order = attrgetter("order")
"""Oldest first, then natural name order (``web-2`` before ``web-10``): the order new endpoints
are placed in. Pods created together (a ReplicaSet's cohort) tend to leave together in a
rollout; keeping them in the same slices means their departure rewrites few slices instead of
all of them. See :func:`slicectl.model.records.age_order_key`."""


def desired_state(
    selector: SelectorRecord, pods: Iterable[PodRecord], nodes: Mapping[str, NodeRecord]
) -> DesiredState:
    shared_ports = numeric_ports(selector.ports)
    candidate_families = selector.ip_families or ADDRESS_FAMILIES
    groups: dict[GroupKey, dict[Identity, Endpoint]] = {}
    for pod in sorted(selected_pods(selector, pods), key=age_order):
        ports = shared_ports if shared_ports is not None else resolve_ports(pod, selector.ports)
        node = nodes.get(pod.node_name) if pod.node_name else None
        for family, ep in pod_endpoints(pod, node, selector.name).items():
            if family in candidate_families:
                key = (family, ports)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = {}
                group[ep.identity] = ep
    if selector.ip_families:
        families = selector.ip_families
    else:
        present = {family for family, _ in groups}
        families = tuple(f for f in ADDRESS_FAMILIES if f in present)
    return DesiredState(families=families, groups=groups)
