"""The benchmark's side of the cluster: it plays kubelet and watches what the slices say.

:class:`Cluster` owns one namespace: it creates the EndpointSelectors and pods, patches pod
status as a kubelet would (phase, IP, the Ready condition with its ``lastTransitionTime``), and
keeps the model of what the slices must list. :class:`SliceView` watches the slices of that
namespace and turns them into measurements:

- **latency**: from the pod write *returning* to the slice watch showing the change (a change
  that the same pod's next change overtook before it was published is not sampled);
- **writes**: creates/updates/deletes seen on the watch (a no-op write shows no event);
- **trigger**: the ``last-change-trigger-time`` annotation of each write against the moment it
  is seen, i.e. the controller's own view of its latency;
- **slice count over time**, for the plots.

Pods are bound to fake Nodes (``bench-node-{a,b,c}``, one per zone), so no kubelet runs them;
on a real cluster a heartbeat keeps those Nodes Ready, as kwok would.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from benchmarks.baselines.upstream import (
    SERVICE_NAME_LABEL,
    UPSTREAM_MANAGED_BY,
    service_manifest,
)
from slicectl.cli.workload import pod_manifest
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, Forbidden, NotFound
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES, NODES, PODS, Resource
from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    LABEL_ZONE,
)
from slicectl.model.timefmt import rfc3339

SERVICES = Resource("", "v1", "services", True, "Service")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", True, "ServiceAccount")
ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", True, "EndpointSelector")
MANAGED_BY = "slicectl-benchmark"
NODES_BY_ZONE = (("bench-node-a", "zone-a"), ("bench-node-b", "zone-b"),
                 ("bench-node-c", "zone-c"))
MAX_PER_SLICE = 100
CONCURRENCY = 32  # driver requests in flight
WATCH_VERBS = {"ADDED": "c", "MODIFIED": "u", "DELETED": "d"}

Want = bool | None  # listed ready / listed not ready / not listed


def parse_time(text: str) -> float:
    """RFC 3339 with up to nanosecond fractions -> Unix time."""
    base, _, frac = text.rstrip("Z").partition(".")
    stamp = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return stamp + (float("0." + frac) if frac else 0.0)


def kubelet_status(ip: str, ready: bool) -> dict[str, Any]:
    """A status patch as the kubelet writes it when readiness changes (whole-second times)."""
    now = rfc3339()
    return {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                        "lastTransitionTime": now}],
    }}


@dataclass
class Expected:
    want: Want
    kind: str  # add / ready / delete
    since: float | None = None  # when the driver's write returned


@dataclass
class SliceView:
    """The benchmark's slices of one namespace as a watch shows them, with measurements."""

    client: KubeClient
    namespace: str
    slices: dict[str, tuple[str, dict[str, bool]]] = field(default_factory=dict)
    where: dict[str, set[str]] = field(default_factory=dict)
    expected: dict[str, Expected] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)  # kind -> seconds
    trigger: list[float] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    timeline: list[tuple[float, int]] = field(default_factory=list)  # (time, slice count)
    managed_by: str = MANAGED_BY  # the slices watched carry this managed-by label ...
    group_label: str = LABEL_SELECTOR_NAME  # ... and name their group (selector) with this one
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _, rv = await self.client.list(ENDPOINTSLICES, self.namespace, label_selector=self._sel)
        self._task = asyncio.create_task(self._run(rv))

    @property
    def _sel(self) -> str:
        return f"{LABEL_MANAGED_BY}={self.managed_by}"

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for ev in self.client.watch(
                        ENDPOINTSLICES, self.namespace, resource_version=rv,
                        label_selector=self._sel, timeout_seconds=900):
                    rv = ev.object.get("metadata", {}).get("resourceVersion") or rv
                    if ev.type in WATCH_VERBS:
                        self._apply(ev.type, ev.object)
            except asyncio.CancelledError:
                raise
            except Exception:  # a dropped watch resumes from the last resourceVersion
                await asyncio.sleep(0.1)

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        now = time.time()
        meta = obj["metadata"]
        name = meta["name"]
        self.events[WATCH_VERBS[kind]] += 1
        _, old = self.slices.pop(name, ("", {}))
        for pod in old:
            self.where.get(pod, set()).discard(name)
        stamp = (meta.get("annotations") or {}).get(ANNOTATION_TRIGGER_TIME)
        if stamp and kind != "DELETED":  # every write: a second one in the same second too
            self.trigger.append(now - parse_time(stamp))
        new: dict[str, bool] = {}
        if kind != "DELETED":
            for ep in obj.get("endpoints") or ():
                pod = (ep.get("targetRef") or {}).get("name", "")
                new[pod] = bool((ep.get("conditions") or {}).get("ready", True))
                self.where.setdefault(pod, set()).add(name)
            self.slices[name] = ((meta.get("labels") or {}).get(self.group_label, ""), new)
        self.timeline.append((now, len(self.slices)))
        for pod in old.keys() | new.keys():
            exp = self.expected.get(pod)
            if exp is not None and self.state(pod, new) == exp.want:
                delay = 0.0 if exp.since is None else max(0.0, now - exp.since)
                self.latency.setdefault(exp.kind, []).append(delay)
                del self.expected[pod]

    def state(self, pod: str, prefer: dict[str, bool] | None = None) -> Want:
        if prefer is not None and pod in prefer:
            return prefer[pod]
        for name in self.where.get(pod, ()):
            return self.slices[name][1][pod]
        return None

    def expect(self, pod: str, want: Want, kind: str) -> Expected | None:
        """The driver is about to make ``pod``'s published state ``want``."""
        if self.state(pod) == want:
            self.expected.pop(pod, None)  # an unpublished change undone: nothing to wait for
            return None
        exp = self.expected[pod] = Expected(want, kind)
        return exp

    def reset(self) -> None:
        self.latency.clear()
        self.trigger.clear()
        self.expected.clear()

    def matches(self, model: dict[str, dict[str, bool]]) -> bool:
        listed: dict[str, Counter[tuple[str, bool]]] = {s: Counter() for s in model}
        for sel, eps in self.slices.values():
            listed.setdefault(sel, Counter()).update(eps.items())
        return all(listed[s] == Counter(model[s].items()) for s in listed if s in model) and \
            all(not listed[s] for s in listed if s not in model)

    def slice_count(self, selectors: Iterable[str]) -> int:
        wanted = set(selectors)
        return sum(1 for sel, _ in self.slices.values() if sel in wanted)

    def selectors_published(self, selectors: Iterable[str]) -> bool:
        """Every selector has at least one slice (its placeholder at least)."""
        have = {sel for sel, _ in self.slices.values()}
        return all(s in have for s in selectors)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


