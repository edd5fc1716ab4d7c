"""Issue acceptance: EndpointSelector in, minimal EndpointSlices out, over real HTTP.

Each test runs the controller in-process exactly as ``slicectl run`` does, against the embedded
API server (or a real cluster with SLICECTL_TEST_KUBECONFIG). Slice writes are counted from an
independent watch. Latencies are printed (``-s``) for the record, never asserted.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from slicectl.kube.resources import ENDPOINTSLICES, PODS
from slicectl.model.records import LABEL_MANAGED_BY, LABEL_SELECTOR_NAME
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    SliceWrites,
    create_pod,
    ensure_node,
    node_name,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_for_garbage_collection,
    wait_until,
)

WEB = {"app": "web"}
HTTP_PORT = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]


def ip(i: int) -> str:
    return f"10.1.{i // 250}.{i % 250 + 1}"


async def make_pods(c: Cluster, count: int, start: int = 0, **kw: Any) -> None:
    sem = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with sem:
            await create_pod(c.client, c.namespace, f"web-{i}", ip(i), WEB,
                             node=f"node-{i % 3}", **kw)

    await asyncio.gather(*(one(i) for i in range(start, start + count)))


async def setup_web(c: Cluster, pods: int = 250) -> None:
    for n in range(3):
        await ensure_node(c.client, f"node-{n}", f"zone-{n}")
    await make_pods(c, pods)
    await c.client.create(ESEL, selector_body("web", WEB, ports=HTTP_PORT,
                                              labels={"team": "ml"}), c.namespace)


async def endpoint_total(c: Cluster, name: str = "web") -> int:
    return sum(len(s.get("endpoints") or []) for s in await slices_of(c.client, c.namespace, name))


async def test_250_pods_become_three_slices_with_full_metadata(cluster: Cluster) -> None:
    c = cluster
    await setup_web(c)
    started = time.monotonic()
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def converged() -> bool:
            return await endpoint_total(c) == 250

        await wait_until(converged, what="250 endpoints")
        print(f"\n250 pods -> slices in {time.monotonic() - started:.3f}s (incl. cache sync)")
        slices = await slices_of(c.client, c.namespace, "web")
        assert sorted(len(s["endpoints"]) for s in slices) == [50, 100, 100]
        sel = await c.client.get(ESEL, "web", c.namespace)
        for s in slices:
            meta = s["metadata"]
            assert meta["generateName"] == "web-"
            assert meta["labels"][LABEL_SELECTOR_NAME] == "web"
            assert meta["labels"][LABEL_MANAGED_BY] == "endpointselector-controller.slicectl.io"
            assert meta["labels"]["team"] == "ml"
            assert "kubernetes.io/service-name" not in meta["labels"]
            assert "endpoints.kubernetes.io/last-change-trigger-time" in meta["annotations"]
            (owner,) = meta["ownerReferences"]
            assert owner == {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                             "name": "web", "uid": sel["metadata"]["uid"], "controller": True,
                             "blockOwnerDeletion": True}
            assert s["addressType"] == "IPv4"
            assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            for ep in s["endpoints"]:
                assert ep["conditions"] == {"ready": True, "serving": True, "terminating": False}
                n = int(ep["targetRef"]["name"].split("-")[1])
                assert ep["addresses"] == [ip(n)]
                assert ep["nodeName"] == node_name(f"node-{n % 3}")
                assert ep["zone"] == f"zone-{n % 3}"
                assert ep["targetRef"]["kind"] == "Pod"
                assert ep["targetRef"]["namespace"] == c.namespace
                assert ep["targetRef"]["uid"]
                assert "resourceVersion" not in ep["targetRef"]

        async def status_ready() -> bool:
            status = (await c.client.get(ESEL, "web", c.namespace)).get("status", {})
            conds = {x["type"]: x for x in status.get("conditions", [])}
            return bool(status.get("endpoints") == 250 and status.get("endpointSlices") == 3
                        and conds.get("Ready", {}).get("status") == "True")

        await wait_until(status_ready, what="status Ready with 250 endpoints")
        status = (await c.client.get(ESEL, "web", c.namespace))["status"]
        assert status["readyEndpoints"] == 250
        assert status["observedGeneration"] == sel["metadata"]["generation"]


async def converge_web(c: Cluster, writes: SliceWrites, pods: int = 250) -> None:
    async def converged() -> bool:
        return await endpoint_total(c) == pods

    await wait_until(converged, what=f"{pods} endpoints")
    await writes.quiet()


async def test_one_readiness_flip_costs_exactly_one_write(cluster: Cluster) -> None:
    c = cluster
    await setup_web(c)
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()
    batch = 0.1
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=batch)):
        await converge_web(c, writes)
        before = writes.total
        flipped = time.monotonic()
        await set_ready(c.client, c.namespace, "web-7", False)

        async def not_ready_listed() -> bool:
            for s in await slices_of(c.client, c.namespace, "web"):
                for ep in s["endpoints"]:
                    if ep["targetRef"]["name"] == "web-7":
                        return bool(ep["conditions"] == {"ready": False, "serving": False,
                                                         "terminating": False})
            return False

        await wait_until(not_ready_listed, what="web-7 not ready in its slice")
        visible = time.monotonic() - flipped
        await writes.quiet()
        print(f"\nreadiness flip visible after {visible * 1000:.0f} ms "
              f"(batch period {batch * 1000:.0f} ms); slice writes: {writes.total - before}")
        assert writes.total - before == 1
    await writes.stop()


async def rollout_step(c: Cluster, step: int, size: int = 10) -> float:
    """Replace the ``size`` oldest pods of step ``step`` (0, 1, ...) with new ones the way a
    Deployment's rollout does: delete them all at once, then create their replacements; returns
    the seconds that took."""
    started = time.monotonic()
    await asyncio.gather(*(c.client.delete(PODS, f"web-{i}", c.namespace, grace_period_seconds=0)
                           for i in range(step * size, (step + 1) * size)))
    await make_pods(c, size, start=1000 + step * size)
    return time.monotonic() - started


async def wait_replaced(c: Cluster, step: int, size: int = 10) -> None:
    async def replaced() -> bool:
        names = {ep["targetRef"]["name"] for s in await slices_of(c.client, c.namespace, "web")
                 for ep in s["endpoints"]}
        return (len(names) == 250 and f"web-{1000 + step * size + size - 1}" in names
                and f"web-{step * size}" not in names)

    await wait_until(replaced, what=f"rollout step {step}: {size} pods replaced")


async def test_ten_deletes_and_ten_creates_in_one_batch_cost_at_most_two_writes(
    cluster: Cluster,
) -> None:
    """A rollout step: the 10 oldest pods go, 10 new ones come, inside one batch period.

    The step counted is the rollout's second, on a selector busy with the first (its changes
    come less than two windows apart on average), so none of its changes is synced early as an
    isolated one (README, "Leading-edge batching"): its first change takes the leading edge
    (or waits for the window of the first step's sync) and all the others wait for the window's
    end. On a selector quiet until then, a second change 20 ms or more after the first (on a
    real server, a pod deletion's two events, a deletionTimestamp then DELETED, can be that far
    apart) is isolated by design and costs one write more.
    """
    c = cluster
    await setup_web(c)
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=2.0)):
        await converge_web(c, writes)
        await rollout_step(c, 0)
        await wait_replaced(c, 0)
        await writes.quiet()
        before = writes.total
        elapsed = await rollout_step(c, 1)
        await wait_replaced(c, 1)
        await writes.quiet()
        print(f"\n10 deletes + 10 creates issued in {elapsed:.2f}s; slice writes: "
              f"{writes.total - before} ({dict(writes.counts)})")
        assert writes.total - before <= 2, (
            f"{writes.total - before} writes, {dict(writes.counts)} in all, changes issued in "
            f"{elapsed:.2f}s")
    await writes.stop()


async def test_hand_deleted_slice_is_recreated_and_hand_edit_reverted(cluster: Cluster) -> None:
    c = cluster
    await setup_web(c, pods=20)
    writes = SliceWrites(c.client, c.namespace)
    await writes.start()
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await converge_web(c, writes, pods=20)
        (victim,) = await slices_of(c.client, c.namespace, "web")
        await c.client.delete(ENDPOINTSLICES, victim["metadata"]["name"], c.namespace)

        async def recreated() -> bool:
            now = await slices_of(c.client, c.namespace, "web")
            return (len(now) == 1 and now[0]["metadata"]["uid"] != victim["metadata"]["uid"]
                    and len(now[0]["endpoints"]) == 20)

        await wait_until(recreated, what="slice recreated")
        (current,) = await slices_of(c.client, c.namespace, "web")
        tampered = [dict(ep) for ep in current["endpoints"]]
        tampered[0] = {**tampered[0], "conditions": {"ready": False, "serving": False,
                                                     "terminating": True}}
        await c.client.patch(ENDPOINTSLICES, current["metadata"]["name"],
                             {"endpoints": tampered}, c.namespace)

        async def reverted() -> bool:
            (s,) = await slices_of(c.client, c.namespace, "web")
            return all(ep["conditions"]["ready"] for ep in s["endpoints"])

        await wait_until(reverted, what="hand edit reverted")
    await writes.stop()


async def test_selector_deletion_leaves_no_slice_and_foreign_slices_untouched(
    cluster: Cluster,
) -> None:
    c = cluster
    await setup_web(c, pods=5)
    foreign = await c.client.create(ENDPOINTSLICES, {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-by-someone-else", "labels": {
            LABEL_SELECTOR_NAME: "web", LABEL_MANAGED_BY: "someone-else.example.com"}},
        "addressType": "IPv4", "ports": [],
        "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}],
    }, c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        async def converged() -> bool:
            ours = [s for s in await slices_of(c.client, c.namespace, "web")
                    if s["metadata"]["labels"][LABEL_MANAGED_BY] != "someone-else.example.com"]
            return sum(len(s["endpoints"]) for s in ours) == 5

        await wait_until(converged, what="5 endpoints")
        uid = (await c.client.get(ESEL, "web", c.namespace))["metadata"]["uid"]
        await c.client.delete(ESEL, "web", c.namespace, propagation_policy="Background")

        async def only_foreign_left() -> bool:
            names = [s["metadata"]["name"] for s in await slices_of(c.client, c.namespace, "web")]
            return names == ["web-by-someone-else"]

        await wait_for_garbage_collection(c.client, c.namespace, uid, only_foreign_left,
                                          real=c.real, what="garbage collection of our slices")
        still = await c.client.get(ENDPOINTSLICES, "web-by-someone-else", c.namespace)
        assert still["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]


async def test_a_pod_ip_no_slice_may_list_is_left_out_and_the_rest_still_publish(
    cluster: Cluster,
) -> None:
    """Pod status validation lets a link-local or loopback podIP through; EndpointSlice
    validation refuses it. Listed, it would get every write to the selector's slices refused,
    and a healthy pod's readiness flip would never be published."""
    c = cluster
    await setup_web(c, pods=2)
    async with running_controller(options(c.kubeconfig, c.namespace, max_endpoints_per_slice=2)):
        await wait_until(lambda: endpoint_total_is(c, 2), what="2 endpoints")
        for name, odd_ip in (("odd-link-local", "169.254.1.1"), ("odd-loopback", "127.0.0.1")):
            await create_pod(c.client, c.namespace, name, odd_ip, WEB)
        await set_ready(c.client, c.namespace, "web-0", False)

        async def flip_published() -> bool:
            for s in await slices_of(c.client, c.namespace, "web"):
                for ep in s["endpoints"]:
                    if ep["targetRef"]["name"] == "web-0":
                        return ep["conditions"]["ready"] is False
            return False

        await wait_until(flip_published, what="web-0's readiness flip in its slice")
        listed = {ep["targetRef"]["name"]
                  for s in await slices_of(c.client, c.namespace, "web") for ep in s["endpoints"]}
        assert listed == {"web-0", "web-1"}
        sel = await c.client.get(ESEL, "web", c.namespace)
        ready = [x for x in sel["status"]["conditions"] if x["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", ready


async def endpoint_total_is(c: Cluster, want: int) -> bool:
    return await endpoint_total(c) == want
