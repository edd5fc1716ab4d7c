"""The selector API's look-up (:func:`wait_served`) after a failure: it is retried once the
API server answers again, not only when its backoff runs out, but a look-up that fails while
the server answers everyone else is not retried in a loop."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from slicectl.controller import caches
from slicectl.kube.answers import EARLY_RESUME_GUARD, Answers
from slicectl.kube.errors import ServerError
from slicectl.model.records import SelectorRef

API = SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector", "endpointselectors")
SERVED = {"kind": "APIResourceList", "resources": [
    {"name": "endpointselectors"}, {"name": "endpointselectors/status"}]}
HOUR = 3600.0
HANG_GUARD = 30.0


class DiscoveryClient:
    """Answers each discovery GET with the next of ``answers`` (raised if an exception);
    the last one for good."""

    def __init__(self, *answers: Any) -> None:
        self._answers = list(answers)
        self.answers = Answers()
        self.looked_up = 0
        self.asked = asyncio.Event()

    async def request(self, method: str, path: str, **kw: Any) -> Any:
        self.looked_up += 1
        self.asked.set()
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture(autouse=True)
def _hour_long_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(caches, "LOOKUP_BACKOFF", HOUR)


async def test_a_failed_look_up_is_retried_once_the_server_answers_again() -> None:
    """Readiness waits for the look-up: after an outage at start the caches listed at the
    server's first answer, but the look-up slept out its backoff (up to the retry period,
    10 s) before it looked again, and readiness lagged that much behind them."""
    client = DiscoveryClient(aiohttp.ClientConnectionError("Connect call failed"), SERVED)

    async def server_back() -> None:
        await client.asked.wait()
        client.answers.note(200)  # e.g. the pods informer's list

    back = asyncio.create_task(server_back())
    async with asyncio.timeout(HANG_GUARD):
        has_status = await caches.wait_served(client, API, HOUR, lambda: None)  # type: ignore[arg-type]
    await back
    assert has_status
    assert client.looked_up == 2


async def test_a_look_up_failing_alone_is_not_retried_at_every_answer() -> None:
    """A 503 that only discovery gives (an aggregated API's proxy, say), while the server
    answers everyone else all along: one early retry per guard, then the backoff."""
    client = DiscoveryClient(ServerError(503, "ServiceUnavailable", "discovery is down"))

    async def others_answered() -> None:
        while True:
            client.answers.note(200)
            await asyncio.sleep(0.05)

    others = asyncio.create_task(others_answered())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(EARLY_RESUME_GUARD / 2):
            await caches.wait_served(client, API, HOUR, lambda: None)  # type: ignore[arg-type]
    others.cancel()
    assert client.looked_up == 2, "one early retry, then the hour's backoff"
