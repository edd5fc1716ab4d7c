"""Differential test: the same pods under kube-controller-manager and under slicectl, diffed.

Earlier reviews compared slicectl with the upstream EndpointSlice controller by reading its
code; this runs both on one real kube-apiserver. Every case is one pod label selector that a
Service (for kube-controller-manager's endpointslice controller) and an EndpointSelector (for
slicectl) share, with the same ports (:func:`service_for`: the Service's own port numbers
never reach a slice). Pods are written as a kubelet writes them: created with ``nodeName``,
then their status PATCHed with IPs, conditions and container statuses; terminating ones are
held by a finalizer. Once both controllers are quiet, their slices are normalized (:func:`view`) and
every difference is a row: what, upstream's value, slicectl's value, and whether it is one that
SPEC.md or README.md names (:data:`DOCUMENTED`).

``python -m benchmarks.differential --kubeconfig K --kcm-binary B`` prints the table; the
test ``tests/integration/test_upstream_differential.py`` runs it on a real cluster
(``SLICECTL_TEST_KUBECONFIG``, with ``SLICECTL_BENCH_KCM`` for the binary), and fails on any row
that is not documented. An endpointslice controller that already serves the cluster (kind's
kube-controller-manager) is used as it is: it writes slices for the cases' Services before
anything is started (:func:`upstream_serves`); otherwise one is started from the binary with
only that controller, and stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.apiserver import free_port, stop_process
from benchmarks.baselines.upstream import SERVICE_NAME_LABEL, UPSTREAM_MANAGED_BY, kcm_command
from benchmarks.driver import ESEL, SERVICES, ensure_default_service_account
from slicectl.cli import workload
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import ApiError, Invalid, NotFound
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES, NODES, PODS, Resource
from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    IPV4,
    IPV6,
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    LABEL_ZONE,
)

HOLD = "diff.slicectl.io/hold"  # the finalizer that keeps terminating pods terminating
COMMON_LABELS = {"team": "diff", "app.kubernetes.io/part-of": "differential"}
SETTLE_S = 6.0  # both sides unchanged this long: done
LIMIT_S = 120.0


@dataclass(frozen=True)
class PodCase:
    """One pod, as a kubelet would report it."""

    name: str
    # "auto": the next IPv4 of the case, "auto6": its next IPv6; () : no IP
    ips: tuple[str, ...] = ("auto",)
    pod_ip: str = ""  # a status.podIP other than podIPs[0] (the server keeps only podIP)
    ready: bool = True
    phase: str = "Running"
    node: str = "a"  # a, b (zones), nozone, ghost (no such Node), "" (no nodeName)
    ports: tuple[tuple[str, int, str], ...] = (("http", 8080, "TCP"),)
    sidecar_ports: tuple[tuple[str, int, str], ...] = ()  # restartable init container
    init_ports: tuple[tuple[str, int, str], ...] = ()  # plain init container
    terminating: bool = False
    host_network: bool = False
    readiness_gate: bool | None = None  # None: no gate; else the gate's status
    hostname: str = ""
    subdomain: str = ""
    conditions: bool = True  # False: the status has no conditions at all
    extra_conditions: tuple[tuple[str, bool], ...] = ()  # appended (a repeated type, say)


@dataclass(frozen=True)
class Case:
    name: str
    ports: tuple[dict[str, Any], ...]  # EndpointSelector ports (targetPort, name, protocol)
    pods: tuple[PodCase, ...]
    families: tuple[str, ...] = ()  # EndpointSelector ipFamilies; () : not set
    service: dict[str, Any] = field(default_factory=dict)  # extra Service spec fields

    @property
    def dual_stack(self) -> bool:
        """Whether its Service needs a cluster that serves IPv6 Services (a dual-stack one)."""
        return (IPV6 in self.service.get("ipFamilies", ())
                or self.service.get("ipFamilyPolicy") in (REQUIRE_DUAL, PREFER_DUAL))


def _many(n: int) -> tuple[PodCase, ...]:
    return tuple(PodCase(f"p{i:03d}", node="ab"[i % 2]) for i in range(n))


REQUIRE_DUAL, PREFER_DUAL = "RequireDualStack", "PreferDualStack"
DUAL = {"ipFamilyPolicy": REQUIRE_DUAL}  # families [IPv4, IPv6] on a dual-stack cluster
ONLY_V4 = {"ipFamilyPolicy": "SingleStack", "ipFamilies": [IPV4]}
ONLY_V6 = {"ipFamilyPolicy": "SingleStack", "ipFamilies": [IPV6]}
BOTH = (IPV4, IPV6)
DS = ("auto", "auto6")  # a dual-stack pod's IPs, IPv4 first


HTTP = ({"name": "http", "targetPort": 8080},)
CASES = (
    Case("basic", HTTP, (
        PodCase("ready"), PodCase("notready", ready=False, node="b"),
        PodCase("succeeded", phase="Succeeded", ready=False),
        PodCase("failed", phase="Failed", ready=False),
        PodCase("noip", ips=(), phase="Pending", ready=False),
        PodCase("nozone", node="nozone"), PodCase("ghost", node="ghost"),
        PodCase("unbound", node=""),
        PodCase("hostnet", ips=("192.168.77.10",), host_network=True),
        PodCase("gated", ready=False, readiness_gate=False),
        PodCase("gate-ok", readiness_gate=True),
        PodCase("term-ready", terminating=True),
        PodCase("term-notready", ready=False, terminating=True),
        PodCase("named-host", hostname="h1", subdomain="basic"),
        PodCase("other-host", hostname="h2", subdomain="other"),
        PodCase("no-conditions", ready=False, conditions=False),
        PodCase("term-succeeded", phase="Succeeded", ready=False, terminating=True),
        PodCase("pending-ip", phase="Pending", ready=False),
        PodCase("phase-unknown", phase="Unknown", ready=False),
        PodCase("hostnet2", ips=("192.168.77.10",), host_network=True),
        PodCase("ipchange"),
        PodCase("dup-ready", extra_conditions=(("Ready", False),)),
        PodCase("dup-unready", ready=False, extra_conditions=(("Ready", True),)),
    )),
    Case("named", ({"name": "http", "targetPort": "web"},
                   {"name": "metrics", "targetPort": "metrics"}), (
        PodCase("web8080", ports=(("web", 8080, "TCP"), ("metrics", 9090, "TCP"))),
        PodCase("web8081", ports=(("web", 8081, "TCP"), ("metrics", 9090, "TCP"))),
        PodCase("noweb", ports=(("metrics", 9090, "TCP"),)),
        PodCase("webudp", ports=(("web", 8080, "UDP"), ("metrics", 9090, "TCP"))),
        PodCase("sidecar", ports=(("metrics", 9090, "TCP"),),
                sidecar_ports=(("web", 7070, "TCP"),)),
        PodCase("initonly", ports=(("metrics", 9090, "TCP"),),
                init_ports=(("web", 6060, "TCP"),)),
        PodCase("none", ports=()),
    )),
    Case("multi", ({"name": "tcp", "protocol": "TCP", "targetPort": 8080},
                   {"name": "udp", "protocol": "UDP", "targetPort": 53},
                   {"name": "sctp", "protocol": "SCTP", "targetPort": 9999,
                    "appProtocol": "example.com/x"}),
         (PodCase("m1"), PodCase("m2", node="b"), PodCase("m3", ready=False))),
    Case("noports", (), (PodCase("n1"), PodCase("n2", ready=False)),
         service={"clusterIP": "None"}),
    Case("dual", HTTP, (
        PodCase("both", ips=("auto", "fd00:10::1")),
        PodCase("v6", ips=("fd00:10::2",)),
        PodCase("v4", ips=("auto",)),
        PodCase("v6long", ips=("fd00:10:0:0:0:0:0:3",)),
        PodCase("v4zeros", ips=("10.99.0.010",)),
        PodCase("v6first", ips=("fd00:10::4", "auto")),
        PodCase("mapped", ips=("::ffff:10.99.1.1",)),
    ), families=("IPv4",)),
    Case("empty", HTTP, ()),
    Case("trigger", HTTP, (PodCase("t1"), PodCase("t2"))),
    Case("terminal", HTTP, (PodCase("done", phase="Succeeded", ready=False),
                            PodCase("crashed", phase="Failed", ready=False))),
    Case("unnamed", ({"targetPort": 8080},), (PodCase("u1"),)),
    Case("nameless", ({"name": "grpc", "targetPort": "grpc"},),
         (PodCase("g1"), PodCase("g2", ready=False))),
    Case("reselect", HTTP, (PodCase("r1"), PodCase("r2", ready=False))),
    Case("split", ({"name": "http", "targetPort": "web"},), tuple(
        PodCase(f"s{i:03d}", ports=(("web", 8080 + i % 3, "TCP"),)) for i in range(150))),
    Case("big", HTTP, _many(250)),
    # -- dual-stack and IPv6: only on a cluster that can make a RequireDualStack Service --
    Case("ds-default", HTTP, (
        PodCase("dd-both", ips=DS), PodCase("dd-v6first", ips=("auto6", "auto")),
        PodCase("dd-v4", ips=("auto",)), PodCase("dd-v6", ips=("auto6",)),
        PodCase("dd-notready", ips=DS, ready=False, node="b"),
        PodCase("dd-term", ips=DS, terminating=True),
        PodCase("dd-mapped", ips=("::ffff:10.200.0.1", "fd00:200::1")),
        PodCase("dd-disagree", ips=("fd00:200::2", "10.200.0.2"), pod_ip="10.200.0.3"),
        PodCase("dd-disagree6", ips=("10.200.0.4", "fd00:200::4"), pod_ip="fd00:200::5"),
        PodCase("dd-hostnet", ips=("192.168.77.10", "fd00:77::10"), host_network=True),
    ), service=DUAL),
    Case("ds-both", HTTP, (
        PodCase("db-both", ips=DS), PodCase("db-v6first", ips=("auto6", "auto")),
        PodCase("db-v4", ips=("auto",)), PodCase("db-v6", ips=("auto6",), node="b"),
    ), families=BOTH, service=DUAL),
    Case("ds-v6first", HTTP, (PodCase("d6-both", ips=DS), PodCase("d6-v4", ips=("auto",))),
         families=(IPV6, IPV4), service={**DUAL, "ipFamilies": [IPV6, IPV4]}),
    Case("ds-v4pods", HTTP, (PodCase("dv-a"), PodCase("dv-b", node="b")), service=DUAL),
    Case("ds-both-v4pods", HTTP, (PodCase("dbv-a"), PodCase("dbv-b", ready=False)),
         families=BOTH, service=DUAL),
    Case("ds-empty", HTTP, (), families=BOTH, service=DUAL),
    Case("ds-shrink", HTTP, (PodCase("ds-s1", ips=DS), PodCase("ds-s2", ips=DS)),
         families=BOTH, service=DUAL),
    Case("ds-grow", HTTP, (PodCase("ds-g1", ips=DS), PodCase("ds-g2", ips=("auto6",))),
         families=(IPV4,), service=ONLY_V4),
    Case("pds-v4", HTTP, (PodCase("pv4-a"), PodCase("pv4-b")),
         service={"ipFamilyPolicy": PREFER_DUAL}),
    Case("pds-v6", HTTP, (PodCase("pv6-a", ips=("auto6",)), PodCase("pv6-b", ips=("auto6",))),
         service={"ipFamilyPolicy": PREFER_DUAL}),
    Case("v6", ({"name": "http", "targetPort": "web"},), (
        PodCase("v6-plain", ips=("auto6",)), PodCase("v6-dual", ips=DS),
        PodCase("v6-v4", ips=("auto",)), PodCase("v6-none", ips=(), phase="Pending", ready=False),
        PodCase("v6-upper", ips=("FD00:77:AA::A",)),
        PodCase("v6-zeros", ips=("fd00:0077:00aa::000b",)),
        PodCase("v6-full", ips=("fd00:77:aa:0:0:0:0:c",)),
        PodCase("v6-dotted", ips=("fd00:77:aa::10.0.0.13",)),
        PodCase("v6-colons", ips=("fd00::1:0:0:0:e",)),
        PodCase("v6-dual-upper", ips=("10.200.1.1", "FD00:77:AA::F")),
        PodCase("v6-named", ips=("auto6",), ports=(("web", 8081, "TCP"),)),
    ), families=(IPV6,), service=ONLY_V6),
    Case("v6-default", HTTP, (PodCase("v6d-a", ips=("auto6",)),
                              PodCase("v6d-b", ips=("auto6",), ready=False)), service=ONLY_V6),
    Case("v6-v4pods", HTTP, (PodCase("v6v-a"),), families=(IPV6,), service=ONLY_V6),
    Case("ds-special", HTTP, (PodCase("dx-ok", ips=DS),
                              PodCase("dx-linklocal", ips=("10.200.3.1", "fe80::1"))),
         service=DUAL),
    Case("ds-big", HTTP, tuple(PodCase(f"d{i:03d}", ips=DS, node="ab"[i % 2])
                               for i in range(150)), service=DUAL),
)


# -- building the world ------------------------------------------------------------------


def _container_ports(ports: tuple[tuple[str, int, str], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]


def pod_manifest(case: Case, pod: PodCase, node: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 30,
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "ports": _container_ports(pod.ports)}],
    }
    init = []
    if pod.init_ports:
        init.append({"name": "init", "image": "registry.k8s.io/pause:3.10",
                     "ports": _container_ports(pod.init_ports)})
    if pod.sidecar_ports:
        init.append({"name": "sidecar", "image": "registry.k8s.io/pause:3.10",
                     "restartPolicy": "Always", "ports": _container_ports(pod.sidecar_ports)})
    if init:
        spec["initContainers"] = init
    if pod.host_network:
        spec["hostNetwork"] = True
        for c in (*spec["containers"], *init):
            for p in c["ports"]:
                p["hostPort"] = p["containerPort"]
    if pod.readiness_gate is not None:
        spec["readinessGates"] = [{"conditionType": "example.com/gate"}]
    if node:
        spec["nodeName"] = node
    if pod.hostname:
        spec["hostname"] = pod.hostname
    if pod.subdomain:
        spec["subdomain"] = pod.subdomain
    meta: dict[str, Any] = {"name": pod.name, "labels": {"diff-case": case.name}}
    if pod.terminating:
        meta["finalizers"] = [HOLD]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_status(pod: PodCase, ips: list[str], now: str) -> dict[str, Any]:
    """The status a kubelet writes: phase, IPs, conditions, container statuses."""
    def cond(kind: str, ok: bool) -> dict[str, Any]:
        return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": now}

    running = pod.phase == "Running"
    conditions = [cond("PodScheduled", True), cond("Initialized", True),
                  cond("ContainersReady", running and (pod.ready or pod.readiness_gate is False)),
                  cond("Ready", pod.ready)]
    if pod.readiness_gate is not None:
        conditions.append(cond("example.com/gate", pod.readiness_gate))
    conditions += [cond(kind, ok) for kind, ok in pod.extra_conditions]
    state: dict[str, Any] = ({"running": {"startedAt": now}} if running else
                             {"terminated": {"exitCode": 0 if pod.phase == "Succeeded" else 1,
                                             "reason": "Completed" if pod.phase == "Succeeded"
                                             else "Error", "startedAt": now, "finishedAt": now}}
                             if pod.phase in ("Succeeded", "Failed") else
                             {"waiting": {"reason": "ContainerCreating"}})
    status: dict[str, Any] = {
        "phase": pod.phase, "hostIP": "192.168.77.10", "hostIPs": [{"ip": "192.168.77.10"}],
        "startTime": now, "conditions": conditions if pod.conditions else [],
        "containerStatuses": [{"name": "main", "ready": running and pod.ready,
                               "restartCount": 0, "image": "registry.k8s.io/pause:3.10",
                               "imageID": "", "started": running, "state": state}],
    }
    if ips:
        status["podIP"] = pod.pod_ip or ips[0]
        status["podIPs"] = [{"ip": ip} for ip in ips]
    return {"status": status}


def _auto_ip(ip: str, case: int, n: int) -> str:
    """``ip``, or for "auto"/"auto6" the ``n``-th address of the ``case``-th case's family."""
    if ip == "auto":
        return f"10.{77 + case}.{n // 250}.{n % 250 + 1}"
    if ip == "auto6":
        return f"fd00:77:{case:x}::{n:x}"
    return ip


