"""Deletion as kube-apiserver plus the garbage collector and namespace controller do it.

Decides what a DELETE does: preconditions (uid, resourceVersion: 409 Conflict), graceful
deletion of pods as ``podStrategy`` and ``rest.BeforeDelete`` do it (the pod is written with
``deletionTimestamp`` = now + grace and ``deletionGracePeriodSeconds``, a MODIFIED event, even
when the grace is 0; it is removed at once only when the grace is 0: never scheduled, already
terminal, or ``gracePeriodSeconds=0``; otherwise it stays until a kubelet deletes it again
with a shorter grace, see :mod:`slicectl.sim.kubelet`), finalizers (the object stays with a
deletionTimestamp until its finalizers are empty), the propagation policies (Background:
dependents deleted after the owner; Orphan: the ``orphan`` finalizer while ownerReferences are
stripped; Foreground: the ``foregroundDeletion`` finalizer until the dependents are gone),
dependents whose owners do not exist (deleted, or the dangling reference removed when another
owner lives), and namespace termination (phase Terminating, contents deleted, then the
``kubernetes`` finalizer removed).
Background work (the namespace controller's) runs on the event loop right after the request
that caused it. The garbage collector's runs ``GC_DELAY`` later, as a real one acts only once
its informers have seen the change: a client that deletes an owner and re-creates it under the
same name meets the old dependents for a while. ``gc_delay=None`` is a cluster without one
(envtest): dependents and the orphan / foreground finalizers are then left as they are.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from slicectl.sim import errors
from slicectl.sim.objects import deletion_done, now_timestamp, shift_timestamp, timestamp_in
from slicectl.sim.registry import Registry
from slicectl.sim.resources import NAMESPACE_TYPE
from slicectl.sim.storage import Event, Obj, StorageKey, Store, owner_uids
from slicectl.sim.types import ResourceType

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
NAMESPACE_POLL = 0.05
GC_DELAY = (0.05, 0.5)
"""Seconds (uniform, low and high) from a change to the garbage collector acting on it."""


def pod_grace(pod: Obj, options: dict[str, Any]) -> int:
    """``podStrategy.CheckGracefulDelete``: the request's grace period, else the pod's
    ``terminationGracePeriodSeconds``; 0 for a pod never scheduled or already terminal."""
    spec = pod.get("spec") or {}
    grace = options.get("gracePeriodSeconds")
    if not isinstance(grace, int):
        grace = spec.get("terminationGracePeriodSeconds")
        grace = grace if isinstance(grace, int) else 0
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in (
            "Succeeded", "Failed"):
        grace = 0
    return 1 if grace < 0 else grace


def check_preconditions(rt: ResourceType, obj: Obj, options: dict[str, Any]) -> None:
    """A DELETE's preconditions (uid, resourceVersion), checked before anything else, for a
    dry run too: a 409 when the object does not meet them."""
    meta = obj["metadata"]
    pre = options.get("preconditions") or {}  # a given empty value is a precondition too
    if pre.get("uid") is not None and pre["uid"] != meta.get("uid"):
        raise errors.delete_precondition_failed(rt, meta["name"], "UID", pre["uid"],
                                                meta.get("uid", ""))
    if (pre.get("resourceVersion") is not None
            and pre["resourceVersion"] != meta.get("resourceVersion")):
        raise errors.delete_precondition_failed(rt, meta["name"], "ResourceVersion",
                                                pre["resourceVersion"],
                                                meta.get("resourceVersion", ""))


class Lifecycle:
    def __init__(self, store: Store, registry: Registry,
                 gc_delay: tuple[float, float] | None = GC_DELAY) -> None:
        self.store = store
        self.registry = registry
        self.gc_delay = gc_delay
        self._random = random.Random()
        self.tasks: set[asyncio.Task[None]] = set()
        store.hooks.append(self._on_event)

    # -- DELETE -----------------------------------------------------------------------------

    def delete(self, rt: ResourceType, obj: Obj, options: dict[str, Any]) -> tuple[Obj, bool]:
        """Delete or start deleting ``obj``: the resulting object, and whether it is gone."""
        meta = obj["metadata"]
        check_preconditions(rt, obj, options)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        pods = (rt.group, rt.plural) == ("", "pods")
        if isinstance(options.get("gracePeriodSeconds"), int) and options["gracePeriodSeconds"] < 0:
            options = {**options, "gracePeriodSeconds": 1}  # negative means 1 s on delete
        if meta.get("deletionTimestamp"):
            return self._delete_again(rt, obj, options) if pods else (obj, False)
        finalizers = list(meta.get("finalizers") or [])
        has_dependents = bool(self.store.dependents.get(meta["uid"]))
        if policy == "Orphan" and has_dependents and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if policy == "Foreground" and has_dependents and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if rt is NAMESPACE_TYPE or (rt.group, rt.plural) == ("", "namespaces"):
            return self._terminate_namespace(rt, obj), False
        if not finalizers and not pods:
            gone = self.store.remove(rt, obj)
            return gone, True
        # pods delete gracefully (written with a deletionTimestamp, even for a grace of 0:
        # a MODIFIED event precedes the DELETED one); other kinds only wait for finalizers
        grace = pod_grace(obj, options) if pods else 0
        marked_meta = {**meta, "finalizers": finalizers,
                       "deletionTimestamp": timestamp_in(grace),
                       "deletionGracePeriodSeconds": grace}
        if not finalizers:
            del marked_meta["finalizers"]
        if not pods and meta.get("generation"):
            marked_meta["generation"] = meta["generation"] + 1  # markAsDeleting
        marked = self.store.put(rt, {**obj, "metadata": marked_meta})
        if not grace and not finalizers:
            return self.store.remove(rt, marked), True
        uid = meta["uid"]
        if ORPHAN in finalizers or FOREGROUND in finalizers:
            self._soon(self._process_owner, uid)
        return marked, False

    def _delete_again(self, rt: ResourceType, pod: Obj,
                      options: dict[str, Any]) -> tuple[Obj, bool]:
        """DELETE of a terminating pod: only a shorter grace period changes anything."""
        meta = pod["metadata"]
        current = meta.get("deletionGracePeriodSeconds")
        if not current:
            if meta.get("finalizers"):
                return pod, False
            return self.store.remove(rt, pod), True
        grace = options.get("gracePeriodSeconds")
        if not isinstance(grace, int) or grace >= current:
            return pod, False
        shorter = {**meta, "deletionGracePeriodSeconds": grace,
                   "deletionTimestamp": shift_timestamp(meta["deletionTimestamp"],
                                                        grace - current)}
        marked = self.store.put(rt, {**pod, "metadata": shorter})
        if not grace and not meta.get("finalizers"):
            return self.store.remove(rt, marked), True
        return marked, False

    # -- garbage collection -----------------------------------------------------------------

    def _soon(self, fn: Any, *args: Any) -> None:
        """Run a garbage collector step once it would have seen the change (module doc)."""
        if self.gc_delay is None:
            return
        low, high = self.gc_delay
        asyncio.get_running_loop().call_later(self._random.uniform(low, high), fn, *args)

    def _on_event(self, skey: StorageKey, event: Event) -> None:
        if event.type == "DELETED":
            uid = event.obj["metadata"]["uid"]
            if uid in self.store.dependents:
                self._soon(self._collect_dependents, uid)
            for owner in owner_uids(event.obj):
                self._soon(self._process_owner, owner)
        elif event.type == "ADDED" and owner_uids(event.obj):
            self._soon(self._check_owners, skey, event.obj["metadata"]["uid"])

    def _rt(self, skey: StorageKey) -> ResourceType | None:
        return self.registry.by_storage.get(skey)

    def _dependents(self, uid: str) -> list[tuple[ResourceType, Obj]]:
        found: list[tuple[ResourceType, Obj]] = []
        for skey, key in list(self.store.dependents.get(uid, ())):
            rt = self._rt(skey)
            obj = self.store.buckets[skey].objects.get(key) if rt else None
            if rt is not None and obj is not None:
                found.append((rt, obj))
        return found

    def _collect_dependents(self, uid: str) -> None:
        """The owner ``uid`` is gone: delete dependents with no other owner, else unlink it."""
        for rt, dep in self._dependents(uid):
            self._check_owners(None, dep["metadata"]["uid"], rt)

    def _check_owners(self, skey: StorageKey | None, uid: str,
                      rt: ResourceType | None = None) -> None:
        found = self.store.by_uid(uid)
        if found is None:
            return
        skey, obj = found
        rt = rt or self._rt(skey)
        if rt is None:
            return
        refs = obj["metadata"].get("ownerReferences") or []
        alive = [r for r in refs if self.store.by_uid(str(r.get("uid"))) is not None]
        if len(alive) == len(refs):
            return
        if alive:
            self.store.put(rt, {**obj, "metadata": {**obj["metadata"], "ownerReferences": alive}})
        elif not obj["metadata"].get("deletionTimestamp"):
            self.delete(rt, obj, {"propagationPolicy": "Background"})

    def _process_owner(self, uid: str) -> None:
        """Drive the orphan / foregroundDeletion finalizer of a deleting owner."""
        found = self.store.by_uid(uid)
        if found is None:
            return
        skey, owner = found
        rt = self._rt(skey)
        meta = owner["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if rt is None or not meta.get("deletionTimestamp"):
            return
        if ORPHAN in finalizers:
            for dep_rt, dep in self._dependents(uid):
                refs = [r for r in dep["metadata"].get("ownerReferences") or []
                        if r.get("uid") != uid]
                dep_meta = {**dep["metadata"], "ownerReferences": refs}
                if not refs:
                    del dep_meta["ownerReferences"]
                self.store.put(dep_rt, {**dep, "metadata": dep_meta})
            finalizers.remove(ORPHAN)
        elif FOREGROUND in finalizers:
            dependents = self._dependents(uid)
            for dep_rt, dep in dependents:
                if not dep["metadata"].get("deletionTimestamp"):
                    self.delete(dep_rt, dep, {"propagationPolicy": "Foreground"})
            if self._dependents(uid):
                return
            finalizers.remove(FOREGROUND)
        else:
            return
        self.update_finalizers(rt, owner, finalizers)

    def update_finalizers(self, rt: ResourceType, obj: Obj, finalizers: list[str]) -> None:
        meta = {**obj["metadata"], "finalizers": finalizers}
        if not finalizers:
            del meta["finalizers"]
        updated = {**obj, "metadata": meta}
        if deletion_done(updated):
            self.store.remove(rt, obj)
        else:
            self.store.put(rt, updated)

    # -- namespaces -------------------------------------------------------------------------

    def _terminate_namespace(self, rt: ResourceType, ns: Obj) -> Obj:
        marked = {**ns, "metadata": {**ns["metadata"], "deletionTimestamp": now_timestamp(),
                                     "deletionGracePeriodSeconds": 0},
                  "status": {**(ns.get("status") or {}), "phase": "Terminating"}}
        self.store.put(rt, marked)
        task = asyncio.get_running_loop().create_task(self._drain_namespace(rt, ns["metadata"]))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return marked

    async def _drain_namespace(self, rt: ResourceType, meta: dict[str, Any]) -> None:
        name = meta["name"]
        while True:
            remaining = list(self.store.iter_namespace(name))
            if not remaining:
                break
            for skey, obj in remaining:
                obj_rt = self._rt(skey)
                if obj_rt is not None and not obj["metadata"].get("deletionTimestamp"):
                    self.delete(obj_rt, obj, {"propagationPolicy": "Background"})
            await asyncio.sleep(NAMESPACE_POLL)
        found = self.store.by_uid(meta["uid"])
        if found is None:
            return
        ns = found[1]
        spec = {**(ns.get("spec") or {}), "finalizers": [
            f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]}
        ns = self.store.put(rt, {**ns, "metadata": dict(ns["metadata"]), "spec": spec})
        if not spec["finalizers"] and not ns["metadata"].get("finalizers"):
            self.store.remove(rt, ns)

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
