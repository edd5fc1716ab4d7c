"""Slim, immutable records: the only shapes that travel past the watch layer.

A watch line is parsed once into one of these (see :mod:`slicectl.model.parse`) and the raw JSON
is dropped, so a cache of 150k pods holds a few small tuples each instead of full objects, and
the pure reconciler compares plain values. Only fields that decide an endpoint or a write are
kept; everything else a Pod or EndpointSlice carries is deliberately forgotten.

Records are frozen dataclasses; their mappings are plain dicts that nobody mutates after parsing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from slicectl.model.selector import Selector

IPV4 = "IPv4"
IPV6 = "IPv6"
ADDRESS_FAMILIES: tuple[str, str] = (IPV4, IPV6)

LABEL_SELECTOR_NAME = "kubernetes.io/endpoint-selector-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
ANNOTATION_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
LABEL_ZONE = "topology.kubernetes.io/zone"
DEFAULT_MANAGED_BY = "endpointselector-controller.slicectl.io"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})  # pods in these phases are never endpoints


@dataclass(frozen=True, slots=True)
class ContainerPort:
    """A declared container port, used to resolve a named ``targetPort``."""

    name: str
    port: int
    protocol: str = "TCP"


_DIGIT_RUNS = re.compile(r"\d+")


def _digit_run(match: re.Match[str]) -> str:
    digits = match.group().lstrip("0") or "0"
    return f"\x01{chr(0x20 + len(digits))}{digits}"


def age_order_key(creation_timestamp: str, name: str) -> str:
    """One string whose plain ordering is "oldest first, then natural name order".

    Natural order: ``web-2`` before ``web-10``; a digit run compares as a number, and before
    any text at the same place. Each digit run becomes ``\x01`` + a length character + the
    digits without leading zeros; text stays as it is (names are DNS subdomains, so every text
    character sorts above the marker). Computed once per pod record, never per sync.
    """
    return f"{creation_timestamp}\x00{_DIGIT_RUNS.sub(_digit_run, name)}"


@dataclass(frozen=True, slots=True)
class PodRecord:
    """A pod as the controller sees it. Parsed records intern their repeated strings (namespace,
    phase, node, label keys and values, timestamps) and share identical label maps and port
    tuples, so 150k pods cost well under 1 KiB each."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    labels: Mapping[str, str]
    phase: str
    pod_ips: tuple[str, ...]  # canonical form, invalid IPs already dropped
    ready: bool  # condition Ready == True
    ready_transition: str | None  # Ready condition lastTransitionTime (RFC 3339), if any
    terminating: bool  # metadata.deletionTimestamp set
    node_name: str
    hostname: str
    subdomain: str
    # Named-port lookup order: regular containers first, then restartable init containers.
    container_ports: tuple[ContainerPort, ...] = ()
    creation_timestamp: str = ""  # RFC 3339; orders new endpoints so pod cohorts share slices
    _order: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def order(self) -> str:
        """``age_order_key(creation_timestamp, name)``, computed once per record on first use
        (by the first sync that sorts it: watch events of unselected pods never pay for it)."""
        order = self._order
        if order is None:
            order = age_order_key(self.creation_timestamp, self.name)
            object.__setattr__(self, "_order", order)
        return order

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    zone: str | None
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class SelectorPort:
    """One ``spec.ports[]`` entry of an EndpointSelector (``port`` and ``targetPort`` unified)."""

    target_port: int | str
    name: str = ""
    protocol: str = "TCP"
    app_protocol: str | None = None


@dataclass(frozen=True, slots=True)
class SelectorRef:
    """Which selector API an object came from, to build its ownerReference and status path."""

    group: str
    version: str
    kind: str
    plural: str
    has_status: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True, slots=True)
class SelectorRecord:
    """An EndpointSelector of any flavour, validated.

    ``error`` holds why the spec is invalid (then ``selector`` is empty and must not be used);
    the controller reports it as ``Ready=False`` and writes no slices for it.
    """

    api: SelectorRef
    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    labels: Mapping[str, str]
    selector: Selector
    ip_families: tuple[str, ...] = ()
    ports: tuple[SelectorPort, ...] = ()
    creation_timestamp: str = ""
    deleting: bool = False
    error: str | None = None
    # The status as last read, so a status write happens only when something differs.
    status: Mapping[str, object] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class EndpointPort:
    name: str
    port: int | None
    protocol: str = "TCP"
    app_protocol: str | None = None


@dataclass(frozen=True, slots=True)
class TargetRef:
    namespace: str
    name: str
    uid: str
    kind: str = "Pod"


@dataclass(frozen=True, slots=True)
class Endpoint:
    addresses: tuple[str, ...]
    ready: bool
    serving: bool
    terminating: bool
    target: TargetRef | None = None
    node_name: str | None = None
    zone: str | None = None
    hostname: str | None = None
    # Computed once per record on first use (records are shared: see ``model.parse``).
    _identity: tuple[tuple[str, ...], str | None, str | None, str | None] | None = field(
        default=None, init=False, repr=False, compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        """The dataclass hash of the compared fields, computed once per record."""
        found = self._hash
        if found is None:
            found = hash((self.addresses, self.ready, self.serving, self.terminating,
                          self.target, self.node_name, self.zone, self.hostname))
            object.__setattr__(self, "_hash", found)
        return found

    @property
    def identity(self) -> tuple[tuple[str, ...], str | None, str | None, str | None]:
        """Upstream's endpoint identity: sorted addresses, hostname, target namespace and name.

        The pod UID is not part of it, so a pod recreated with the same name and IP (a
        StatefulSet) is updated in place rather than removed and re-added.
        """
        found = self._identity
        if found is None:
            target = self.target
            addresses = self.addresses
            found = (
                tuple(addresses) if len(addresses) < 2 else tuple(sorted(addresses)),
                self.hostname,
                target.namespace if target else None,
                target.name if target else None,
            )
            object.__setattr__(self, "_identity", found)
        return found


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = True


@dataclass(frozen=True, slots=True)
class ObjectVersion:
    """Which object, and which version of it, a write's answer names: all the writer reads of
    an update's answer (its echo on the watch brings the content to the cache)."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class SliceRecord:
    namespace: str
    name: str
    uid: str
    resource_version: str
    generation: int
    address_type: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner: OwnerRef | None  # the controller ownerReference, if any
    ports: tuple[EndpointPort, ...]
    endpoints: tuple[Endpoint, ...]
    terminating: bool = False  # metadata.deletionTimestamp set

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def selector_name(self) -> str | None:
        return self.labels.get(LABEL_SELECTOR_NAME)

    @property
    def managed_by(self) -> str | None:
        return self.labels.get(LABEL_MANAGED_BY)
