"""The planner: one selector's desired endpoints + its existing slices -> the fewest writes.

Decides, across groups (family + port list), what :mod:`slicectl.reconcile.pack` does not:
which existing slices are considered at all (only this manager's slices of this selector, not
terminating), what a selector being deleted may still publish (only endpoints its slices
already list: no create, as upstream), which are deleted outright (owned by another selector
UID: never reused; or of a family / port list no longer wanted: reusable), the single
placeholder slice when nothing is published, and recycling: a create paired with a reusable
delete of the same address type becomes one update of that slice. No write is planned when
nothing changed.

``compaction_budget`` is the number of extra writes (beyond the fewest) the plan may spend to
bring fragmented groups back to their ideal slice count (see :mod:`slicectl.reconcile.pack`);
with 0 (the default) the plan is the fewest writes, and merging slices written anyway is the
only compaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from slicectl.model.records import (
    IPV4,
    Endpoint,
    NodeRecord,
    PodRecord,
    SelectorRecord,
    SliceRecord,
)
from slicectl.reconcile.desired import (
    DesiredState,
    EndpointMemo,
    GroupKey,
    Identity,
    desired_state,
)
from slicectl.reconcile.labels import desired_labels
from slicectl.reconcile.pack import pack_group
from slicectl.reconcile.ports import normalize_ports
from slicectl.reconcile.types import Plan, Settings, SliceSpec, SliceUpdate


def is_managed(selector: SelectorRecord, slice_: SliceRecord, settings: Settings) -> bool:
    """Whether ``slice_`` is one of this selector's slices that slicectl may touch at all."""
    return (
        not slice_.terminating
        and slice_.namespace == selector.namespace
        and slice_.managed_by == settings.managed_by
        and slice_.selector_name == selector.name
    )


def plan(
    selector: SelectorRecord,
    pods: Iterable[PodRecord],
    nodes: Mapping[str, NodeRecord],
    existing_slices: Iterable[SliceRecord],
    settings: Settings,
    *,
    compaction_budget: int = 0,
    memo: EndpointMemo | None = None,
) -> Plan:
    """The writes that make ``existing_slices`` list exactly the pods ``selector`` selects.

    ``pods`` may hold any pods: only those in the selector's namespace that it selects count.
    Slices of other managers or selectors, and terminating slices, are ignored. An invalid
    selector gets an empty plan (its slices are left as they are). ``memo`` (the selector's
    own, kept between syncs) only saves work: see :class:`~slicectl.reconcile.desired.EndpointMemo`.
    """
    if selector.error is not None or selector.selector.empty:
        return Plan()
    desired = desired_state(selector, pods, nodes, memo)
    if not selector.deleting:
        return _plan_for(selector, desired, existing_slices, settings, compaction_budget)
    # Being deleted: publish only endpoints its slices list already. Anywhere first (one that
    # changed ports then moves only if the slice it leaves can be recycled); if that still
    # needs a create, only in the group that lists it, which never does.
    existing = list(existing_slices)
    owned = [s for s in existing if is_owned(selector, s, settings)]
    for per_group in (False, True):
        the_plan = _plan_for(selector, _only_published(desired, owned, per_group), existing,
                             settings, 0)
        if not the_plan.creates:
            break
    return the_plan


def is_owned(selector: SelectorRecord, slice_: SliceRecord, settings: Settings) -> bool:
    """One of this selector's slices (:func:`is_managed`) that names it, by uid, as owner."""
    return is_managed(selector, slice_, settings) and _owned(selector, slice_)


def _owned(selector: SelectorRecord, slice_: SliceRecord) -> bool:
    return slice_.owner is not None and slice_.owner.uid == selector.uid


