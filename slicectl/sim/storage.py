"""In-memory object storage: one global resourceVersion, per-type object maps and event history.

Decides what etcd plus the watch cache decide in a real cluster: the monotonically increasing
resourceVersion stamped on every write; one map of objects per group/resource (keyed like the
etcd key ``namespace/name`` so sorted keys list in etcd order); a time-bounded history of events
per group/resource (the watch cache) from which watches resume and old states are rebuilt for
``resourceVersionMatch=Exact`` lists and continue tokens; and the fan-out of every event to the
subscribed watchers.

Two windows, as in a real cluster: a watch resumes from the watch cache, which holds the events
of the last ``history_seconds`` (75 s, its ``eventFreshDuration``; at most ``watch_cache_size``
events, its upper bound of 100 Ki); that is the harsh end of the real cache, which evicts only
when full and so may keep older events of an idle resource: here a watch from an RV older than
the window always gets 410 Expired, so relists happen in ordinary runs, not only after a forced
compaction. Exact-RV lists and continue tokens are served by etcd, which the apiserver compacts
every 5 minutes to the revision of 5 minutes before: they expire after ``compaction_seconds``
(300 s).

Each event is serialized at most once per event type, lazily, and the same bytes go to every
watcher.

Stored object dicts are never mutated after they are handed to :meth:`Store.put`; readers may
share them and must copy before changing anything.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson

from slicectl.sim import errors
from slicectl.sim.backpressure import TimeBudget
from slicectl.sim.resources import storage_key
from slicectl.sim.types import ResourceType

Obj = dict[str, Any]
StorageKey = tuple[str, str]


class Event:
    """One change: its resourceVersion, type, the object after it, and the object before it."""

    __slots__ = ("_bodies", "_left", "_lines", "at", "key", "obj", "prev", "rv", "type")

    def __init__(self, rv: int, etype: str, key: str, obj: Obj, prev: Obj | None) -> None:
        self.at = time.monotonic()
        self.rv = rv
        self.type = etype
        self.key = key
        self.obj = obj
        self.prev = prev
        self._left: Obj | None = None
        self._bodies: dict[tuple[bool, bool], bytes] = {}
        self._lines: dict[tuple[str, bool, bool], bytes] = {}

    def left(self) -> Obj:
        """What a watcher whose filter the object stops matching gets in its DELETED event:
        the object before the change (the last state that matched) at this event's
        resourceVersion, as the cacher's ``convertToWatchEvent`` sends it."""
        if self._left is None:
            prev = self.prev if self.prev is not None else self.obj
            self._left = {**prev, "metadata": {**prev["metadata"],
                                               "resourceVersion": str(self.rv)}}
        return self._left

    def body(self, meta_only: bool = False, left: bool = False) -> bytes:
        """The object's JSON (or its PartialObjectMetadata's), serialized once: the same bytes
        answer the write that caused the event and go into every watcher's line. ``left``:
        :meth:`left`'s instead."""
        body = self._bodies.get((meta_only, left))
        if body is None:
            obj = self.left() if left else self.obj
            body = self._bodies[(meta_only, left)] = orjson.dumps(
                {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                 "metadata": obj["metadata"]} if meta_only else obj)
        return body

    def line(self, etype: str | None = None, meta_only: bool = False,
             left: bool = False) -> bytes:
        """The watch stream line for this event, optionally re-typed (ADDED/DELETED on filters)
        and as metadata only (a PartialObjectMetadata); each form is serialized once.
        ``left``: of :meth:`left` (a DELETED for a watcher the object stopped matching)."""
        etype = etype or self.type
        line = self._lines.get((etype, meta_only, left))
        if line is None:
            line = (b'{"type":"' + etype.encode() + b'","object":'
                    + self.body(meta_only, left) + b"}\n")
            self._lines[(etype, meta_only, left)] = line
        return line


class Subscriber(Protocol):
    def offer(self, event: Event) -> None: ...

    def holds(self, rv: int) -> bool:
        """It holds an event at or before ``rv`` that its stream can send now."""
        ...

    def end(self) -> None:
        """End after what is queued: the resource is gone."""
        ...


class Bucket:
    """Everything stored for one group/resource."""

    __slots__ = ("budget", "history", "last_rv", "objects", "oldest", "watchers")

    def __init__(self, current_rv: int) -> None:
        self.budget = TimeBudget()  # how long dispatch may wait for full watchers
        self.objects: dict[str, Obj] = {}
        self.history: deque[Event] = deque()
        self.oldest = current_rv + 1  # the oldest resourceVersion a watch can still resume after
        # The cacher's lastProcessedResourceVersion: this resource's last event (writes to
        # other resources do not move it), which is what its bookmarks carry.
        self.last_rv = current_rv
        self.watchers: set[Subscriber] = set()


