"""Packing one group (family + port list): which existing slices to keep, rewrite or empty, and
where new endpoints go. Upstream's ``reconcileByPortMapping`` heuristic, improved to keep the
slice count at the ideal ``ceil(endpoints / max)`` without spending writes it does not need:

1. Walk the existing slices (by name): keep the desired copy of each endpoint still wanted,
   drop the rest; an endpoint found in an earlier slice is dropped (duplicates heal). A slice
   whose endpoints or labels differ must be rewritten; one left with no endpoint is emptied.
2. New endpoints (oldest pod first) first fill slices being rewritten anyway, fullest first,
   then emptied slices (turning a delete into an update costs nothing). So a rollout that
   deletes old pods and adds new ones replaces them in place, in one write.
3. What is left goes into new slices only as long as the group stays within its ideal count
   (full ones first). A remainder goes into the untouched slice it fits best (all of it, one
   write), else into a new slice if that is still within the ideal, else into the untouched
   slices with the most room (fill before creating: a write now instead of a fragmented
   group that would need compaction later), but only while that takes at most
   ``FILL_EXTRA_WRITES`` more writes than placing it as upstream does (new full slices, the
   last part into the best-fitting untouched slice or a new one). Spreading 49 new pods over
   49 nearly full slices would be 49 writes where one create does, and would hold the last
   of them behind 49 rate-limit tokens; such a group is brought back to its ideal count by
   the budgeted compaction below, in quiet periods.
4. Free compaction: slices written anyway (rewritten or created) are merged while their
   endpoints fit in fewer of them, smallest first. An update becomes a delete, a create
   disappears: never an extra write.
5. Budgeted compaction (``extra_writes`` > 0; the controller grants a budget only to a
   selector that has been quiet for a while, so churn in flight is never compacted): while
   the group is above its ideal count, the smallest untouched slice is emptied into slices
   with room (those written anyway first), if that costs at most the writes left in the
   budget (its delete, plus one update per untouched slice that receives endpoints). A donor
   whose gaps to fill are spread over more slices than the budget affords gives part of its
   endpoints now (its update plus the receivers affordable) and the rest in later quiet
   periods, so a group always reaches its ideal count (a rollout leaves such gaps).

Linear in the endpoints apart from sorting the slots: everything is a lookup by identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slicectl.model.records import Endpoint, SliceRecord
from slicectl.reconcile.desired import GroupKey, Identity
from slicectl.reconcile.endpoints import endpoint_sort_key
from slicectl.reconcile.types import SliceSpec, SliceUpdate

# Filling untouched slices instead of creating may cost at most this many more writes.
FILL_EXTRA_WRITES = 1


@dataclass(slots=True, eq=False)
class _Slot:
    """A slice during packing (an existing one, or a create when ``record`` is None), with the
    endpoints it will hold."""

    record: SliceRecord | None
    endpoints: list[Endpoint]

    @property
    def name(self) -> str:
        return self.record.name if self.record is not None else "~"


@dataclass(slots=True)
class GroupResult:
    creates: list[SliceSpec] = field(default_factory=list)
    updates: list[SliceUpdate] = field(default_factory=list)
    kept: list[SliceRecord] = field(default_factory=list)
    emptied: list[SliceRecord] = field(default_factory=list)  # to delete, or to recycle
    added: int = 0
    removed: int = 0
    extra_writes: int = 0  # writes spent on budgeted compaction


def pack_group(
    group: GroupKey,
    desired: Mapping[Identity, Endpoint],
    existing: Iterable[SliceRecord],
    labels: Mapping[str, str],
    max_endpoints: int,
    extra_writes: int = 0,
) -> GroupResult:
    result = GroupResult()
    remaining = dict(desired)
    written: list[_Slot] = []  # rewritten anyway, refilled, or created
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
            elif want is ep or want == ep:  # mostly one record: see parse.shared_endpoint
                # keep the slice's own record: see types._multisets_differ
                kept.append(ep)
            else:
                kept.append(want)
                changed = True
        slot = _Slot(record, kept)
        if not kept:
            empty.append(slot)
        elif changed or record.labels != labels:
            written.append(slot)
        else:
            untouched.append(slot)

    new = list(remaining.values())  # oldest pods first: see desired.age_order
    result.added = len(new)
    ideal = _ceil(len(desired), max_endpoints)
    # 2. Slices written anyway, fullest first; then emptied ones (a delete saved).
    written.sort(key=lambda s: (-len(s.endpoints), s.name))
    taken = _fill([*written, *empty], new, 0, max_endpoints)
    written += [s for s in empty if s.endpoints]
    empty = [s for s in empty if not s.endpoints]

    # 3. New slices as long as the group stays within its ideal count, full ones first; the
    #    rest into the best-fitting untouched slice, else into the untouched slices with the
    #    most room (fill before creating) if that costs at most FILL_EXTRA_WRITES more writes
    #    than upstream's placement, which takes whatever is left.
    allowed = ideal - len(written) - len(untouched)
    while len(new) - taken >= max_endpoints and allowed > 0:
        written.append(_Slot(None, new[taken : taken + max_endpoints]))
        taken += max_endpoints
        allowed -= 1
    rest = len(new) - taken
    best = _best_fit(untouched, rest, max_endpoints) if rest else None
    if best is not None:
        _touch(best, untouched, written).endpoints.extend(new[taken:])
        taken = len(new)
    elif rest and allowed > 0:
        written.append(_Slot(None, new[taken:]))
        taken = len(new)
    elif rest:
        roomy = sorted(untouched, key=lambda s: (len(s.endpoints), s.name))
        receivers, left = _spread(roomy, rest, max_endpoints)
        if len(receivers) + _ceil(left, max_endpoints) <= (
                _ceil(rest, max_endpoints) + FILL_EXTRA_WRITES):
            for slot in receivers:
                _touch(slot, untouched, written)
            taken = _fill(receivers, new, taken, max_endpoints)
    # Upstream's placement for what is left: new full slices, then the last part into the
    # best-fitting untouched slice, else a new one.
    while len(new) - taken >= max_endpoints:
        written.append(_Slot(None, new[taken : taken + max_endpoints]))
        taken += max_endpoints
    if taken < len(new):
        best = _best_fit(untouched, len(new) - taken, max_endpoints)
        if best is not None:
            _touch(best, untouched, written).endpoints.extend(new[taken:])
        else:
            written.append(_Slot(None, new[taken:]))
        taken = len(new)

    # 4. Free compaction among the slices written anyway.
    empty += _merge_written(written, max_endpoints)
    # 5. Budgeted compaction.
    if extra_writes > 0:
        result.extra_writes = _compact(written, untouched, empty, ideal, max_endpoints,
                                       extra_writes)

    result.emptied = [s.record for s in empty if s.record is not None]
    for slot in sorted(written, key=lambda s: s.name):
        spec = _spec(group, slot.endpoints, labels)
        if slot.record is None:
            result.creates.append(spec)
        else:
            result.updates.append(SliceUpdate(slot.record, spec))
    result.kept = [s.record for s in untouched if s.record is not None]
    return result


def _ceil(n: int, size: int) -> int:
    return -(-n // size)


def _spread(slots: list[_Slot], rest: int, max_endpoints: int) -> tuple[list[_Slot], int]:
    """The slots of ``slots`` (in order) that ``rest`` new endpoints would top up, and how
    many of them would still need a place."""
    receivers: list[_Slot] = []
    for slot in slots:
        if rest == 0:
            break
        room = max_endpoints - len(slot.endpoints)
        if room > 0:
            receivers.append(slot)
            rest -= min(room, rest)
    return receivers, rest


def _fill(slots: list[_Slot], new: list[Endpoint], taken: int, max_endpoints: int) -> int:
    """Top up ``slots`` in order with ``new[taken:]``; returns how many are taken now."""
    for slot in slots:
        if taken == len(new):
            break
        room = max_endpoints - len(slot.endpoints)
        if room > 0:
            slot.endpoints.extend(new[taken : taken + room])
            taken = min(taken + room, len(new))
    return taken


def _touch(slot: _Slot, untouched: list[_Slot], written: list[_Slot]) -> _Slot:
    """Move an untouched slot to the written ones (it will be updated)."""
    untouched.remove(slot)
    written.append(slot)
    return slot


def _best_fit(slots: list[_Slot], rest: int, max_endpoints: int) -> _Slot | None:
    """The untouched slice left closest to full after taking all ``rest`` endpoints."""
    best: _Slot | None = None
    best_gap = max_endpoints + 1
    for slot in slots:
        gap = max_endpoints - len(slot.endpoints) - rest
        if 0 <= gap < best_gap:
            best, best_gap = slot, gap
    return best


def _move_all(donor: _Slot, receivers: list[_Slot], max_endpoints: int) -> None:
    """Move every endpoint of ``donor`` into ``receivers`` (fullest first); they must fit."""
    eps = donor.endpoints
    donor.endpoints = []
    _fill(sorted(receivers, key=lambda s: (-len(s.endpoints), s.name)), eps, 0, max_endpoints)


def _merge_written(written: list[_Slot], max_endpoints: int) -> list[_Slot]:
    """Empty the smallest written slots into the other written ones while they fit; returns
    the emptied existing slots (their update becomes a delete; an emptied create vanishes)."""
    emptied: list[_Slot] = []
    while len(written) > 1:
        donor = min(written, key=lambda s: (len(s.endpoints), s.record is not None, s.name))
        others = [s for s in written if s is not donor]
        if sum(max_endpoints - len(s.endpoints) for s in others) < len(donor.endpoints):
            break
        _move_all(donor, others, max_endpoints)
        written.remove(donor)
        if donor.record is not None:
            emptied.append(donor)
    return emptied


def _compact(written: list[_Slot], untouched: list[_Slot], empty: list[_Slot], ideal: int,
             max_endpoints: int, budget: int) -> int:
    """Empty the smallest untouched slots into slots with room while the group is above its
    ideal count and the budget lasts; returns the extra writes spent."""
    spent = 0
    while untouched and len(written) + len(untouched) > ideal:
        donor = min(untouched, key=lambda s: (len(s.endpoints), s.name))
        need = len(donor.endpoints)
        receivers: list[_Slot] = []
        room = 0
        cost = 1  # the donor's delete
        candidates = sorted((s for s in written if len(s.endpoints) < max_endpoints),
                            key=lambda s: -len(s.endpoints))
        candidates += sorted((s for s in untouched if s is not donor
                              and len(s.endpoints) < max_endpoints),
                             key=lambda s: len(s.endpoints))  # most room first
        for slot in candidates:
            if room >= need:
                break
            receivers.append(slot)
            room += max_endpoints - len(slot.endpoints)
            cost += slot in untouched
        if room < need:
            break
        if spent + cost > budget:
            spent += _compact_part(donor, receivers, written, untouched, empty,
                                   budget - spent, max_endpoints)
            break
        for slot in receivers:
            if slot in untouched:
                _touch(slot, untouched, written)
        untouched.remove(donor)
        _move_all(donor, receivers, max_endpoints)
        empty.append(donor)
        spent += cost
    return spent


def _compact_part(donor: _Slot, receivers: list[_Slot], written: list[_Slot],
                  untouched: list[_Slot], empty: list[_Slot], budget: int,
                  max_endpoints: int) -> int:
    """A donor too costly to empty at once gives what the budget can move now: its update
    plus the receivers it affords (slices written anyway cost nothing). It shrinks every time,
    so later quiet periods empty it; returns the extra writes spent."""
    afford = budget - 1  # what is left after the donor's update (or delete)
    if afford < 0:
        return 0
    hosts = [s for s in receivers if s not in untouched]
    bought = [s for s in receivers if s in untouched][:afford]
    before = {id(s): len(s.endpoints) for s in bought}
    moved = _fill(sorted(hosts + bought, key=lambda s: (-len(s.endpoints), s.name)),
                  donor.endpoints, 0, max_endpoints)
    if moved == 0:
        return 0
    donor.endpoints = donor.endpoints[moved:]
    spent = 1
    untouched.remove(donor)
    (written if donor.endpoints else empty).append(donor)
    for slot in bought:
        if len(slot.endpoints) > before[id(slot)]:
            _touch(slot, untouched, written)
            spent += 1
    return spent


def _spec(group: GroupKey, endpoints: list[Endpoint], labels: Mapping[str, str]) -> SliceSpec:
    family, ports = group
    return SliceSpec(
        address_type=family,
        ports=ports,
        endpoints=tuple(sorted(endpoints, key=endpoint_sort_key)),
        labels=labels,
    )