# What a server that validates IPs strictly (v1.33 and later) says of two address forms v1.32
# stores in pod status, and how to tell a pod's address is of that form.
def _mapped(ip: str) -> bool:
    return ip.lower().startswith("::ffff:") and "." in ip


def _leading_zeros(ip: str) -> bool:
    return "." in ip and any(len(p) > 1 and p.startswith("0") for p in ip.split("."))


STRICT_IP_REFUSALS: dict[str, Callable[[str], bool]] = {
    "must not be an IPv4-mapped IPv6 address": _mapped,
    "must not have leading 0s": _leading_zeros,
}


def _strictly_refused(ips: list[str], message: str) -> str | None:
    """Which of :data:`STRICT_IP_REFUSALS` ``message`` is, if a pod address has that form."""
    for refusal, of_form in STRICT_IP_REFUSALS.items():
        if refusal in message and any(of_form(ip) for ip in ips):
            return refusal
    return None


@dataclass
class World:
    """The namespace, Nodes, Services and EndpointSelectors of one run."""

    client: KubeClient
    namespace: str
    nodes: dict[str, str]  # role -> Node name
    services: bool  # whether the server serves Services (kube-controller-manager needs them)
    single_stack: str = ""  # why the dual-stack cases are left out ("": they run)
    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # pods this server would not hold

    @property
    def cases(self) -> tuple[Case, ...]:
        """The cases this cluster can hold: IPv6 Services need a dual-stack one."""
        return tuple(c for c in CASES if not (c.dual_stack and self.single_stack))

    @classmethod
    async def build(cls, client: KubeClient, run_id: str) -> World:
        ns = f"diff-{run_id}"
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": ns}})
        nodes = {role: f"diff-{run_id}-{role}" for role in ("a", "b", "nozone", "ghost")}
        for role, zone in (("a", "zone-a"), ("b", "zone-b"), ("nozone", None)):
            labels = {LABEL_ZONE: zone} if zone else {}
            await client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": nodes[role], "labels": labels}})
        core = await client.request("GET", "/api/v1")
        served = {r.get("name") for r in core.get("resources") or ()}
        if "serviceaccounts" in served:
            await ensure_default_service_account(client, ns)
        services = "services" in served
        single = await _single_stack(client, ns) if services else "the server serves no Services"
        return cls(client, ns, nodes, services, single)

    async def add_case(self, case: Case) -> None:
        selector = {"diff-case": case.name}
        service = service_for(case)
        esel: dict[str, Any] = {
            "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": case.name, "labels": dict(COMMON_LABELS)},
            "spec": {"selector": {"matchLabels": selector}, "ports": list(case.ports)}}
        if case.families:
            esel["spec"]["ipFamilies"] = list(case.families)
        if self.services:
            await self.client.create(SERVICES, service, self.namespace)
        await self.client.create(ESEL, esel, self.namespace)
        serial = iter(range(1, 100000))
        sem = asyncio.Semaphore(16)

        async def one(pod: PodCase) -> None:
            ips = [_auto_ip(ip, CASES.index(case), next(serial)) for ip in pod.ips]
            async with sem:
                await self._add_pod(case, pod, ips)

        await asyncio.gather(*(one(p) for p in case.pods))

    async def _add_pod(self, case: Case, pod: PodCase, ips: list[str]) -> None:
        ns = self.namespace
        node = self.nodes[pod.node] if pod.node else ""
        await self.client.create(PODS, pod_manifest(case, pod, node), ns)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            await self.client.patch(PODS, pod.name, pod_status(pod, ips, now), ns,
                                    subresource="status")
        except ApiError as exc:  # a refused status is a finding, reported ...
            why = _strictly_refused(ips, str(exc)) if isinstance(exc, Invalid) else None
            if why is not None:
                # ... except an address form a newer server refuses in pod status (v1.33 and
                # later validate IPs strictly; v1.32 stores them): neither controller can
                # meet such a pod there
                self.refused.append(f"{case.name}/{pod.name}: {why}")
            else:
                self.errors.append(f"{case.name}/{pod.name}: status refused: {exc}")
        if pod.terminating:
            await self.client.delete(PODS, pod.name, ns, grace_period_seconds=30)

    async def mutate(self) -> None:
        """The second phase: changes to Nodes, pods, labels, ports and selectors while both
        controllers run."""
        c = self.client
        await c.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": self.nodes["ghost"], "labels": {LABEL_ZONE: "zone-g"}}})
        await c.patch(NODES, self.nodes["b"], {"metadata": {"labels": {LABEL_ZONE: "zone-b2"}}})
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        await self._change_pods(now)
        await self._change_selectors()
        if not self.single_stack:
            await self._change_dual_stack(now)

    async def _change_pods(self, now: str) -> None:
        ns, c = self.namespace, self.client
        await c.patch(PODS, "notready", {"status": {"conditions": [
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}, ns,
            subresource="status")
        await c.patch(PODS, "ready", {"status": {"phase": "Succeeded"}}, ns,
                      subresource="status")
        await c.patch(PODS, "m1", {"metadata": {"labels": {"diff-case": "gone"}}}, ns)
        for i in range(100):
            await c.delete(PODS, f"p{i:03d}", ns, grace_period_seconds=0)
        await c.delete(PODS, "noweb", ns, grace_period_seconds=0)
        await c.patch(PODS, "term-notready", {"metadata": {"finalizers": None}}, ns)
        await c.delete(PODS, "term-notready", ns, grace_period_seconds=0)
        await c.delete(NODES, self.nodes["nozone"])
        await c.patch(PODS, "noip", pod_status(PodCase("noip"), ["10.77.9.1"], now), ns,
                      subresource="status")
        await c.delete(PODS, "gate-ok", ns, grace_period_seconds=30)  # no kubelet ends it
        try:
            await c.patch(PODS, "ipchange", {"status": {"podIP": "10.97.0.1", "podIPs": [
                {"ip": "10.97.0.1"}]}}, ns, subresource="status")
        except ApiError as exc:  # the server's answer is the finding
            self.errors.append(f"ipchange refused: {exc}")
        empty = next(k for k in CASES if k.name == "empty")
        await asyncio.gather(*(self._add_pod(empty, PodCase(f"e{i}"), [f"10.98.0.{i + 1}"])
                               for i in range(2)))
        await c.patch(PODS, "t1", {"status": {"conditions": [
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now}]}}, ns,
            subresource="status")

    async def _change_selectors(self) -> None:
        """Labels (one removed, one added, one reserved), a targetPort, a selector."""
        ns, c = self.namespace, self.client
        for res in self._selectors():
            await c.patch(res, "multi", {"metadata": {"labels": {
                "team": None, "tier": "x", "endpointslice.kubernetes.io/skip-mirror": "true"}}},
                ns)
        multi = next(k for k in CASES if k.name == "multi")
        ports = [{**p, "targetPort": 8081} if p["name"] == "tcp" else p for p in multi.ports]
        await c.patch(ESEL, "multi", {"spec": {"ports": ports}}, ns)
        svc = service_for(Case("multi", tuple(ports), ()))
        if self.services:
            await c.patch(SERVICES, "multi", {"spec": {"ports": svc["spec"]["ports"]}}, ns)
        for res in self._selectors():
            selector = {"diff-case": "multi"}
            await c.patch(res, "reselect", {"spec": {"selector": selector if res is SERVICES
                                                     else {"matchLabels": selector}}}, ns)

    async def _change_dual_stack(self, now: str) -> None:
        """Families dropped and added, a family's first pod, a dual-stack pod's readiness, and
        dual-stack pods deleted from full slices."""
        ns, c = self.namespace, self.client
        await c.patch(ESEL, "ds-shrink", {"spec": {"ipFamilies": [IPV4]}}, ns)
        await c.patch(SERVICES, "ds-shrink", {"spec": ONLY_V4}, ns)
        await c.patch(ESEL, "ds-grow", {"spec": {"ipFamilies": list(BOTH)}}, ns)
        await c.patch(SERVICES, "ds-grow", {"spec": DUAL}, ns)
        cases = {k.name: k for k in CASES}
        await self._add_pod(cases["ds-v4pods"], PodCase("dv-c6"), ["fd00:201::1"])
        await self._add_pod(cases["ds-empty"], PodCase("de-1"), ["10.201.0.2", "fd00:201::2"])
        await c.patch(PODS, "dd-both", {"status": {"conditions": [
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now}]}}, ns,
            subresource="status")
        for name, ips in (("dd-v4", ["10.200.0.6", "fd00:200::6"]),  # gains an IPv6
                          ("dd-v6first", ["10.200.0.7"])):  # loses its IPv6, IPv4 changes
            await c.patch(PODS, name, {"status": {"podIP": ips[0], "podIPs": [
                {"ip": ip} for ip in ips]}}, ns, subresource="status")
        for i in range(30):
            await c.delete(PODS, f"d{i:03d}", ns, grace_period_seconds=0)

    def _selectors(self) -> tuple[Resource, ...]:
        return (SERVICES, ESEL) if self.services else (ESEL,)

    async def cleanup(self) -> None:
        with contextlib.suppress(NotFound):
            pods, _ = await self.client.list(PODS, self.namespace)
            for p in pods:
                if p["metadata"].get("finalizers"):
                    await self.client.patch(PODS, p["metadata"]["name"],
                                            {"metadata": {"finalizers": None}}, self.namespace)
            await self.client.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods",
                                      params={"gracePeriodSeconds": "0"})
            await self.client.delete(NAMESPACES, self.namespace)
        for node in self.nodes.values():
            with contextlib.suppress(NotFound):
                await self.client.delete(NODES, node)


