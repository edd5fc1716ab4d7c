"""The order a plan's writes go out in: stages, each written concurrently.

A sync that writes several slices (a scale-up's top-up and new slice, a scale-down's emptied
slices) used to send them one after another, so every pod in it waited for all the round trips
before it. Only one order matters to a consumer: an endpoint that *moves* between slices (the
packer merges a fragment into a slice written anyway) must be listed by its new slice before
its old one drops it, so it is briefly duplicated, never briefly missing. So:

* a write that drops an endpoint another write of the plan adds waits for that write;
* a delete waits for every create (the selector's slice count never dips on the way, as when
  the placeholder replaces the last slice);
* everything else goes in the first stage, together.

Stages peel off the writes whose dependencies are all written. A cycle (two slices trading
endpoints, which the packer does not plan but a plan could hold) has no order that keeps every
endpoint listed; its writes go together in a last stage.
"""

from __future__ import annotations

from slicectl.model.records import SliceRecord
from slicectl.reconcile.desired import Identity
from slicectl.reconcile.types import Plan, SliceSpec, SliceUpdate

_Write = SliceSpec | SliceUpdate | SliceRecord


def write_stages(plan: Plan) -> list[Plan]:
    """``plan`` split into stages, in order; the writes of one stage may go concurrently."""
    writes: list[_Write] = [*plan.creates, *plan.updates, *plan.deletes]
    if len(writes) <= 1:
        return [plan] if writes else []
    gains = [_gains(w) for w in writes]
    adders: dict[Identity, set[int]] = {}
    for i, gained in enumerate(gains):
        for ident in gained:
            adders.setdefault(ident, set()).add(i)
    creates = set(range(len(plan.creates)))
    after: list[set[int]] = []
    for i, w in enumerate(writes):
        deps = {j for ident in _losses(w) for j in adders.get(ident, ())}
        if isinstance(w, SliceRecord):
            deps |= creates
        deps.discard(i)
        after.append(deps)
    stages: list[Plan] = []
    done: set[int] = set()
    left = list(range(len(writes)))
    while left:
        ready = [i for i in left if after[i] <= done] or left
        stages.append(_subplan(writes, ready))
        done.update(ready)
        left = [i for i in left if i not in done]
    return stages


def _gains(w: _Write) -> set[Identity]:
    """Identities ``w`` lists that its slice did not list before."""
    if isinstance(w, SliceSpec):
        return {ep.identity for ep in w.endpoints}
    if isinstance(w, SliceUpdate):
        before = {ep.identity for ep in w.existing.endpoints}
        return {ep.identity for ep in w.spec.endpoints} - before
    return set()


def _losses(w: _Write) -> set[Identity]:
    """Identities ``w``'s slice listed that it will no longer list."""
    if isinstance(w, SliceSpec):
        return set()
    if isinstance(w, SliceUpdate):
        after = {ep.identity for ep in w.spec.endpoints}
        return {ep.identity for ep in w.existing.endpoints} - after
    return {ep.identity for ep in w.endpoints}


def _subplan(writes: list[_Write], chosen: list[int]) -> Plan:
    picked = [writes[i] for i in chosen]
    return Plan(
        creates=tuple(w for w in picked if isinstance(w, SliceSpec)),
        updates=tuple(w for w in picked if isinstance(w, SliceUpdate)),
        deletes=tuple(w for w in picked if isinstance(w, SliceRecord)),
    )
