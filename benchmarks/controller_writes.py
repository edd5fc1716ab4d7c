"""Slice writes and latency of the slicectl controller under typical pod churn.

The product's promise is the fewest EndpointSlice writes at low latency; this benchmark measures
both for four scenarios, once per ``--batch-period`` so the table shows the trade-off:

1. initial   S selectors x N pods exist, then the controller starts: writes, time to converge.
2. rollout   every selector replaces all its pods in steps of 25% (delete the oldest quarter,
             create as many new pods not-ready, then mark them ready), all selectors at once.
3. flaps     random pods flip readiness at R per second for T seconds.
4. scale     one selector goes N -> N/10 -> N pods; slices afterwards vs ceil(n/100).

Where things run: the embedded API server in its own process (``python -m slicectl apiserver``)
unless ``--kubeconfig`` points at a real cluster; the controller in this process, exactly as
``slicectl run`` runs it (``run_controller``), one fresh instance per batch period; the driver
(pods, readiness, a watch on the slices) in this process too, over HTTP with slicectl's client.

What is counted, per scenario, between its first driver action and convergence:
- slice writes: POST/PUT/PATCH/DELETE on endpointslices from the embedded server's request
  counts (attempts, 409s included), or from the slice watch on a real cluster;
- pod changes: driver actions that change what a slice must say (a pod appears, changes
  readiness, or goes away);
- e2e latency: from the driver's pod change to the slice watch showing it (a change overtaken by
  the next change of the same pod before it was published is not sampled);
- trigger latency: the ``last-change-trigger-time`` annotation of each slice write vs the time
  the write is seen on the watch (the controller's own view of its latency);
- other controller requests (status writes, events, reads) from the controller's client metrics;
- correct: a final LIST of pods and slices: every pod listed exactly once, readiness right.

    .venv/bin/python benchmarks/controller_writes.py [--quick] [--batch-period 0s,100ms,1s]
        [--selectors 20] [--pods 250] [--flap-rate 50] [--flap-seconds 10] [--kubeconfig F]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import math
import random
import shlex
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from slicectl.cli.flags import duration
from slicectl.cli.run import RunOptions, run_controller
from slicectl.cli.workload import apply_crd, crd_manifest, pod_manifest, running_status
from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import AlreadyExists, NotFound
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES, NODES, PODS, Resource
from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    LABEL_ZONE,
)
from slicectl.obs.logging import configure_logging
from slicectl.reconcile import Settings

ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", True, "EndpointSelector")
MANAGED_BY = "slicectl-benchmark"
NODES_BY_ZONE = (("bench-node-a", "zone-a"), ("bench-node-b", "zone-b"),
                 ("bench-node-c", "zone-c"))
MAX_PER_SLICE = 100
CONCURRENCY = 32  # driver requests in flight
CONVERGE_LIMIT = 60.0  # hang guard per scenario
WRITE_VERBS = {"POST": "c", "PUT": "u", "PATCH": "u", "DELETE": "d"}
WATCH_VERBS = {"ADDED": "c", "MODIFIED": "u", "DELETED": "d"}


# -- the API server ---------------------------------------------------------------------------


class ApiServerProcess:
    """``slicectl apiserver`` in a subprocess; its request counts come from its /metrics."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="slicectl-bench-")
        self.kubeconfig = str(Path(self.tmp.name) / "kubeconfig")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slicectl", "apiserver", "--host", "127.0.0.1", "--port", "0",
             "--kubeconfig-out", self.kubeconfig], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("kubeconfig "):
                break
        else:
            raise RuntimeError("the API server exited before it was ready")
        config = yaml.safe_load(Path(self.kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url: str = cluster["server"]
        self.token: str = config["users"][0]["user"]["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.ssl = ssl.create_default_context(cadata=ca)

    async def slice_writes(self) -> Counter[str]:
        """Slice write attempts so far by kind (c/u/d) plus ``409`` for conflicts."""
        connector = aiohttp.TCPConnector(ssl=self.ssl)
        headers = {"Authorization": f"Bearer {self.token}"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as session, \
                session.get(self.url + "/metrics") as resp:
            text = await resp.text()
        out: Counter[str] = Counter()
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels_text, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
            labels = dict(part.split("=", 1) for part in labels_text.split(","))
            labels = {k: v.strip('"') for k, v in labels.items()}
            kind = WRITE_VERBS.get(labels["verb"])
            if labels["resource"] != "endpointslices" or labels["subresource"] or kind is None:
                continue
            out[kind] += int(float(value))
            if labels["code"] == "409":
                out["409"] += int(float(value))
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.tmp.cleanup()


# -- what the slices say, from a watch --------------------------------------------------------


def parse_time(text: str) -> float:
    """RFC 3339 with up to nanosecond fractions (as the trigger-time annotation) -> epoch."""
    base, _, frac = text.rstrip("Z").partition(".")
    stamp = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return stamp + (float("0." + frac) if frac else 0.0)


Want = bool | None  # ready / not ready / not listed


@dataclass
class SliceView:
    """The managed slices of one namespace as a watch shows them, with latency samples."""

    client: KubeClient
    namespace: str
    slices: dict[str, tuple[str, dict[str, bool]]] = field(default_factory=dict)
    where: dict[str, set[str]] = field(default_factory=dict)
    expected: dict[str, tuple[Want, float]] = field(default_factory=dict)
    e2e: list[float] = field(default_factory=list)
    trigger: list[float] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    stamps: dict[str, str | None] = field(default_factory=dict)  # slice -> trigger annotation
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _, rv = await self.client.list(ENDPOINTSLICES, self.namespace, label_selector=self._sel)
        self._task = asyncio.create_task(self._run(rv))

    @property
    def _sel(self) -> str:
        return f"{LABEL_MANAGED_BY}={MANAGED_BY}"

    async def _run(self, rv: str) -> None:
        while True:
            async for ev in self.client.watch(ENDPOINTSLICES, self.namespace, resource_version=rv,
                                              label_selector=self._sel, timeout_seconds=900):
                rv = ev.object.get("metadata", {}).get("resourceVersion") or rv
                if ev.type != "BOOKMARK":
                    self._apply(ev.type, ev.object)

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        now = time.time()
        meta = obj["metadata"]
        name = meta["name"]
        self.events[WATCH_VERBS[kind]] += 1
        _, old = self.slices.pop(name, ("", {}))
        for pod in old:
            self.where.get(pod, set()).discard(name)
        stamp = (meta.get("annotations") or {}).get(ANNOTATION_TRIGGER_TIME)
        if stamp and kind != "DELETED" and self.stamps.get(name) != stamp:
            self.trigger.append(now - parse_time(stamp))  # a write that carries a new trigger
        self.stamps[name] = stamp
        new: dict[str, bool] = {}
        if kind != "DELETED":
            for ep in obj.get("endpoints") or ():
                pod = (ep.get("targetRef") or {}).get("name", "")
                new[pod] = bool((ep.get("conditions") or {}).get("ready", True))
                self.where.setdefault(pod, set()).add(name)
            self.slices[name] = ((meta.get("labels") or {}).get(LABEL_SELECTOR_NAME, ""), new)
        for pod in old.keys() | new.keys():
            want = self.expected.get(pod)
            if want is not None and self.state(pod, new) == want[0]:
                self.e2e.append(now - want[1])
                del self.expected[pod]

    def state(self, pod: str, prefer: dict[str, bool] | None = None) -> Want:
        if prefer is not None and pod in prefer:
            return prefer[pod]
        for name in self.where.get(pod, ()):
            return self.slices[name][1][pod]
        return None

    def expect(self, pod: str, want: Want, since: float) -> None:
        """The driver is about to make ``pod``'s published state ``want``."""
        if self.state(pod) == want:
            self.expected.pop(pod, None)  # an unpublished change undone: nothing to wait for
        else:
            self.expected[pod] = (want, since)

    def matches(self, model: dict[str, dict[str, bool]]) -> bool:
        listed: dict[str, Counter[tuple[str, bool]]] = {s: Counter() for s in model}
        for sel, eps in self.slices.values():
            listed.setdefault(sel, Counter()).update(eps.items())
        return all(listed[s] == Counter(model[s].items()) for s in listed if s in model) and \
            all(not listed[s] for s in listed if s not in model)

    def slice_count(self, selectors: Iterable[str]) -> int:
        wanted = set(selectors)
        return sum(1 for sel, _ in self.slices.values() if sel in wanted)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


# -- the driver -------------------------------------------------------------------------------


class Cluster:
    """One benchmark namespace: selectors, pods, and the model of what slices must list."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client, self.ns = client, namespace
        self.model: dict[str, dict[str, bool]] = {}  # selector -> pod -> ready
        self.owner: dict[str, str] = {}  # pod -> selector
        self.ips: dict[str, str] = {}
        self.view = SliceView(client, namespace)
        self.changes = 0
        self._serial = 0
        self._limit = asyncio.Semaphore(CONCURRENCY)

    async def setup(self, selectors: int) -> None:
        await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": self.ns}})
        await self.view.start()
        for i in range(selectors):
            name = f"sel-{i:02d}"
            self.model[name] = {}
            await self.client.create(ESEL, {
                "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": {"bench": name}},
                         "ports": [{"name": "http", "protocol": "TCP", "targetPort": "http"}]},
            }, self.ns)

    async def all(self, calls: Iterable[Awaitable[None]]) -> None:
        async def limited(call: Awaitable[None]) -> None:
            async with self._limit:
                await call

        await asyncio.gather(*(limited(c) for c in calls))

    def new_names(self, selector: str, count: int) -> list[str]:
        names = [f"{selector}-{self._serial + i:05d}" for i in range(count)]
        self._serial += count
        return names

    async def add_pod(self, selector: str, name: str, ready: bool) -> None:
        n = len(self.ips)
        ip = self.ips.setdefault(name, f"10.{64 + n // 62500}.{n // 250 % 250}.{n % 250 + 1}")
        node = NODES_BY_ZONE[n % len(NODES_BY_ZONE)][0]
        await self.client.create(PODS, pod_manifest(name, {"bench": selector}, node,
                                                    [("http", 8080)]), self.ns)
        self.view.expect(name, ready, time.time())
        await self.client.patch(PODS, name, running_status(ip, ready), self.ns,
                                subresource="status")
        self.model[selector][name] = ready
        self.owner[name] = selector
        self.changes += 1

    async def set_ready(self, name: str, ready: bool) -> None:
        self.model[self.owner[name]][name] = ready
        self.view.expect(name, ready, time.time())
        await self.client.patch(PODS, name, running_status(self.ips[name], ready), self.ns,
                                subresource="status")
        self.changes += 1

    async def delete_pod(self, name: str) -> None:
        del self.model[self.owner.pop(name)][name]
        self.view.expect(name, None, time.time())
        with contextlib.suppress(NotFound):
            await self.client.delete(PODS, name, self.ns, grace_period_seconds=0)
        self.changes += 1

    async def converge(self, limit: float = CONVERGE_LIMIT) -> float | None:
        """Seconds until the watched slices match the model; None past ``limit``."""
        start = time.monotonic()
        while not self.view.matches(self.model):
            if time.monotonic() - start > limit:
                return None
            await asyncio.sleep(0.01)
        return time.monotonic() - start

    async def verify(self) -> str:
        """A fresh LIST of pods and slices: every pod listed once, with the right readiness."""
        pods, _ = await self.client.list(PODS, self.ns)
        slices, _ = await self.client.list(ENDPOINTSLICES, self.ns,
                                           label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY}")
        truth = {p["metadata"]["name"]: any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in p.get("status", {}).get("conditions", ())) for p in pods}
        listed: Counter[tuple[str, bool]] = Counter()
        for s in slices:
            for ep in s.get("endpoints") or ():
                ready = bool((ep.get("conditions") or {}).get("ready", True))
                listed[((ep.get("targetRef") or {}).get("name", ""), ready)] += 1
        problems = sum(abs(listed[(p, r)] - 1) for p, r in truth.items())
        problems += sum(n for (p, r), n in listed.items() if truth.get(p) != r)
        return "yes" if problems == 0 else f"NO ({problems})"


async def ensure_nodes(client: KubeClient) -> list[str]:
    """The fake nodes pods are bound to (so no kubelet touches them); names created here."""
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
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        cond = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "slicectl benchmark", "lastHeartbeatTime": now,
                "lastTransitionTime": now}
        for name, _ in NODES_BY_ZONE:
            with contextlib.suppress(Exception):
                await client.patch(NODES, name, {"status": {"conditions": [cond]}},
                                   subresource="status")
        await asyncio.sleep(10)


# -- measuring --------------------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    batch: float
    changes: int
    writes: Counter[str]
    e2e: list[float]
    trigger: list[float]
    converge: float | None
    other: Counter[str]
    slices: int
    ideal: int
    correct: str

    def cells(self) -> list[str]:
        w = self.writes
        total = w["c"] + w["u"] + w["d"]
        conflicts = f" ({w['409']}x409)" if w["409"] else ""
        per = f"{total / self.changes:.3f}" if self.changes else "-"
        return [self.scenario, f"{self.batch * 1000:g}ms", str(self.changes),
                f"{total} = {w['c']}/{w['u']}/{w['d']}{conflicts}", per,
                pcts(self.e2e), pcts(self.trigger),
                "timeout" if self.converge is None else f"{self.converge:.2f}",
                str(self.other["status"]), str(self.other["events"]), str(self.other["reads"]),
                f"{self.slices} ({self.ideal})", self.correct]


HEADER = ["scenario", "batch", "pod changes", "slice writes = c/u/d", "writes/change",
          "e2e p50/p99 ms", "trigger p50/p99 ms", "converge s", "status writes", "events",
          "reads", "slices (ideal)", "correct"]


def pcts(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] * 1000

    return f"{at(0.5):.0f} / {at(0.99):.0f}"


def controller_requests(controller: Controller | None) -> Counter[str]:
    """Non-write requests the controller's client made: status writes, events, reads."""
    out: Counter[str] = Counter()
    if controller is None or controller.metrics is None:
        return out
    for metric in controller.metrics.api_requests.collect():
        for s in metric.samples:
            if not s.name.endswith("_total"):
                continue
            verb, resource = s.labels["verb"], s.labels["resource"]
            if resource.endswith("/status") and verb in ("PATCH", "PUT"):
                out["status"] += int(s.value)
            elif resource == "events" and verb in ("POST", "PATCH", "PUT"):
                out["events"] += int(s.value)
            elif verb in ("GET", "LIST", "WATCH"):
                out["reads"] += int(s.value)
    return out


class Bench:
    """One batch period: a namespace, a controller, the four scenarios in sequence."""

    def __init__(self, args: argparse.Namespace, client: KubeClient, kubeconfig: str,
                 server: ApiServerProcess | None, batch: float) -> None:
        self.args, self.client, self.kubeconfig = args, client, kubeconfig
        self.server, self.batch = server, batch
        ns = f"slicectl-bench-{uuid.uuid4().hex[:6]}-{round(batch * 1000)}ms"
        self.cluster = Cluster(client, ns)
        self.controller: Controller | None = None

    async def writes(self) -> Counter[str]:
        if self.server is not None:
            return await self.server.slice_writes()
        return Counter(self.cluster.view.events)

    async def measure(self, scenario: str, body: Callable[[], Awaitable[None]],
                      selectors: list[str] | None = None) -> Row:
        c = self.cluster
        w0, o0, changes0 = await self.writes(), controller_requests(self.controller), c.changes
        c.view.e2e.clear()
        c.view.trigger.clear()
        await body()
        converge = await c.converge()
        await asyncio.sleep(0.2)  # let stray writes (there should be none) land in the counts
        writes = await self.writes()
        writes.subtract(w0)
        other = controller_requests(self.controller)
        other.subtract(o0)
        chosen = selectors if selectors is not None else list(c.model)
        ideal = sum(max(1, math.ceil(len(c.model[s]) / MAX_PER_SLICE)) for s in chosen)
        return Row(scenario, self.batch, c.changes - changes0, writes, list(c.view.e2e),
                   list(c.view.trigger), converge, other, c.view.slice_count(chosen), ideal,
                   await c.verify())

    async def run(self) -> list[Row]:
        a, c = self.args, self.cluster
        await c.setup(a.selectors)
        await c.all(c.add_pod(sel, name, True)
                    for sel in c.model for name in c.new_names(sel, a.pods))
        c.changes = 0
        c.view.expected.clear()  # the controller has not started: nothing to time
        stop = asyncio.Event()
        started: asyncio.Future[Controller] = asyncio.get_running_loop().create_future()
        task: asyncio.Task[int] | None = None
        rows: list[Row] = []

        async def start_controller() -> None:
            nonlocal task
            task = asyncio.create_task(run_controller(
                self.options(), stop, on_started=lambda ctl, _h: started.set_result(ctl)))
            self.controller = await asyncio.wait_for(asyncio.shield(started), 30)

        try:
            rows.append(await self.measure("initial", start_controller))
            rows.append(await self.measure("rollout", self.rollout))
            rows.append(await self.measure("flaps", self.flaps))
            first = next(iter(c.model))
            rows.append(await self.measure("scale", lambda: self.scale(first), [first]))
        finally:
            stop.set()
            if task is not None:
                await asyncio.wait_for(task, 30)
            await c.view.stop()
            with contextlib.suppress(Exception):
                await self.client.delete(NAMESPACES, c.ns)
        return rows

    def options(self) -> RunOptions:
        a = self.args
        config = ControllerConfig(
            namespaces=(self.cluster.ns,), settings=Settings(MAX_PER_SLICE, MANAGED_BY),
            batch_period=self.batch, concurrent_syncs=a.concurrent_syncs)
        return RunOptions(controller=config, kubeconfig=self.kubeconfig,
                          client=ClientSettings(qps=a.kube_api_qps, burst=a.kube_api_burst),
                          metrics_bind_address="0", health_probe_bind_address="0")

    async def rollout(self) -> None:
        c, pause = self.cluster, self.args.step_pause
        quarter = max(1, math.ceil(self.args.pods / 4))
        for step in range(4):
            if step:
                await asyncio.sleep(pause)
            old = {sel: list(pods)[:quarter] for sel, pods in c.model.items()}
            new = {sel: c.new_names(sel, len(names)) for sel, names in old.items()}
            await c.all(c.delete_pod(n) for names in old.values() for n in names)
            await c.all(c.add_pod(sel, n, False) for sel, names in new.items() for n in names)
            await asyncio.sleep(pause)
            await c.all(c.set_ready(n, True) for names in new.values() for n in names)

    async def flaps(self) -> None:
        c, rate, seconds = self.cluster, self.args.flap_rate, self.args.flap_seconds
        rng = random.Random(42)
        pods = list(c.owner)
        loop = asyncio.get_running_loop()
        start = loop.time()
        tasks = []
        for i in range(round(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - loop.time()))
            pod = rng.choice(pods)
            tasks.append(asyncio.create_task(
                c.set_ready(pod, not c.model[c.owner[pod]][pod])))
        await asyncio.gather(*tasks)

    async def scale(self, selector: str) -> None:
        c, n = self.cluster, self.args.pods
        pods = list(c.model[selector])
        await c.all(c.delete_pod(p) for p in pods[:n - max(1, n // 10)])
        await c.converge()  # a timeout shows in the row's convergence and correctness
        have = len(c.model[selector])
        await c.all(c.add_pod(selector, p, True) for p in c.new_names(selector, n - have))


# -- main -------------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> int:
    server = None if args.kubeconfig else ApiServerProcess()
    kubeconfig = args.kubeconfig or (server.kubeconfig if server else "")
    rows: list[Row] = []
    try:
        client = await KubeClient.connect(kubeconfig, args.context,
                                          ClientSettings(qps=100_000.0, burst=1000))
        async with client:
            await apply_crd(client, crd_manifest())
            created = await ensure_nodes(client)
            beat = asyncio.create_task(heartbeat(client)) if server is None else None
            try:
                for batch in args.batch_period:
                    for row in await Bench(args, client, kubeconfig, server, batch).run():
                        rows.append(row)
                        print(" | ".join(f"{h}: {v}" for h, v in zip(HEADER, row.cells(),
                                                                      strict=True)), flush=True)
            finally:
                if beat is not None:
                    beat.cancel()
                for name in created if server is None else ():
                    with contextlib.suppress(Exception):
                        await client.delete(NODES, name)
    finally:
        if server is not None:
            server.stop()
    print()
    print(table(rows))
    return 0 if all(r.correct == "yes" and r.converge is not None for r in rows) else 1


def batch_periods(text: str) -> list[float]:
    return [duration()(part.strip()) for part in text.split(",") if part.strip()]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--quick", action="store_true", help="small sizes for a ~30 s run")
    a("--batch-period", type=batch_periods, default=None,
      help="comma-separated batch periods to compare (default 0s,100ms,1s)")
    a("--selectors", type=int, help="EndpointSelectors (default 20; --quick 4)")
    a("--pods", type=int, help="pods per selector (default 250; --quick 100)")
    a("--flap-rate", type=float, help="readiness flips per second (default 50; --quick 20)")
    a("--flap-seconds", type=float, help="flap duration (default 10; --quick 3)")
    a("--step-pause", type=float, default=0.25,
      help="rollout pause after each create and each ready wave (seconds)")
    a("--concurrent-syncs", type=int, default=5)
    a("--kube-api-qps", type=float, default=20.0, help="controller client QPS (slicectl default)")
    a("--kube-api-burst", type=int, default=30, help="controller client burst")
    a("--kubeconfig", help="a real cluster (e.g. kind); default: the embedded API server")
    a("--context", help="kubeconfig context")
    args = p.parse_args()
    quick = args.quick
    defaults = {"selectors": (20, 4), "pods": (250, 100), "flap_rate": (50.0, 20.0),
                "flap_seconds": (10.0, 3.0)}
    for key, (full, small) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, small if quick else full)
    if args.batch_period is None:
        args.batch_period = [0.0, 0.1, 1.0]
    configure_logging("warning", "console")
    print("$ " + shlex.join(sys.orig_argv), flush=True)
    where = args.kubeconfig or "embedded API server (subprocess)"
    print(f"# cluster: {where}; controller in-process (run_controller); selectors="
          f"{args.selectors} pods/selector={args.pods} flaps={args.flap_rate:g}/s x "
          f"{args.flap_seconds:g}s; controller qps={args.kube_api_qps:g} "
          f"burst={args.kube_api_burst}", flush=True)
    import uvloop
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
