"""kubectl (the real binary) against the embedded API server over HTTPS.

These prove the server speaks enough of the wire protocol for kubectl: OpenAPI v3 download and
server-side field validation on create/apply, client-side apply's strategic merge patch
(built-ins) and JSON merge patch (custom resources), label, the three patch types, status
subresource, label-selected get (JSON and table), watch, raw paths, and background garbage
collection on delete.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from slicectl.sim.server import EmbeddedApiServer

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: x}}
spec:
  containers:
  - name: c
    image: nginx:1.27
    ports: [{containerPort: 80, name: http}]
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              color: {type: string, default: blue}
"""

WIDGET = """
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: a}
spec: {size: %d}
"""


class Kubectl:
    def __init__(self, kubeconfig: str, workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir

    async def run(self, *args: str, stdin: str | None = None,
                  check: bool = True) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", self.kubeconfig, *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=self.workdir,
        )
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), timeout=60)
        code = proc.returncode or 0
        if check and code != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({code}): {err.decode()}")
        return code, out.decode(), err.decode()

    async def namespace(self, name: str) -> None:
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        await self.run("apply", "-f", "-", stdin=json.dumps(manifest))

    async def json(self, *args: str) -> Any:
        _, out, _ = await self.run(*args, "-o", "json")
        return json.loads(out)


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with EmbeddedApiServer(port=0) as srv:
        yield Kubectl(str(srv.kubeconfig_path), tmp_path)


async def test_version_and_namespace(kubectl: Kubectl) -> None:
    _, out, _ = await kubectl.run("get", "--raw", "/version")
    assert "gitVersion" in json.loads(out)
    _, out, _ = await kubectl.run("create", "ns", "a")
    assert "namespace/a created" in out
    _, out, _ = await kubectl.run("get", "ns", "a")
    assert "Active" in out