async def ensure_default_service_account(client: KubeClient, ns: str) -> None:
    """Admission refuses pods until the namespace's ``default`` ServiceAccount exists; on a
    real cluster its controller writes it a moment later (or never, if it does not run): written
    here, unless it is there already or the server has no ServiceAccounts (the embedded one)."""
    with contextlib.suppress(AlreadyExists, NotFound):
        await client.create(SERVICEACCOUNTS, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, ns)


class Cluster:
    """One benchmark namespace: selectors, pods, and the model of what slices must list.

    With ``services`` each group is a Service (same selector and ports) instead of an
    EndpointSelector, for the upstream controller, and the view watches upstream's slices.
    """

    def __init__(self, client: KubeClient, namespace: str, services: bool = False) -> None:
        self.client, self.ns, self.services = client, namespace, services
        self.model: dict[str, dict[str, bool]] = {}  # selector -> pod -> ready
        self.owner: dict[str, str] = {}  # pod -> selector
        self.ips: dict[str, str] = {}
        self.view = (SliceView(client, namespace, managed_by=UPSTREAM_MANAGED_BY,
                               group_label=SERVICE_NAME_LABEL) if services
                     else SliceView(client, namespace))
        self.changes = 0
        self._serial = 0
        self._limit = asyncio.Semaphore(CONCURRENCY)

    async def setup(self, selectors: Iterable[str]) -> None:
        await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": self.ns}})
        await ensure_default_service_account(self.client, self.ns)
        await self.view.start()
        for name in selectors:
            self.model[name] = {}
            match, ports = {"bench": name}, [{"name": "http", "protocol": "TCP",
                                              "targetPort": "http"}]
            if self.services:
                await self.client.create(SERVICES, service_manifest(name, match, ports), self.ns)
                continue
            await self.client.create(ESEL, {
                "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": match}, "ports": ports},
            }, self.ns)

    async def teardown(self, limit: float = 60.0, stalled: float = 5.0) -> None:
        """Delete the pods (no kubelet would confirm a graceful delete, which would keep the
        namespace Terminating), then the namespace, and wait until it is gone, so the server's
        cleanup of this run's pods and slices does not eat into the next run's CPU, nor its
        slice deletions into the next run's server request counters (the garbage collector
        deletes the slices one by one once their owners are gone). A namespace whose slices
        stop going away for ``stalled`` seconds has no collector working on it: not waited for.
        """
        await self.view.stop()
        with contextlib.suppress(Exception):
            await self.all(self.delete_pod(p) for p in list(self.owner))
        with contextlib.suppress(Exception):
            await self.client.delete(NAMESPACES, self.ns)
        deadline = time.monotonic() + limit
        left, moved = -1, time.monotonic()
        while time.monotonic() < deadline:
            try:
                ns = await self.client.get(NAMESPACES, self.ns)
                pods, _ = await self.client.list(PODS, self.ns)
                slices, _ = await self.client.list(ENDPOINTSLICES, self.ns)
            except NotFound:
                return
            except Exception:
                return  # cannot tell: do not hang the benchmark on it
            if len(slices) != left:
                left, moved = len(slices), time.monotonic()
            if not pods and (ns.get("status") or {}).get("phase") == "Terminating" and (
                    not slices or time.monotonic() - moved > stalled):
                return
            await asyncio.sleep(0.2)

    async def all(self, calls: Iterable[Awaitable[None]]) -> None:
        async def limited(call: Awaitable[None]) -> None:
            async with self._limit:
                await call

        await asyncio.gather(*(limited(c) for c in calls))

    def new_names(self, selector: str, count: int) -> list[str]:
        names = [f"{selector}-{self._serial + i:05d}" for i in range(count)]
        self._serial += count
        return names

    def ideal(self, selectors: Iterable[str] | None = None) -> int:
        chosen = self.model if selectors is None else selectors
        return sum(max(1, math.ceil(len(self.model[s]) / MAX_PER_SLICE)) for s in chosen)

    async def add_pod(self, selector: str, name: str, ready: bool = True) -> None:
        """Create ``name`` (Pending, no IP) and report it Running, as scheduler + kubelet do."""
        n = len(self.ips)
        ip = self.ips.setdefault(name, f"10.{64 + n // 62500}.{n // 250 % 250}.{n % 250 + 1}")
        node = NODES_BY_ZONE[n % len(NODES_BY_ZONE)][0]
        await self._create_pod(pod_manifest(name, {"bench": selector}, node, [("http", 8080)]))
        exp = self.view.expect(name, ready, "add")
        await self.client.patch(PODS, name, kubelet_status(ip, ready), self.ns,
                                subresource="status")
        if exp is not None:
            exp.since = time.time()
        self.model[selector][name] = ready
        self.owner[name] = selector
        self.changes += 1

    async def _create_pod(self, pod: dict[str, Any], limit: float = 30.0) -> None:
        """Create ``pod``; on a real cluster a fresh namespace's ``default`` ServiceAccount
        comes a moment later (its controller writes it), and until then admission refuses
        pods: retry those refusals only."""
        deadline = time.monotonic() + limit
        while True:
            try:
                await self.client.create(PODS, pod, self.ns)
                return
            except Forbidden as exc:
                if "serviceaccount" not in str(exc) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)

    async def set_ready(self, name: str, ready: bool) -> None:
        self.model[self.owner[name]][name] = ready
        exp = self.view.expect(name, ready, "ready")
        await self.client.patch(PODS, name, kubelet_status(self.ips[name], ready), self.ns,
                                subresource="status")
        if exp is not None:
            exp.since = time.time()
        self.changes += 1

    async def delete_pod(self, name: str) -> None:
        del self.model[self.owner.pop(name)][name]
        exp = self.view.expect(name, None, "delete")
        with contextlib.suppress(NotFound):
            await self.client.delete(PODS, name, self.ns, grace_period_seconds=0)
        if exp is not None:
            exp.since = time.time()
        self.changes += 1

    async def wait_for(self, pods: Iterable[str], limit: float) -> bool:
        """Wait until the slices show each of ``pods`` as the model says."""
        names = list(pods)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if all(self.view.state(p) == self.model.get(self.owner.get(p, ""), {}).get(p)
                   for p in names):
                return True
            await asyncio.sleep(0.005)
        return False

    async def converge(self, limit: float) -> float | None:
        """Seconds until the watched slices match the model; None past ``limit``."""
        start = time.monotonic()
        while not self.view.matches(self.model):
            if time.monotonic() - start > limit:
                return None
            await asyncio.sleep(0.01)
        return time.monotonic() - start

    async def verify(self) -> int:
        """Problems in a fresh LIST of pods and slices (every pod listed once, with its address
        and the right readiness)."""
        pods, _ = await self.client.list(PODS, self.ns)
        slices, _ = await self.client.list(
            ENDPOINTSLICES, self.ns, label_selector=f"{LABEL_MANAGED_BY}={self.view.managed_by}")
        truth = {p["metadata"]["name"]: (any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in p.get("status", {}).get("conditions", ())), (p["status"]["podIP"],))
            for p in pods if p.get("status", {}).get("podIP")}
        listed: Counter[tuple[str, tuple[bool, tuple[str, ...]]]] = Counter()
        for s in slices:
            for ep in s.get("endpoints") or ():
                ready = bool((ep.get("conditions") or {}).get("ready", True))
                shown = (ready, tuple(sorted(ep.get("addresses") or ())))
                listed[((ep.get("targetRef") or {}).get("name", ""), shown)] += 1
        problems = sum(abs(listed[(p, want)] - 1) for p, want in truth.items())
        problems += sum(n for (p, shown), n in listed.items() if truth.get(p) != shown)
        return problems


async def ensure_nodes(client: KubeClient) -> list[str]:
    """The fake nodes pods are bound to; returns the names created here (to delete later)."""
    created = []
    for name, zone in NODES_BY_ZONE:
        with contextlib.suppress(AlreadyExists):
            await client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": name, "labels": {LABEL_ZONE: zone}}})
            created.append(name)
    return created


async def heartbeat(client: KubeClient) -> None:
    """Keep the fake nodes Ready on a real cluster, or the node lifecycle controller would
    mark their pods not ready after ~40 s (what kwok does, minimally)."""
    while True:
        now = rfc3339()
        cond = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "slicectl benchmark", "lastHeartbeatTime": now,
                "lastTransitionTime": now}
        for name, _ in NODES_BY_ZONE:
            with contextlib.suppress(Exception):
                await client.patch(NODES, name, {"status": {"conditions": [cond]}},
                                   subresource="status")
        await asyncio.sleep(10)