def service_for(case: Case) -> dict[str, Any]:
    """The Service standing for ``case``'s EndpointSelector (ports get numbers 80, 81, ...)."""
    ports = []
    for i, p in enumerate(case.ports):
        sp = {"protocol": p.get("protocol", "TCP"), "port": 80 + i,
              "targetPort": p["targetPort"]}
        if "name" in p:
            sp["name"] = p["name"]
        if "appProtocol" in p:
            sp["appProtocol"] = p["appProtocol"]
        ports.append(sp)
    spec: dict[str, Any] = {"selector": {"diff-case": case.name}, "ports": ports, **case.service}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": case.name, "labels": dict(COMMON_LABELS)}, "spec": spec}


async def _single_stack(client: KubeClient, ns: str) -> str:
    """Why this cluster cannot make a RequireDualStack Service (a dry run), or "" if it can."""
    probe = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dual-stack-probe"},
             "spec": {"ipFamilyPolicy": REQUIRE_DUAL, "ports": [{"port": 80}]}}
    try:
        made = await client.request("POST", SERVICES.path(ns), params={"dryRun": "All"},
                                    json=probe)
    except Invalid as exc:  # "this cluster is not configured for dual-stack services"
        return f"single-stack cluster: a {REQUIRE_DUAL} Service is refused ({exc})"
    families = made.get("spec", {}).get("ipFamilies") or []
    return "" if set(families) == {IPV4, IPV6} else (
        f"a {REQUIRE_DUAL} Service got ipFamilies {families}")


