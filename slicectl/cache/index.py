"""Indexes that turn a pod event into the selectors it concerns, and a selector into its pods.

:class:`SelectedPods` is the reverse direction (selector -> pods), maintained from the same
lookups; see its docstring.

:class:`SelectorIndex` answers "which selectors match these labels in this namespace" without
scanning every selector of the namespace (upstream's scan costs 100-350 ms per pod event with
hundreds of Services). Each valid selector is posted under ONE of its ``In`` terms, once per
value of that term: any pod it matches must carry one of those values, so looking up the pod's
own (key, value) pairs finds every candidate exactly once; each candidate is then verified with
``Selector.matches``. The term chosen is the one whose postings are currently smallest, so
selectors that share a common label (``app=vllm``) spread over their distinguishing one.
Selectors without an ``In`` term sit in a per-namespace fallback list that is always checked,
and so do selectors whose smallest ``In`` term has more than :data:`MAX_POSTINGS` values: a
posting costs ~270 bytes, and ``values`` are unbounded (one 1.5 MiB selector of short values
would take ~40 MiB), while a fallback entry costs one ``matches`` per pod event of its
namespace. Invalid selectors (``error`` set) are remembered but never match.

:func:`selectors_to_sync` is the pod-update filter: which selector keys a pod change must sync.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from slicectl.cache.store import PodStore
from slicectl.model.records import TERMINAL_PHASES, PodRecord, SelectorRecord

Posting = tuple[str, str]  # (label key, label value)
MAX_POSTINGS = 128  # a selector needing more postings than this goes to the fallback list


def selector_key(record: SelectorRecord) -> str:
    """The default index key: ``namespace/name``."""
    return record.key


class SelectorIndex:
    def __init__(self, key: Callable[[SelectorRecord], str] = selector_key) -> None:
        self._key = key
        self._records: dict[str, SelectorRecord] = {}
        # namespace -> (label key, value) -> selector key -> record
        self._postings: dict[str, dict[Posting, dict[str, SelectorRecord]]] = {}
        self._fallback: dict[str, dict[str, SelectorRecord]] = {}
        self._placed: dict[str, tuple[Posting, ...]] = {}  # where each selector is posted

    def key_of(self, record: SelectorRecord) -> str:
        return self._key(record)

    def get(self, key: str) -> SelectorRecord | None:
        return self._records.get(key)

    def __len__(self) -> int:
        return len(self._records)

    def keys(self) -> list[str]:
        return list(self._records)

    def add(self, record: SelectorRecord) -> None:
        """Insert or replace a selector."""
        key = self._key(record)
        if key in self._records:
            self.remove(key)
        self._records[key] = record
        if record.error is not None:
            return  # invalid: kept for get(), never matches
        terms = record.selector.equality_terms()
        ns = record.namespace
        if not terms:
            self._fallback.setdefault(ns, {})[key] = record
            return
        postings = self._postings.setdefault(ns, {})

        def load(term: tuple[str, frozenset[str]]) -> int:
            label, values = term
            return sum(len(postings.get((label, v), ())) for v in values) + len(values)

        label, values = min(terms, key=load)
        if len(values) > MAX_POSTINGS:
            self._fallback.setdefault(ns, {})[key] = record
            return
        placed = tuple((label, v) for v in sorted(values))
        for posting in placed:
            postings.setdefault(posting, {})[key] = record
        self._placed[key] = placed

    def remove(self, key: str) -> SelectorRecord | None:
        record = self._records.pop(key, None)
        if record is None:
            return None
        ns = record.namespace
        placed = self._placed.pop(key, None)
        if placed is not None:
            postings = self._postings[ns]
            for posting in placed:
                bucket = postings[posting]
                del bucket[key]
                if not bucket:
                    del postings[posting]
            if not postings:
                del self._postings[ns]
        else:
            fallback = self._fallback.get(ns)
            if fallback is not None and fallback.pop(key, None) is not None and not fallback:
                del self._fallback[ns]
        return record

    def matching(self, namespace: str, labels: Mapping[str, str]) -> list[SelectorRecord]:
        """Exactly the valid selectors of ``namespace`` whose selector matches ``labels``."""
        out: list[SelectorRecord] = []
        postings = self._postings.get(namespace)
        if postings:
            if len(labels) <= len(postings):
                for posting in labels.items():
                    bucket = postings.get(posting)
                    if bucket:
                        out.extend(r for r in bucket.values() if r.selector.matches(labels))
            else:
                for (label, value), bucket in postings.items():
                    if labels.get(label) == value:
                        out.extend(r for r in bucket.values() if r.selector.matches(labels))
        fallback = self._fallback.get(namespace)
        if fallback:
            out.extend(r for r in fallback.values() if r.selector.matches(labels))
        return out

    def matching_both(
        self, old: PodRecord | None, new: PodRecord | None
    ) -> tuple[list[SelectorRecord], list[SelectorRecord]]:
        """The selectors matching ``old`` and ``new`` (one lookup when the labels are the same)."""
        now = self.matching(new.namespace, new.labels) if new is not None else []
        if old is None:
            return [], now
        if new is not None and old.namespace == new.namespace and (
            old.labels is new.labels or old.labels == new.labels
        ):
            return now, now
        return self.matching(old.namespace, old.labels), now

    def matching_keys(self, namespace: str, labels: Mapping[str, str]) -> set[str]:
        key = self._key
        return {key(r) for r in self.matching(namespace, labels)}


class SelectedPods:
    """Selector key -> the pods its selector matches (by name), kept in step with pod events.

    Pod events update it from the same posting-list lookups that find a pod's selectors
    (:meth:`pod_changed` takes both sides' matches, which the router computes anyway), so a
    sync reads exactly its selector's pods: O(selected pods), whatever the namespace's size or
    the number of selectors. A selector that is new or whose label selector changed is marked
    pending; the first read of any pending selector of a namespace scans that namespace ONCE for
    all of them, matching each distinct (shared) label map once. Phase and IPs are not filtered
    here: the planner decides inclusion.
    """

    def __init__(self, selectors: SelectorIndex, pods: PodStore) -> None:
        self._selectors = selectors
        self._pods = pods
        self._members: dict[str, dict[str, PodRecord]] = {}
        self._pending: dict[str, set[str]] = {}  # namespace -> selector keys to rebuild

    def __len__(self) -> int:
        return len(self._members)

    def selector_changed(self, old: SelectorRecord | None, new: SelectorRecord | None) -> None:
        """Call after the SelectorIndex was updated with ``new`` (None: deleted)."""
        if new is None or new.error is not None:
            if old is not None:
                key = self._selectors.key_of(old)
                self._members.pop(key, None)
                pending = self._pending.get(old.namespace)
                if pending is not None:
                    pending.discard(key)
                    if not pending:  # namespaces come and go: keep none that has nothing
                        del self._pending[old.namespace]
            return
        key = self._selectors.key_of(new)
        if (
            old is not None and key in self._members and old.error is None
            and old.namespace == new.namespace and old.selector == new.selector
        ):
            return  # same selector: same pods
        self._members[key] = {}
        self._pending.setdefault(new.namespace, set()).add(key)

    def pod_changed(
        self, old: PodRecord | None, new: PodRecord | None,
        before: Iterable[SelectorRecord], now: Iterable[SelectorRecord],
    ) -> None:
        """``before``/``now``: the selectors matching ``old``'s and ``new``'s labels."""
        key_of = self._selectors.key_of
        members = self._members
        now_keys = set()
        if new is not None:
            name = new.name
            for sel in now:
                key = key_of(sel)
                now_keys.add(key)
                pods = members.get(key)
                if pods is not None:
                    pods[name] = new
        if old is not None:
            for sel in before:
                key = key_of(sel)
                if key not in now_keys:
                    pods = members.get(key)
                    if pods is not None:
                        pods.pop(old.name, None)

    def pods_of(self, key: str) -> Collection[PodRecord]:
        """The pods ``key``'s selector matches (empty for unknown or invalid selectors)."""
        sel = self._selectors.get(key)
        if sel is None:
            return ()
        if self._pending.get(sel.namespace):
            self.build(sel.namespace)
        pods = self._members.get(key)
        return pods.values() if pods is not None else ()

    def build(self, namespace: str) -> None:
        """Fill every pending selector of ``namespace`` with one scan of its pods."""
        pending = self._pending.pop(namespace, set())
        if not pending:
            return
        for key in pending:
            self._members[key] = {}
        key_of = self._selectors.key_of
        matching = self._selectors.matching
        # id(label map) -> the pending selectors' member maps (the pods keep the maps alive).
        seen: dict[int, list[dict[str, PodRecord]]] = {}
        for name, pod in self._pods.in_namespace(namespace).items():
            labels = pod.labels
            targets = seen.get(id(labels))
            if targets is None:
                targets = seen[id(labels)] = [
                    self._members[k] for s in matching(namespace, labels)
                    if (k := key_of(s)) in pending
                ]
            for pods in targets:
                pods[name] = pod

    def build_all(self) -> None:
        for namespace in list(self._pending):
            self.build(namespace)


def _endpoint_fields(pod: PodRecord) -> tuple[object, ...]:
    """What decides a pod's endpoints, besides its labels. The uid is the targetRef's: a pod
    deleted and re-created under its name while no watch was open comes back as an update."""
    return (
        pod.uid,
        pod.ready,
        pod.terminating,
        pod.pod_ips,
        pod.phase in TERMINAL_PHASES,
        pod.hostname,
        pod.subdomain,
        pod.container_ports,
        pod.node_name,
    )


def selectors_to_sync(
    old: PodRecord | None, new: PodRecord | None, index: SelectorIndex
) -> set[str]:
    """The selector keys a pod add (old None), delete (new None) or update must sync."""
    before, now = index.matching_both(old, new)
    return keys_to_sync(old, new, {index.key_of(s) for s in before},
                        {index.key_of(s) for s in now})


def keys_to_sync(
    old: PodRecord | None, new: PodRecord | None, before: set[str], now: set[str]
) -> set[str]:
    """Which of the selectors matching ``old`` (``before``) and ``new`` (``now``) must sync.

    Upstream's filter: the same resourceVersion is a resync (nothing); a pure relabel syncs only
    the selectors the pod entered or left (symmetric difference); a relabel together with an
    endpoint-relevant change syncs both sides (union); an endpoint-relevant change alone syncs
    the selectors of the new labels. Endpoint-relevant here is wider than upstream's (which
    misses terminal phases, container ports and nodeName): see :func:`_endpoint_fields`.
    """
    if new is None:
        return before
    if old is None:
        return now
    if old.resource_version == new.resource_version:
        return set()
    pod_changed = _endpoint_fields(old) != _endpoint_fields(new)
    if old.labels == new.labels:
        return now if pod_changed else set()
    return now | before if pod_changed else now ^ before
