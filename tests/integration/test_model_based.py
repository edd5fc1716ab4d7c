"""Model-based end-to-end test: hypothesis draws a sequence of cluster changes, in random order
and combination, against the running controller; the independent checker
(tests/reliability/checker.py, which derives every endpoint from the raw API objects) judges the
slices at quiescence after every ``check`` step and at the end.

Why: the churn (tests/reliability/churn.py) only creates, flips and deletes pods under fixed
selectors. The bugs that hide in combinations need everything else too: selector spec updates
(matchLabels / matchExpressions, ports added, removed or renamed, named targetPorts that resolve
differently per pod, ipFamilies), selector labels, pod label changes moving a pod between
selectors, pod IP changes, dual-stack pods, graceful deletions, Nodes created, relabelled and
deleted, a watched namespace deleted with its selectors and created again, slices edited or
deleted by someone else, foreign slices, selectors deleted and re-created under the same name,
and a tiny ``--max-endpoints-per-slice`` so that packing and repacking matter.

The model is deliberately thin: the driver keeps no copy of the cluster (an operation that does
not apply, say a label change of a pod that is gone, is answered 404 and skipped); what the
slices must say is derived by the checker from what the server holds. Every example gets a
fresh embedded API server and controller (on a real cluster, ``SLICECTL_TEST_KUBECONFIG``, a
fresh pair of namespaces, fewer steps). CI runs a few derandomized examples; to hunt, run with
``SLICECTL_MODEL_EXAMPLES=200`` (``SLICECTL_MODEL_RANDOM=1`` for a new seed each run).

The second test draws the embedded server's faults as operations too (tests/integration/
model_faults.py): all are off before each check, and at the end the controller must also stay
quiet, no write at all, once the slices are right.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from slicectl.cli.run import RunOptions
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
)
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES, NODES, PODS
from slicectl.sim.server import EmbeddedApiServer
from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.model_faults import (
    DRIVER_AGENT,
    FAULT,
    SLICE_WRITES,
    STATUS_WRITES,
    FaultSwitch,
)
from tests.integration.support import (
    CRD_PATH,
    ESEL,
    apply_crd,
    create_namespace,
    delete_namespace,
    options,
    running_controller,
)
from tests.reliability import checker

REAL = REAL_CLUSTER_KUBECONFIG is not None
EXAMPLES = int(os.environ.get("SLICECTL_MODEL_EXAMPLES", "2" if REAL else "4"))
STEPS = int(os.environ.get("SLICECTL_MODEL_STEPS", "15" if REAL else "30"))
CONVERGE = 60.0 if REAL else 30.0  # seconds a check waits for the right slices (hang guard)
# Operations the server may refuse because the driver keeps no model: the pod is gone or
# terminating, the name is taken, the namespace is being deleted, a stale resourceVersion.
SKIPPED = (NotFound, AlreadyExists, Conflict, Forbidden, Invalid)

SELECTORS = ("s0", "s1", "s2")
PODS_NAMES = tuple(f"p{i}" for i in range(8))
NODES_NAMES = ("n0", "n1", "n2")
MAIN, SIDE = 0, 1  # namespaces: SIDE may be deleted (with its selectors) and created again

LABELS = st.fixed_dictionaries({}, optional={"app": st.sampled_from(["a", "b"]),
                                             "tier": st.sampled_from(["x", "y"])})
EXPRESSIONS_LIST: list[dict[str, Any]] = [
    {"key": "app", "operator": "In", "values": ["a"]},
    {"key": "app", "operator": "In", "values": ["a", "b"]},
    {"key": "app", "operator": "NotIn", "values": ["a"]},
    {"key": "tier", "operator": "Exists"},
    {"key": "tier", "operator": "DoesNotExist"},
]
EXPRESSIONS = st.sampled_from(EXPRESSIONS_LIST)
# Selector ports: named targetPorts that pods resolve differently (or not at all), numbers, UDP.
PORTS = {
    "http": {"name": "http", "targetPort": "http"},
    "web": {"name": "web", "targetPort": 8080, "appProtocol": "kubernetes.io/h2c"},
    "metrics": {"name": "metrics", "protocol": "TCP", "targetPort": "metrics"},
    "dns": {"name": "dns", "protocol": "UDP", "targetPort": "dns"},
}
# Container ports a pod may declare (immutable once created).
CONTAINER_PORTS: dict[str, list[dict[str, Any]]] = {
    "http": [{"name": "http", "containerPort": 8080}],
    "http2": [{"name": "http", "containerPort": 8081}],
    "http+metrics": [{"name": "http", "containerPort": 8080},
                     {"name": "metrics", "containerPort": 9100}],
    "dns": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
            {"name": "http", "containerPort": 53, "protocol": "UDP"}],
    "none": [],
    "sidecar": [],  # http on a restartable init container, see pod_spec
}


@st.composite
def selector_specs(draw: st.DrawFn) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    match = draw(LABELS)
    exprs = draw(st.lists(EXPRESSIONS, max_size=2, unique_by=lambda e: str(e)))
    if match:
        selector["matchLabels"] = match
    if exprs or not match:
        selector["matchExpressions"] = exprs or [draw(EXPRESSIONS)]
    spec: dict[str, Any] = {"selector": selector}
    ports = draw(st.none() | st.lists(st.sampled_from(sorted(PORTS)), max_size=3, unique=True))
    if ports is not None:
        spec["ports"] = [PORTS[p] for p in ports]
    families = draw(st.sampled_from([None, ["IPv4"], ["IPv6"], ["IPv4", "IPv6"],
                                     ["IPv6", "IPv4"]]))
    if families is not None:
        spec["ipFamilies"] = families
    return spec


def _ns() -> st.SearchStrategy[int]:
    return st.sampled_from([MAIN, MAIN, SIDE])


POD = st.integers(0, 15)  # which existing pod (by index among those present), see pick
POD_LABELS = st.fixed_dictionaries({"app": st.sampled_from(["a", "b"])},
                                   optional={"tier": st.sampled_from(["x", "y"])})
CREATE_POD = st.tuples(st.just("pod_create"), _ns(), st.sampled_from(PODS_NAMES), POD_LABELS,
                       st.sampled_from(sorted(CONTAINER_PORTS)),
                       st.sampled_from(["v4", "v4", "v6", "dual"]), st.booleans(),
                       st.sampled_from(NODES_NAMES), st.booleans())
# The world every example starts from: two Nodes in two zones (the third absent) and the
# same three selectors in both namespaces, then the drawn pods.
SETUP: list[tuple[Any, ...]] = [
    ("node_put", "n0", "z0"), ("node_put", "n1", "z1"),
    *[("sel_put", ns, name, spec, {}) for ns in (MAIN, SIDE) for name, spec in (
        ("s0", {"selector": {"matchLabels": {"app": "a"}}, "ports": [PORTS["http"]]}),
        ("s1", {"selector": {"matchLabels": {"tier": "x"}}}),
        ("s2", {"selector": {"matchExpressions": [EXPRESSIONS_LIST[1]]},
                "ports": [PORTS["http"], PORTS["metrics"]]}))],
]
WEIGHTED: list[tuple[int, st.SearchStrategy[tuple[Any, ...]]]] = [
    (3, CREATE_POD),
    (3, st.tuples(st.just("pod_labels"), _ns(), POD, LABELS)),
    (2, st.tuples(st.just("pod_ready"), _ns(), POD, st.booleans())),
    (1, st.tuples(st.just("pod_ips"), _ns(), POD, st.sampled_from(["v4", "v6", "dual", "none"]))),
    (1, st.tuples(st.just("pod_delete"), _ns(), POD, st.booleans())),
    (1, st.tuples(st.just("pod_phase"), _ns(), POD,
                  st.sampled_from(["Succeeded", "Failed", "Pending"]))),
    (3, st.tuples(st.just("sel_put"), _ns(), st.sampled_from(SELECTORS), selector_specs(),
                  st.sampled_from([{}, {"team": "t1"}, {"team": "t2"}]))),
    (1, st.tuples(st.just("sel_delete"), _ns(), st.sampled_from(SELECTORS), st.booleans())),
    (2, st.tuples(st.just("node_put"), st.sampled_from(NODES_NAMES),
                  st.sampled_from(["z0", "z1", None]))),
    (1, st.tuples(st.just("node_delete"), st.sampled_from(NODES_NAMES))),
    (2, st.tuples(st.just("slice_meddle"), _ns(), st.integers(0, 7),
                  st.sampled_from(["delete", "empty", "drop_one", "ports", "label"]))),
    (1, st.tuples(st.just("foreign_slice"), _ns(), st.sampled_from(SELECTORS))),
    (1, st.tuples(st.just("ns_delete"))),
    (1, st.tuples(st.just("ns_create"))),
    (1, st.tuples(st.just("restart"))),
    (3, st.tuples(st.just("check"))),
]


def weighted(choices: list[tuple[int, st.SearchStrategy[tuple[Any, ...]]]],
             ) -> st.SearchStrategy[tuple[Any, ...]]:
    """One of ``choices``, each drawn as often as its weight says. (``st.one_of`` with a
    strategy repeated would not: it keeps each strategy object once, so every weight was 1.)"""
    return st.sampled_from([op for weight, op in choices for _ in range(weight)]).flatmap(
        lambda op: op)


OPS = weighted(WEIGHTED)
FAULT_OPS = weighted([*WEIGHTED, (6, FAULT)])
QUIET = 3.0  # seconds with no write the converged controller must keep


@dataclass
class World:
    """The driver's handles: the client, the two namespaces, names made unique per run."""

    client: KubeClient
    namespaces: tuple[str, str]
    suffix: str  # Nodes are cluster-wide: each run's own
    max_per_slice: int
    opts: RunOptions
    server: EmbeddedApiServer | None = None
    switch: FaultSwitch | None = None  # the faults drawn as operations, if any
    controller: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    foreign: dict[str, dict[str, str]] = field(default_factory=dict)  # ns -> name -> rv
    side_gone: bool = False
    log: list[str] = field(default_factory=list)
    _ips: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self) -> None:
        await self.controller.enter_async_context(running_controller(self.opts))

    async def restart(self) -> None:
        """Stop the controller and start a new one (its tracker seeded from the cache)."""
        await self.controller.aclose()
        await self.start()

    def node(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def ips(self, mode: str) -> list[str]:
        n = next(self._ips)
        v4, v6 = f"10.7.{n // 250}.{n % 250 + 1}", f"fd00::7:{n:x}"
        return {"v4": [v4], "v6": [v6], "dual": [v4, v6], "none": []}[mode]


def pod_body(w: World, name: str, labels: dict[str, str], ports: str, node: str,
             hostname: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": w.node(node), "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "ports": CONTAINER_PORTS[ports]}]}
    if ports == "sidecar":
        spec["initContainers"] = [{"name": "side", "image": "registry.k8s.io/pause:3.10",
                                   "restartPolicy": "Always",
                                   "ports": [{"name": "http", "containerPort": 9090}]}]
    if hostname:
        spec["hostname"], spec["subdomain"] = f"h-{name}", "s0"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels}, "spec": spec}


