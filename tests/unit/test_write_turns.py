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
import gc
import warnings
from collections.abc import Callable
from typing import Any, cast

import pytest

from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import SliceWriter
from slicectl.kube.client import KubeClient
from slicectl.kube.ratelimit import TokenBucket
from slicectl.kube.resources import Resource
from slicectl.reconcile import Settings, plan, write_stages
from tests.unit.reconcile_builders import (
    NODES,
    FakeCluster,
    ip4,
    make_pod,
    make_selector,
    pods_range,
)

KEY = "slicectl.io/default/web"


class BucketClient:
    """The parts of :class:`KubeClient` the writer uses, with a real token bucket; records the
    order creates are sent in (by the selector each is for)."""

    def __init__(self, qps: float, clock: Callable[[], float] | None = None) -> None:
        self.bucket = TokenBucket(qps, 1, clock) if clock is not None else TokenBucket(qps, 1)
        self.sent: list[str] = []
        self.first_sent = asyncio.Event()
        self.reserved = asyncio.Event()

    def reserve_token(self) -> float:
        self.reserved.set()
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


async def _create_cancelled_while_waiting_for_its_token(tracker: SliceTracker) -> BucketClient:
    """One selector's create, waiting for a token 100 s away (the bucket's time stands
    still), cancelled there; it was never sent. Returns the client, bucket and all."""
    client = BucketClient(qps=0.01, clock=lambda: 0.0)
    assert client.bucket.try_take()  # empty: a token is 100 s away
    writer = SliceWriter(cast(KubeClient, client), tracker)
    sel = make_selector(uid="web")
    write = asyncio.create_task(
        writer.apply(KEY, sel, plan(sel, pods_range(1), NODES, [], Settings()), None))
    await client.reserved.wait()  # its create waits for its token
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    assert client.sent == []
    return client


async def test_a_write_cancelled_while_it_waits_for_its_token_gives_the_token_back() -> None:
    """A sync cancelled (its leadership term ended) while one of its writes waited in turn for
    a token kept that token: the write never went out, yet the bucket stayed a token in debt.
    Leadership terms cut short under churn at 5 QPS left it 150 tokens (30 s) in debt, and the
    next term's first writes waited for tokens nobody had used. Go's rate.Limiter.Wait, which
    client-go waits on, cancels its reservation when its context ends."""
    client = await _create_cancelled_while_waiting_for_its_token(SliceTracker())
    assert client.bucket.reserve() == 100.0  # the next token is one token away, not two


async def test_a_sync_cancelled_before_its_writes_began_leaves_no_write_unawaited() -> None:
    """After a refused create a stage's creates go one first and the rest once it landed. The
    rest were made as coroutines up front, and when the sync was cancelled (its term ended)
    before the stage's writes began, none of them was closed: a "coroutine ... was never
    awaited" RuntimeWarning for each slice the selector lacked."""
    one_each = Settings(max_endpoints_per_slice=1)
    sel = make_selector(uid="web")
    cluster = FakeCluster()
    cluster.apply(sel, plan(sel, pods_range(1), NODES, [], one_each))
    pods = [make_pod("pod-00000", ip4(0), ready=False), *pods_range(3, 1)]
    the_plan = plan(sel, pods, NODES, cluster.slices, one_each)
    assert (len(the_plan.creates), len(the_plan.updates)) == (3, 1)
    assert len(write_stages(the_plan)) == 1  # one stage: the creates go with the update
    tracker = SliceTracker()
    tracker.create_started(KEY)
    tracker.create_settled(KEY, refused=True)  # a used-up quota: one create first
    client = BucketClient(qps=0.0)
    writer = SliceWriter(cast(KubeClient, client), tracker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write = asyncio.create_task(writer.apply(KEY, sel, the_plan, None))
        await asyncio.sleep(0)  # the stage's writes are handed over, and have not begun
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        del write
        gc.collect()
    assert client.sent == []
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


async def test_a_create_cancelled_before_it_was_sent_leaves_no_outcome_in_doubt() -> None:
    """A create cancelled while it waited for its token was never sent, but the tracker was
    told it had gone out: its outcome "unknown", the selector's next sync first read its slices
    from the server (a LIST per selector whose sync a term's end cut short there)."""
    tracker = SliceTracker()
    await _create_cancelled_while_waiting_for_its_token(tracker)
    assert not tracker.has_unknown_creates(KEY)
