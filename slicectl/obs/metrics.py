"""Prometheus metrics: the upstream EndpointSlice controller families plus slicectl's own.

Every metric lives in one ``CollectorRegistry`` owned by a :class:`Metrics` object (never the
process-global default registry), so tests and embedded uses can build several side by side.

Naming decisions:

* The ``endpoint_slice_controller_*`` families keep upstream's names, label sets and buckets
  (``k8s.io/endpointslice/metrics``), except that the Python client appends ``_total`` to every
  counter's samples: kube-controller-manager exposes ``endpoint_slice_controller_changes`` and
  ``endpoint_slice_controller_syncs`` (component-base adds no suffix; see the Kubernetes
  metrics reference), slicectl ``endpoint_slice_controller_changes_total`` and
  ``endpoint_slice_controller_syncs_total``. A query written for one needs the other's name
  (README, "Observability").
* ``_created`` series are switched off: upstream does not expose them and they double the series.
* The call sites get small methods with plain arguments, so no layer below ``obs`` imports
  prometheus_client; :meth:`Metrics.api_request`, :meth:`Metrics.rate_limited` and
  :meth:`Metrics.api_retry` match the kube client's ``on_request``, ``on_rate_limit`` and
  ``on_retry`` hooks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
SUBSYSTEM: Final = "endpoint_slice_controller"

# metrics.ExponentialBuckets(2, 2, 15): 2, 4, ..., 32768.
PER_SYNC_BUCKETS: Final = tuple(2.0 * 2**i for i in range(15))
# client_golang's DefBuckets, what an upstream histogram declared without buckets gets
# (prometheus_client's default differs: it adds 0.075, 0.75 and 7.5).
GO_DEFAULT_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Latencies from sub-millisecond cache hits to a minutes-long backoff.
LATENCY_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
)
# Event loop lag: a healthy loop wakes a sleeper within a millisecond or two; seconds mean a
# blocked loop (a relist parsed without yielding, a spin).
LOOP_LAG_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)
SYNC_RESULTS: Final = ("success", "stale", "error")
OPERATIONS: Final = ("create", "update", "delete")
LANES: Final = ("foreground", "background")


class Metrics:
    """The registry and every family slicectl exposes, with one small method per observation."""

    def __init__(self) -> None:
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        # (id(counter), source) -> the running total of that source the counter has reached
        self._followed: dict[tuple[int, int], int] = {}
        r = self.registry
        es = SUBSYSTEM
        self.endpoints_added = Histogram(
            f"{es}_endpoints_added_per_sync", "Number of endpoints added on each Service sync",
            buckets=PER_SYNC_BUCKETS, registry=r)
        self.endpoints_removed = Histogram(
            f"{es}_endpoints_removed_per_sync", "Number of endpoints removed on each Service sync",
            buckets=PER_SYNC_BUCKETS, registry=r)
        self.endpoints_desired = Gauge(
            f"{es}_endpoints_desired", "Number of endpoints desired", registry=r)
        self.num_endpoint_slices = Gauge(
            f"{es}_num_endpoint_slices", "Number of EndpointSlices", registry=r)
        self.desired_endpoint_slices = Gauge(
            f"{es}_desired_endpoint_slices",
            "Number of EndpointSlices that would exist with perfect endpoint allocation",
            registry=r)
        self.changes = Counter(
            f"{es}_changes", "Number of EndpointSlice changes", ["operation"], registry=r)
        self.slices_changed = Histogram(
            f"{es}_endpointslices_changed_per_sync",
            "Number of EndpointSlices changed on each Service sync",
            ["topology", "traffic_distribution"], buckets=GO_DEFAULT_BUCKETS, registry=r)
        self.syncs = Counter(
            f"{es}_syncs", "Number of EndpointSlice syncs", ["result"], registry=r)

        self.watch_events = Counter(
            "slicectl_watch_events", "Watch events received, by resource and event type",
            ["resource", "type"], registry=r)
        self.relists = Counter(
            "slicectl_relists", "Full relists after a watch expired (410) or failed",
            ["resource"], registry=r)
        self.queue_depth = Gauge(
            "slicectl_queue_depth",
            "Selector keys due and waiting for a worker, as client-go's workqueue_depth (keys "
            "scheduled for later, in a batch window or a retry backoff, are not counted)",
            registry=r)
        self.queue_adds = Counter(
            "slicectl_queue_adds", "Adds of a key to the work queue (client-go's "
            "workqueue_adds_total)", registry=r)
        self.queue_retries = Counter(
            "slicectl_queue_retries", "Failed syncs put back with their backoff (client-go's "
            "workqueue_retries_total)", registry=r)
        self.longest_running_sync = Gauge(
            "slicectl_longest_running_sync_seconds",
            "How long the longest sync running now has run (client-go's "
            "workqueue_longest_running_processor_seconds): a sync stuck on the API server "
            "shows here before it ends",
            registry=r)
        self.queue_latency = Histogram(
            "slicectl_queue_latency_seconds",
            "Time from a key becoming ready in the queue until a worker picks it up",
            buckets=LATENCY_BUCKETS, registry=r)
        self.sync_duration = Histogram(
            "slicectl_sync_duration_seconds", "Duration of one selector sync, writes included",
            buckets=LATENCY_BUCKETS, registry=r)
        self.api_requests = Counter(
            "slicectl_api_requests", "Kubernetes API requests by verb, resource and status code",
            ["verb", "resource", "code"], registry=r)
        self.api_request_retries = Counter(
            "slicectl_api_request_retries",
            "Kubernetes API requests resent after the server's Retry-After (a 429 or 5xx), or "
            "GETs resent 1 s after their connection broke (code 0), by verb, resource and the "
            "status that made them wait (client-go's rest_client_request_retries_total); each "
            "waited up to 60 s before it",
            ["verb", "resource", "code"], registry=r)
        self.api_request_duration = Histogram(
            "slicectl_api_request_duration_seconds", "Kubernetes API request latency by verb",
            ["verb"], buckets=LATENCY_BUCKETS, registry=r)
        self.rate_limiter_wait = Histogram(
            "slicectl_rate_limiter_wait_seconds",
            "Time each API request waited for the client's rate limit (--kube-api-qps, "
            "--kube-api-burst), by lane: foreground (slice writes, lists, watches) or "
            "background (status writes, Events: only tokens the foreground can spare)",
            ["lane"], buckets=LATENCY_BUCKETS, registry=r)
        self.trigger_to_write = Histogram(
            "slicectl_trigger_to_write_seconds",
            "Time from the oldest dated change a slice write reflects (a Ready transition, a new "
            "selector) to the write's acknowledgement; writes of undated changes only (a pod "
            "deleted or relabelled) are not observed, as they carry no trigger time",
            buckets=LATENCY_BUCKETS, registry=r)
        self.leader = Gauge(
            "slicectl_leader", "1 while this replica holds the leader Lease, else 0", registry=r)
        self.status_writes = Counter(
            "slicectl_status_writes", "EndpointSelector status writes", registry=r)
        self.event_loop_lag = Histogram(
            "slicectl_event_loop_lag_seconds",
            "How late the event loop woke a monitor task that slept a fixed interval",
            buckets=LOOP_LAG_BUCKETS, registry=r)
        self.pods_cached = Gauge(
            "slicectl_pods_cached", "Pods held in the controller's pod store", registry=r)
        self.selectors_cached = Gauge(
            "slicectl_selectors_cached",
            "EndpointSelectors held in the selector index (every flavour)", registry=r)
        # Label values known up front are pre-created so dashboards see zeros, not gaps.
        for result in SYNC_RESULTS:
            self.syncs.labels(result=result)
        for operation in OPERATIONS:
            self.changes.labels(operation=operation)
        for lane in LANES:
            self.rate_limiter_wait.labels(lane=lane)

    # -- upstream families -------------------------------------------------------------------

    def observe_sync(self, result: str, seconds: float) -> None:
        """One finished sync: ``result`` is success, stale or error (upstream's values)."""
        self.syncs.labels(result=result).inc()
        self.sync_duration.observe(seconds)

    def observe_reconcile(self, added: int, removed: int, slices_changed: int) -> None:
        """What one successful reconcile wrote, as upstream observes it after each sync."""
        self.endpoints_added.observe(added)
        self.endpoints_removed.observe(removed)
        self.slices_changed.labels(topology="Disabled", traffic_distribution="").observe(
            slices_changed)

    def slice_write(self, operation: str, trigger_age: float | None = None) -> None:
        """An acknowledged slice create/update/delete; ``trigger_age`` in seconds if known."""
        self.changes.labels(operation=operation).inc()
        if trigger_age is not None:
            self.trigger_to_write.observe(max(trigger_age, 0.0))

    def set_slice_totals(self, endpoints_desired: int, slices: int, slices_desired: int) -> None:
        self.endpoints_desired.set(endpoints_desired)
        self.num_endpoint_slices.set(slices)
        self.desired_endpoint_slices.set(slices_desired)

    # -- slicectl families -------------------------------------------------------------------

    def api_request(self, verb: str, resource: str, code: int, seconds: float) -> None:
        """The kube client's ``on_request`` hook: one finished HTTP request."""
        self.api_requests.labels(verb=verb, resource=resource, code=str(code)).inc()
        self.api_request_duration.labels(verb=verb).observe(seconds)

    def api_retry(self, verb: str, resource: str, code: int) -> None:
        """The kube client's ``on_retry`` hook: a request to be resent (``code`` 0: its
        connection broke)."""
        self.api_request_retries.labels(verb=verb, resource=resource, code=str(code)).inc()

    def rate_limited(self, background: bool, seconds: float) -> None:
        """The kube client's ``on_rate_limit`` hook: one request's wait for its token (0 when
        the bucket had one), as client-go's ``rest_client_rate_limiter_duration_seconds``."""
        self.rate_limiter_wait.labels(lane=LANES[background]).observe(seconds)

    def watch_event(self, resource: str, event_type: str) -> None:
        self.watch_events.labels(resource=resource, type=event_type).inc()

    def set_relists(self, resource: str, source: int, total: int) -> None:
        """One informer's running total of relists; ``source`` (the informer's ``id``) tells
        apart the informers of one resource (one per namespace, per selector API)."""
        self._follow(self.relists.labels(resource=resource), total, source)

    def set_queue(self, due: int, adds: int, retries: int, longest_running: float) -> None:
        """The work queue as of now: keys due, the queue's running totals of adds and retries
        (the counters follow them), and the age of the oldest sync in progress (0 if none)."""
        self.queue_depth.set(due)
        self._follow(self.queue_adds, adds)
        self._follow(self.queue_retries, retries)
        self.longest_running_sync.set(max(longest_running, 0.0))

    def _follow(self, counter: Counter, total: int, source: int = 0) -> None:
        """Advance ``counter`` by what ``source``'s running total (kept elsewhere, it never goes
        back) has gained since last seen; several sources may feed one counter."""
        key = (id(counter), source)
        seen = self._followed.get(key, 0)
        if total > seen:
            counter.inc(total - seen)
            self._followed[key] = total

    def observe_queue_latency(self, seconds: float) -> None:
        self.queue_latency.observe(max(seconds, 0.0))

    def set_leader(self, leading: bool) -> None:
        """Suitable as the leader elector's ``on_leader_change`` hook."""
        self.leader.set(1 if leading else 0)

    def status_write(self) -> None:
        self.status_writes.inc()

    def observe_loop_lag(self, seconds: float) -> None:
        self.event_loop_lag.observe(max(seconds, 0.0))

    def set_cached(self, pods: int, selectors: int) -> None:
        """What the caches hold: the figures that size the controller's memory."""
        self.pods_cached.set(pods)
        self.selectors_cached.set(selectors)

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format (``CONTENT_TYPE``)."""
        return generate_latest(self.registry)


class SliceCounts:
    """Upstream's metrics cache: per-selector slice counts folded into the three totals.

    ``desired`` slices follow upstream: per port set ``ceil(endpoints / max_per_slice)``, and at
    least one per selector (its placeholder). The controller calls :meth:`update` after each sync
    and :meth:`delete` when a selector goes away, and :meth:`clear` when its leadership term
    ends; the gauges are refreshed on every call.
    """

    def __init__(self, metrics: Metrics, max_endpoints_per_slice: int) -> None:
        self._metrics = metrics
        self._max = max_endpoints_per_slice
        self._by_selector: dict[str, tuple[int, int, int]] = {}
        self._totals = (0, 0, 0)  # running sums, so an update costs O(port sets), not O(selectors)

    def update(self, key: str, endpoints_by_port_set: Mapping[object, int], slices: int) -> None:
        endpoints = sum(endpoints_by_port_set.values())
        desired = max(sum(math.ceil(n / self._max) for n in endpoints_by_port_set.values()), 1)
        self._replace(key, (endpoints, slices, desired))

    def delete(self, key: str) -> None:
        if key in self._by_selector:
            self._replace(key, None)

    def clear(self) -> None:
        """Count nothing: this replica no longer leads (the gauges are the leader's view)."""
        self._by_selector.clear()
        self._totals = (0, 0, 0)
        self._metrics.set_slice_totals(*self._totals)

    def _replace(self, key: str, new: tuple[int, int, int] | None) -> None:
        old = self._by_selector.pop(key, (0, 0, 0))
        if new is not None:
            self._by_selector[key] = new
        add = new or (0, 0, 0)
        self._totals = (
            self._totals[0] - old[0] + add[0],
            self._totals[1] - old[1] + add[1],
            self._totals[2] - old[2] + add[2],
        )
        self._metrics.set_slice_totals(*self._totals)