# -- normalizing and diffing ----------------------------------------------------------------


def _ports(slice_: dict[str, Any]) -> str:
    """The slice's ports exactly as stored (absent fields stay absent), in a stable order."""
    return json.dumps(sorted(slice_.get("ports") or (), key=lambda p: json.dumps(
        p, sort_keys=True)), sort_keys=True)


def view(slices: list[dict[str, Any]], identity_label: str) -> dict[str, Any]:
    """What a consumer sees in a set of slices, independent of how they were named."""
    groups: dict[str, list[int]] = {}
    endpoints: dict[str, Any] = {}
    labels: set[str] = set()
    annotations: set[str] = set()
    owners: set[str] = set()
    triggers: set[str] = set()
    for s in slices:
        meta = s["metadata"]
        owners |= {f"controller={o.get('controller')} blockOwnerDeletion="
                   f"{o.get('blockOwnerDeletion')}" for o in meta.get("ownerReferences") or ()}
        owners.add(f"generateName={bool(meta.get('generateName'))}")
        triggers.add((meta.get("annotations") or {}).get(ANNOTATION_TRIGGER_TIME, ""))
        key = f"{s.get('addressType')} ports={_ports(s)}"
        eps = s.get("endpoints") or []
        groups.setdefault(key, []).append(len(eps))
        for ep in eps:
            name = (ep.get("targetRef") or {}).get("name", "?")
            endpoints[f"{name} {s.get('addressType')}"] = {**ep, "slice": key}
        labels |= {f"{k}={v}" for k, v in (s["metadata"].get("labels") or {}).items()
                   if k not in (identity_label, LABEL_MANAGED_BY)}
        annotations |= set(s["metadata"].get("annotations") or {})
    return {"groups": {k: sorted(v, reverse=True) for k, v in groups.items()},
            "endpoints": endpoints, "labels": sorted(labels), "annotations": sorted(annotations),
            "owners": sorted(owners), "triggers": sorted(triggers)}