def object_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


ETCD_MAX_REQUEST_BYTES = 3 * 512 * 1024  # etcd's --max-request-bytes default, 1.5 MiB


def _check_size(rt: ResourceType, key: str, value: bytes) -> None:
    """etcd refuses a transaction over ``--max-request-bytes``; kube-apiserver passes that on
    as a 500 whose message is etcd's (kubernetes/kubernetes#112152). The transaction carries
    the key twice (compare and put) and the value, which for a built-in type is protobuf and
    smaller than this JSON: harsher than a real server for built-ins, never kinder."""
    etcd_key = f"/registry/{rt.group or 'core'}/{rt.plural}/{key}"
    if len(value) + 2 * len(etcd_key) > ETCD_MAX_REQUEST_BYTES:
        raise errors.etcd_request_too_large()


def owner_uids(obj: Obj) -> set[str]:
    refs = obj.get("metadata", {}).get("ownerReferences") or ()
    return {r["uid"] for r in refs if isinstance(r, dict) and isinstance(r.get("uid"), str)}


class Store:
    def __init__(self, watch_cache_size: int = 100 * 1024,
                 history_seconds: float = 75.0, compaction_seconds: float = 300.0) -> None:
        self.rv = 1
        self.watch_cache_size = max(1, watch_cache_size)
        self.history_seconds = history_seconds
        self.compaction_seconds = max(compaction_seconds, history_seconds)
        self.buckets: dict[StorageKey, Bucket] = {}
        self.uids: dict[str, tuple[StorageKey, str]] = {}
        self.dependents: dict[str, set[tuple[StorageKey, str]]] = {}
        self.hooks: list[Callable[[StorageKey, Event], None]] = []
        self.last_event: Event | None = None  # the event of the latest put
        self.terminated_watchers: Counter[StorageKey] = Counter()  # closed for falling behind
        self.watcher_buffer: int | None = None  # events a watcher may lag (None: as the cacher)

    def bucket(self, rt: ResourceType) -> Bucket:
        skey = storage_key(rt)
        bucket = self.buckets.get(skey)
        if bucket is None:
            bucket = self.buckets[skey] = Bucket(self.rv)
        return bucket

    def drop_bucket(self, rt: ResourceType) -> None:
        """Forget a resource (its CRD is gone); its watches end after their queued events."""
        bucket = self.buckets.pop(storage_key(rt), None)
        for watcher in list(bucket.watchers if bucket is not None else ()):
            watcher.end()

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        return self.bucket(rt).objects.get(object_key(namespace, name))

    def count(self, rt: ResourceType, namespace: str) -> int:
        """How many objects of ``rt`` ``namespace`` holds."""
        prefix = object_key(namespace, "")
        return sum(1 for key in self.bucket(rt).objects if key.startswith(prefix))

    def by_uid(self, uid: str) -> tuple[StorageKey, Obj] | None:
        where = self.uids.get(uid)
        if where is None:
            return None
        obj = self.buckets[where[0]].objects.get(where[1])
        return None if obj is None else (where[0], obj)

    def put(self, rt: ResourceType, obj: Obj) -> Obj:
        """Store ``obj`` (created or replaced), stamping the next resourceVersion on it.

        Refused, with nothing stored, when etcd would refuse the write (:func:`_check_size`)."""
        meta = obj["metadata"]
        key = object_key(meta.get("namespace", ""), meta["name"])
        bucket = self.bucket(rt)
        prev = bucket.objects.get(key)
        before = meta.get("resourceVersion")
        meta["resourceVersion"] = str(self.rv + 1)
        event = Event(self.rv + 1, "ADDED" if prev is None else "MODIFIED", key, obj, prev)
        try:
            _check_size(rt, key, event.body())  # the bytes every watcher and the writer get
        except errors.ApiError:
            meta["resourceVersion"] = before
            raise
        self.rv += 1
        bucket.objects[key] = obj
        skey = storage_key(rt)
        self.uids[meta["uid"]] = (skey, key)
        self._reindex_owners(skey, key, prev, obj)
        self.last_event = event
        self._emit(skey, bucket, event)
        return obj

    def remove(self, rt: ResourceType, obj: Obj) -> Obj:
        """Delete ``obj``; the DELETED event carries the deletion's resourceVersion."""
        meta = obj["metadata"]
        key = object_key(meta.get("namespace", ""), meta["name"])
        bucket = self.bucket(rt)
        prev = bucket.objects.pop(key)
        self.rv += 1
        gone = {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(self.rv)}}
        skey = storage_key(rt)
        self.uids.pop(meta["uid"], None)
        self._reindex_owners(skey, key, prev, None)
        self._emit(skey, bucket, Event(self.rv, "DELETED", key, gone, prev))
        return gone

    def _reindex_owners(self, skey: StorageKey, key: str, old: Obj | None, new: Obj | None) -> None:
        before = owner_uids(old) if old else set()
        after = owner_uids(new) if new else set()
        for uid in before - after:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard((skey, key))
                if not deps:
                    del self.dependents[uid]
        for uid in after - before:
            self.dependents.setdefault(uid, set()).add((skey, key))

    def _evict(self, bucket: Bucket) -> None:
        """Forget events etcd has compacted away or past the size bound."""
        history = bucket.history
        limit = time.monotonic() - self.compaction_seconds
        evicted = 0
        while history and (len(history) > self.watch_cache_size or history[0].at < limit):
            evicted = history.popleft().rv
        if evicted:
            # as the watch cache: resumable from one before its oldest event; when every event
            # has gone (an idle resource), from the last evicted one on (a bookmark's RV)
            bucket.oldest = history[0].rv if history else evicted + 1

    def _emit(self, skey: StorageKey, bucket: Bucket, event: Event) -> None:
        bucket.history.append(event)
        bucket.last_rv = event.rv
        self._evict(bucket)
        for watcher in tuple(bucket.watchers):
            watcher.offer(event)
        for hook in self.hooks:
            hook(skey, event)

    def watchers_hold(self, rv: int) -> bool:
        """Some watcher holds an event at or before ``rv`` its stream can send now (a write's
        answer waits for them: :meth:`slicectl.sim.server.EmbeddedApiServer._echoes_first`)."""
        return any(w.holds(rv) for bucket in self.buckets.values() for w in bucket.watchers)

    def compact(self) -> None:
        """Forget all history: watches and continue tokens from before now get 410 Expired."""
        for bucket in self.buckets.values():
            bucket.history.clear()
            bucket.oldest = self.rv + 1

    def compacted_before(self, rt: ResourceType) -> int:
        """The oldest resourceVersion an Exact list or a continue token may name (older: 410)."""
        bucket = self.bucket(rt)
        self._evict(bucket)
        return bucket.oldest - 1

    def resumable_from(self, rt: ResourceType) -> int:
        """The oldest resourceVersion a watch may resume from (older ones: 410): one before the
        oldest event in the watch window; with none left, the last one that aged out."""
        oldest = self.compacted_before(rt)
        limit = time.monotonic() - self.history_seconds
        aged: Event | None = None
        for event in self.bucket(rt).history:
            if event.at >= limit:
                return event.rv - 1 if aged is not None else oldest
            aged = event
        return aged.rv if aged is not None else oldest

    def check_not_expired(self, rt: ResourceType, rv: int) -> None:
        oldest = self.resumable_from(rt)
        if rv < oldest:
            raise errors.too_old(rv, oldest)

    def events_since(self, rt: ResourceType, rv: int) -> list[Event]:
        """Events strictly after ``rv`` (410 Expired if history no longer reaches back there)."""
        self.check_not_expired(rt, rv)
        newer: list[Event] = []
        for event in reversed(self.bucket(rt).history):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def objects_at(self, rt: ResourceType, rv: int) -> dict[str, Obj]:
        """The objects as they were at ``rv``, rebuilt by undoing newer history."""
        bucket = self.bucket(rt)
        if rv >= self.rv:
            return bucket.objects
        oldest = self.compacted_before(rt)
        if rv < oldest:
            raise errors.too_old(rv, oldest)
        state = dict(bucket.objects)
        for event in reversed(bucket.history):
            if event.rv <= rv:
                break
            if event.prev is None:
                state.pop(event.key, None)
            else:
                state[event.key] = event.prev
        return state

    def iter_namespace(self, namespace: str) -> Iterator[tuple[StorageKey, Obj]]:
        prefix = namespace + "/"
        for skey, bucket in list(self.buckets.items()):
            for key, obj in list(bucket.objects.items()):
                if key.startswith(prefix):
                    yield skey, obj
