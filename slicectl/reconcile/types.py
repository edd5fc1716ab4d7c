"""The planner's inputs and outputs: settings, the slices it wants, and the plan of writes.

A :class:`Plan` is the whole contract between the pure core and the controller: the controller
applies it in the stages :func:`~slicectl.reconcile.order.write_stages` gives (an endpoint
moving between slices is briefly duplicated rather than briefly missing) and reports the
counts as metrics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from slicectl.model.records import DEFAULT_MANAGED_BY, Endpoint, EndpointPort, SliceRecord


@dataclass(frozen=True, slots=True)
class Settings:
    max_endpoints_per_slice: int = 100
    managed_by: str = DEFAULT_MANAGED_BY

    def __post_init__(self) -> None:
        if not 1 <= self.max_endpoints_per_slice <= 1000:
            raise ValueError("max_endpoints_per_slice must be between 1 and 1000")


@dataclass(frozen=True, slots=True)
class SliceSpec:
    """The full desired content of one slice (ports normalised, endpoints sorted)."""

    address_type: str
    ports: tuple[EndpointPort, ...]
    endpoints: tuple[Endpoint, ...]
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class SliceUpdate:
    """Rewrite ``existing`` so that it holds ``spec`` (a patch carries only the differences)."""

    existing: SliceRecord
    spec: SliceSpec

    @property
    def endpoints_changed(self) -> bool:
        """Order-insensitive: a reordered but equal endpoint list is no change."""
        old, new = self.existing.endpoints, self.spec.endpoints
        return len(old) != len(new) or _multisets_differ(old, new)

    @property
    def ports_changed(self) -> bool:
        """Order-insensitive, and a nil port list equals an empty one."""
        old, new = self.existing.ports, self.spec.ports
        return len(old) != len(new) or _multisets_differ(old, new)

    @property
    def labels_changed(self) -> bool:
        return dict(self.existing.labels) != dict(self.spec.labels)

    @property
    def changed(self) -> bool:
        return self.labels_changed or self.ports_changed or self.endpoints_changed


@dataclass(frozen=True, slots=True)
class Plan:
    creates: tuple[SliceSpec, ...] = ()
    updates: tuple[SliceUpdate, ...] = ()
    deletes: tuple[SliceRecord, ...] = ()
    endpoints_added: int = 0
    endpoints_removed: int = 0
    desired_slices: int = 1  # with perfect packing: sum of ceil(n / max) per group, at least 1
    desired_endpoints: int = 0

    @property
    def empty(self) -> bool:
        """True when the plan makes no API write."""
        return not (self.creates or self.updates or self.deletes)

    @property
    def writes(self) -> int:
        return len(self.creates) + len(self.updates) + len(self.deletes)


def _multisets_differ(a: Sequence[Hashable], b: Sequence[Hashable]) -> bool:
    """``Counter(a) != Counter(b)``, compared as plain dicts (in C): counts built from
    iterables are all positive, so the two comparisons agree; ``Counter.__eq__`` loops in Python.

    Items that are the same object at the same place, counted from either end, are in both
    multisets and are left out first: the planner keeps a slice's own endpoint records where
    they are still wanted, so a rewritten slice's lists mostly differ in a few places only."""
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] is b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[-1 - tail] is b[-1 - tail]:
        tail += 1
    return dict.__ne__(Counter(a[head:len(a) - tail]), Counter(b[head:len(b) - tail])) is True