@dataclass(frozen=True)
class Row:
    case: str
    what: str
    upstream: Any
    slicectl: Any
    documented: str  # why the difference is intended, or "" (a finding)


TRIGGER_WHY = (
    "README 'The EndpointSelector API': a write of changes with no time of their own carries "
    "none, as upstream's; but upstream dates a selector change or a relabel that selects "
    "other pods by those pods' Ready transitions (slicectl: none, the change has no time of "
    "its own), and drops the annotation from its own rewrites (headless nil ports, retries)")
CANONICAL = "SPEC 3: addresses in canonical form; upstream copies the pod's text"
FAMILIES = (
    "SPEC 3: 'Address families: spec.ipFamilies, or every family present among the selected "
    "pods'; a dual-stack Service always has both, and upstream publishes an empty placeholder "
    "for a family no pod has (README 'The EndpointSelector API')")
ONE_PLACEHOLDER = (
    "SPEC 3: 'With no pods, one empty placeholder slice (IPv4 unless ipFamilies says "
    "otherwise)': one, of the first family, and none for a family without pods when the other "
    "has some; upstream publishes a placeholder per family (README 'The EndpointSelector API')")
ZONE = (
    "README 'The EndpointSelector API': a Node's zone change is written at once; upstream's "
    "updateNode only feeds the topology cache, so the zone changes at the Service's next sync")
