"""StatusPublisher: writes in the background, one in flight per selector, newest wins."""

from __future__ import annotations

import asyncio
from typing import Any

from slicectl.controller.publish import SENDERS, StatusPublisher
from slicectl.model.records import SelectorRecord, SelectorRef
from slicectl.model.selector import Selector

SEL = SelectorRecord(api=SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector",
                                     "endpointselectors"),
                     namespace="ns", name="web", uid="u", resource_version="1", generation=1,
                     labels={}, selector=Selector())


async def test_submit_returns_at_once_and_the_newest_status_wins() -> None:
    gate = asyncio.Event()
    written: list[dict[str, Any]] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        await gate.wait()
        written.append(patch)

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"status": {"endpoints": 1}})  # goes in flight, blocked on the gate
    await asyncio.sleep(0)
    pub.submit("k", SEL, {"status": {"endpoints": 2}})  # waits...
    pub.submit("k", SEL, {"status": {"endpoints": 3}})  # ...and is replaced by this one
    assert pub.pending("k")
    gate.set()
    await asyncio.wait_for(pub.flush(), timeout=5)
    assert written == [{"status": {"endpoints": 1}}, {"status": {"endpoints": 3}}]
    assert not pub.pending("k")


async def test_a_failed_write_is_dropped_and_later_writes_still_go() -> None:
    calls: list[int] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        calls.append(patch["n"])
        if patch["n"] == 1:
            raise RuntimeError("apiserver said no")

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"n": 1})
    await asyncio.wait_for(pub.flush(), timeout=5)
    pub.submit("k", SEL, {"n": 2})
    await asyncio.wait_for(pub.flush(), timeout=5)
    assert calls == [1, 2]


async def test_a_takeover_burst_is_sent_by_a_bounded_pool_in_submission_order() -> None:
    gate = asyncio.Event()
    in_flight = peak = 0
    order: list[str] = []

    async def write(sel: SelectorRecord, patch: dict[str, Any]) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        order.append(patch["key"])
        await gate.wait()
        in_flight -= 1

    pub = StatusPublisher(write, senders=3)
    keys = [f"k{i}" for i in range(1000)]
    for key in keys:  # 1000 selectors synced at once after a takeover
        pub.submit(key, SEL, {"key": key})
    await asyncio.sleep(0)
    assert len(pub._tasks) == 3  # not one task per selector
    gate.set()
    await asyncio.wait_for(pub.flush(), timeout=10)
    assert peak == 3
    assert order == keys  # started in submission order


async def test_a_status_submitted_as_every_sender_finishes_is_still_written() -> None:
    """A sender that left its loop stays in the pool until its done-callback runs, a loop
    iteration later: a submit in between must not count it and start no sender."""
    release = asyncio.Event()
    late_written = asyncio.Event()
    written: list[str] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        if patch["key"] != "late":
            await release.wait()
        written.append(patch["key"])
        if patch["key"] == "late":
            late_written.set()

    pub = StatusPublisher(write)
    for i in range(SENDERS):
        pub.submit(f"k{i}", SEL, {"key": f"k{i}"})
    await asyncio.sleep(0)
    assert len(pub._tasks) == SENDERS
    release.set()  # every sender's write returns in the next loop iteration, and finishes ...
    asyncio.get_running_loop().call_soon(pub.submit, "late", SEL, {"key": "late"})  # ... then
    # Not flush(): it kicks the senders itself, which would hide a submission nobody sends.
    await asyncio.wait_for(late_written.wait(), timeout=5)
    assert written == [*(f"k{i}" for i in range(SENDERS)), "late"]
