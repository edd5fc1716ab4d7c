"""big-cluster's world: the workload (150k pods in 50 namespaces, 10k EndpointSelectors, nodes)
as plain objects with realistic managedFields, and the embedded API server's child process that
holds it (created in bulk through the sim's Python API) and flips pods or forces a relist when
told on stdin. Nothing here measures; :mod:`benchmarks.big_cluster` does.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import Resource

ESEL = Resource("slicectl.io", "v1alpha1", "endpointselectors", True, "EndpointSelector")
PREFIX = "bc"
NODE_COUNT = 1500  # 100 pods per node at 150k pods
BASE_TIME = 1_700_000_000


@dataclass(frozen=True)
class Size:
    pods: int
    namespaces: int
    big_namespace: int  # pods in the biggest namespace
    selectors: int
    flips: int

    @staticmethod
    def of(quick: bool, scale: float = 1.0) -> Size:
        if quick:
            return Size(pods=15_000, namespaces=10, big_namespace=5_000, selectors=1_000,
                        flips=10_000)
        return Size(pods=int(150_000 * scale), namespaces=50, big_namespace=int(50_000 * scale),
                    selectors=int(10_000 * scale), flips=int(50_000 * scale))


# -- the workload: deployments of pods, some selected ------------------------------------------


@dataclass(frozen=True)
class Deployment:
    namespace: str
    name: str
    size: int
    selected: bool
    hash: str


def plan_workload(size: Size, seed: int = 9) -> list[Deployment]:
    """Deployments filling every namespace; ``size.selectors`` of them have a selector.

    Selected deployment sizes span 1-1,000 (one of exactly 1,000 and one of 100; most 1-5, a
    few log-uniform up to 1,000), so roughly a third of the pods are selected and most by
    nothing. Unselected deployments have 1-50 pods.
    """
    rng = random.Random(seed)
    others = size.namespaces - 1
    per_ns = [size.big_namespace] + [
        (size.pods - size.big_namespace) // others + (1 if i < (size.pods - size.big_namespace)
                                                       % others else 0) for i in range(others)]
    sizes = [1000, 100]
    while len(sizes) < size.selectors:
        sizes.append(int(math.exp(rng.uniform(math.log(10), math.log(1000))))
                     if rng.random() < 0.01 else rng.randint(1, 5))
    budget = [int(n * 0.35) for n in per_ns]
    out: list[Deployment] = []
    ns_names = [f"{PREFIX}-{i:02d}" for i in range(size.namespaces)]
    left = list(per_ns)
    for i, n in enumerate(sizes):  # biggest namespace first for the big ones
        j = 0 if i < 2 else max(range(len(budget)), key=lambda k: budget[k])
        n = min(n, left[j])
        if n <= 0:
            continue
        budget[j] -= n
        left[j] -= n
        out.append(Deployment(ns_names[j], f"sel-{i:05d}", n, True, _hash(rng)))
    for j, ns in enumerate(ns_names):
        k = 0
        while left[j] > 0:
            n = min(left[j], rng.randint(1, 50))
            out.append(Deployment(ns, f"app-{k:05d}", n, False, _hash(rng)))
            left[j] -= n
            k += 1
    return out


def _hash(rng: random.Random) -> str:
    return "".join(rng.choices("bcdfghjklmnpqrstvwxz2456789", k=10))


def _ts(offset: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(BASE_TIME + offset))


class PodFactory:
    """Realistic Pod objects (~6 KB of JSON with managedFields, as a kube-apiserver serves them),
    sharing every substructure that is the same across a deployment's pods (the embedded
    server never mutates stored objects), so 150k of them fit in the server process."""

    def __init__(self) -> None:
        self._shared: dict[tuple[str, str], dict[str, Any]] = {}
        self.ip = 0

    def _template(self, d: Deployment) -> dict[str, Any]:
        key = (d.namespace, d.name)
        t = self._shared.get(key)
        if t is None:
            rs = f"{d.name}-{d.hash}"
            rs_uid = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{d.namespace}/{rs}"))
            labels = {"app": d.name, "pod-template-hash": d.hash}
            container = {
                "name": "server", "image": f"registry.example.com/{d.name}:1.2.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "1", "memory": "512Mi"},
                              "requests": {"cpu": "100m", "memory": "256Mi"}},
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                                   "timeoutSeconds": 1, "periodSeconds": 10,
                                   "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
            spec = {
                "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
                    "defaultMode": 420}}],
                "containers": [container], "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default", "serviceAccount": "default",
                "securityContext": {}, "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300}],
                "priority": 0, "enableServiceLinks": True,
                "preemptionPolicy": "PreemptLowerPriority"}
            f_spec: dict[str, Any] = {"f:containers": {'k:{"name":"server"}': {
                ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {
                    ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}},
                    'k:{"containerPort":9090,"protocol":"TCP"}': {
                    ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {
                    ".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
                    "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
                "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                                "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {}}
            managed = [
                {"manager": "kube-controller-manager", "operation": "Update",
                 "apiVersion": "v1", "time": _ts(0), "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                     ".": {}, "f:app": {}, "f:pod-template-hash": {}},
                     "f:ownerReferences": {".": {}, f'k:{{"uid":"{rs_uid}"}}': {}}},
                     "f:spec": f_spec}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                 "time": _ts(5), "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {
                     f'k:{{"type":"{c}"}}': {".": {}, "f:lastProbeTime": {},
                                            "f:lastTransitionTime": {}, "f:status": {},
                                            "f:type": {}}
                     for c in ("ContainersReady", "Initialized", "PodReadyToStartContainers",
                               "PodScheduled", "Ready")},
                     "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {},
                     "f:podIP": {}, "f:podIPs": {".": {}, 'k:{"ip":"10.0.0.1"}': {
                         ".": {}, "f:ip": {}}}, "f:startTime": {}}}}]
            # No ownerReferences: their ReplicaSets do not exist, so a garbage collector (the
            # embedded server has one) would delete the pods as orphans.
            t = self._shared[key] = {"labels": labels, "managed": managed,
                                     "spec": spec, "rs": rs,
                                     "conditions": {r: _conditions(r) for r in (True, False)}}
        return t

    def pod(self, d: Deployment, i: int) -> dict[str, Any]:
        t = self._template(d)
        self.ip += 1
        ip = f"10.{(self.ip >> 16) & 255}.{(self.ip >> 8) & 255}.{self.ip & 255}"
        node = f"node-{self.ip % NODE_COUNT:04d}"
        name = f"{t['rs']}-{i:05d}"
        return {
            "apiVersion": "v1", "kind": "Pod",
            # Keys in a kube-apiserver's order (managedFields last; the embedded server stamps
            # resourceVersion where the key already is).
            "metadata": {"name": name, "generateName": f"{t['rs']}-", "namespace": d.namespace,
                         "uid": str(uuid.uuid4()), "resourceVersion": "",
                         "creationTimestamp": _ts(i // 10),
                         "labels": t["labels"], "managedFields": t["managed"]},
            "spec": {**t["spec"], "nodeName": node},
            "status": {"phase": "Running", "conditions": t["conditions"][True],
                       "hostIP": "192.168.0.1", "hostIPs": [{"ip": "192.168.0.1"}],
                       "podIP": ip, "podIPs": [{"ip": ip}], "startTime": _ts(1),
                       "containerStatuses": [{"name": "server", "ready": True, "restartCount": 0,
                                              "image": "registry.example.com/x:1.2.3",
                                              "imageID": "", "started": True,
                                              "state": {"running": {"startedAt": _ts(2)}}}],
                       "qosClass": "Burstable"},
        }


def _conditions(ready: bool) -> list[dict[str, Any]]:
    flag = "True" if ready else "False"
    return [{"type": c, "status": flag if c in ("Ready", "ContainersReady") else "True",
             "lastProbeTime": None, "lastTransitionTime": _ts(3)}
            for c in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")]


def selector_object(d: Deployment) -> dict[str, Any]:
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": d.name, "namespace": d.namespace},
            "spec": {"selector": {"matchLabels": {"app": d.name}},
                     "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}


def node_object(n: int) -> dict[str, Any]:
    """The n-th of the NODE_COUNT fake Nodes pods are bound to (no kubelet behind it)."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": f"node-{n:04d}", "labels": {"topology.kubernetes.io/zone": f"zone-{n % 3}"}}}


