"""The writer's share of the client's rate limit: a sync's writes wait for tokens one at a time.

A sync sends its writes together, but when the client's bucket is empty they queue for tokens,
and tokens are handed out in the order they were asked for. A selector with 200 slices to create
asked for 200 at once, so every other selector's first write (a new small selector, a pod going
unready) waited behind all of them: 10 s at the default 20 QPS (measured with one 20,000-pod
selector and 50 small ones created together: the small ones' first slice came at a median of
10.1 s, after the big one's last). Each sync now holds at most one write waiting for the bucket,
so concurrent syncs take turns, as upstream's one-write-at-a-time syncs do.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import SliceWriter
from slicectl.kube.client import KubeClient
from slicectl.kube.ratelimit import TokenBucket
from slicectl.kube.resources import Resource
from slicectl.reconcile import Settings, plan
from tests.unit.reconcile_builders import NODES, make_selector, pods_range


class BucketClient:
    """The parts of :class:`KubeClient` the writer uses, with a real token bucket; records the
    order creates are sent in (by the selector each is for)."""

    def __init__(self, qps: float) -> None:
        self.bucket = TokenBucket(qps, 1)
        self.sent: list[str] = []
        self.first_sent = asyncio.Event()

    def reserve_token(self) -> float:
        return self.bucket.reserve()

    def refund_token(self) -> None:
        self.bucket.refund()

    async def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None,
                     *, guard: Any = None, prepaid: bool = False) -> dict[str, Any]:
        if not prepaid:
            await self.bucket.acquire()
        name = f"{body['metadata']['generateName']}{len(self.sent)}"
        self.sent.append(body["metadata"]["generateName"].rstrip("-"))
        self.first_sent.set()
        meta = {**body["metadata"], "name": name, "namespace": namespace, "uid": name,
                "resourceVersion": "1", "generation": 1}
        return {**body, "metadata": meta}


async def test_a_sync_with_many_creates_does_not_book_every_token_before_another_syncs() -> None:
    client = BucketClient(qps=100.0)
    assert client.bucket.try_take()  # the bucket is empty: every write waits its turn
    writer = SliceWriter(cast(KubeClient, client), SliceTracker())
    one_each = Settings(max_endpoints_per_slice=1)
    web = {"app": "web"}  # what pods_range labels its pods
    big = make_selector("big", uid="big", match=web)
    small = make_selector("small", uid="small", match=web)
    big_plan = plan(big, pods_range(10), NODES, [], one_each)
    small_plan = plan(small, pods_range(1, 100), NODES, [], one_each)
    assert (len(big_plan.creates), len(small_plan.creates)) == (10, 1)
    bigs = asyncio.create_task(writer.apply("default/big", big, big_plan, None))
    await client.first_sent.wait()  # the big sync asked for its tokens first, and got one
    await writer.apply("default/small", small, small_plan, None)
    await bigs
    assert client.sent.index("small") <= 2, client.sent  # not 10th, after every big one
    assert client.sent.count("big") == 10
