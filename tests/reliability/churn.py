"""Load held during every scenario: pods created, flipped Ready/unready and deleted over several
selectors, through the same API the faults are injected into.

The churn is a client of a faulty API server too, so each of its calls is retried the way a
careful client must when a response can be lost after the server acted: a create retried into
AlreadyExists, or a delete retried into NotFound, had landed. Pod IPs are never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from slicectl.cli.workload import pod_manifest, running_status
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, Conflict, NotFound, ServerError, TooManyRequests
from slicectl.kube.resources import NAMESPACES, NODES, PODS
from tests.integration.support import CRD_PATH, apply_crd
from tests.reliability.checker import ESEL, SUITE_LABEL

T = TypeVar("T")
TRANSIENT: tuple[type[BaseException], ...] = (
    ServerError, TooManyRequests, aiohttp.ClientError, TimeoutError, OSError)
APPS = ("a", "b", "c")
TIERS = ("x", "y")
# Each selector of a namespace: name -> matchLabels. "gone" is deleted during the churn.
SELECTORS: dict[str, dict[str, str]] = {
    "app-a": {"app": "a"}, "app-b": {"app": "b"}, "tier-x": {"tier": "x"},
    "a-and-y": {"app": "a", "tier": "y"}, "gone": {"app": "c"},
}
PORTS = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]
NODE_NAMES = ("node-0", "node-1")  # fake Nodes, one per zone; no kubelet heartbeats them


async def retrying(op: Callable[[], Awaitable[T]], *, limit: float = 120.0,
                   also: tuple[type[BaseException], ...] = ()) -> T:
    """Run ``op`` until it is answered (transient failures, ``also``, and a frozen server are
    waited out)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    delay = 0.05
    while True:
        try:
            return await asyncio.wait_for(op(), timeout=10.0)
        except (*TRANSIENT, *also):
            if loop.time() > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


async def create(client: KubeClient, res: Any, body: dict[str, Any], ns: str | None) -> None:
    """Create, treating AlreadyExists after a failed attempt as "it had landed"."""
    tried = False

    async def once() -> None:
        nonlocal tried
        try:
            await client.create(res, body, ns)
        except AlreadyExists:
            if not tried:
                raise
        finally:
            tried = True

    await retrying(once)


async def delete(client: KubeClient, res: Any, name: str, ns: str | None) -> None:
    async def once() -> None:
        with contextlib.suppress(NotFound):
            await client.delete(res, name, ns, grace_period_seconds=0)

    await retrying(once)


def selector_body(name: str, match: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": name, "labels": {SUITE_LABEL: "reliability"}},
            "spec": {"selector": {"matchLabels": match}, "ports": PORTS}}


async def prepare(client: KubeClient, ns: str,
                  selectors: dict[str, dict[str, str]] = SELECTORS, *, crd: bool = True,
                  nodes: tuple[str, ...] = NODE_NAMES) -> None:
    """CRD (unless already applied), namespace, two nodes and the selectors (idempotent)."""
    if crd:
        # A lost answer to the create comes back as AlreadyExists, then a replace, which can
        # race the server's own status update of the CRD: Conflict, so another round.
        await retrying(lambda: apply_crd(client, CRD_PATH), also=(Conflict,))
    with contextlib.suppress(AlreadyExists):
        await retrying(lambda: client.create(NAMESPACES, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
    for n, node in enumerate(nodes):
        with contextlib.suppress(AlreadyExists):
            await retrying(lambda n=n, node=node: client.create(NODES, {  # type: ignore[misc]
                "apiVersion": "v1", "kind": "Node", "metadata": {
                    "name": node, "labels": {"topology.kubernetes.io/zone": f"z{n}"}}}))
    for name, match in selectors.items():
        await create(client, ESEL, selector_body(name, match), ns)


async def delete_nodes(client: KubeClient, nodes: tuple[str, ...] = NODE_NAMES) -> None:
    """Delete the suite's fake Nodes (on a real cluster, where Nodes are shared)."""
    for node in nodes:
        with contextlib.suppress(NotFound):
            await client.delete(NODES, node)


@dataclass
class ChurnStats:
    creates: int = 0
    flips: int = 0
    deletes: int = 0

    @property
    def ops(self) -> int:
        return self.creates + self.flips + self.deletes


class Churn:
    """Keeps about ``target`` pods in ``ns`` and changes one every ``period`` seconds."""

    _octets = itertools.count(1)

    def __init__(self, client: KubeClient, ns: str, *, target: int = 40, period: float = 0.05,
                 seed: int = 0, concurrency: int = 4,
                 nodes: tuple[str, ...] = NODE_NAMES) -> None:
        self.client, self.ns, self.target, self.period = client, ns, target, period
        self.nodes = nodes
        self.rng = random.Random(seed)
        self.pods: dict[str, bool] = {}  # name -> ready as last set
        self.stats = ChurnStats()
        self.deleted_selectors: set[str] = set()
        self._serial = itertools.count()
        self._busy: set[str] = set()
        self._limit = asyncio.Semaphore(concurrency)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Task[None]] = set()

    async def fill(self, count: int | None = None) -> None:
        """Create pods up to ``count`` (default the target) before the scenario starts."""
        await asyncio.gather(*(self._create() for _ in range(
            (count if count is not None else self.target) - len(self.pods))))

    def start(self) -> None:
        self._stop.clear()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)

    async def delete_selector(self, name: str) -> None:
        await delete(self.client, ESEL, name, self.ns)
        self.deleted_selectors.add(name)

    async def _run(self) -> None:
        while not self._stop.is_set():
            await self._limit.acquire()
            task = asyncio.create_task(self._one())
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            task.add_done_callback(lambda _: self._limit.release())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.period)

    async def _one(self) -> None:
        idle = [p for p in self.pods if p not in self._busy]
        roll, count = self.rng.random(), len(self.pods)
        if count < self.target * 0.8 or (roll < 0.3 and count < self.target * 1.2):
            await self._create()
        elif roll < 0.7 and idle:
            await self._flip(self.rng.choice(idle))
        elif idle:
            await self._delete(self.rng.choice(idle))

    async def _create(self) -> None:
        name = f"p{next(self._serial)}"
        self._busy.add(name)
        try:
            labels = {"app": self.rng.choice(APPS), "tier": self.rng.choice(TIERS)}
            body = pod_manifest(name, labels, self.rng.choice(self.nodes), [("http", 8080)])
            await create(self.client, PODS, body, self.ns)
            n = next(self._octets)
            ip = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
            ready = self.rng.random() < 0.8
            await retrying(lambda: self.client.patch(PODS, name, running_status(ip, ready),
                                                     self.ns, subresource="status"))
            self.pods[name] = ready
            self.stats.creates += 1
        finally:
            self._busy.discard(name)

    async def _flip(self, name: str) -> None:
        self._busy.add(name)
        try:
            ready = not self.pods[name]

            async def patch() -> None:
                pod = await self.client.get(PODS, name, self.ns)
                ip = pod["status"]["podIPs"][0]["ip"]
                with contextlib.suppress(Conflict):
                    await self.client.patch(PODS, name, running_status(ip, ready), self.ns,
                                            subresource="status")

            await retrying(patch)
            self.pods[name] = ready
            self.stats.flips += 1
        finally:
            self._busy.discard(name)

    async def _delete(self, name: str) -> None:
        self._busy.add(name)
        try:
            await delete(self.client, PODS, name, self.ns)
            self.pods.pop(name, None)
            self.stats.deletes += 1
        finally:
            self._busy.discard(name)
