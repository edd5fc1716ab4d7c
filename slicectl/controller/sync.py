"""One sync of one selector: read the caches, plan, write, report.

This is the imperative shell around :func:`slicectl.reconcile.plan`. It decides nothing about
slices itself; it only gathers inputs from the caches, refuses to plan from a cache that lags
behind our own writes (the tracker's *stale* check, preceded by a read of the server's slices
when a create of ours has an unknown outcome), hands the plan to the writer, and then reports
the outcome: metrics, the selector's status (under its write budget) and Warning events.

That read is by label, which names the selector but not its API flavour: only the slices the
selector owns (:func:`~slicectl.reconcile.plan.is_owned`) become expectations. Another
flavour's same-named selector's slices never reach this key's cache (the router keys slices by
their owner's group), so expecting them would refuse every sync as stale until the
expectations expired, minutes later.

**Plan at the token.** A sync with something to write takes its first write's rate-limit token
before writing. When the client's rate limit makes it wait for that token (a burst of syncs
across many selectors), it plans again once the token is due, so the write carries the changes
that came during the wait rather than the state of the moment the sync began.

**A selector that becomes invalid** (the core and Gateway API flavours have no CEL to stop it)
keeps being served with the *last valid spec* this process saw for it (same uid), with fresh pod
data: deleted pods leave its slices, pods that spec selects join them, readiness is kept
current; only the status says Ready=False/InvalidSpec (with a Warning event), its counts
those of the slices as served. Freezing the slices would send traffic to whatever reuses a
deleted pod's IP. When no valid spec was seen (the process started while the selector was
invalid), its existing slices are emptied to the placeholder ("no endpoints") rather than left
listing pods nobody checks any more; a selector that never had slices gets none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import structlog

from slicectl.controller.publish import StatusPublisher
from slicectl.controller.queue import dated
from slicectl.controller.status import (
    REASON_FAILED_TO_UPDATE,
    REASON_INVALID_SPEC,
    REASON_SYNC_FAILED,
    Counts,
    Outcome,
    decide,
    same_status,
)
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import (
    NamespaceTerminating,
    NotLeading,
    Prepaid,
    SliceVanished,
    WriteResult,
)
from slicectl.model.records import (
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    Endpoint,
    EndpointPort,
    NodeRecord,
    PodRecord,
    SelectorRecord,
    SliceRecord,
)
from slicectl.model.selector import from_label_selector
from slicectl.model.timefmt import rfc3339_nano
from slicectl.reconcile import EndpointMemo, Plan, Settings, first_sync_trigger, plan
from slicectl.reconcile.plan import is_owned
from slicectl.reconcile.ports import unresolved_ports

log = structlog.get_logger("slicectl.sync")

# Compaction of fragmented selectors (see reconcile/pack.py): a selector left above its ideal
# slice count is synced again once it has had no change for COMPACTION_QUIET seconds, and that
# sync may spend up to COMPACTION_WRITES extra writes. Churn in flight (a rollout) is never
# compacted, and a selector costs at most COMPACTION_WRITES extra writes per quiet period.
COMPACTION_WRITES = 3
COMPACTION_QUIET = 1.0

# The Warning of a named targetPort that none of the selected pods declares.
REASON_PORT_NOT_FOUND = "TargetPortNotFound"
FinalSlice = tuple[tuple[str, tuple[EndpointPort, ...]], tuple[Endpoint, ...]]


class StaleCache(Exception):
    """The slice cache does not show our last writes yet; retry shortly instead of writing."""


# Stands in for an invalid spec with no valid predecessor: planned with no pods, so the
# selector's existing slices are emptied to the placeholder.
_NOTHING = from_label_selector({"matchLabels": {"slicectl.io/invalid-spec": "true"}})


class SyncFailed(Exception):
    """A write failed; ``progress`` says whether earlier writes of the same sync landed."""

    def __init__(self, message: str, progress: bool) -> None:
        super().__init__(message)
        self.progress = progress


@dataclass(frozen=True, slots=True)
class SyncResult:
    key: str
    writes: WriteResult
    plan: Plan | None
    retry_after: float | None = None  # status counts held back: sync again after this delay
    # Endpoints per (address type, ports) group once the plan is applied, for the slice gauges.
    groups: Mapping[object, int] = field(default_factory=dict)
    slices: int = 0
    throttled: bool = False  # its first write waited for a rate-limit token


class SliceWrites(Protocol):
    """What a sync needs of the writer (writer.py's :class:`SliceWriter`)."""

    def reserve(self, token: Prepaid) -> float: ...

    def refund(self, token: Prepaid) -> None: ...

    async def live_slices(self, namespace: str, label_selector: str) -> list[SliceRecord]: ...

    async def apply(
        self, key: str, selector: SelectorRecord, plan: Plan, trigger_time: str | None,
        result: WriteResult | None = None, token: Prepaid | None = None,
    ) -> WriteResult: ...


class SyncInputs(Protocol):
    """What a sync reads; implemented by the controller over its informer stores and indexes."""

    def selector(self, key: str) -> SelectorRecord | None: ...

    def pods_of(self, key: str) -> Iterable[PodRecord]:
        """The pods the selector ``key`` matches (from the selector -> pods index)."""
        ...

    def nodes(self) -> Mapping[str, NodeRecord]: ...

    def slices(self, key: str) -> Iterable[SliceRecord]: ...


def final_slices(existing: Iterable[SliceRecord], p: Plan) -> list[FinalSlice]:
    """Each slice as it stands once the plan is applied: (group, endpoints)."""
    replaced = {s.uid for s in p.deletes} | {u.existing.uid for u in p.updates}
    result: list[FinalSlice] = [
        ((s.address_type, s.ports), s.endpoints) for s in existing if s.uid not in replaced
    ]
    for spec in [*p.creates, *(u.spec for u in p.updates)]:
        result.append(((spec.address_type, spec.ports), spec.endpoints))
    return result


def final_counts(slices: Iterable[FinalSlice]) -> Counts:
    endpoints = ready = n = 0
    for _, eps in slices:
        n += 1
        endpoints += len(eps)
        ready += sum(1 for e in eps if e.ready)
    return Counts(endpoints=endpoints, ready_endpoints=ready, endpoint_slices=n)


def _outcome(sel: SelectorRecord, counts: Counts) -> Outcome:
    """The outcome of a sync that applied its plan: the counts of the slices it left, and
    InvalidSpec when the spec it served is not the selector's own (module docstring)."""
    if sel.error is not None:
        return Outcome(counts, REASON_INVALID_SPEC, sel.error)
    return Outcome(counts)


class Syncer:
    def __init__(
        self,
        inputs: SyncInputs,
        tracker: SliceTracker,
        writer: SliceWrites,
        settings: Settings,
        *,
        publish_status: StatusPublisher | None,
        warn: Callable[[SelectorRecord, str, str], None],
        status_period: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._in = inputs
        self._tracker = tracker
        self._writer = writer
        self._settings = settings
        self._status = publish_status
        self._warn = warn
        self._status_period = status_period
        self._clock = clock
        self._last_status_write: dict[str, float] = {}
        self._last_change: dict[str, float] = {}  # key -> last sync that carried a change
        self._memos: dict[str, EndpointMemo] = {}  # key -> its pods' endpoints, last sync
        self._synced: set[str] = set()  # keys with a completed sync: their changes carry times
        # key -> the trigger time its first sync took from the objects, kept for the retries
        # until one completes (writes that landed before a failure date the slices: read back,
        # they would show the change as published)
        self._first_trigger: dict[str, float] = {}
        self._wanted: dict[str, dict[str, Any]] = {}  # key -> status the last sync wanted
        self._submitted: dict[str, dict[str, Any]] = {}  # key -> status last handed to publish

    def forget(self, key: str) -> None:
        self._tracker.forget(key)
        self._last_status_write.pop(key, None)
        self._last_change.pop(key, None)
        self._memos.pop(key, None)
        self._synced.discard(key)
        self._first_trigger.pop(key, None)
        self._wanted.pop(key, None)
        self._submitted.pop(key, None)

    def new_term(self) -> set[str]:
        """A leadership term starts: each selector's next sync is a first sync again (its
        trigger time from the objects: what happened since the last term is another leader's
        doing). Returns the keys this syncer holds anything for, the tracker's included."""
        self._synced.clear()
        self._first_trigger.clear()
        return {*self._memos, *self._wanted, *self._submitted, *self._last_status_write,
                *self._last_change, *self._tracker.keys()}

    def status_expected(self, key: str, status: Mapping[str, Any]) -> bool:
        """Whether ``status`` is what the last sync of ``key`` wanted (our own write seen)."""
        want = self._wanted.get(key)
        return want is not None and same_status(want, status)

    def _compaction_budget(self, key: str, trigger: float | None) -> tuple[int, float]:
        """Extra writes this sync may spend, and how long the selector has been quiet."""
        now = self._clock()
        if trigger is not None:
            self._last_change[key] = now
        quiet = now - self._last_change.get(key, now - COMPACTION_QUIET)
        return (COMPACTION_WRITES if quiet >= COMPACTION_QUIET else 0), quiet

    def _effective(
        self, key: str, sel: SelectorRecord, cached: list[SliceRecord]
    ) -> tuple[SelectorRecord, Iterable[PodRecord]] | None:
        """The spec to plan with, and the pods to plan from (module docstring: invalid specs).

        The pods come from the selector -> pods index, which follows the spec the router
        indexed: the valid one, or the last valid one of an invalid selector."""
        pods = self._in.pods_of(key)
        if sel.error is None:
            return sel, pods
        if not sel.selector.empty:  # the last valid spec, carried by the router
            return replace(sel, error=None), pods
        if not cached:
            return None
        return replace(sel, selector=_NOTHING, ip_families=(), ports=(), error=None), ()

    async def sync(
        self, key: str, trigger: float | None, writes: WriteResult | None = None
    ) -> SyncResult:
        """Sync ``key``; the writes that land go into ``writes`` as they are acknowledged, so
        a caller sees them also when the sync then fails, is cancelled or loses the gate."""
        token = Prepaid()
        try:
            return await self._sync(
                key, trigger, token, writes if writes is not None else WriteResult())
        finally:
            self._writer.refund(token)  # taken for a write that did not happen

    async def _sync(
        self, key: str, trigger: float | None, token: Prepaid, result: WriteResult
    ) -> SyncResult:
        started = self._clock()
        sel = self._in.selector(key)
        if sel is None:
            self.forget(key)  # its slices are left to the garbage collector
            return SyncResult(key, WriteResult(), None)
        if self._tracker.has_unknown_creates(key):
            # A create of ours may have landed unseen: ask the server, then wait for the cache.
            live = await self._writer.live_slices(sel.namespace, self._label_selector(sel))
            ours = [s for s in live if is_owned(sel, s, self._settings)]  # module docstring
            if self._tracker.resolve_unknown_creates(key, ours):
                log.info("a create with a lost answer had landed; waiting for the cache",
                         selector=key)

        cached = list(self._in.slices(key))
        effective = self._effective(key, sel, cached)
        if effective is None:
            assert sel.error is not None
            self._warn(sel, REASON_INVALID_SPEC, sel.error)
            # No slices, none to write: the status counts say so (not the last valid ones).
            retry = await self._report(key, sel, _outcome(sel, final_counts(())))
            return SyncResult(key, WriteResult(), None, retry)
        spec, pods = effective
        if self._tracker.stale(key, cached):
            self._tracker.wait_for_cache(key)
            raise StaleCache(f"{key}: slice cache behind our writes")
        existing = [s for s in cached if not s.terminating]
        # O(selected pods): the index hands over this selector's pods only.
        budget, quiet = self._compaction_budget(key, trigger)
        memo = self._memos.get(key)
        if memo is None:
            memo = self._memos[key] = EndpointMemo()
        if key not in self._synced:  # no sync of it completed here yet: no change history
            first = first_sync_trigger(spec, pods, existing, self._settings)
            kept = self._first_trigger.get(key)
            first = kept if first is None else first if kept is None else min(first, kept)
            if first is not None:
                self._first_trigger[key] = first
                trigger = first if trigger is None else min(trigger, first)
        the_plan = plan(spec, pods, self._in.nodes(), existing, self._settings,
                        compaction_budget=budget, memo=memo)
        if not the_plan.empty and not token.reserved and (wait := self._writer.reserve(token)):
            # Rate-limited: the first write may go out only in ``wait`` seconds. Plan again
            # then, from the caches of that moment, so the write carries every change that
            # came meanwhile instead of leaving them to the next sync, a window later.
            await asyncio.sleep(wait)
            return replace(await self._sync(key, trigger, token, result), throttled=True)
        if sel.error is not None:
            self._warn(sel, REASON_INVALID_SPEC, sel.error)
        result.trigger = when = dated(trigger)
        trigger_time = rfc3339_nano(when) if when is not None else None
        try:
            if not the_plan.empty:
                await self._writer.apply(key, spec, the_plan, trigger_time, result, token)
        except NotLeading:
            raise
        except SliceVanished as exc:  # a benign race with a deletion: wait for the cache
            raise StaleCache(str(exc)) from exc
        except NamespaceTerminating:
            # Upstream's rule: creates in a namespace being deleted keep failing until its
            # deletion removes the selector too. Nothing to retry, warn about or report.
            # No plan in the result: the slice gauges keep what they showed, not a plan that
            # did not land (they go with the selector).
            log.info("not creating EndpointSlices: the namespace is being deleted", selector=key)
            return SyncResult(key, result, None)
        except Exception as exc:
            message = f"failed to write EndpointSlices: {exc}"
            self._warn(sel, REASON_FAILED_TO_UPDATE, message)
            await self._report(key, sel, Outcome(None, REASON_SYNC_FAILED, message))
            raise SyncFailed(message, progress=result.writes > 0) from exc
        log.info(
            "synced",
            selector=key,
            endpoints=the_plan.desired_endpoints,
            created=len(result.created),
            updated=len(result.updated),
            deleted=len(result.deleted),
            conflicts=result.conflicts,
            added=the_plan.endpoints_added,
            removed=the_plan.endpoints_removed,
            duration_ms=round((self._clock() - started) * 1000, 1),
        )
        self._synced.add(key)
        self._first_trigger.pop(key, None)
        final = final_slices(existing, the_plan)
        self._warn_unresolved(spec, final)
        retry = await self._report(key, sel, _outcome(sel, final_counts(final)))
        if len(final) > the_plan.desired_slices and (budget == 0 or the_plan.writes > 0) and (
            not sel.deleting  # the plan of a selector being deleted never compacts
        ):
            # Fragmented: look again once quiet (or after this compaction step, if it helped).
            again = max(COMPACTION_QUIET - quiet, 0.0) if budget == 0 else COMPACTION_QUIET
            retry = again if retry is None else min(retry, again)
        groups: dict[object, int] = {}
        for group, eps in final:
            groups[group] = groups.get(group, 0) + len(eps)
        return SyncResult(key, result, the_plan, retry, groups, len(final))

    def _warn_unresolved(self, sel: SelectorRecord, final: Iterable[FinalSlice]) -> None:
        """A Warning for each named port that none of the listed endpoints got."""
        for port in unresolved_ports(sel.ports, (ports for (_, ports), eps in final if eps)):
            self._warn(sel, REASON_PORT_NOT_FOUND,
                       f'no selected pod has a {port.protocol} container port named '
                       f'"{port.target_port}": the endpoints are listed without port '
                       f'"{port.name}"')

    def _label_selector(self, sel: SelectorRecord) -> str:
        return (f"{LABEL_MANAGED_BY}={self._settings.managed_by},"
                f"{LABEL_SELECTOR_NAME}={sel.name}")

    async def _report(self, key: str, sel: SelectorRecord, outcome: Outcome) -> float | None:
        """Hand the selector's new status to the publisher if it is worth a write."""
        if self._status is None or not sel.api.has_status or sel.deleting:
            return None  # a selector being deleted gets no status write: it is going away
        now = self._clock()
        judged = sel
        if self._status.pending(key) and key in self._submitted:
            # Our last status write has not landed: the cache cannot show it yet, so judge
            # against it, else the same condition goes out twice and new counts skip their
            # period. Once it landed, the cache is the judge (a later write by someone else
            # must be put right).
            judged = replace(sel, status=self._submitted[key])
        decision = decide(
            judged,
            outcome,
            last_write=self._last_status_write.get(key),
            now=now,
            period=self._status_period,
        )
        self._wanted[key] = decision.want
        if decision.patch is not None:
            self._status.submit(key, sel, decision.patch)
            self._submitted[key] = decision.want
            self._last_status_write[key] = now
        return decision.retry_after

