"""Building blocks for integration tests: manifests, waiting, and counting slice writes.

Everything here talks to the API server over HTTP with slicectl's own client, so the same tests
run against the embedded server and against a real cluster (``SLICECTL_TEST_KUBECONFIG``).
Slice writes are counted from a watch on EndpointSlices, which any API server offers, and a
client's own requests from its ``on_request`` hook (``ClientRequests``): neither needs the
embedded server's request counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from slicectl.cli import workload
from slicectl.cli.run import RunOptions, run_controller
from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import AlreadyExists, Gone, NotFound, ServerError, TooManyRequests
from slicectl.kube.resources import CRDS, ENDPOINTSLICES, NAMESPACES, NODES, PODS, Resource
from slicectl.model.apis import SLICECTL
from slicectl.model.records import (
    LABEL_SELECTOR_NAME,
    NodeRecord,
    PodRecord,
    SelectorRecord,
    SliceRecord,
)
from slicectl.obs.health import HealthServer
from slicectl.reconcile import Settings

ROOT = Path(__file__).resolve().parents[2]
CRD_PATH = ROOT / "charts/slicectl/crds/slicectl.io_endpointselectors.yaml"
FIXTURE_CRDS = ROOT / "tests/fixtures/crds"
ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", kind="EndpointSelector")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", True, "ServiceAccount")
HANG_GUARD = 30.0
CREATED_NODES: set[str] = set()  # Nodes the running test created (deleted after it, on a cluster)
_node_suffix = ""  # set per test on a real cluster (see node_name)


def node_name(name: str) -> str:
    """The Node that the test's ``name`` stands for.

    On a real cluster, Nodes are cluster-wide and nothing heartbeats for the suite's fake ones:
    a node lifecycle controller (kind has one) marks a Node NotReady, and its pods not ready,
    once it is older than the grace period (about 50 s). So there every test gets fresh Nodes of
    its own, named ``<name>-<namespace suffix>`` and deleted when the test ends.
    """
    return f"{name}-{_node_suffix}" if _node_suffix else name


def set_node_suffix(suffix: str) -> None:
    global _node_suffix
    _node_suffix = suffix


class ClientRequests:
    """An ``on_request`` hook counting one client's own requests by (verb, resource, code).

    Verbs are the client's (``GET``, ``LIST``, ``WATCH``, ``POST``, ``PUT``, ``PATCH``,
    ``DELETE``); the resource has ``/<subresource>`` appended and no API group.
    """

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, int]] = Counter()

    def __call__(self, verb: str, resource: str, code: int, _seconds: float) -> None:
        self.counts[(verb, resource, code)] += 1

    def total(self, verb: str | None = None, resource: str | None = None,
              code: int | None = None) -> int:
        return sum(n for (v, r, c), n in self.counts.items()
                   if (verb is None or v == verb) and (resource is None or r == resource)
                   and (code is None or c == code))

    def clear(self) -> None:
        self.counts.clear()


def load_yaml(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        doc: dict[str, Any] = yaml.safe_load(fh)
    return doc


async def apply_crd(client: KubeClient, path: Path) -> dict[str, Any]:
    """Create or replace a CRD from a YAML file and wait until its API is served."""
    body = load_yaml(path)
    async with asyncio.timeout(HANG_GUARD):
        await workload.apply_crd(client, body)
    return body


UNSERVED_BUILTIN_GROUP = (
    "kube-apiserver accepts and establishes a CRD in a built-in API group ({group}) but never "
    "serves it: the group's own handler answers 404 for {path}. Only a cluster with that API "
    "built in can run this")
APISERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", kind="APIService")
BUILT_IN = "kube-aggregator.kubernetes.io/automanaged=onstart"


async def apply_fixture_crd(client: KubeClient, path: Path, *, real: bool) -> None:
    """``apply_crd`` for a test fixture CRD; on a real cluster, skip if its API is never served.

    The ``discovery.k8s.io`` fixture stands in for the upstream EndpointSelector API, which no
    released Kubernetes serves yet; a real kube-apiserver will not serve it from a CRD: every
    path under ``/apis/<group>/`` of a group it has built in goes to that group's handler,
    never to the CRDs'. The test skips once the CRD is established and still not served, in a
    group the server registered at start as its own (its APIServices say ``onstart``), rather
    than waiting the whole hang guard for discovery.
    """
    body = load_yaml(path)
    if real and await built_in_group(client, body["spec"]["group"]):
        async with asyncio.timeout(HANG_GUARD):
            await workload.put_crd(client, body)
            await wait_until(lambda: established(client, body["metadata"]["name"]),
                             what=f"{body['metadata']['name']} established")
        if not await workload.crd_served(client, body):
            spec = body["spec"]
            path_ = f"/apis/{spec['group']}/{spec['versions'][0]['name']}"
            pytest.skip(UNSERVED_BUILTIN_GROUP.format(group=spec["group"], path=path_))
    await apply_crd(client, path)


async def built_in_group(client: KubeClient, group: str) -> bool:
    """Whether kube-apiserver serves some version of ``group`` itself: the APIServices it
    registers at start for its own groups are labelled ``automanaged=onstart`` (those it adds
    for a CRD's group say ``true``). A server with no APIServices (the embedded one, also
    started on its own) routes a CRD's group to the CRD, built in or not."""
    if not await serves(client, "apiregistration.k8s.io/v1", "apiservices"):
        return False
    items, _ = await client.list(APISERVICES, label_selector=BUILT_IN)
    return any(s["spec"].get("group") == group for s in items)


