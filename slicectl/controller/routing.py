"""From informer events to queue keys: which selectors an event concerns, and how soon.

Informer handlers must be cheap (they run inline with the watch stream), so each one updates an
index and adds keys to the queue — no listing, no scanning of every selector. Keys are queued
only while :attr:`Router.active` (this replica's workers run: a leadership term); a standby
keeps its indexes and queues nothing:

* a **pod** event finds its selectors through the inverted :class:`SelectorIndex` (the same
  lookups keep the selector -> pods index in step), filtered by
  the upstream rule (a pure relabel syncs only the selectors the pod entered or left), and is
  batched leading-edge over ``--batch-period`` (see :mod:`slicectl.controller.batching`): at once
  for a quiet selector, else with the burst;
* a **selector** event syncs that selector at once. A selector that turns invalid stays indexed
  under its last valid spec (same uid), so pod events keep reaching it and its slices keep
  following that spec's pods (see :mod:`slicectl.controller.sync`); :meth:`Router.selector`
  hands the syncer that spec together with the current error. A change of its status alone
  syncs it only when the status is not what its last sync wanted (not our own write's echo);
* a **slice** event syncs its selector when the tracker says it was not our own write
  (an edit or a deletion by someone else; an edit of the ownerReference bumps no generation,
  so it is caught by comparison), or when that selector's sync is waiting for the
  cache to show its own writes (the echo it waited for has come);
* a **relist** of slices settles the tracker's expectations and syncs the selectors whose
  slices vanished while no watch was open;
* a **node** event whose zone changed syncs the selectors of the pods on that node.

Each change carries its trigger time, as upstream computes ``last-change-trigger-time``: for a
pod whose Ready condition changed (or that appeared with one), that condition's
``lastTransitionTime``; otherwise none (:data:`~slicectl.controller.queue.UNDATED`: a pod
deleted or relabelled, a spec or Node change; stamping the moment slicectl observed it would
date the write by the controller's watch, not by the change). The queue keeps the oldest per
selector: the oldest change the next write reflects, and a write that reflects only undated
changes carries no annotation, as upstream's. A selector's first sync by this process has no
such history and takes its time from the objects (see :mod:`slicectl.reconcile.trigger`). So
the pods of the first lists, before :attr:`Router.listed` is set, are the state the process
starts from, not changes: a pod Ready for a month would otherwise stamp the first write after a
restart a month old.

Queue keys are ``<api group>/<namespace>/<name>`` so two selector flavours with the same name in
one namespace never share a key or each other's slices: a slice goes to the key of its
controller's flavour (none, if this process does not serve that flavour). A slice with the
selector's labels whose controller is no selector, or that has none, is filed under every
served flavour's key, so it is replaced as upstream replaces any slice its Service does not own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from slicectl.cache.index import SelectedPods, SelectorIndex, keys_to_sync
from slicectl.cache.store import PodStore
from slicectl.controller.queue import UNDATED, WorkQueue
from slicectl.controller.tracker import SliceTracker
from slicectl.model.apis import SELECTOR_APIS
from slicectl.model.records import (
    TERMINAL_PHASES,
    NodeRecord,
    PodRecord,
    SelectorRecord,
    SelectorRef,
    SliceRecord,
)
from slicectl.model.timefmt import parse_rfc3339

# Syncs caused by someone else's slice changes start at most once per this many seconds per
# selector (upstream's endpointSliceChangeMinSyncDelay): the first repair is immediate, and a
# repair that keeps being undone (garbage collection racing a lagging selector watch) is bounded.
REPAIR_MIN_INTERVAL = 1.0
# The API groups of every selector flavour, served here or not (another process may serve it).
_SELECTOR_GROUPS = frozenset(ref.group for ref in SELECTOR_APIS.values())


def selector_key(ref: SelectorRef, namespace: str, name: str) -> str:
    return f"{ref.group}/{namespace}/{name}"


def record_key(record: SelectorRecord) -> str:
    return selector_key(record.api, record.namespace, record.name)


def _selector_owner_group(slice_: SliceRecord) -> str | None:
    """The API group of the slice's controller if that is a selector flavour's group, else None
    (no controller, or one that is no selector: a slice that no selector may keep)."""
    owner = slice_.owner
    if owner is None:
        return None
    api_version = owner.api_version
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return group if group in _SELECTOR_GROUPS else None


class Router:
    """Indexes fed by informer handlers, and the keys they put on the queue."""

    def __init__(
        self,
        queue: WorkQueue,
        tracker: SliceTracker,
        apis: Sequence[SelectorRef],
        batch_period: float,
        pods: PodStore | None = None,
        status_expected: Callable[[str, Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self.queue = queue
        # Whether a selector's status is what its last sync wanted (see selector_updated).
        self._status_expected = status_expected or (lambda _key, _status: False)
        self.tracker = tracker
        self.apis = tuple(apis)
        self.batch_period = batch_period
        self.selectors = SelectorIndex(key=record_key)
        # The one pod store: the pod informers write it before calling the handlers below;
        # the handlers only fill it themselves when nobody else does (tests).
        self.pods = pods if pods is not None else PodStore()
        self.selected = SelectedPods(self.selectors, self.pods)
        self._slices: dict[str, dict[str, SliceRecord]] = {}  # selector key -> slice uid -> slice
        self._slice_keys: dict[str, tuple[str, ...]] = {}  # slice uid -> selector keys
        self._invalid: dict[str, str] = {}  # selector key -> why its current spec is invalid
        self.listed = False  # every cache has listed once: pod events are changes from now on
        # Whether events queue keys: only while this replica's workers run (see
        # Controller.run_workers); a standby keeps its indexes only.
        self.active = True

    # -- reads for the syncer ---------------------------------------------------------------

    def selector(self, key: str) -> SelectorRecord | None:
        """The selector as the syncer sees it: an invalid one carries its last valid spec (if
        this process saw one) in ``selector``/``ports``/``ip_families`` and its ``error``."""
        record = self.selectors.get(key)
        error = self._invalid.get(key)
        if record is None or error is None or record.error is not None:
            return record
        return replace(record, error=error)

    def slices_of(self, key: str) -> Iterable[SliceRecord]:
        return self._slices.get(key, {}).values()

    def pods_of(self, key: str) -> Iterable[PodRecord]:
        """The pods the selector matches by labels (the planner still decides inclusion)."""
        return self.selected.pods_of(key)

    def _enqueue(self, keys: Iterable[str], batch: bool, changed_at: float | None = None,
                 removal: bool = True) -> None:
        """Queue ``keys``: leading-edge batched for ``batch`` (pod and node events), at once
        otherwise; ``changed_at`` is the change's trigger time (default: none of its own); only
        changes that cannot remove an endpoint (``removal=False``) may grow a key's batch
        window."""
        if not self.active:
            return
        when = UNDATED if changed_at is None else min(changed_at, time.time())
        window = self.batch_period if batch else None
        for key in keys:
            self.queue.add(key, changed_at=when, batch=window, removal=removal)

    def _repair(self, keys: Iterable[str]) -> None:
        """Queue ``keys`` whose slices someone else changed or deleted, at most once per
        ``REPAIR_MIN_INTERVAL`` after the key's last sync, so a repair undone each time cannot
        loop.

        A repair is not a change of the selector's pods: it takes no part in batching and
        carries no trigger time (upstream's trigger time, too, comes from pods and services
        only). On a real server the echo of nearly every write of ours beats the write's
        answer and looks like a repair; counted as a change, it came a few milliseconds after
        the pod change just synced, looked like the start of a burst, held the next
        independent change for the rest of the window and made the key look busy."""
        if not self.active:
            return
        for key in keys:
            self.queue.add(key, min_interval=REPAIR_MIN_INTERVAL)

    # -- pods -------------------------------------------------------------------------------

    def _pod_keys(self, old: PodRecord | None, new: PodRecord | None) -> set[str]:
        """The selectors a pod change must sync; keeps the selector -> pods index in step."""
        index = self.selectors
        before, now = index.matching_both(old, new)
        self.selected.pod_changed(old, new, before, now)
        key = index.key_of
        return keys_to_sync(old, new, {key(s) for s in before}, {key(s) for s in now})

    def pod_added(self, new: PodRecord) -> None:
        if not self.pods.holds(new):
            self.pods.put(new.key, new)
        keys = self._pod_keys(None, new)
        if keys:
            when = parse_rfc3339(new.ready_transition) if self.listed else None
            self._enqueue(keys, True, when, removal=False)

    def pod_updated(self, old: PodRecord, new: PodRecord) -> None:
        if not self.pods.holds(new):
            self.pods.put(new.key, new)
        keys = self._pod_keys(old, new)
        if keys:
            self._enqueue(keys, True, pod_trigger_time(old, new), removal=_removes(old, new))

    def pod_deleted(self, old: PodRecord) -> None:
        if self.pods.holds(old):
            self.pods.pop(old.key)
        self._enqueue(self._pod_keys(old, None), True)

    # -- selectors --------------------------------------------------------------------------

    def _index_selector(self, new: SelectorRecord) -> None:
        key = record_key(new)
        last = self.selectors.get(key)
        if new.error is None:
            self._invalid.pop(key, None)
        else:
            self._invalid[key] = new.error
            if last is not None and last.uid == new.uid and last.error is None:
                new = replace(new, selector=last.selector, ip_families=last.ip_families,
                              ports=last.ports, error=None)  # still matches its last valid pods
        self.selectors.add(new)
        self.selected.selector_changed(last, new)  # the indexed records, before and after

    def selector_added(self, new: SelectorRecord) -> None:
        self._index_selector(new)
        self._enqueue([record_key(new)], False)

    def selector_updated(self, old: SelectorRecord, new: SelectorRecord) -> None:
        self._index_selector(new)
        key = record_key(new)
        if (old.generation, old.labels, old.deleting, old.uid, old.error) != (
            new.generation, new.labels, new.deleting, new.uid, new.error
        ):
            self._enqueue([key], False)
        elif old.status != new.status and not self._status_expected(key, new.status):
            # Not the echo of our own status write: someone else's, or ours seen late after a
            # watch gap while a sync compared against the older one. Sync (no change, so no
            # trigger time) to put it right; held like a repair so two writers cannot loop.
            self._repair([key])

    def selector_deleted(self, old: SelectorRecord) -> None:
        self.selected.selector_changed(self.selectors.remove(record_key(old)), None)
        self._invalid.pop(record_key(old), None)
        self._enqueue([record_key(old)], False)

    # -- slices -----------------------------------------------------------------------------

    def _keys_for_slice(self, s: SliceRecord) -> tuple[str, ...]:
        name = s.selector_name
        if not name:
            return ()
        group = _selector_owner_group(s)
        apis = [a for a in self.apis if group is None or a.group == group]
        return tuple(selector_key(a, s.namespace, name) for a in apis)

    def _store_slice(self, s: SliceRecord) -> tuple[str, ...]:
        keys = self._keys_for_slice(s)
        self._drop_slice(s.uid)
        for key in keys:
            self._slices.setdefault(key, {})[s.uid] = s
        self._slice_keys[s.uid] = keys
        return keys

    def _drop_slice(self, uid: str) -> tuple[str, ...]:
        keys = self._slice_keys.pop(uid, ())
        for key in keys:
            by_uid = self._slices.get(key)
            if by_uid is not None:
                by_uid.pop(uid, None)
                if not by_uid:
                    del self._slices[key]
        return keys

    def _wake_waiting(self, keys: Iterable[str]) -> None:
        """Queue at once the syncs that waited for this slice event: not a change of their
        pods, so no trigger time (the requeued sync kept its own, ``Controller``)."""
        if not self.active:
            return
        for key in keys:
            if self.tracker.take_waiting(key):
                self.queue.add(key)

    def slice_added(self, new: SliceRecord) -> None:
        keys = self._store_slice(new)
        self._repair([k for k in keys if self.tracker.observe(k, new)])
        self._wake_waiting(keys)

    def slice_updated(self, old: SliceRecord, new: SliceRecord) -> None:
        if old.uid != new.uid:
            # Replaced under its name while no watch was open: a relist reports it as an
            # update. The slices here are by uid, so the old one must go as a deletion would.
            self.slice_deleted(old)
            self.slice_added(new)
            return
        before = self._slice_keys.get(old.uid, ())
        keys = self._store_slice(new)
        moved = set(before) - set(keys)  # relabelled away from a selector: that one must repair
        for key in moved:
            self.tracker.observe_deletion(key, old.uid)
        # Not our write (a newer generation), or someone else's edit of the ownerReference,
        # which changes no generation: the slice must be owned again (or replaced).
        owner_edited = old.owner != new.owner
        changed = [k for k in keys if self.tracker.observe(k, new) or owner_edited]
        self._repair([*changed, *moved])
        self._wake_waiting(keys)

    def slice_deleted(self, old: SliceRecord) -> None:
        keys = self._drop_slice(old.uid) or self._keys_for_slice(old)
        self._repair([k for k in keys if self.tracker.observe_deletion(k, old.uid)])
        self._wake_waiting(keys)

    def slices_relisted(self, namespace: str | None, listed_at: float) -> None:
        """A relist of slices (in ``namespace``, or all) started at ``listed_at`` completed."""
        present = self._slice_keys.keys()
        self._enqueue(self.tracker.reconcile_relist(present, listed_at, namespace), False)

    # -- nodes ------------------------------------------------------------------------------

    def _node_changed(self, name: str) -> None:
        keys: set[str] = set()
        for pod in self.pods.on_node(name):
            keys |= self.selectors.matching_keys(pod.namespace, pod.labels)
        self._enqueue(keys, True)

    def node_added(self, new: NodeRecord) -> None:
        self._node_changed(new.name)

    def node_updated(self, old: NodeRecord, new: NodeRecord) -> None:
        if old.zone != new.zone:
            self._node_changed(new.name)

    def node_deleted(self, old: NodeRecord) -> None:
        self._node_changed(old.name)


def pod_trigger_time(old: PodRecord, new: PodRecord) -> float | None:
    """The trigger time of a pod update: its Ready transition time if that changed, else None
    (no time of its own)."""
    if new.ready_transition and new.ready_transition != old.ready_transition:
        return parse_rfc3339(new.ready_transition)
    return None


def _removes(old: PodRecord, new: PodRecord) -> bool:
    """Whether a pod update may take an endpoint away or unready it (rather than add one)."""
    if not old.pod_ips:
        return False  # it listed nothing before: an update can only add
    return (new.pod_ips != old.pod_ips or new.terminating or old.labels != new.labels
            or (old.ready and not new.ready)
            or (new.phase in TERMINAL_PHASES and old.phase not in TERMINAL_PHASES))