SPECIAL_IP = (
    "README 'The EndpointSelector API': a pod IP no EndpointSlice may list (fe80::1) is left "
    "out; upstream lists it and the API server refuses every write of the family's slices")
NONCANONICAL_V6 = ("upper", "zeros", "full", "dotted", "colons", "dual-upper")
# (cases or None for every case, what the row starts with, where SPEC.md or README.md says so)
DOCUMENTED: tuple[tuple[frozenset[str] | None, str, str], ...] = (
    (frozenset({"basic"}), "endpoint ghost ", (
        "SPEC 3: a pod whose Node is not known is listed without zone; upstream skips it")),
    (frozenset({"basic"}), "endpoint nozone ", (
        "SPEC 3: a pod whose Node was deleted is listed without zone; upstream drops it")),
    (frozenset({"basic"}), "endpoint unbound ", (
        "SPEC 3: a pod with an IP and no nodeName is listed without node and zone; upstream "
        "looks up the Node \"\", finds none and drops it")),
    (frozenset({"basic"}), "group ", "follows from the pods of missing Nodes (SPEC 3)"),
    (frozenset({"named"}), "endpoint sidecar ", (
        "SPEC 3: a named port is also looked up in restartable init containers; v1.32's "
        "k8s.io/endpointslice findPort reads only containers")),
    (frozenset({"named"}), "group ", "follows from the sidecar pod (SPEC 3)"),
    (None, "label service.kubernetes.io/headless", (
        "a Service-only label: an EndpointSelector has no clusterIP (SPEC 2 lists the labels)")),
    (None, "label endpointslice.kubernetes.io/", (
        "README 'The EndpointSelector API': labels in the EndpointSlice API's own domain are "
        "never copied from the selector")),
    (frozenset({"dual"}), "endpoint v4zeros IPv4 addresses", CANONICAL),
    (frozenset({"dual"}), "endpoint mapped IPv4 addresses", CANONICAL),
    (frozenset({"ds-default"}), "endpoint dd-mapped IPv4 addresses", CANONICAL),
    *((frozenset({"v6"}), f"endpoint v6-{pod} IPv6 addresses", CANONICAL)
      for pod in NONCANONICAL_V6),
    (frozenset({"ds-v4pods", "pds-v4"}), "group IPv6 ports=[]", FAMILIES),
    (frozenset({"pds-v6"}), "group IPv4 ports=[]", FAMILIES),
    (frozenset({"ds-both-v4pods", "ds-empty"}), "group IPv6 ports=[]", ONE_PLACEHOLDER),
    (frozenset({"ds-both"}), "endpoint db-v6 IPv6 zone", ZONE),
    (frozenset({"ds-special"}), "group IPv6 ", SPECIAL_IP),
    (frozenset({"ds-special"}), "endpoint dx-ok IPv6", SPECIAL_IP),
    (frozenset({"big", "ds-big"}), "group ", (
        "README 'Fewer writes than upstream': packing differs, the endpoint set is the same")),
    (frozenset(c.name for c in CASES if c.name != "trigger"), "trigger times", TRIGGER_WHY),
    (frozenset(c.name for c in CASES if c.name != "trigger"), "annotations", TRIGGER_WHY),
)