def _plan_for(
    selector: SelectorRecord,
    desired: DesiredState,
    existing_slices: Iterable[SliceRecord],
    settings: Settings,
    compaction_budget: int,
) -> Plan:
    labels = desired_labels(selector.name, selector.labels, settings.managed_by)
    max_n = settings.max_endpoints_per_slice

    by_group: dict[GroupKey, list[SliceRecord]] = defaultdict(list)
    foreign: list[SliceRecord] = []
    reusable: list[SliceRecord] = []
    for s in existing_slices:
        if not is_managed(selector, s, settings):
            continue
        if not _owned(selector, s):
            foreign.append(s)
            continue
        key = _group_of(s)
        (by_group[key] if key in desired.groups else reusable).append(s)
    removed = sum(len(s.endpoints) for s in (*foreign, *reusable))

    creates: list[SliceSpec] = []
    updates: list[SliceUpdate] = []
    kept = 0
    added = 0
    for group in sorted(desired.groups, key=_group_order):
        result = pack_group(group, desired.groups[group], by_group[group], labels, max_n,
                            compaction_budget)
        compaction_budget -= result.extra_writes
        creates += result.creates
        updates += result.updates
        reusable += result.emptied
        kept += len(result.kept)
        added += result.added
        removed += result.removed

    if not (creates or updates or kept or selector.deleting):
        placeholder = _placeholder(selector, labels, reusable)
        if isinstance(placeholder, SliceSpec):
            creates.append(placeholder)
        else:
            reusable.remove(placeholder)

    creates, recycled, deletes = _recycle(creates, reusable)
    return Plan(
        creates=tuple(creates),
        updates=tuple(updates + recycled),
        deletes=tuple(sorted(foreign + deletes, key=lambda s: s.name)),
        endpoints_added=added,
        endpoints_removed=removed,
        desired_slices=max(1, sum(-(-len(eps) // max_n) for eps in desired.groups.values())),
        desired_endpoints=desired.total,
    )


def _group_order(group: GroupKey) -> tuple[str, list[tuple[str, str, int, str]]]:
    family, ports = group
    return family, [(p.name, p.protocol, p.port or 0, p.app_protocol or "") for p in ports]


def _group_of(slice_: SliceRecord) -> GroupKey:
    return slice_.address_type, normalize_ports(slice_.ports)


def _only_published(
    desired: DesiredState, owned: list[SliceRecord], per_group: bool
) -> DesiredState:
    """The desired endpoints a selector being deleted keeps: those its slices already list
    (in the same group when ``per_group``). Upstream creates no slice for an owner being
    deleted (it would race the garbage collector); publishing nothing new means no endpoint
    needs a new slice, so its slices (kept while a finalizer holds the owner) only lose dead
    endpoints and keep conditions current. A group left empty empties its slices."""
    listed: dict[GroupKey | None, set[Identity]] = defaultdict(set)
    for s in owned:
        listed[_group_of(s) if per_group else None].update(ep.identity for ep in s.endpoints)
    groups: dict[GroupKey, dict[Identity, Endpoint]] = {}
    for group, endpoints in desired.groups.items():
        published = listed.get(group if per_group else None, set())
        groups[group] = {i: ep for i, ep in endpoints.items() if i in published}
    return DesiredState(groups)


def _placeholder(
    selector: SelectorRecord, labels: Mapping[str, str], reusable: list[SliceRecord]
) -> SliceSpec | SliceRecord:
    """The empty slice published when no endpoint is: an equivalent existing one, or a spec."""
    family = selector.ip_families[0] if selector.ip_families else IPV4
    for s in sorted(reusable, key=lambda s: s.name):
        if s.address_type == family and not (s.endpoints or s.ports) and s.labels == labels:
            return s
    return SliceSpec(address_type=family, ports=(), endpoints=(), labels=labels)


def _recycle(
    creates: list[SliceSpec], reusable: list[SliceRecord]
) -> tuple[list[SliceSpec], list[SliceUpdate], list[SliceRecord]]:
    """Turn (create, delete of the same address type) pairs into updates of the deleted slice.

    Slices closest to the new content are reused first (empty ones, then by name), so a
    placeholder with stale labels becomes a label-only update.
    """
    pool: dict[str, list[SliceRecord]] = defaultdict(list)
    for s in sorted(reusable, key=lambda s: (bool(s.endpoints), bool(s.ports), s.name)):
        pool[s.address_type].append(s)
    kept_creates: list[SliceSpec] = []
    recycled: list[SliceUpdate] = []
    for spec in creates:
        candidates = pool.get(spec.address_type)
        if candidates:
            update = SliceUpdate(candidates.pop(0), spec)
            if update.changed:  # an identical slice needs no write at all
                recycled.append(update)
        else:
            kept_creates.append(spec)
    deletes = [s for slices in pool.values() for s in slices]
    return kept_creates, recycled, deletes