def pod_status(ips: list[str], ready: bool) -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": "Running", "conditions": [{"type": "Ready",
                                            "status": "True" if ready else "False"}]}
    if ips:
        status["podIP"], status["podIPs"] = ips[0], [{"ip": ip} for ip in ips]
    return {"status": status}


async def apply(w: World, op: tuple[Any, ...]) -> None:
    """Carry out one operation; one the server refuses as not applicable is skipped."""
    kind = op[0]
    c = w.client
    ns = w.namespaces[op[1]] if kind not in ("node_put", "node_delete", "ns_delete",
                                             "ns_create", "restart", "check", "fault") else ""
    try:
        if kind in POD_OPS:
            op = (*op[:2], await pick(w, ns, op[2]), *op[3:])
        if kind == "pod_create":
            _, _, name, labels, ports, mode, ready, node, hostname = op
            await c.create(PODS, pod_body(w, name, labels, ports, node, hostname), ns)
            await c.patch(PODS, name, pod_status(w.ips(mode), ready), ns,
                          subresource="status")
        elif kind == "pod_labels":
            await c.patch(PODS, op[2], {"metadata": {"labels": {
                "app": None, "tier": None, **op[3]}}}, ns)
        elif kind == "pod_ready":
            await c.patch(PODS, op[2], {"status": {"conditions": [
                {"type": "Ready", "status": "True" if op[3] else "False"}]}}, ns,
                subresource="status", patch_type="strategic")
        elif kind == "pod_ips":
            pod = await c.get(PODS, op[2], ns)
            ready = any(cd.get("type") == "Ready" and cd.get("status") == "True"
                        for cd in (pod.get("status") or {}).get("conditions") or ())
            ips = w.ips(op[3])
            await c.patch(PODS, op[2], {"status": {
                "podIP": ips[0] if ips else None, "podIPs": [{"ip": ip} for ip in ips] or None,
                "conditions": pod_status(ips, ready)["status"]["conditions"]}}, ns,
                subresource="status")
        elif kind == "pod_phase":
            await c.patch(PODS, op[2], {"status": {"phase": op[3]}}, ns, subresource="status")
        elif kind == "pod_delete":
            await c.delete(PODS, op[2], ns, grace_period_seconds=None if op[3] else 0)
        elif kind == "sel_put":
            await put_selector(w, ns, op[2], op[3], op[4])
        elif kind == "sel_delete":
            old = await c.get(ESEL, op[2], ns)
            await c.delete(ESEL, op[2], ns)
            if op[3]:  # re-created at once under the same name: a new uid
                await c.create(ESEL, selector_body(op[2], old["spec"],
                                                   old["metadata"].get("labels") or {}), ns)
        elif kind == "node_put":
            await put_node(w, op[1], op[2])
        elif kind == "node_delete":
            await c.delete(NODES, w.node(op[1]))
        elif kind == "slice_meddle":
            await meddle(w, ns, op[2], op[3])
        elif kind == "foreign_slice":
            made = await c.create(ENDPOINTSLICES, foreign_slice(op[2]), ns)
            w.foreign.setdefault(ns, {})[made["metadata"]["name"]] = made["metadata"][
                "resourceVersion"]
        elif kind == "ns_delete" and not w.side_gone:
            w.side_gone = True
            w.foreign.pop(w.namespaces[SIDE], None)
            await delete_namespace(c, w.namespaces[SIDE])
        elif kind == "ns_create" and w.side_gone:
            await recreate_side(w)
        elif kind == "restart":
            await w.restart()
        elif kind == "fault" and w.switch is not None:
            w.switch.on(op)
        elif kind == "check":
            if w.switch is not None:
                await w.switch.settle()
            await converge(w)
    except SKIPPED as e:
        w.log.append(f"  skipped {op[0]}: {type(e).__name__}")
        tally(f"{kind} skipped ({type(e).__name__})")
        return
    w.log.append(f"  {op}")
    tally(f"{kind} {op[1]} applied" if kind == "fault" else f"{kind} applied")