def documented(case: str, what: str) -> str:
    for cases, prefix, why in DOCUMENTED:
        if (cases is None or case in cases) and what.startswith(prefix):
            return why
    return ""


def diff(case: str, up: dict[str, Any], ours: dict[str, Any], phase: str = "") -> list[Row]:
    rows: list[Row] = []

    def add(what: str, a: Any, b: Any) -> None:
        if a != b:
            rows.append(Row(phase + case, what, a, b, documented(case, what)))

    for key in sorted(set(up["groups"]) | set(ours["groups"])):
        add(f"group {key}", up["groups"].get(key), ours["groups"].get(key))
    for key in sorted(set(up["endpoints"]) | set(ours["endpoints"])):
        a, b = up["endpoints"].get(key), ours["endpoints"].get(key)
        if a is None or b is None:
            add(f"endpoint {key}", a, b)
            continue
        for f in sorted(set(a) | set(b)):
            add(f"endpoint {key} {f}", a.get(f), b.get(f))
    for label in sorted(set(up["labels"]) ^ set(ours["labels"])):
        add(f"label {label}", label in up["labels"], label in ours["labels"])
    add("annotations", up["annotations"], ours["annotations"])
    add("owner references", up["owners"], ours["owners"])
    add("trigger times", up["triggers"], ours["triggers"])
    return rows


# -- running both controllers ----------------------------------------------------------------


@contextlib.contextmanager
def controllers(kubeconfig: str, kcm_binary: str | None, namespace: str,
                log_dir: Path) -> Iterator[None]:
    """slicectl on ``namespace``, and a kube-controller-manager running only the endpointslice
    controller if ``kcm_binary`` is given (None: one serves the cluster already)."""
    procs: list[subprocess.Popen[Any]] = []
    logs = []
    try:
        if kcm_binary:
            log = open(log_dir / "kcm.log", "ab")  # noqa: SIM115 - closed below
            logs.append(log)
            command = kcm_command(kcm_binary, kubeconfig, free_port())
            procs.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
        log = open(log_dir / "slicectl.log", "ab")  # noqa: SIM115 - closed below
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "slicectl", "run", "--kubeconfig", kubeconfig,
             "--namespace", namespace, "--metrics-bind-address", "0",
             "--health-probe-bind-address", "0", "--log-format", "json"],
            stdout=log, stderr=subprocess.STDOUT))
        yield
    finally:
        for proc in procs:
            stop_process(proc, 15)
        for log in logs:
            log.close()


