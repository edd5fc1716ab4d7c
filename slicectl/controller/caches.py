"""The controller's side of its caches: how informers are wired to the router and read back.

The :class:`~slicectl.controller.controller.Controller` owns the informers' lifecycle; this
decides what sits around them. :class:`CountingHandler` hands each watch event to the router and
counts it for the metrics. :class:`CacheView` is the syncer's read-only view of the caches. A
selector API's informers start only once discovery says the cluster serves it
(:func:`wait_served`): one that is not served yet is looked up again every retry period and
does not hold the other APIs back (KEP-6116's non-blocking start-up); a look-up that fails
(5xx, connection refused) is retried with backoff, never fatal, and does not say the API is
unserved, so readiness waits for it; the backoff ends early once the server answers again
(:class:`~slicectl.kube.answers.EarlyResume`, as the informers'), so readiness does not lag
the other caches after an outage at start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from slicectl.cache.store import Store
from slicectl.controller.routing import Router
from slicectl.kube.answers import EarlyResume, server_side
from slicectl.kube.client import KubeClient
from slicectl.kube.discovery import LOOKUP_ERRORS, resource_names
from slicectl.kube.resources import Resource
from slicectl.model.records import NodeRecord, PodRecord, SelectorRecord, SelectorRef, SliceRecord
from slicectl.obs.metrics import Metrics

log = structlog.get_logger("slicectl.controller")
LOOKUP_BACKOFF = 0.5  # seconds after a selector API look-up's first failure, doubling


def selector_resource(ref: SelectorRef) -> Resource:
    return Resource(ref.group, ref.version, ref.plural, namespaced=True, kind=ref.kind)


class CountingHandler:
    """Adapts three callables (plus a watch-event counter) to the informer handler protocol."""

    def __init__(self, resource: str, add: Any, update: Any, delete: Any, metrics: Metrics | None):
        self._add, self._update, self._delete = add, update, delete
        # The counter children, looked up once: labels() per event costs 3 us, 10% of ingest.
        self._counters = {
            kind: metrics.watch_events.labels(resource=resource, type=kind)
            for kind in ("ADDED", "MODIFIED", "DELETED")
        } if metrics is not None else None

    def _count(self, kind: str) -> None:
        if self._counters is not None:
            self._counters[kind].inc()

    def on_add(self, new: Any) -> None:
        self._count("ADDED")
        self._add(new)

    def on_update(self, old: Any, new: Any) -> None:
        self._count("MODIFIED")
        self._update(old, new)

    def on_delete(self, old: Any) -> None:
        self._count("DELETED")
        self._delete(old)


class CacheView:
    """The syncer's view of the caches."""

    def __init__(self, router: Router, nodes: Store[NodeRecord]) -> None:
        self._router = router
        self._nodes = nodes

    def selector(self, key: str) -> SelectorRecord | None:
        return self._router.selector(key)

    def pods_of(self, key: str) -> Iterable[PodRecord]:
        return self._router.pods_of(key)

    def nodes(self) -> Mapping[str, NodeRecord]:
        return self._nodes.as_mapping()

    def slices(self, key: str) -> Iterable[SliceRecord]:
        return self._router.slices_of(key)


async def wait_served(client: KubeClient, ref: SelectorRef, retry_period: float,
                      unserved: Callable[[], None]) -> bool:
    """Look the selector API up until the cluster serves it, calling ``unserved`` each time
    it is found not served; whether it has a status subresource (module docstring)."""
    errors = 0
    resume = EarlyResume(client.answers)
    while True:
        try:
            names = await resource_names(client, f"/apis/{ref.group}/{ref.version}")
            if names is not None and ref.plural in names:
                return f"{ref.plural}/status" in names
            errors = 0
            log.warning("selector API not served; retrying", api=ref.api_version,
                        kind=ref.kind, hint=_unserved_hint(ref))
            delay, early = retry_period, False
            unserved()  # not served: do not hold the other APIs back
        except LOOKUP_ERRORS as exc:  # the API server is struggling, not saying "no":
            # the caches are not synced without this API's selectors (readiness waits)
            delay = min(retry_period, LOOKUP_BACKOFF * 2.0 ** min(errors, 10))
            early = server_side(exc)
            errors += 1
            log.warning("selector API look-up failed; retrying", api=ref.api_version,
                        error=str(exc) or repr(exc), retry_in=delay)
        await resume.pause(delay, early=early)


def _unserved_hint(ref: SelectorRef) -> str:
    """What an operator does about a selector API the cluster does not serve."""
    return (f"the API server does not serve {ref.plural}.{ref.group} {ref.version}: install "
            f"its CRD (slicectl's is in the chart's crds/) or leave {ref.api_version} out of "
            "--selector-api")
