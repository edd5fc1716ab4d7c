"""Issue 8, item 11: a failed status write is retried with backoff until it lands or is
superseded by a newer status; a status that can never land (selector gone) is dropped; one the
write gate refuses is held until the gate opens again."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from slicectl.controller.publish import StatusPublisher
from slicectl.election.gate import PolledGate, guard_for
from slicectl.kube.errors import NotFound, ServerError
from slicectl.model.records import SelectorRecord, SelectorRef
from slicectl.model.selector import Selector

SEL = SelectorRecord(api=SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector",
                                     "endpointselectors"),
                     namespace="ns", name="web", uid="u", resource_version="1", generation=1,
                     labels={}, selector=Selector())


async def test_a_failed_status_write_is_retried_until_it_lands() -> None:
    attempts: list[int] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        attempts.append(patch["n"])
        if len(attempts) == 1:
            raise ServerError(500, "InternalError", "etcd leader changed")
        if len(attempts) == 2:
            raise aiohttp.ClientConnectionError("connection reset")

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"n": 1})
    await asyncio.wait_for(pub.flush(), timeout=30)
    assert attempts == [1, 1, 1]
    assert not pub.pending("k")


async def test_a_retried_status_is_superseded_by_a_newer_one() -> None:
    attempts: list[int] = []
    failed = asyncio.Event()

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        attempts.append(patch["n"])
        if patch["n"] == 1:
            failed.set()
            raise ServerError(503, "ServiceUnavailable", "try later")

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"n": 1})
    await asyncio.wait_for(failed.wait(), timeout=5)
    pub.submit("k", SEL, {"n": 2})
    await asyncio.wait_for(pub.flush(), timeout=30)
    assert attempts[-1] == 2
    assert attempts.count(1) == 1, "the old status is not retried once a newer one exists"


async def test_a_status_for_a_deleted_selector_is_not_retried() -> None:
    attempts: list[int] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        attempts.append(patch["n"])
        raise NotFound(404, "NotFound", "gone")

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"n": 1})
    await asyncio.wait_for(pub.flush(), timeout=5)
    assert attempts == [1]


async def test_a_status_refused_by_a_closed_write_gate_is_held_until_it_opens() -> None:
    """The gate closes a little before a possible step-down and may reopen in the same term:
    no new start syncs the selector again, so a refused status must not be dropped."""
    writable = [False]
    gate = PolledGate(lambda: writable[0], poll=0.01)
    guard = guard_for(gate)
    attempts: list[int] = []
    sent: list[int] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        attempts.append(patch["n"])
        guard()  # right before the send, as the client does
        sent.append(patch["n"])

    pub = StatusPublisher(write)
    pub.submit("k", SEL, {"n": 1})
    await asyncio.sleep(0.2)
    assert attempts == [1], "the sender parks on the gate: no retry loop while closed"
    assert pub.pending("k")
    pub.submit("k", SEL, {"n": 2})  # a newer status replaces the held one
    writable[0] = True  # a late renewal lands: same term
    await asyncio.wait_for(pub.flush(), timeout=5)
    assert sent == [2]
    assert not pub.pending("k")
