"""Selector + pods + nodes -> the endpoints that should exist, grouped the way slices are.

A group is (address family, normalised port list): every slice holds endpoints of one family
with one port list. Within a group endpoints are keyed by their upstream identity (addresses,
hostname, pod namespace/name), which is how existing slice contents are matched in linear time.
Only the families of ``spec.ipFamilies`` are kept, else every family among the pods.
Groups are filled oldest pod first (:func:`age_order`), the order new endpoints are placed in;
the sort key is precomputed once per pod record (``PodRecord.order``), never per sync.
The caller hands in the selector's pods from the selector -> pods index, so a sync costs
O(selected pods); any other pods are filtered out here, so passing more is only slower.

An :class:`EndpointMemo` (one per selector, kept by the caller between syncs) carries each pod
record's endpoints over to the next sync: records are immutable and replaced on every change,
so a pod record seen by the last sync under an equal selector spec was selected then and is
selected now, and has the same endpoints unless its node's zone changed. A readiness flip in a
200-pod selector then matches and builds one endpoint instead of 200; the result is the same
with or without a memo.

Equal group keys are one object (:func:`_shared_key`, once per built entry), so grouping a
sync's endpoints looks a group up only where the key changes: hashing a key hashes its
``EndpointPort`` records in Python, and named ports give every pod its own port tuple.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from slicectl.model.records import (
    ADDRESS_FAMILIES,
    Endpoint,
    EndpointPort,
    NodeRecord,
    PodRecord,
    SelectorRecord,
)
from slicectl.model.sharing import SharedValues
from slicectl.reconcile.endpoints import pod_endpoints, pod_included
from slicectl.reconcile.ports import numeric_ports, resolve_ports

GroupKey = tuple[str, tuple[EndpointPort, ...]]
Identity = tuple[tuple[str, ...], str | None, str | None, str | None]
_Endpoints = tuple[tuple[GroupKey, Identity, Endpoint], ...]
# A selected pod record, its order key, its node's zone, and its (group, identity, endpoint)
# for each family the selector publishes.
_Entry = tuple[PodRecord, str, str | None, _Endpoints]
_ORDER = 1
# Group keys by value (see the module docstring); cleared when full.
_shared_key: SharedValues[GroupKey] = SharedValues(4096)


class EndpointMemo:
    """The pods the previous sync of one selector selected and the endpoints it built for them,
    by pod record (see the module docstring). Valid for an equal selector spec only; holds the
    records it names, so an ``id`` in it always means that record; each sync keeps only the
    pods it selected, so deleted pods leave with the next sync."""

    __slots__ = ("_entries", "_spec")

    def __init__(self) -> None:
        self._spec: object = None
        self._entries: dict[int, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def recall(self, spec: object) -> dict[int, _Entry]:
        """The entries of the last sync, if it planned with an equal ``spec``."""
        return self._entries if self._spec == spec else {}

    def keep(self, spec: object, entries: dict[int, _Entry]) -> None:
        self._spec, self._entries = spec, entries


@dataclass(slots=True)
class DesiredState:
    groups: dict[GroupKey, dict[Identity, Endpoint]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(len(eps) for eps in self.groups.values())


age_order = attrgetter("order")
"""Oldest first, then natural name order (``web-2`` before ``web-10``): the order new endpoints
are placed in. Pods created together (a ReplicaSet's cohort) tend to leave together in a
rollout; keeping them in the same slices means their departure rewrites few slices instead of
all of them. See :func:`slicectl.model.records.age_order_key`."""


def _pod_entries(
    pod: PodRecord,
    node: NodeRecord | None,
    selector: SelectorRecord,
    shared_ports: tuple[EndpointPort, ...] | None,
    families: tuple[str, ...],
) -> _Endpoints:
    ports = shared_ports if shared_ports is not None else resolve_ports(pod, selector.ports)
    return tuple(
        (_shared_key((family, ports)), ep.identity, ep)
        for family, ep in pod_endpoints(pod, node, selector.name).items()
        if family in families
    )


def desired_state(
    selector: SelectorRecord,
    pods: Iterable[PodRecord],
    nodes: Mapping[str, NodeRecord],
    memo: EndpointMemo | None = None,
) -> DesiredState:
    shared_ports = numeric_ports(selector.ports)
    candidate_families = selector.ip_families or ADDRESS_FAMILIES
    # Everything besides the pod and its node that selection and endpoints depend on.
    spec = (selector.namespace, selector.selector, selector.name, selector.ports,
            candidate_families)
    previous = memo.recall(spec) if memo is not None else {}
    namespace, match = selector.namespace, selector.selector.matches
    current: dict[int, _Entry] = {}
    for pod in pods:
        pod_id = id(pod)
        entry = previous.get(pod_id)
        if entry is None or entry[0] is not pod:  # not selected by this spec before
            if not (pod.namespace == namespace and pod_included(pod) and match(pod.labels)):
                continue
            entry = None
        node = nodes.get(pod.node_name) if pod.node_name else None
        zone = node.zone if node is not None and node.zone else None
        if entry is None or entry[2] != zone:
            entry = (pod, pod.order, zone, _pod_entries(pod, node, selector, shared_ports,
                                                        candidate_families))
        current[pod_id] = entry
    if memo is not None:
        memo.keep(spec, current)
    groups: dict[GroupKey, dict[Identity, Endpoint]] = {}
    last: GroupKey | None = None
    group: dict[Identity, Endpoint] = {}
    for entry in sorted(current.values(), key=itemgetter(_ORDER)):  # see age_order
        for key, identity, ep in entry[3]:
            if key is not last:  # equal keys are mostly one object: see _shared_key
                last = key
                found = groups.get(key)
                if found is None:
                    found = groups[key] = {}
                group = found
            group[identity] = ep
    return DesiredState(groups=groups)