async def test_apply_pod_twice_status_patch_and_get(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    _, out, _ = await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    assert "pod/p created" in out
    _, out, _ = await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    assert "pod/p unchanged" in out
    changed = POD.replace("nginx:1.27", "nginx:1.28")
    _, out, _ = await kubectl.run("-n", "a", "apply", "-f", "-", stdin=changed)
    assert "pod/p configured" in out
    pod = await kubectl.json("-n", "a", "get", "pod", "p")
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    await kubectl.run("-n", "a", "patch", "pod", "p", "--subresource=status", "--type=merge",
                      "-p", '{"status":{"phase":"Running"}}')
    pods = await kubectl.json("-n", "a", "get", "pods", "-l", "app=x")
    assert [p["metadata"]["name"] for p in pods["items"]] == ["p"]
    assert pods["items"][0]["status"]["phase"] == "Running"
    _, out, _ = await kubectl.run("-n", "a", "get", "pods", "-l", "app=x")
    header, row = out.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert row.split()[:3] == ["p", "0/1", "Running"]
    empty = await kubectl.json("-n", "a", "get", "pods", "-l", "app=y")
    assert empty["items"] == []


async def test_validation_rejects_unknown_fields(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    bad = POD.replace("image: nginx:1.27", "image: nginx:1.27\n    bogus: 1")
    code, _, err = await kubectl.run("-n", "a", "apply", "-f", "-", stdin=bad, check=False)
    assert code != 0
    assert "bogus" in err


async def test_label_and_patch_types(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    await kubectl.run("-n", "a", "label", "pod", "p", "tier=web")
    await kubectl.run("-n", "a", "patch", "pod", "p", "--type=json", "-p",
                      '[{"op":"add","path":"/metadata/labels/j","value":"1"}]')
    await kubectl.run("-n", "a", "patch", "pod", "p", "-p",
                      '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}')
    pod = await kubectl.json("-n", "a", "get", "pod", "p")
    assert pod["metadata"]["labels"] == {"app": "x", "tier": "web", "j": "1"}
    assert pod["spec"]["containers"][0]["image"] == "nginx:2"
    assert pod["spec"]["containers"][0]["ports"][0]["name"] == "http"
    code, _, err = await kubectl.run(
        "-n", "a", "patch", "pod", "p", "--type=json", "-p",
        '[{"op":"test","path":"/metadata/labels/app","value":"nope"}]', check=False)
    assert code != 0
    assert "the server rejected our request" in err


async def test_crd_and_custom_resource(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    await kubectl.run("apply", "-f", "-", stdin=CRD)
    for _ in range(50):
        code, _, _ = await kubectl.run("get", "widgets", "-A", check=False)
        if code == 0:
            break
        await asyncio.sleep(0.2)
    _, out, _ = await kubectl.run("apply", "-f", "-", stdin=WIDGET % 3)
    assert "widget.example.com/w created" in out
    _, out, _ = await kubectl.run("apply", "-f", "-", stdin=WIDGET % 4)
    assert "widget.example.com/w configured" in out
    widget = await kubectl.json("-n", "a", "get", "widget", "w")
    assert widget["spec"] == {"size": 4, "color": "blue"}
    _, out, _ = await kubectl.run("-n", "a", "get", "widgets")
    assert out.split()[:4] == ["NAME", "SIZE", "w", "4"]
    code, _, err = await kubectl.run("apply", "-f", "-", stdin=WIDGET % 0, check=False)
    assert code != 0 and "spec.size" in err
    _, out, _ = await kubectl.run("get", "crd")
    assert "widgets.example.com" in out


async def test_watch_receives_a_change(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", kubectl.kubeconfig, "-n", "a", "get", "pods", "-w",
        "-o", "name", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await asyncio.sleep(1.0)
        await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
        assert line.decode().strip() == "pod/p"
    finally:
        proc.kill()
        await proc.wait()


async def test_delete_owner_collects_dependents(kubectl: Kubectl) -> None:
    await kubectl.namespace("a")
    await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    owner = await kubectl.json("-n", "a", "get", "pod", "p")
    dependent = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "child", "namespace": "a", "ownerReferences": [{
            "apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner["metadata"]["uid"]}]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await kubectl.run("apply", "-f", "-", stdin=json.dumps(dependent))
    await kubectl.run("-n", "a", "delete", "pod", "p", "--wait=true")
    for _ in range(100):
        code, _, _ = await kubectl.run("-n", "a", "get", "pod", "child", check=False)
        if code != 0:
            break
        await asyncio.sleep(0.1)
    code, _, err = await kubectl.run("-n", "a", "get", "pod", "child", check=False)
    assert code != 0 and "NotFound" in err


async def test_describe_lists_events_recorded_through_events_v1(kubectl: Kubectl) -> None:
    """kubectl describe lists core/v1 events; slicectl records events.k8s.io/v1 ones."""
    await kubectl.namespace("a")
    await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    uid = (await kubectl.json("-n", "a", "get", "pod", "p"))["metadata"]["uid"]
    event = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "a"},
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "a",
                      "uid": uid},
        "reason": "InvalidSpec", "note": "port missing", "type": "Warning",
        "action": "Reconcile", "reportingController": "slicectl.io/endpointselector-controller",
        "reportingInstance": "slicectl-0", "eventTime": "2026-11-28T21:00:00.000000Z"}
    await kubectl.run("create", "-f", "-", stdin=json.dumps(event))
    _, out, _ = await kubectl.run("-n", "a", "describe", "pod", "p")
    assert "InvalidSpec" in out and "port missing" in out
    _, out, _ = await kubectl.run("-n", "a", "get", "events.v1.", "-o", "name")
    assert out.split() == ["event/p.1"]


async def test_get_pods_wide_has_the_real_columns(kubectl: Kubectl) -> None:
    """kubectl get -o wide prints the server's priority-1 columns: a real v1.32 adds the
    nominated node and the readiness gates (printers.go's podColumnDefinitions)."""
    await kubectl.namespace("a")
    await kubectl.run("-n", "a", "apply", "-f", "-", stdin=POD)
    _, out, _ = await kubectl.run("-n", "a", "get", "pods", "-o", "wide")
    header, row = out.splitlines()[:2]
    assert [c.strip() for c in header.split("   ") if c.strip()][5:] == [
        "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert row.split()[5:] == ["<none>"] * 4


async def test_a_list_the_server_gzips_reads_as_any_other(kubectl: Kubectl) -> None:
    """kubectl asks for gzip (as client-go does): three pods of 60 KB make a LIST over the
    threshold, which the server then encodes (``tests/sim/test_compression.py``)."""
    for i in range(3):
        manifest = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"big-{i}", "annotations": {"ballast": "x" * 60_000}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        await kubectl.run("create", "-f", "-", stdin=json.dumps(manifest))
    listed = await kubectl.json("get", "pods", "-n", "default")
    assert [p["metadata"]["annotations"]["ballast"] for p in listed["items"]] == ["x" * 60_000] * 3
