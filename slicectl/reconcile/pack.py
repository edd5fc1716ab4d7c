"""Packing one group (family + port list): which existing slices to keep, rewrite or empty, and
where new endpoints go. This is upstream's ``reconcileByPortMapping`` heuristic, improved.

1. Walk the existing slices (by name): keep the desired copy of each endpoint still wanted,
   drop the rest; an endpoint found in an earlier slice is dropped (duplicates heal). A slice
   whose endpoints or labels differ must be rewritten; one left with no endpoint is emptied.
2. New endpoints first fill slices being rewritten anyway, fullest first, then emptied slices
   (turning a delete into an update costs nothing and saves a write elsewhere).
3. What is left goes into new full slices; a final remainder below the maximum goes into the
   untouched slice it fits best (all of it, or none), else into one more new slice.

Linear in the endpoints: everything is a dict lookup by endpoint identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slicectl.model.records import Endpoint, SliceRecord
from slicectl.reconcile.desired import GroupKey, Identity
from slicectl.reconcile.endpoints import endpoint_sort_key
from slicectl.reconcile.types import SliceSpec, SliceUpdate


@dataclass(slots=True, eq=False)
class _Slot:
    """An existing slice during packing, with the endpoints it will hold."""

    record: SliceRecord
    endpoints: list[Endpoint]


@dataclass(slots=True)
class GroupResult:
    creates: list[SliceSpec] = field(default_factory=list)
    updates: list[SliceUpdate] = field(default_factory=list)
    kept: list[SliceRecord] = field(default_factory=list)
    emptied: list[SliceRecord] = field(default_factory=list)  # to delete, or to recycle
    added: int = 0
    removed: int = 0


def pack_group(
    group: GroupKey,
    desired: Mapping[Identity, Endpoint],
    existing: Iterable[SliceRecord],
    labels: Mapping[str, str],
    max_endpoints: int,
) -> GroupResult:
    result = GroupResult()
    remaining = dict(desired)
    rewrite: list[_Slot] = []
    untouched: list[_Slot] = []
    empty: list[_Slot] = []
    for record in sorted(existing, key=lambda s: s.name):
        kept: list[Endpoint] = []
        changed = False
        for ep in record.endpoints:
            want = remaining.pop(ep.identity, None)
            if want is None:
                changed = True
                result.removed += 1
            else:
                kept.append(want)
                changed = changed or want != ep
        slot = _Slot(record, kept)
        if not kept:
            empty.append(slot)
        elif changed or record.labels != labels:
            rewrite.append(slot)
        else:
            untouched.append(slot)

    new = list(remaining.values())  # oldest pods first: see desired.age_order
    result.added = len(new)
    taken = 0
    # Phase 2: slices written anyway, fullest first; then emptied ones (a delete saved).
    rewrite.sort(key=lambda s: (-len(s.endpoints), s.record.name))
    for slot in [*rewrite, *empty]:
        if taken == len(new):
            break
        room = max_endpoints - len(slot.endpoints)
        if room > 0:
            slot.endpoints.extend(new[taken : taken + room])
            taken = min(taken + room, len(new))
    refilled = [s for s in empty if s.endpoints]
    rewrite.extend(refilled)
    result.emptied = [s.record for s in empty if not s.endpoints]

    # Phase 3: new full slices; a final remainder may fill the best-fitting untouched slice.
    while taken < len(new):
        rest = len(new) - taken
        best = _best_fit(untouched, rest, max_endpoints) if rest < max_endpoints else None
        if best is not None:
            best.endpoints.extend(new[taken:])
            untouched.remove(best)
            rewrite.append(best)
            break
        chunk = new[taken : taken + max_endpoints]
        taken += len(chunk)
        result.creates.append(_spec(group, chunk, labels))

    result.updates = [
        SliceUpdate(s.record, _spec(group, s.endpoints, labels))
        for s in sorted(rewrite, key=lambda s: s.record.name)
    ]
    result.kept = [s.record for s in untouched]
    return result


def _best_fit(slots: list[_Slot], rest: int, max_endpoints: int) -> _Slot | None:
    """The untouched slice left closest to full after taking all ``rest`` endpoints."""
    best: _Slot | None = None
    best_gap = max_endpoints + 1
    for slot in slots:
        gap = max_endpoints - len(slot.endpoints) - rest
        if 0 <= gap < best_gap:
            best, best_gap = slot, gap
    return best


def _spec(group: GroupKey, endpoints: list[Endpoint], labels: Mapping[str, str]) -> SliceSpec:
    family, ports = group
    return SliceSpec(
        address_type=family,
        ports=ports,
        endpoints=tuple(sorted(endpoints, key=endpoint_sort_key)),
        labels=labels,
    )