async def established(client: KubeClient, name: str) -> bool:
    conditions = (await client.get(CRDS, name)).get("status", {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def wait_until(
    predicate: Callable[[], Awaitable[bool]], *, limit: float = HANG_GUARD, what: str = "",
    interval: float = 0.02,
) -> float:
    """Poll until ``predicate`` is true; returns the seconds it took (a hang guard, no SLA)."""
    start = time.monotonic()
    while not await predicate():
        if time.monotonic() - start > limit:
            raise AssertionError(f"timed out after {limit}s waiting for {what or predicate}")
        await asyncio.sleep(interval)
    return time.monotonic() - start


async def local_get(port: int | None, path: str) -> tuple[int, str]:
    """GET ``path`` from a listener of the controller on loopback (health, metrics): the status
    and the body (a hang guard, no SLA)."""
    assert port is not None, "the listener is bound"
    timeout = aiohttp.ClientTimeout(total=HANG_GUARD)
    async with aiohttp.ClientSession(timeout=timeout) as http, http.get(
        f"http://127.0.0.1:{port}{path}"
    ) as resp:
        return resp.status, await resp.text()


GC_BOUND = 90.0


async def wait_for_garbage_collection(
    client: KubeClient, ns: str, owner_uid: str, done: Callable[[], Awaitable[bool]], *,
    real: bool, what: str,
) -> None:
    """Wait until ``done()``: dependents of the deleted owner ``owner_uid`` are collected.

    A real cluster collects garbage asynchronously, in kube-controller-manager. If nothing is
    collected within ``GC_BOUND`` there and every slice still waiting names the deleted owner
    (so only a garbage collector could remove it), the cluster runs none: the test skips,
    saying so. Anything else (the embedded server, or slices without that owner) fails.
    """
    try:
        await wait_until(done, limit=GC_BOUND, what=what)
    except AssertionError:
        if not real:
            raise
        items, _ = await client.list(ENDPOINTSLICES, ns)
        owned = [s for s in items if any(r.get("uid") == owner_uid
                                         for r in s["metadata"].get("ownerReferences") or [])]
        if not owned:
            raise
        pytest.skip(f"{what}: {len(owned)} EndpointSlice(s) owned by the deleted selector still "
                    f"there after {GC_BOUND:g} s: this cluster runs no garbage collector "
                    "(kube-controller-manager)")


def pod_body(
    name: str, labels: dict[str, str], *, node: str = "node-a", port_name: str = "http",
    port: int = 8080,
) -> dict[str, Any]:
    return workload.pod_manifest(name, labels, node_name(node), [(port_name, port)])


def unscheduled_pod(name: str, **labels: str) -> dict[str, Any]:
    """A bare pod (label ``app=x`` unless told) for client and informer tests: no node, and a
    scheduler no cluster runs, so a real cluster's scheduler and kubelets leave it alone."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "x"}},
        "spec": {"schedulerName": "slicectl-test-no-such-scheduler",
                 "containers": [{"name": "c", "image": "busybox"}]},
    }


def pod_status(ip: str, ready: bool = True) -> dict[str, Any]:
    return workload.running_status(ip, ready)


async def create_pod(
    client: KubeClient, ns: str, name: str, ip: str, labels: dict[str, str],
    ready: bool = True, **kw: Any,
) -> dict[str, Any]:
    await client.create(PODS, pod_body(name, labels, **kw), ns)
    return await client.patch(PODS, name, pod_status(ip, ready), ns, subresource="status")


async def set_ready(client: KubeClient, ns: str, name: str, ready: bool) -> None:
    pod = await client.get(PODS, name, ns)
    ip = pod["status"]["podIPs"][0]["ip"]
    await client.patch(PODS, name, pod_status(ip, ready), ns, subresource="status")


async def ensure_node(client: KubeClient, name: str, zone: str) -> None:
    name = node_name(name)
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}
    with contextlib.suppress(AlreadyExists):
        await client.create(NODES, body)
        CREATED_NODES.add(name)


async def serves(client: KubeClient, group_version: str, plural: str) -> bool:
    """Whether the server serves ``plural`` in ``group_version`` (``v1`` is the core group)."""
    path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    try:
        doc = await client.request("GET", path)
    except NotFound:
        return False
    return any(r.get("name") == plural for r in doc.get("resources") or [])


async def create_namespace(client: KubeClient, name: str, *, real: bool) -> None:
    """Create a namespace; on a real cluster, also wait until pods may be created in it."""
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})
    if real:
        await wait_for_default_service_account(client, name)


async def wait_for_default_service_account(client: KubeClient, ns: str) -> None:
    """Wait for the ``default`` ServiceAccount of a new namespace, or create it.

    A real cluster's ServiceAccount admission refuses pods until the namespace's ``default``
    ServiceAccount exists, which kube-controller-manager creates shortly after the namespace.
    On a cluster without that controller, the test creates it itself after a short wait.
    (The embedded server serves no ServiceAccounts and admits pods at once.)
    """
    if not await serves(client, "v1", "serviceaccounts"):
        return
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            await client.get(SERVICEACCOUNTS, "default", ns)
            return
        except NotFound:
            await asyncio.sleep(0.1)
    with contextlib.suppress(AlreadyExists):
        await client.create(SERVICEACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                              "metadata": {"name": "default"}}, ns)


def selector_body(
    name: str, match_labels: dict[str, str], *, ports: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": match_labels}}
    if ports is not None:
        spec["ports"] = ports
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


async def slices_of(client: KubeClient, ns: str, selector: str) -> list[dict[str, Any]]:
    items, _ = await client.list(ENDPOINTSLICES, ns,
                                 label_selector=f"{LABEL_SELECTOR_NAME}={selector}")
    return [s for s in items if not s["metadata"].get("deletionTimestamp")]


def listing(client: KubeClient, ns: str, selector: str,
            want: set[str]) -> Callable[[], Awaitable[bool]]:
    """A predicate for :func:`wait_until`: ``selector``'s slices list exactly the pods
    ``want``, each once."""
    async def listed() -> bool:
        names = [ep["targetRef"]["name"] for s in await slices_of(client, ns, selector)
                 for ep in s["endpoints"] or []]
        return sorted(names) == sorted(want)
    return listed


# What a test's own watch waits out: the server away, struggling or throttling (the embedded
# server injects 5xx and 429 into watches too).
_TRANSIENT = (ServerError, TooManyRequests, aiohttp.ClientError, OSError, TimeoutError)


class SliceWrites:
    """Counts EndpointSlice writes in a namespace from a watch (ADDED/MODIFIED/DELETED).

    The watch resumes from the last resourceVersion when the server ends it or the connection
    breaks (an API server restart); if that history is gone (410), it lists again and counts a
    ``gap``: writes in a gap are not seen.
    """

    def __init__(self, client: KubeClient, ns: str) -> None:
        self.client, self.ns = client, ns
        self.counts: Counter[str] = Counter()
        self.kinds: list[str] = []  # the event types, oldest first
        self.times: list[float] = []
        self.gaps = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    async def start(self) -> None:
        _, rv = await self.client.list(ENDPOINTSLICES, self.ns)
        self._task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for event in self.client.watch(
                        ENDPOINTSLICES, self.ns, resource_version=rv, timeout_seconds=600):
                    rv = event.object.get("metadata", {}).get("resourceVersion") or rv
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        self.counts[event.type] += 1
                        self.kinds.append(event.type)
                        self.times.append(time.monotonic())
            except Gone:
                self.gaps += 1
                rv = await self._relist()
            except _TRANSIENT:  # the server is away (restarting) or refusing: resume from rv
                await asyncio.sleep(0.2)

    async def _relist(self) -> str:
        while True:
            try:
                _, rv = await self.client.list(ENDPOINTSLICES, self.ns)
                return rv
            except _TRANSIENT:
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def quiet(self, seconds: float = 0.5) -> None:
        """Wait until no write has been seen for ``seconds``."""
        while True:
            before = self.total
            await asyncio.sleep(seconds)
            if self.total == before:
                return


async def delete_namespace(client: KubeClient, ns: str) -> None:
    """Delete a test's namespace, its pods first and at once: a pod bound to a Node is deleted
    gracefully, and with no kubelet to confirm it would keep the namespace terminating until the
    pod garbage collector notices its Node is gone."""
    with contextlib.suppress(NotFound):
        await client.request("DELETE", f"/api/v1/namespaces/{ns}/pods",
                             params={"gracePeriodSeconds": "0"})
        await client.delete(NAMESPACES, ns, propagation_policy="Background")


def options(kubeconfig: str, ns: str, **overrides: Any) -> RunOptions:
    config = ControllerConfig(
        namespaces=(ns,),
        selector_apis=overrides.pop("selector_apis", (SLICECTL,)),
        settings=Settings(overrides.pop("max_endpoints_per_slice", 100),
                          overrides.pop("managed_by", "endpointselector-controller.slicectl.io")),
        batch_period=overrides.pop("batch_period", 0.1),
        status_update_period=overrides.pop("status_update_period", 10.0),
    )
    binds = {"metrics_bind_address": "0", "health_probe_bind_address": "0"}
    client = overrides.pop("client", ClientSettings(qps=1000.0, burst=1000))
    return RunOptions(controller=config, kubeconfig=kubeconfig, client=client,
                      **{**binds, **overrides})


@dataclass(frozen=True)
class Running:
    controller: Controller
    health: HealthServer


@contextlib.asynccontextmanager
async def running_controller(opts: RunOptions) -> AsyncIterator[Running]:
    """Run the controller in-process, exactly as ``slicectl run`` does, until the block exits."""
    stop = asyncio.Event()
    started: asyncio.Future[Running] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_controller(opts, stop, on_started=lambda c, h: started.set_result(Running(c, h))))
    running = await asyncio.wait_for(asyncio.shield(started), HANG_GUARD)
    try:
        yield running
    finally:
        stop.set()
        code = await asyncio.wait_for(task, HANG_GUARD)
        assert code == 0


class SyncInputs:
    """The caches a :class:`~slicectl.controller.sync.Syncer` reads, as plain lists a test
    changes between (or during) syncs."""

    def __init__(self, sel: SelectorRecord) -> None:
        self.sel = sel
        self.pods: list[PodRecord] = []
        self.cached: list[SliceRecord] = []

    def selector(self, key: str) -> SelectorRecord | None:
        return self.sel

    def pods_of(self, key: str) -> Iterable[PodRecord]:
        return list(self.pods)

    def nodes(self) -> Mapping[str, NodeRecord]:
        return {}

    def slices(self, key: str) -> Iterable[SliceRecord]:
        return list(self.cached)
