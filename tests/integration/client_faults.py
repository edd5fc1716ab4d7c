"""Faults the embedded server cannot inject, placed at the client's HTTP boundary.

Installed with pytest's ``monkeypatch`` on :class:`KubeClient` (every instance in the test
process): rules see each request's method and path before it is sent and after its answer came
back, so a test can lose a response *after* the server acted, hang only Lease requests, refuse
connections as a dead API server would, or cut one resource's watches into a gap (ending, if
asked, in the 410 a server answers once its history no longer reaches back). Everything
else still goes over real HTTP to the API server under test: as the faults sit in the client,
the tests that use only these run on a real cluster too (no ``embedded_only`` mark).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import Gone
from slicectl.kube.resources import Resource
from slicectl.kube.watch import WatchEvent
from tests.integration.support import wait_until

Rule = Callable[[str, str], Awaitable[None]]  # (method, path): may sleep or raise


class ClientFaults:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.before: list[Rule] = []  # run before the request is handed to the client
        self.after: list[Rule] = []  # run after the server answered (raise: response lost)
        self.down = False  # every request and watch fails with a connection error
        self.watch_gaps: dict[str, asyncio.Event] = {}  # plural -> set when the gap ends
        self.delivered: dict[str, set[str]] = {}  # plural -> names a watch event carried
        self.gone_after_gap: set[str] = set()  # plurals whose next watch is answered 410
        orig_request = KubeClient.request
        orig_watch = KubeClient.watch
        faults = self

        async def request(self: KubeClient, method: str, path: str, **kw: Any) -> Any:
            if faults.down:
                raise aiohttp.ClientConnectionError("injected: connection refused")
            for rule in list(faults.before):
                await rule(method, path)
            result = await orig_request(self, method, path, **kw)
            for rule in list(faults.after):
                await rule(method, path)
            return result

        async def watch(
            self: KubeClient, res: Resource, *args: Any, **kw: Any
        ) -> AsyncGenerator[WatchEvent, None]:
            if faults.down:
                raise aiohttp.ClientConnectionError("injected: connection refused")
            gap = faults.watch_gaps.get(res.plural)
            if gap is not None:
                await gap.wait()  # no watch of this resource until the gap ends
            if res.plural in faults.gone_after_gap:
                faults.gone_after_gap.discard(res.plural)
                raise Gone(410, "Expired", "injected: too old resource version")
            stream = orig_watch(self, res, *args, **kw)
            try:
                async for event in stream:
                    if res.plural in faults.watch_gaps and not faults.watch_gaps[
                        res.plural
                    ].is_set():
                        return  # the gap began: this event is never delivered
                    name = event.object.get("metadata", {}).get("name")
                    if name:
                        faults.delivered.setdefault(res.plural, set()).add(name)
                    yield event
            finally:
                await stream.aclose()

        monkeypatch.setattr(KubeClient, "request", request)
        monkeypatch.setattr(KubeClient, "watch", watch)

    async def wait_delivered(self, plural: str, name: str) -> None:
        """Until a watch event of ``plural`` carrying ``name`` has reached the controller. A
        test that saw the controller's own write in a LIST must wait for this before it opens
        a gap: a gap that swallowed the event would leave the sync waiting for its cache to
        show that write, for as long as the gap lasts."""
        async def seen() -> bool:
            return name in self.delivered.get(plural, set())

        await wait_until(seen, what=f"the watch event of {plural}/{name}")

    def open_gap(self, plural: str) -> None:
        """From now on, watches of ``plural`` end at their next event and do not restart."""
        self.watch_gaps[plural] = asyncio.Event()

    def close_gap(self, plural: str, *, gone: bool = False) -> None:
        """Watches of ``plural`` flow again; with ``gone``, the first one is answered 410, as
        a server answers a resourceVersion older than its history (the informer relists)."""
        if gone:
            self.gone_after_gap.add(plural)
        gap = self.watch_gaps.pop(plural, None)
        if gap is not None:
            gap.set()


def matches(method: str, path: str, want_method: str, fragment: str) -> bool:
    return method == want_method and fragment in path
