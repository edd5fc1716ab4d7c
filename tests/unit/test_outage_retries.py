"""Issue 8 (restart scenario): keys that failed while the API server was away are retried as
soon as it answers again, not after the backoff the outage grew; a key failing for its own
reasons keeps backing off."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import pytest

from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.controller.outage import EXPEDITE_GUARD, OutageRetries
from slicectl.controller.publish import StatusPublisher
from slicectl.controller.sync import SyncFailed
from slicectl.kube.answers import Answers, server_side
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import Invalid, ServerError, TooManyRequests
from tests.unit.test_status_retry import SEL

KEY = "slicectl.io/ns/web"


def _failure(cause: BaseException) -> SyncFailed:
    try:
        raise SyncFailed(f"failed to write EndpointSlices: {cause}", progress=False) from cause
    except SyncFailed as exc:
        return exc


@pytest.mark.parametrize(("cause", "expected"), [
    (aiohttp.ClientConnectionError("Server disconnected"), True),
    (TimeoutError(), True),
    (ConnectionRefusedError(111, "Connect call failed"), True),
    (ServerError(503, "ServiceUnavailable", "starting"), True),
    (Invalid(422, "Invalid", "bad slice"), False),
    (TooManyRequests(429, "TooManyRequests", "slow down"), False),
    (ValueError("not JSON"), False),
])
def test_only_the_servers_failures_count(cause: BaseException, expected: bool) -> None:
    assert server_side(_failure(cause)) is expected
    assert server_side(cause) is expected


@dataclass
class _Client:
    answers: Answers = field(default_factory=Answers)
    qps: float = 20.0


class _Syncer:
    def __init__(self, cause: BaseException) -> None:
        self.cause = cause

    async def sync(self, key: str, trigger: float | None, writes: Any = None) -> Any:
        raise _failure(self.cause)


async def _failing_controller(cause: BaseException, failures: int) -> tuple[Controller, _Client]:
    client = _Client()
    controller = Controller(cast(KubeClient, client), ControllerConfig())
    controller.syncer = _Syncer(cause)  # type: ignore[assignment]
    controller.queue._failures[KEY] = failures - 1  # as after that many failed syncs
    await controller._process(KEY, None)
    return controller, client


def _wait(controller: Controller) -> float:
    """Seconds until the key is due in the queue."""
    return controller.queue._ready_at[KEY] - asyncio.get_running_loop().time()


async def test_a_key_that_failed_during_an_outage_is_retried_when_the_server_answers() -> None:
    controller, client = await _failing_controller(
        aiohttp.ClientConnectionError("Server disconnected"), 8)
    assert _wait(controller) > 60, "eight failures grew the backoff past a minute"
    controller.retry_after_outage()
    assert _wait(controller) > 60, "the server has not answered since: keep waiting"
    for _ in range(500):  # the outage's other failed syncs left the retry bucket in debt
        controller.queue._bucket.reserve()
    client.answers.note(200)
    controller.retry_after_outage()
    assert _wait(controller) < 2
    assert controller.queue.failures(KEY) == 8, "its failure count is kept"
    key, _, _ = await asyncio.wait_for(controller.queue.get(), timeout=5)
    assert key == KEY


async def test_a_429_is_not_the_server_back() -> None:
    """A 429 is the server asking its clients to slow down (API Priority and Fairness): it
    must not end the outage backoffs that wait for the server to answer."""
    controller, client = await _failing_controller(
        aiohttp.ClientConnectionError("Server disconnected"), 8)
    client.answers.note(429)
    controller.retry_after_outage()
    assert _wait(controller) > 60, "a throttled request elsewhere cut the backoff short"
    client.answers.note(404)  # any other answer is the server there and working
    controller.retry_after_outage()
    assert _wait(controller) < 2


async def test_a_key_the_server_rejects_keeps_its_backoff() -> None:
    controller, client = await _failing_controller(Invalid(422, "Invalid", "bad slice"), 8)
    client.answers.note(200)
    controller.retry_after_outage()
    assert _wait(controller) > 60


async def test_a_key_whose_own_requests_fail_with_5xx_is_retried_early_once_per_guard() -> None:
    controller, client = await _failing_controller(ServerError(500, "InternalError", "webhook"), 8)
    client.answers.note(200)
    controller.retry_after_outage()
    assert _wait(controller) < 2
    key, _, _ = await controller.queue.get()
    await controller._process(key, None)  # fails again while the server answers everyone else
    controller.queue.done(key)
    client.answers.note(200)
    controller.retry_after_outage()
    assert _wait(controller) > 60, "within the guard, the grown backoff holds"


def test_the_guard_lets_a_key_go_early_again_after_it() -> None:
    retries = OutageRetries()
    outage = aiohttp.ClientConnectionError("refused")
    retries.failed("k", outage, now=10.0)
    assert retries.due(answered_at=11.0, now=11.0) == ["k"]
    retries.failed("k", outage, now=12.0)
    assert retries.due(answered_at=13.0, now=13.0) == []
    assert retries.due(answered_at=13.0, now=11.0 + EXPEDITE_GUARD) == ["k"]
    retries.failed("k", outage, now=50.0)
    retries.succeeded("k")
    assert retries.due(answered_at=99.0, now=99.0) == [], "a success clears it"


async def test_a_status_write_that_failed_during_an_outage_goes_when_the_server_answers() -> None:
    attempts: list[float] = []

    async def write(_sel: Any, _patch: dict[str, Any]) -> None:
        attempts.append(time.monotonic())
        if len(attempts) <= 6:
            raise aiohttp.ClientConnectionError("Server disconnected")

    pub = StatusPublisher(write)
    pub._failures["k"] = 6  # as after six failures: the next retry waits a minute
    pub.submit("k", SEL, {"status": {}})
    await asyncio.sleep(0.05)
    assert len(attempts) == 1 and pub.pending("k")
    pub.retry_after_outage(answered_at=time.monotonic(), now=time.monotonic())
    await asyncio.sleep(0.05)
    assert len(attempts) == 2, "retried at once, not after its minute of backoff"
