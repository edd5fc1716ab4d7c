"""Graceful pod deletion: the registry's two-step delete and the kubelet the server plays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import aiohttp
import pytest

from slicectl.cli.workload import Workload
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import NotFound
from slicectl.kube.resources import PODS as KPODS
from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, ssl_context

MERGE = "application/merge-patch+json"
RUNNING = {"status": {"phase": "Running", "conditions": [
    {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}]}}


@pytest.fixture
async def no_kubelet() -> AsyncIterator[Raw]:
    async with EmbeddedApiServer(kubelet=False) as srv:
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
                connector=connector, headers={"Authorization": f"Bearer {srv.token}"}) as s:
            yield Raw(srv, s)


def _seconds_from_now(stamp: str) -> float:
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


async def test_scheduled_pod_terminates_then_the_kubelet_removes_it(raw: Raw) -> None:
    body = pod("p", node="node-a")
    body["spec"]["terminationGracePeriodSeconds"] = 1
    await raw.request("POST", PODS, body)
    await raw.request("PATCH", PODS + "/p/status", RUNNING, content_type=MERGE)
    _, listed, _ = await raw.request("GET", PODS)
    watching = asyncio.create_task(raw.watch_lines(
        PODS, 5, resourceVersion=listed["metadata"]["resourceVersion"], limit_s=30))
    await asyncio.sleep(0.2)
    code, deleting, _ = await raw.request("DELETE", PODS + "/p")
    assert code == 200 and deleting["metadata"]["deletionGracePeriodSeconds"] == 1
    assert -2 < _seconds_from_now(deleting["metadata"]["deletionTimestamp"]) <= 2  # now + 1 s
    events = await watching
    # deletionTimestamp set; containers not ready; terminal phase; grace 0; gone
    assert [e["type"] for e in events] == ["MODIFIED"] * 4 + ["DELETED"]
    stopped = events[1]["object"]
    assert {c["type"]: c["status"] for c in stopped["status"]["conditions"]} == {
        "Ready": "False", "ContainersReady": "False"}
    assert stopped["status"]["phase"] == "Running"
    assert any(e["manager"] == "kubelet" for e in stopped["metadata"]["managedFields"])
    assert events[2]["object"]["status"]["phase"] == "Succeeded"
    assert events[3]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0


async def test_default_grace_is_the_pods_and_only_shorter_ones_apply(no_kubelet: Raw) -> None:
    raw = no_kubelet
    await raw.request("POST", PODS, pod("p", node="node-a"))
    _, deleting, _ = await raw.request("DELETE", PODS + "/p")
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 30
    assert 25 < _seconds_from_now(deleting["metadata"]["deletionTimestamp"]) <= 31
    _, again, _ = await raw.request("DELETE", PODS + "/p", gracePeriodSeconds=60)
    assert again["metadata"]["deletionGracePeriodSeconds"] == 30  # longer: ignored
    _, shorter, _ = await raw.request("DELETE", PODS + "/p", gracePeriodSeconds=10)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    await asyncio.sleep(0.3)
    code, still, _ = await raw.request("GET", PODS + "/p")
    assert code == 200 and still["metadata"]["deletionTimestamp"]  # no kubelet: it stays
    code, _, _ = await raw.request("DELETE", PODS + "/p", gracePeriodSeconds=0)
    assert code == 200
    code, _, _ = await raw.request("GET", PODS + "/p")
    assert code == 404


async def test_unscheduled_or_terminal_pods_go_at_once(no_kubelet: Raw) -> None:
    raw = no_kubelet
    await raw.request("POST", PODS, pod("pending"))
    code, gone, _ = await raw.request("DELETE", PODS + "/pending")
    assert code == 200 and gone["metadata"]["deletionGracePeriodSeconds"] == 0
    code, _, _ = await raw.request("GET", PODS + "/pending")
    assert code == 404
    await raw.request("POST", PODS, pod("done", node="node-a"))
    await raw.request("PATCH", PODS + "/done/status", {"status": {"phase": "Succeeded"}},
                      content_type=MERGE)
    await raw.request("DELETE", PODS + "/done")
    code, _, _ = await raw.request("GET", PODS + "/done")
    assert code == 404


async def test_the_demo_workload_plays_the_kubelet_where_the_server_does_not() -> None:
    async with EmbeddedApiServer(kubelet=False) as srv:
        client = await KubeClient.connect(srv.kubeconfig_path)
        try:
            workload = Workload(client, lambda _: None, "default", plays_kubelet=True)
            await workload.launch(["web-0000"], ready_over=0.0, waves=1)
            await workload.delete("web-0000")
            with pytest.raises(NotFound):
                await client.get(KPODS, "web-0000", "default")
        finally:
            await client.close()
