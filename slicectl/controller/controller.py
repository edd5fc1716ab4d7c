"""The controller: informers feed the router, workers drain the queue through the syncer.

It owns the lifecycle of the moving parts and nothing else:

* caches (pods, nodes as metadata only, the controller's own slices, one informer per selector
  API flavour) run on every replica, leader or not, so a standby takes over with a warm cache;
  watches request bookmarks and a deadline inside ``watch_inactivity_timeout`` (default two
  bookmark intervals of a real API server), and a stream silent that long is treated as
  half-open and reopened;
* workers run only while :meth:`run_workers` is in force (the leader); every write passes the
  write gate right before it is sent, so a replica that is no longer sure it leads stops
  writing mid-sync. A worker that finds the gate closed puts its key back and parks until the
  gate opens (it never re-queues with no delay in a loop: that would starve the event loop,
  and with it the lease renewal that could reopen the gate);
* a leadership term (:meth:`run_workers`) starts as a restart does, from the caches: every
  selector is synced, each first sync taking its trigger time from the objects. Between terms
  the informers keep the indexes but queue nothing: what a standby sees is the leader's work,
  and queued, it made a takeover stamp its first writes with changes the last leader had
  published, weeks before maybe, and held a queue entry for every selector deleted meanwhile;
* the initial sync is done (readiness) once every selector known when the caches synced was
  synced once, not when the queue is idle (under steady churn it never is);
* a selector API that the cluster does not serve yet is retried in the background and does not
  hold the others back; an error while looking it up holds the caches unsynced: it does not say
  the API is unserved, and its selectors may well exist (:mod:`slicectl.controller.caches`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from slicectl.cache.index import selector_key as index_key
from slicectl.cache.informer import Informer
from slicectl.cache.store import PodStore, Store
from slicectl.controller.batching import STREAM_MAX_WINDOW
from slicectl.controller.caches import CacheView, CountingHandler, selector_resource, wait_served
from slicectl.controller.outage import OutageRetries
from slicectl.controller.publish import StatusPublisher
from slicectl.controller.queue import UNDATED, ShutDown, WorkQueue
from slicectl.controller.routing import Router, record_key
from slicectl.controller.status import REASON_FAILED_TO_UPDATE
from slicectl.controller.sync import StaleCache, Syncer, SyncFailed, SyncResult
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import SliceWriter, WriteResult
from slicectl.election.gate import NotLeading, WriteGate, as_gate, guard_for
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, NODES, PODS, Resource
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_node, parse_pod, parse_selector, parse_slice
from slicectl.model.records import (
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    NodeRecord,
    SelectorRecord,
    SelectorRef,
)
from slicectl.obs.events import EventRecorder, selector_reference
from slicectl.obs.metrics import Metrics, SliceCounts
from slicectl.reconcile import Settings

log = structlog.get_logger("slicectl.controller")
# Real API servers send a watch bookmark about once a minute (the watch cache's bookmark
# frequency), but only on watches of a resource that changed since they began; the informer
# asks for a deadline inside two of those intervals, so a watch silent that long is half-open.
BOOKMARK_INTERVAL = 60.0
OUTAGE_CHECK = 1.0  # how often keys that failed during an API outage look for its end
STALE_RECHECK = 1.0  # a sync waiting for the cache is woken by the slice event it waits for;
# this is only the fallback look if that event never comes (a relist settles it then)


@dataclass(frozen=True)
class ControllerConfig:
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    selector_apis: tuple[SelectorRef, ...] = (SLICECTL,)
    settings: Settings = field(default_factory=Settings)
    batch_period: float = 0.1
    max_batch_period: float = STREAM_MAX_WINDOW  # the longest a growing stream's window gets
    concurrent_syncs: int = 5
    status_update_period: float = 10.0
    watch_timeout: int = 300
    watch_inactivity_timeout: float = 2 * BOOKMARK_INTERVAL
    watch_list: bool = True  # informers stream their lists where the server can
    api_retry_period: float = 10.0  # how often an unserved selector API is looked up again


class Controller:
    def __init__(
        self,
        client: KubeClient,
        config: ControllerConfig,
        *,
        metrics: Metrics | None = None,
        events: EventRecorder | None = None,
        may_write: WriteGate | Callable[[], bool] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.gate = as_gate(may_write)
        self._guard = guard_for(self.gate)
        self.metrics = metrics
        self.events = events
        self.queue = WorkQueue(max_batch=config.max_batch_period, write_rate=client.qps)
        self._outage = OutageRetries()  # keys whose syncs failed for the API server's reasons
        self.tracker = SliceTracker()
        self.pods = PodStore()  # the one copy of every pod: pod informers write, indexes read
        self.router = Router(self.queue, self.tracker, config.selector_apis, config.batch_period,
                             self.pods,
                             status_expected=lambda k, s: self.syncer.status_expected(k, s))
        self.router.active = False  # until a term starts (run_workers)
        self._slice_counts = (
            SliceCounts(metrics, config.settings.max_endpoints_per_slice) if metrics else None
        )
        self._nodes: Informer[NodeRecord] = self._informer(
            NODES, parse_node, lambda n: n.name, None,
            CountingHandler("nodes", self.router.node_added, self.router.node_updated,
                     self.router.node_deleted, metrics),
            metadata_only=True,
        )
        self._informers: list[Informer[Any]] = [self._nodes]
        r = self.router
        for ns in config.namespaces or (None,):
            self._informers.append(self._informer(
                PODS, parse_pod, lambda p: p.key, ns,
                CountingHandler("pods", r.pod_added, r.pod_updated, r.pod_deleted, metrics),
                store=self.pods))
            self._informers.append(self._informer(
                ENDPOINTSLICES, parse_slice, lambda s: s.key, ns,
                CountingHandler("endpointslices", r.slice_added, r.slice_updated, r.slice_deleted,
                         metrics),
                label_selector=(
                    f"{LABEL_MANAGED_BY}={config.settings.managed_by},{LABEL_SELECTOR_NAME}"
                ),
                on_listed=functools.partial(r.slices_relisted, ns),
            ))
        self._has_status: dict[str, bool] = {}
        writer = SliceWriter(client, self.tracker, self.gate)
        self.status = StatusPublisher(self._write_status)
        self.syncer = Syncer(
            CacheView(self.router, self._nodes.store), self.tracker, writer, config.settings,
            publish_status=self.status, warn=self._warn,
            status_period=config.status_update_period,
        )
        self.caches_synced = asyncio.Event()
        self.initial_sync_done = asyncio.Event()  # every selector known at start synced once
        self._initial_keys: set[str] | None = None
        self._term = 0  # leadership terms begun (run_workers)
        self._running: dict[str, float] = {}  # key -> time.monotonic() its sync started
        # One per selector API: set once it is listed, or found unserved at the first look.
        self._apis_listed = [asyncio.Event() for _ in config.selector_apis]

    def _informer(
        self, res: Resource, parse: Callable[[dict[str, Any]], Any], key: Callable[[Any], str],
        namespace: str | None, handler: CountingHandler, *, label_selector: str | None = None,
        metadata_only: bool = False, on_listed: Callable[[float], None] | None = None,
        store: Store[Any] | None = None,
    ) -> Informer[Any]:
        return Informer(
            self.client, res, parse, key=key, namespace=namespace,
            label_selector=label_selector, metadata_only=metadata_only,
            watch_timeout=self.config.watch_timeout,
            inactivity_timeout=self.config.watch_inactivity_timeout, handler=handler,
            on_listed=on_listed, store=store, stream_lists=self.config.watch_list,
        )

    # -- caches -----------------------------------------------------------------------------

    async def run_caches(self) -> None:
        """Run every informer until cancelled; sets :attr:`caches_synced` once all listed."""
        async with asyncio.TaskGroup() as tg:
            for inf in self._informers:
                tg.create_task(inf.run())
            for ref, listed in zip(self.config.selector_apis, self._apis_listed, strict=True):
                tg.create_task(self._run_selector_api(ref, listed))
            tg.create_task(self._export_stats())
            await asyncio.gather(*(inf.synced.wait() for inf in self._informers),
                                 *(e.wait() for e in self._apis_listed))
            self.router.listed = True
            self.caches_synced.set()
            log.info("caches synced", pods=len(self.router.pods),
                     selectors=len(self.router.selectors))

    async def _run_selector_api(self, ref: SelectorRef, listed: asyncio.Event) -> None:
        """The selector API's informers, once the cluster serves it (``listed`` set once they
        listed, or when it is found unserved)."""
        self._has_status[ref.group] = await wait_served(
            self.client, ref, self.config.api_retry_period, listed.set)
        r = self.router
        handler = CountingHandler(ref.plural, r.selector_added, r.selector_updated,
                                  r.selector_deleted, self.metrics)

        def parse(raw: dict[str, Any]) -> SelectorRecord:
            return parse_selector(raw, ref)

        async with asyncio.TaskGroup() as tg:
            informers = []
            for ns in self.config.namespaces or (None,):
                inf = self._informer(selector_resource(ref), parse, index_key, ns,
                                     handler)
                informers.append(inf)
                self._informers.append(inf)
                tg.create_task(inf.run())
            await asyncio.gather(*(inf.synced.wait() for inf in informers))
            listed.set()

    async def _export_stats(self) -> None:
        """Copy informer and queue counters into the metrics every second."""
        while True:
            if self.metrics is not None:
                for inf in list(self._informers):
                    self.metrics.set_relists(inf.resource_name, id(inf), inf.stats.relists)
                stats = self.queue.stats
                running = min(self._running.values(), default=None)
                self.metrics.set_queue(self.queue.due(), stats.adds, stats.retries,
                                       time.monotonic() - running if running is not None else 0.0)
                self.metrics.set_cached(len(self.pods), len(self.router.selectors))
            await asyncio.sleep(1.0)

    # -- workers ----------------------------------------------------------------------------

    async def run_workers(self) -> None:
        """One leadership term: sync every known selector, then keep draining the queue until
        cancelled (module docstring)."""
        await self.caches_synced.wait()
        keys = list(self.router.selectors.keys())
        if self._initial_keys is None:
            self._initial_keys = set(keys)
        self._term += 1
        term = self._term
        self.queue.clear()
        held = self.syncer.new_term()
        self.router.active = True
        for key in keys:
            # A change (the caches as they are now) with no time of its own: each first sync
            # takes its time from the objects (``first_sync_trigger``).
            self.queue.add(key, changed_at=UNDATED)
        for key in held.difference(keys):
            self.queue.add(key)  # deleted since: its sync forgets it
        self._initial_progress()
        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(self.config.concurrent_syncs):
                    tg.create_task(self._worker())
                tg.create_task(self._retry_after_outages())
        finally:
            # A cancelled term may finish unwinding after the next one began (the lease lost
            # and won again at once): only the current term's end stops the routing.
            if term == self._term:
                self.router.active = False
                if self._slice_counts is not None:  # the slice gauges are the leader's view
                    self._slice_counts.clear()

    async def _retry_after_outages(self) -> None:
        while True:
            await asyncio.sleep(OUTAGE_CHECK)
            self.retry_after_outage()

    def retry_after_outage(self) -> None:
        """Once the API server answers again, retry at once what failed while it was away
        (syncs and status writes), instead of after backoffs the outage grew (outage.py)."""
        answered = self.client.answers.last
        now = time.monotonic()
        keys = self._outage.due(answered, now) if len(self._outage) else []
        retried = sum(self.queue.expedite(key) for key in keys)
        self.status.retry_after_outage(answered, now)
        if retried:
            log.info("API server answers again; retrying failed syncs now", selectors=retried)

    def _initial_progress(self, synced: str | None = None) -> None:
        pending = self._initial_keys
        if pending is None:
            return
        if synced is not None:
            pending.discard(synced)
        if not pending and not self.initial_sync_done.is_set():
            self.initial_sync_done.set()
            log.info("initial sync done", selectors=len(self.router.selectors))

    async def _worker(self) -> None:
        while True:
            await self.gate.wait_writable()  # not leading: take no keys, leave them queued
            try:
                key, waited, trigger = await self.queue.get()
            except ShutDown:
                return
            if not self.gate.may_write():  # the gate closed while this worker waited
                self.queue.add(key, changed_at=trigger)
                self.queue.done(key)
                continue
            if self.metrics is not None:
                self.metrics.observe_queue_latency(waited)
            try:
                await self._process(key, trigger)
            except asyncio.CancelledError:
                if _cancelling():
                    raise
                # Nobody cancelled this worker (a library's internal timeout gone astray): a
                # TaskGroup takes a child that ends cancelled as nothing to report, so ending
                # here would leave the replica ready with a worker fewer. The key is requeued.
                log.error("a sync was cancelled from inside; the worker carries on",
                          selector=key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str, trigger: float | None) -> None:
        started = self._running[key] = time.monotonic()
        result_name = "success"
        # filled (and counted) as writes land, whatever the sync does next
        writes = WriteResult(on_write=self._count_write)
        try:
            result = await self.syncer.sync(key, trigger, writes)
        except asyncio.CancelledError:
            self.queue.add(key, changed_at=trigger)  # not done: keep it for the next leader
            raise
        except StaleCache:
            # Not a failure: the slice event it waits for wakes it (router); this is a fallback.
            result_name = "stale"
            self.queue.add(key, STALE_RECHECK, changed_at=trigger)
        except NotLeading:
            # Keep the key (and its trigger time) for when leading again; the worker parks.
            result_name = "error"
            self.queue.add(key, changed_at=trigger)
        except Exception as exc:
            # A landed write does not reset the backoff: the key is still failing (SyncFailed
            # with progress), and a fresh 1 s floor each time would hammer the API server.
            result_name = "error"
            self._initial_progress(key)  # it was tried: readiness does not wait on a bad key
            delay = self.queue.add_rate_limited(key)
            self._outage.failed(key, exc, time.monotonic())
            log.warning("sync failed", selector=key, error=str(exc), retry_in=round(delay, 3),
                        failures=self.queue.failures(key))
            if not isinstance(exc, SyncFailed) and (sel := self.router.selectors.get(key)):
                # A failed write has its Event already (the syncer's); any other failure (a
                # read of the slices, a bug in the planner) gets one too, as upstream's
                # every failed sync does: the operator looks at the object first.
                self._warn(sel, REASON_FAILED_TO_UPDATE, f"failed to sync EndpointSlices: {exc}")
        else:
            self.queue.forget(key)
            if result.throttled:
                self.queue.throttled(key)
            self._outage.succeeded(key)
            self._initial_progress(key)
            if result.retry_after is not None:
                self.queue.add(key, result.retry_after)
            self._record(key, result)
        finally:
            del self._running[key]
            if self.metrics is not None:
                self.metrics.observe_sync(result_name, time.monotonic() - started)

    def _count_write(self, operation: str, trigger: float | None) -> None:
        """Count an acknowledged write as its answer comes, with the age of the dated change it
        carries then (``trigger``), also the writes of a sync that then fails (upstream counts
        ``changes`` per write as it lands)."""
        if self.metrics is not None:
            self.metrics.slice_write(operation, time.time() - trigger if trigger is not None
                                     else None)

    def _record(self, key: str, result: SyncResult) -> None:
        """The upstream per-sync figures and slice gauges of a sync that completed."""
        if self.metrics is None:
            return
        if result.plan is None:
            if self._slice_counts is not None and self.router.selectors.get(key) is None:
                self._slice_counts.delete(key)
            return
        self.metrics.observe_reconcile(result.plan.endpoints_added,
                                       result.plan.endpoints_removed, result.writes.writes)
        if self._slice_counts is not None:
            self._slice_counts.update(key, result.groups, result.slices)

    # -- side effects for the syncer --------------------------------------------------------

    async def _write_status(self, sel: SelectorRecord, patch: dict[str, Any]) -> None:
        if not self._has_status.get(sel.api.group, sel.api.has_status):
            return
        await self.client.patch(selector_resource(sel.api), sel.name, patch, sel.namespace,
                                subresource="status", patch_type="merge", background=True,
                                guard=self._guard)
        if self.metrics is not None:
            self.metrics.status_write()

    def _warn(self, sel: SelectorRecord, reason: str, note: str) -> None:
        """A Warning Event, and a log line once per series of the Event: an invalid spec is
        reported again by every sync, which churn on its pods makes many."""
        new = (self.events is None
               or self.events.event(selector_reference(sel), "Warning", reason, note))
        if new:
            log.warning("selector problem", selector=record_key(sel), reason=reason, note=note)

    def idle(self) -> bool:
        return self.queue.idle()


def _cancelling() -> bool:
    """The current task was asked to stop (its ``cancel()`` was called), as opposed to a
    CancelledError raised inside it that nobody asked for."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