def iter_pods(factory: PodFactory, deployments: list[Deployment]) -> Iterator[dict[str, Any]]:
    for d in deployments:
        for i in range(d.size):
            yield factory.pod(d, i)


# -- the embedded server's child process -------------------------------------------------------


async def serve(quick: bool, scale: float) -> None:
    """The child: start the embedded server, load the workload, obey commands on stdin."""
    from slicectl.cli.workload import apply_crd, crd_manifest
    from slicectl.sim.server import EmbeddedApiServer

    size = Size.of(quick, scale)
    srv = EmbeddedApiServer(watch_cache_size=200_000)
    await srv.start()
    async with KubeClient(await _conn(srv.kubeconfig_path), ClientSettings(qps=1e6, burst=10**6),
                          None) as client:
        await apply_crd(client, crd_manifest())
    deployments = plan_workload(size)
    pod_rt = srv.registry.lookup("", "v1", "pods")
    sel_rt = srv.registry.lookup("slicectl.io", "v1alpha1", "endpointselectors")
    ns_rt = srv.registry.lookup("", "v1", "namespaces")
    node_rt = srv.registry.lookup("", "v1", "nodes")
    assert pod_rt and sel_rt and ns_rt and node_rt
    now = _ts(0)
    for ns in sorted({d.namespace for d in deployments}):
        srv.store.put(ns_rt, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "uid": str(uuid.uuid4()), "creationTimestamp": now,
            "labels": {"kubernetes.io/metadata.name": ns}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    for n in range(NODE_COUNT):
        node = node_object(n)
        node["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now)
        srv.store.put(node_rt, node)
    factory = PodFactory()
    pods: list[dict[str, Any]] = []
    for pod in iter_pods(factory, deployments):
        pods.append(srv.store.put(pod_rt, pod))
    for d in deployments:
        if d.selected:
            obj = selector_object(d)
            obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now, generation=1)
            srv.store.put(sel_rt, obj)
    avg = sum(len(json.dumps(p)) for p in pods[:200]) / 200
    _say({"kubeconfig": srv.kubeconfig_path, "pods": len(pods), "pod_json_bytes": round(avg)})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    rng = random.Random(1)
    while line := (await reader.readline()).decode().strip():
        cmd, _, arg = line.partition(" ")
        if cmd == "flip":
            for _ in range(int(arg)):
                i = rng.randrange(len(pods))
                old = pods[i]
                ready = old["status"]["conditions"] is factory._shared[
                    (old["metadata"]["namespace"], old["metadata"]["labels"]["app"])
                ]["conditions"][True]
                t = factory._shared[(old["metadata"]["namespace"],
                                     old["metadata"]["labels"]["app"])]
                pods[i] = srv.store.put(pod_rt, {
                    **old, "metadata": {**old["metadata"]},
                    "status": {**old["status"], "conditions": t["conditions"][not ready]}})
                if _ % 500 == 499:
                    await asyncio.sleep(0)
            _say({"flipped": int(arg), "rv": srv.store.rv})
        elif cmd == "relist":
            # A write after everything the watchers have seen, then compaction: resuming a
            # watch from any earlier version is now 410 Expired, so every informer relists.
            marker = srv.store.get(ns_rt, "", f"{PREFIX}-00")
            assert marker is not None
            srv.store.put(ns_rt, {**marker, "metadata": {**marker["metadata"]}})
            srv.faults.compact()
            _say({"dropped": srv.faults.drop_watches()})
    await srv.stop()


def _say(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


async def _conn(kubeconfig: str) -> Any:
    from slicectl.kube.config import load_connection
    return await load_connection(kubeconfig, None)