def tally(what: str) -> None:
    """Count an outcome in hypothesis' statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        event(what)


POD_OPS = ("pod_labels", "pod_ready", "pod_ips", "pod_delete", "pod_phase")


async def pick(w: World, ns: str, index: int) -> str:
    """The name of the ``index``-th pod present (modulo their number): ops on pods that exist."""
    items, _ = await w.client.list(PODS, ns)
    names: list[str] = sorted(p["metadata"]["name"] for p in items)
    if not names:
        raise NotFound(404, "no pod to change")
    return names[index % len(names)]


def selector_body(name: str, spec: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": name, "labels": {**labels, checker.SUITE_LABEL: "reliability"}},
            "spec": spec}


async def put_selector(w: World, ns: str, name: str, spec: dict[str, Any],
                       labels: dict[str, str]) -> None:
    """Create the selector, or replace its spec and labels (a full PUT, as kubectl apply of a
    whole manifest would end up)."""
    body = selector_body(name, spec, labels)
    try:
        await w.client.create(ESEL, body, ns)
    except AlreadyExists:
        current = await w.client.get(ESEL, name, ns)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        body["status"] = current.get("status")
        await w.client.replace(ESEL, name, body, ns)


async def put_node(w: World, name: str, zone: str | None) -> None:
    labels = {checker.L_ZONE: zone} if zone else {}
    try:
        await w.client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                      "metadata": {"name": w.node(name), "labels": labels}})
    except AlreadyExists:
        await w.client.patch(NODES, w.node(name), {"metadata": {"labels": {
            checker.L_ZONE: zone}}})


async def meddle(w: World, ns: str, index: int, how: str) -> None:
    """Someone else edits or deletes one of slicectl's slices."""
    items, _ = await w.client.list(ENDPOINTSLICES, ns, label_selector=(
        f"{checker.L_MANAGED}={checker.MANAGED_BY}"))
    if not items:
        return
    s = sorted(items, key=lambda s: s["metadata"]["name"])[index % len(items)]
    name, rv = s["metadata"]["name"], s["metadata"]["resourceVersion"]
    if how == "delete":
        await w.client.delete(ENDPOINTSLICES, name, ns)
        return
    changes: dict[str, dict[str, Any]] = {
        "empty": {"endpoints": []},
        "drop_one": {"endpoints": (s.get("endpoints") or [])[1:]},
        "ports": {"ports": [{"name": "meddled", "port": 1, "protocol": "TCP"}]},
        "label": {"metadata": {"labels": {"team": "meddled"}}},
    }
    change = changes[how]
    change.setdefault("metadata", {})["resourceVersion"] = rv
    await w.client.patch(ENDPOINTSLICES, name, change, ns)


