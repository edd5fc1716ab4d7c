"""The part of a kubelet a graceful pod deletion needs: stop the pod, then confirm the delete.

Why: a real API server never removes a pod bound to a node by itself. DELETE only sets
``deletionTimestamp`` (now + grace) and ``deletionGracePeriodSeconds``; the pod's kubelet sees
that, stops the containers (the pod and its containers turn not ready: a status write from
the kubelet), writes the terminal phase once they have stopped (since Kubernetes 1.27, PR
#115331: ``Succeeded`` when they exited 0), and then deletes the pod with
``gracePeriodSeconds=0``; only then is it gone. A server that dropped the pod at once, or
after the grace period with its status untouched, would hide the terminating phase from the
controller under test.

Decision: the embedded server plays this kubelet for every pod bound to a node (``nodeName``
set), since tests bind pods to nodes no kubelet runs on: the not-ready status write follows
the deletion on the next loop turn, the terminal phase and the final DELETE come after the
grace period times ``grace_scale`` (1 by default; tests and demos may shorten it).
``EmbeddedApiServer(kubelet=False)`` (``slicectl apiserver --no-kubelet``) leaves all of it
to the client, as a real cluster whose nodes have no kubelet does: terminating pods then stay
until someone deletes them with ``gracePeriodSeconds=0``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from slicectl.sim.managed import record_sim_write
from slicectl.sim.storage import Event, Obj, StorageKey, Store

if TYPE_CHECKING:
    from slicectl.sim.lifecycle import Lifecycle

PODS_KEY: StorageKey = ("", "pods")


def terminal_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status a kubelet writes when a deleted pod's containers have all exited 0."""
    statuses = [{**c, "ready": False, "started": False,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                if isinstance(c, dict) else c for c in status.get("containerStatuses") or []]
    done = {**stopped_status(status), "phase": "Succeeded"}
    if statuses:
        done["containerStatuses"] = statuses
    return done


def stopped_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status a kubelet writes once it has stopped a pod's containers."""
    conditions = [
        {**c, "status": "False"} if isinstance(c, dict) and c.get("type") in (
            "Ready", "ContainersReady") else c
        for c in status.get("conditions") or []]
    statuses = [{**c, "ready": False, "started": False} if isinstance(c, dict) else c
                for c in status.get("containerStatuses") or []]
    stopped = {**status, "conditions": conditions}
    if statuses:
        stopped["containerStatuses"] = statuses
    return stopped


class Kubelet:
    def __init__(self, store: Store, lifecycle: Lifecycle, grace_scale: float = 1.0) -> None:
        self.store = store
        self.lifecycle = lifecycle
        self.grace_scale = grace_scale
        self.timers: dict[str, asyncio.TimerHandle] = {}  # pod uid -> its final DELETE
        store.hooks.append(self._on_event)

    def _on_event(self, skey: StorageKey, event: Event) -> None:
        if skey != PODS_KEY:
            return
        meta = event.obj["metadata"]
        uid = meta["uid"]
        if event.type == "DELETED":
            timer = self.timers.pop(uid, None)
            if timer is not None:
                timer.cancel()
            return
        grace = meta.get("deletionGracePeriodSeconds")
        if not meta.get("deletionTimestamp") or not grace or not (
                event.obj.get("spec") or {}).get("nodeName"):
            return
        previous = (event.prev or {}).get("metadata", {}).get("deletionGracePeriodSeconds")
        if previous == grace and uid in self.timers:
            return  # an unrelated write to a pod already being stopped
        loop = asyncio.get_running_loop()
        if uid not in self.timers:
            loop.call_soon(self._stop_containers, uid)
        else:
            self.timers[uid].cancel()
        self.timers[uid] = loop.call_later(grace * self.grace_scale, self._confirm, uid)

    def _pod(self, uid: str) -> Obj | None:
        found = self.store.by_uid(uid)
        return found[1] if found is not None and found[0] == PODS_KEY else None

    def _stop_containers(self, uid: str, terminal: bool = False) -> None:
        pod = self._pod(uid)
        if pod is None:
            return
        status = (terminal_status if terminal else stopped_status)(pod.get("status") or {})
        if status != (pod.get("status") or {}):
            rt = self.lifecycle.registry.by_storage.get(PODS_KEY)
            if rt is not None:
                updated = {**pod, "metadata": dict(pod["metadata"]), "status": status}
                record_sim_write(pod, updated, "kubelet", "status")
                self.store.put(rt, updated)

    def _confirm(self, uid: str) -> None:
        self.timers.pop(uid, None)
        self._stop_containers(uid, terminal=True)
        pod = self._pod(uid)
        rt = self.lifecycle.registry.by_storage.get(PODS_KEY)
        if pod is not None and rt is not None:
            self.lifecycle.delete(rt, pod, {"gracePeriodSeconds": 0})

    def close(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
