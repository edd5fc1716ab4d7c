"""Issue 8, items 1 and 7: losing leadership with work pending, and writes that outlive it.

* A replica that is no longer sure it leads must park its workers (keys stay queued) instead
  of re-queueing the key at once and spinning on the event loop.
* The leadership check sits right before a write is sent: after the client's rate-limiter wait
  and before every resend, so a write that waited never lands after leadership lapsed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

import slicectl.controller.sync as sync_module
from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.controller.supervisor import cancel_quietly
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import NotLeading, SliceWriter
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector
from slicectl.model.records import PodRecord
from slicectl.reconcile import Settings, plan
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)


class Tripped(BaseException):
    """Raised by the plan counter so a spinning loop cannot hang the test run."""


async def test_workers_park_while_not_leading_and_resume_when_leading_again(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.30.0.{i + 1}", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

    plans = [0]
    real_plan = plan

    def counted_plan(*args: Any, **kw: Any) -> Any:
        plans[0] += 1
        if plans[0] > 500:
            raise Tripped("plan() called in a tight loop")
        return real_plan(*args, **kw)

    monkeypatch.setattr(sync_module, "plan", counted_plan)
    leading = [True]
    config = ControllerConfig(namespaces=(c.namespace,), batch_period=0.0)
    controller = Controller(c.client, config, may_write=lambda: leading[0])
    caches = asyncio.create_task(controller.run_caches())
    workers = asyncio.create_task(controller.run_workers())
    try:
        async def served(n: int) -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return sum(len(s["endpoints"]) for s in slices) == n

        await wait_until(lambda: served(3), what="initial sync")
        # Leadership lapses (the elector has not stepped down yet) and work arrives.
        leading[0] = False
        before = plans[0]
        await set_ready(c.client, c.namespace, "web-0", False)
        await create_pod(c.client, c.namespace, "web-3", "10.30.0.4", {"app": "web"})
        for _ in range(10):  # a heartbeat: the loop must stay free for renewals and probes
            await asyncio.sleep(0.1)
        assert not workers.done() or not isinstance(workers.exception(), Tripped), (
            f"workers spun: plan() ran {plans[0] - before} times while not leading")
        assert plans[0] - before <= 3, f"plan() ran {plans[0] - before} times while not leading"
        assert controller.queue.pending("slicectl.io/" + c.namespace + "/web") or (
            controller.queue.processing("slicectl.io/" + c.namespace + "/web")), (
            "the key stays queued for when leadership returns")
        leading[0] = True
        await wait_until(lambda: served(4), what="work resumes once leading again")
    finally:
        controller.queue.shutdown()
        await cancel_quietly(workers)
        await cancel_quietly(caches)


async def _selector_and_pods(c: Cluster) -> tuple[Any, list[PodRecord]]:
    raw = await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    sel = parse_selector(raw, SLICECTL)
    pods = [PodRecord(namespace=c.namespace, name="web-0", uid="uid-0", resource_version="1",
                      labels={"app": "web"}, phase="Running", pod_ips=("10.31.0.1",),
                      ready=True, ready_transition=None, terminating=False, node_name="",
                      hostname="", subdomain="")]
    return sel, pods


async def test_a_write_waiting_in_the_rate_limiter_is_not_sent_after_leadership_lapsed(
    cluster: Cluster,
) -> None:
    c = cluster
    sel, pods = await _selector_and_pods(c)
    sent: list[tuple[str, str]] = []  # (verb, resource) of each request the slow client sent
    slow = await KubeClient.connect(c.kubeconfig, settings=ClientSettings(qps=1.0, burst=1),
                                    on_request=lambda verb, res, _code, _s: sent.append(
                                        (verb, res)))
    try:
        leading = [True]
        writer = SliceWriter(slow, SliceTracker(), lambda: leading[0])
        await slow.list(ENDPOINTSLICES, c.namespace)  # spends the only token
        sent.clear()
        the_plan = plan(sel, pods, {}, [], Settings())
        write = asyncio.create_task(writer.apply("k", sel, the_plan, None))
        await asyncio.sleep(0.3)  # the create now waits for a token
        leading[0] = False
        with pytest.raises(NotLeading):
            await asyncio.wait_for(write, 10)
        assert ("POST", "endpointslices") not in sent, sent
        assert await slices_of(c.client, c.namespace, "web") == []
    finally:
        await slow.close()


@pytest.mark.embedded_only(reason="fault injection: 429s on every request (and request counting)")
async def test_a_throttled_write_is_not_resent_after_leadership_lapsed(cluster: Cluster) -> None:
    c = cluster
    assert c.server is not None
    sel, pods = await _selector_and_pods(c)
    leading = [True]
    writer = SliceWriter(c.client, SliceTracker(), lambda: leading[0])
    c.server.reset_counts()
    c.server.faults.throttle_rate = 1.0  # 429 with Retry-After: 1
    write = asyncio.create_task(writer.apply("k", sel, plan(sel, pods, {}, [], Settings()), None))
    try:
        async def throttled() -> bool:
            assert c.server is not None
            return c.server.request_counts(verb="POST", resource="endpointslices") >= 1

        await wait_until(throttled, what="the first attempt was throttled")
        leading[0] = False
        c.server.faults.throttle_rate = 0.0
        with pytest.raises(NotLeading):
            await asyncio.wait_for(write, 10)
        assert await slices_of(c.client, c.namespace, "web") == [], "resent after lapsing"
    finally:
        c.server.faults.throttle_rate = 0.0
        if not write.done():
            write.cancel()
        with contextlib.suppress(BaseException):
            await write