def foreign_slice(selector: str) -> dict[str, Any]:
    """A slice another manager keeps for a selector of the same name: never to be touched."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": f"{selector}-other-", "labels": {
                checker.L_SELECTOR: selector, checker.L_MANAGED: "someone-else"}},
            "addressType": "IPv4", "ports": [],
            "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}]}


async def recreate_side(w: World) -> None:
    """Create the side namespace again once the old one is gone."""
    ns = w.namespaces[SIDE]

    async def gone() -> bool:
        try:
            await w.client.get(NAMESPACES, ns)
        except NotFound:
            return True
        return False

    deadline = time.monotonic() + CONVERGE
    while not await gone():
        assert time.monotonic() < deadline, f"namespace {ns} still there after deletion"
        await asyncio.sleep(0.2)
    await create_namespace(w.client, ns, real=REAL)
    w.side_gone = False


async def converge(w: World) -> None:
    """Wait until the checker passes in every namespace that exists."""
    deadline = time.monotonic() + CONVERGE
    while True:
        problems: list[str] = []
        desired = 0
        for ns in w.namespaces:
            if ns == w.namespaces[SIDE] and w.side_gone:
                continue
            verdict = await checker.check(w.client, ns, foreign=w.foreign.get(ns),
                                          max_per_slice=w.max_per_slice)
            problems += [f"{ns}: {p}" for p in verdict.problems]
            desired += verdict.desired
        if not problems:
            tally(f"converged with {min(desired, 5)}{'+' if desired >= 5 else ''} endpoints")
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not exact {CONVERGE:g}s after the last change:\n"
                                 + "\n".join(problems) + "\nsteps:\n" + "\n".join(w.log))
        await asyncio.sleep(0.25)


async def writes_settle(w: World, quiet: float = 3.0) -> None:
    """Slices stop changing once they are right: some ``quiet`` seconds without a write."""
    deadline = time.monotonic() + CONVERGE
    last: dict[str, str] = {}
    since = time.monotonic()
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, f"slices kept changing:\n{last}"
        now: dict[str, str] = {}
        for ns in w.namespaces[: 1 if w.side_gone else 2]:
            items, _ = await w.client.list(ENDPOINTSLICES, ns)
            now.update({f"{ns}/{s['metadata']['name']}": s["metadata"]["resourceVersion"]
                        for s in items})
        if now != last:
            last, since = now, time.monotonic()
        await asyncio.sleep(0.25)
    await converge(w)


async def stays_quiet(w: World) -> None:
    """Once converged, the controller writes nothing at all for ``QUIET`` seconds: no slice
    write, no status write (the server's request counts; the test's own writes are over)."""
    assert w.server is not None
    server = w.server

    def writes() -> dict[tuple[str, str], int]:
        return {(v, r): server.request_counts(verb=v, resource=r)
                for v, r in (*SLICE_WRITES, *STATUS_WRITES)}

    before = writes()
    await asyncio.sleep(QUIET)
    after = writes()
    assert after == before, f"writes once converged: {before} -> {after}\nsteps:\n" + \
        "\n".join(w.log)
    await converge(w)


@contextlib.asynccontextmanager
async def world(max_per_slice: int, faults: bool = False) -> AsyncIterator[World]:
    """A fresh server (or real cluster namespaces), the CRD, two namespaces, the controller;
    with ``faults``, the server's faults to switch (sparing the test's own client)."""
    async with contextlib.AsyncExitStack() as stack:
        server: EmbeddedApiServer | None = None
        if REAL_CLUSTER_KUBECONFIG is None:
            server = await stack.enter_async_context(EmbeddedApiServer(port=0))
            server.faults.spared_agent = DRIVER_AGENT
            kubeconfig = server.kubeconfig_path
        else:
            kubeconfig = REAL_CLUSTER_KUBECONFIG
        client = await KubeClient.connect(
            kubeconfig, settings=ClientSettings(user_agent=f"{DRIVER_AGENT}1"))
        stack.push_async_callback(client.close)
        await apply_crd(client, CRD_PATH)
        suffix = uuid.uuid4().hex[:6]
        names = (f"stateful-{suffix}-a", f"stateful-{suffix}-b")
        opts = options(kubeconfig, names[0], max_endpoints_per_slice=max_per_slice,
                       status_update_period=0.5)
        opts = dataclasses.replace(opts, controller=dataclasses.replace(
            opts.controller, namespaces=names))
        w = World(client, names, suffix, max_per_slice, opts, server)
        if faults:
            assert server is not None, "faults need the embedded server"
            w.switch = FaultSwitch(server.faults)
        for ns in names:
            await create_namespace(client, ns, real=REAL)
            stack.push_async_callback(delete_namespace, client, ns)
        stack.push_async_callback(delete_nodes, w)
        await w.start()
        stack.push_async_callback(w.controller.aclose)
        yield w


async def delete_nodes(w: World) -> None:
    for name in NODES_NAMES:
        with contextlib.suppress(NotFound):
            await w.client.delete(NODES, w.node(name))


SERIAL = ("check", "restart", "ns_delete", "ns_create")  # never sent alongside other changes


async def run(max_per_slice: int, ops: list[tuple[Any, ...]], burst: int = 1,
              faults: bool = False) -> None:
    """Apply ``ops`` after the SETUP; with ``burst`` > 1, up to that many consecutive changes
    are sent at once (their order on the server is then the server's). With ``faults``, the
    ``fault`` operations switch the server's faults; the controller must then stay quiet once
    it has converged at the end."""
    async with world(max_per_slice, faults) as w:
        w.log.append(f"  max_per_slice={max_per_slice} burst={burst}")
        for op in SETUP:
            await apply(w, op)
        group: list[tuple[Any, ...]] = []
        for op in [*ops, ("check",)]:
            if op[0] not in SERIAL:
                group.append(op)
                if len(group) < burst:
                    continue
            if w.switch is not None:
                await w.switch.step(len(group))
            await asyncio.gather(*(apply(w, g) for g in group))
            group = []
            if op[0] in SERIAL:
                await apply(w, op)
        await writes_settle(w)
        if w.switch is not None:
            await stays_quiet(w)
            for what in w.switch.faults.injected:
                tally(f"injected {what}")


MODEL_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                          derandomize=os.environ.get("SLICECTL_MODEL_RANDOM") != "1",
                          suppress_health_check=list(HealthCheck))


@MODEL_SETTINGS
@given(st.sampled_from([2, 3, 100]), st.lists(CREATE_POD, min_size=4, max_size=10),
       st.lists(OPS, min_size=STEPS // 2, max_size=STEPS), st.sampled_from([1, 4]))
def test_random_sequences_of_cluster_changes(max_per_slice: int,
                                             pods: list[tuple[Any, ...]],
                                             ops: list[tuple[Any, ...]], burst: int) -> None:
    asyncio.run(run(max_per_slice, [*pods, ("check",), *ops], burst))


@pytest.mark.embedded_only(reason="fault injection: 500s, 429s, lost answers, cut lists, dropped, "
                           "stalled and compacted watches, restarts, drawn as operations")
@MODEL_SETTINGS
@given(st.sampled_from([2, 3, 100]), st.lists(CREATE_POD, min_size=4, max_size=10),
       st.lists(FAULT_OPS, min_size=STEPS // 2, max_size=STEPS), st.sampled_from([1, 4]))
def test_random_sequences_of_cluster_changes_and_faults(max_per_slice: int,
                                                        pods: list[tuple[Any, ...]],
                                                        ops: list[tuple[Any, ...]],
                                                        burst: int) -> None:
    asyncio.run(run(max_per_slice, [*pods, ("check",), *ops], burst, faults=True))
