"""The sample cluster ``slicectl demo`` drives: CRD, nodes, EndpointSelectors and pod lifecycles.

It plays the parts a real cluster has and the embedded API server does not: the scheduler and
kubelet (a pod is created Pending, then gets an IP and runs not-ready, then turns Ready), and a
Deployment rollout (surge a few new pods, make them ready, delete as many old ones, repeat).
Everything goes through the API over HTTP with slicectl's own client, so the controller sees
exactly what it would see from a real cluster.

Decisions: three nodes in three zones; pods spread round-robin over them; IPs from 10.244.0.0/16
in creation order; a one-second termination grace period so deleted pods are briefly listed as
terminating, as on a real node, without making the demo wait 30 seconds. The end of a graceful
deletion (containers not ready, then the kubelet's final DELETE with a zero grace period) is
played by the embedded API server's kubelet (:mod:`slicectl.sim.kubelet`); against a server
without one (``plays_kubelet=True``), :meth:`Workload.finish_deletion` plays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, NotFound
from slicectl.kube.resources import CRDS, NAMESPACES, NODES, PODS, Resource
from slicectl.model.selector import Selector, from_label_selector

NAMESPACE = "demo"
NODES_BY_ZONE = (("demo-node-a", "zone-a"), ("demo-node-b", "zone-b"), ("demo-node-c", "zone-c"))
ZONE_LABEL = "topology.kubernetes.io/zone"
_CONCURRENCY = 32  # requests the workload keeps in flight


def crd_manifest() -> dict[str, Any]:
    """The EndpointSelector CRD shipped in the package (a link to the Helm chart's copy)."""
    text = (resources.files("slicectl") / "crds" / "slicectl.io_endpointselectors.yaml").read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


async def apply_crd(client: KubeClient, crd: dict[str, Any], poll: float = 0.05) -> None:
    """Create ``crd`` (or replace the one already there) and wait until discovery serves it."""
    await put_crd(client, crd)
    while True:
        if await crd_served(client, crd):
            return
        await asyncio.sleep(poll)


async def put_crd(client: KubeClient, crd: dict[str, Any]) -> None:
    """Create ``crd``, or replace the one already there."""
    try:
        await client.create(CRDS, crd)
    except AlreadyExists:
        name = crd["metadata"]["name"]
        current = await client.get(CRDS, name)
        body = {**crd, "metadata": {**crd["metadata"],
                                    "resourceVersion": current["metadata"]["resourceVersion"]}}
        await client.replace(CRDS, name, body)


async def crd_served(client: KubeClient, crd: dict[str, Any]) -> bool:
    """Whether discovery lists the resource of ``crd``'s first served version now."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served"))
    try:
        doc = await client.request("GET", f"/apis/{spec['group']}/{version}")
    except NotFound:
        return False
    return any(r.get("name") == spec["names"]["plural"] for r in doc.get("resources", []))


@dataclass(frozen=True)
class SampleSelector:
    name: str
    selector: dict[str, Any]  # a metav1.LabelSelector
    ports: tuple[dict[str, Any], ...]
    labels: tuple[tuple[str, str], ...] = ()

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": self.name, "labels": dict(self.labels)},
            "spec": {"selector": self.selector, "ports": [dict(p) for p in self.ports]},
        }

    def matcher(self) -> Selector:
        return from_label_selector(self.selector)


SELECTORS = (
    SampleSelector(
        "llm-backends", {"matchLabels": {"app": "vllm"}},
        ({"name": "http", "protocol": "TCP", "targetPort": "http",
          "appProtocol": "kubernetes.io/h2c"},),
        (("team", "ml"),),
    ),
    SampleSelector("web", {"matchLabels": {"app": "web"}}, ({"name": "http", "targetPort": 8080},)),
    SampleSelector(
        "vllm-v2",
        {"matchLabels": {"app": "vllm"},
         "matchExpressions": [{"key": "version", "operator": "In", "values": ["v2"]}]},
        ({"name": "metrics", "targetPort": "metrics"},),
        (("team", "ml"),),
    ),
)


def pod_manifest(name: str, labels: dict[str, str], node: str,
                 ports: Iterable[tuple[str, int]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main", "image": "registry.k8s.io/pause:3.10",
                "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in ports],
            }],
        },
    }


def running_status(ip: str, ready: bool) -> dict[str, Any]:
    """A status patch as the kubelet reports a running pod."""
    return {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }}


class Workload:
    """Creates and evolves the demo's pods; ``note`` receives one line per phase step."""

    def __init__(self, client: KubeClient, note: Callable[[str], None],
                 namespace: str = NAMESPACE, plays_kubelet: bool = False) -> None:
        self.client = client
        self.plays_kubelet = plays_kubelet
        self.namespace = namespace
        self._note = note
        self._ips: dict[str, str] = {}
        self._serial = itertools.count()
        self._nodes = itertools.cycle([n for n, _ in NODES_BY_ZONE])
        self._limit = asyncio.Semaphore(_CONCURRENCY)

    async def setup(self) -> None:
        """Namespace, CRD (waited for until served), nodes and the sample selectors."""
        with contextlib.suppress(AlreadyExists):
            await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": self.namespace}})
        await apply_crd(self.client, crd_manifest())
        for node, zone in NODES_BY_ZONE:
            with contextlib.suppress(AlreadyExists):
                await self.client.create(NODES, {
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": node, "labels": {ZONE_LABEL: zone}}})
        esel = Resource("slicectl.io", "v1alpha1", "endpointselectors", True, "EndpointSelector")
        for sel in SELECTORS:
            with contextlib.suppress(AlreadyExists):
                await self.client.create(esel, sel.manifest(), self.namespace)
        self._note(f"applied the EndpointSelector CRD, {len(NODES_BY_ZONE)} nodes in "
                   f"{len(NODES_BY_ZONE)} zones, selectors: {', '.join(s.name for s in SELECTORS)}")

    # -- pod lifecycle ----------------------------------------------------------------------

    async def _all(self, calls: Iterable[Awaitable[Any]]) -> None:
        async def limited(call: Awaitable[Any]) -> None:
            async with self._limit:
                await call

        await asyncio.gather(*(limited(c) for c in calls))

    def _next_ip(self) -> str:
        n = next(self._serial)
        return f"10.244.{n // 250}.{n % 250 + 1}"

    async def _create(self, name: str) -> None:
        app, version = (("web", "v1") if name.startswith("web-") else
                        ("vllm", name.split("-")[1]))
        ports = [("http", 8080)] if app == "web" else [("http", 8000), ("metrics", 9090)]
        labels = {"app": app, "version": version}
        await self.client.create(PODS, pod_manifest(name, labels, next(self._nodes), ports),
                                 self.namespace)

    async def _start(self, name: str) -> None:
        ip = self._ips.setdefault(name, self._next_ip())
        await self.client.patch(PODS, name, running_status(ip, False), self.namespace,
                                subresource="status")

    async def set_ready(self, name: str, ready: bool) -> None:
        await self.client.patch(PODS, name, running_status(self._ips[name], ready),
                                self.namespace, subresource="status")

    async def delete(self, name: str) -> None:
        """Delete a pod gracefully (and, when ``plays_kubelet``, finish the deletion)."""
        with contextlib.suppress(NotFound):
            await self.client.delete(PODS, name, self.namespace)
        if self.plays_kubelet:
            await self.finish_deletion(name)

    async def finish_deletion(self, name: str, grace: float = 1.0) -> None:
        """The kubelet's part of a graceful deletion, for servers that do not play it: the pod
        turns not ready, then after its grace period it is deleted with a zero grace period."""
        with contextlib.suppress(NotFound):
            await self.set_ready(name, False)
            await asyncio.sleep(grace)
            await self.client.delete(PODS, name, self.namespace, grace_period_seconds=0)

    async def launch(self, names: list[str], ready_over: float, waves: int = 4) -> None:
        """Create pods (Pending), start them (IP, not ready), then make them ready in waves."""
        await self._all(self._create(n) for n in names)
        await self._all(self._start(n) for n in names)
        per_wave = max(1, math.ceil(len(names) / waves))
        for i in range(0, len(names), per_wave):
            await asyncio.sleep(ready_over / waves)
            await self._all(self.set_ready(n, True) for n in names[i:i + per_wave])

    # -- the scenario -----------------------------------------------------------------------

    async def bring_up(self, vllm: int, web: int, ready_over: float = 2.0) -> list[str]:
        """The initial pods; returns the names of the vllm v1 pods (the rollout replaces them)."""
        old = [f"vllm-v1-{i:04d}" for i in range(vllm)]
        webs = [f"web-{i:04d}" for i in range(web)]
        self._note(f"creating {vllm} vllm + {web} web pods: Pending, then running not-ready, "
                   f"then Ready over {ready_over:g}s")
        await self.launch(old + webs, ready_over)
        self._note("all pods Ready")
        return old

    async def rollout(self, old: list[str], duration: float, flip: str | None) -> None:
        """Replace ``old`` with v2 pods in steps over ``duration`` seconds (surge, then delete
        as many old pods), while ``flip`` goes not-ready a third of the way and back at two
        thirds, like a failing then recovering readiness probe."""
        loop = asyncio.get_running_loop()
        steps = max(1, min(len(old), round(duration * 2)))
        per_step = math.ceil(len(old) / steps)
        interval = duration / steps
        self._note(f"rollout: vllm v1 -> v2, {per_step} pods per step, {steps} steps "
                   f"over {duration:g}s")
        started = loop.time()
        for step in range(steps):
            batch = old[step * per_step:(step + 1) * per_step]
            new = [name.replace("-v1-", "-v2-") for name in batch]
            await self.launch(new, ready_over=min(interval / 2, 0.5), waves=1)
            await self._all(self.delete(n) for n in batch)
            if flip is not None and step == steps // 3:
                await self.set_ready(flip, False)
                self._note(f"{flip}: readiness probe failing (not ready)")
            if flip is not None and step == (2 * steps) // 3:
                await self.set_ready(flip, True)
                self._note(f"{flip}: ready again")
            await asyncio.sleep(max(0.0, started + (step + 1) * interval - loop.time()))
        self._note(f"rollout done: {len(old)} pods replaced")