async def both_views(client: KubeClient, ns: str, case: str) -> tuple[Any, Any]:
    items, _ = await client.list(ENDPOINTSLICES, ns)
    live = [s for s in items if not s["metadata"].get("deletionTimestamp")]
    up = [s for s in live if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == case
          and s["metadata"]["labels"].get(LABEL_MANAGED_BY) == UPSTREAM_MANAGED_BY]
    ours = [s for s in live if (s["metadata"].get("labels") or {}).get(LABEL_SELECTOR_NAME)
            == case]
    return view(up, SERVICE_NAME_LABEL), view(ours, LABEL_SELECTOR_NAME)


async def settled(client: KubeClient, ns: str,
                  cases: tuple[Case, ...]) -> dict[str, tuple[Any, Any]]:
    """Both controllers' views of every case once neither changed for ``SETTLE_S``."""
    last: dict[str, tuple[Any, Any]] = {}
    stable_since = time.monotonic()
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        now = {c.name: await both_views(client, ns, c.name) for c in cases}
        started = all(v[0]["groups"] and v[1]["groups"] for v in now.values())
        if now != last or not started:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since >= SETTLE_S:
            return now
        await asyncio.sleep(1.0)
    raise TimeoutError(f"the slices did not settle within {LIMIT_S:g} s")


@contextlib.asynccontextmanager
async def world(client: KubeClient) -> AsyncIterator[World]:
    w = await World.build(client, uuid.uuid4().hex[:6])
    try:
        yield w
    finally:
        await w.cleanup()


async def upstream_serves(client: KubeClient, ns: str, wait_s: float = 5.0) -> bool:
    """Whether an endpointslice controller serves the cluster already (kind's, or a shared
    kube-controller-manager): it writes slices for the Services before anything is started."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        items, _ = await client.list(ENDPOINTSLICES, ns, label_selector=(
            f"{LABEL_MANAGED_BY}={UPSTREAM_MANAGED_BY}"))
        if items:
            return True
        await asyncio.sleep(0.5)
    return False


@dataclass(frozen=True)
class Result:
    how: str  # which upstream controller ran
    rows: list[Row]
    errors: list[str]  # what the server refused while the cases were built
    single_stack: str  # why the dual-stack cases were left out ("": they ran)
    cases: tuple[str, ...]  # the cases that ran
    refused: tuple[str, ...] = ()  # pods the server would not hold, by design (not errors)


async def run(kubeconfig: str, kcm_binary: str | None, log_dir: Path) -> Result | None:
    """Build every case the cluster can hold, run both controllers, diff; None when no
    upstream controller serves the cluster and no binary was given."""
    client = await KubeClient.connect(kubeconfig)
    try:
        await workload.apply_crd(client, workload.crd_manifest())
        async with world(client) as w:
            cases = w.cases
            for case in cases:
                await w.add_case(case)
            if await upstream_serves(client, w.namespace):
                how, kcm_binary = "the cluster's own endpointslice controller", None
            elif kcm_binary:
                how = f"own kube-controller-manager {kcm_binary} (--controllers=endpointslice)"
            else:
                return None
            with controllers(kubeconfig, kcm_binary, w.namespace, log_dir):
                first = await settled(client, w.namespace, cases)
                await w.mutate()
                second = await settled(client, w.namespace, cases)
            rows = [r for phase, views in (("", first), ("changed: ", second)) for c in cases
                    for r in diff(c.name, *views[c.name], phase)]
            return Result(how, rows, w.errors, w.single_stack, tuple(c.name for c in cases),
                          tuple(w.refused))
    finally:
        await client.close()


def table(rows: list[Row]) -> str:
    out = ["| case | what | upstream | slicectl | documented |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.case} | {r.what} | `{json.dumps(r.upstream)}` | "
                   f"`{json.dumps(r.slicectl)}` | {r.documented or '**no**'} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("SLICECTL_TEST_KUBECONFIG"))
    parser.add_argument("--kcm-binary", default=os.environ.get("SLICECTL_BENCH_KCM"))
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args(argv)
    if not args.kubeconfig:
        parser.error("--kubeconfig (or SLICECTL_TEST_KUBECONFIG) is required: a real cluster")
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="slicectl-diff-"))
    result = asyncio.run(run(args.kubeconfig, args.kcm_binary, log_dir))
    if result is None:
        print("no endpointslice controller serves this cluster: give --kcm-binary")
        return 2
    print(f"upstream: {result.how}; logs in {log_dir}")
    if result.single_stack:
        print(f"dual-stack cases left out: {result.single_stack}")
    for e in result.errors:
        print(f"build error: {e}")
    for r in result.refused:
        print(f"left out, refused by this server: {r}")
    print(table(result.rows))
    return 1 if any(not r.documented for r in result.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
