"""Informer bookkeeping with a scripted client: relist differences, malformed objects kept out
of the diff, bookmarks, and handler failures that must not stop the informer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from slicectl.cache import informer as informer_module
from slicectl.cache.handlers import FanOut
from slicectl.cache.informer import Informer
from slicectl.kube.answers import EARLY_RESUME_GUARD, Answers
from slicectl.kube.client import MAX_RETRY_AFTER
from slicectl.kube.errors import (
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from slicectl.kube.paging import ListPage
from slicectl.kube.resources import PODS
from slicectl.kube.watch import WatchEvent
from slicectl.model.parse import parse_pod
from slicectl.model.records import PodRecord

HANG_GUARD = 10.0


def raw(name: str, rv: str, uid: bool = True) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if uid:
        meta["uid"] = f"uid-{name}"
    return {"metadata": meta}


class ScriptedClient:
    """``list_pages`` answers from ``lists``; each ``watch`` plays the next script, then blocks.
    A script's exceptions are raised, its floats slept (seconds), its events yielded.

    With ``streaming``, a watch asking for initial events plays the next of ``lists`` as ADDED
    events and the end bookmark, then the next script on the same stream (a server that
    streams lists); without, such a watch is refused with 422 as an old server does.
    """

    def __init__(self, lists: list[tuple[list[Any], str]], watches: list[list[Any]],
                 streaming: bool = False) -> None:
        self.lists = lists
        self.watches = watches
        self.streaming = streaming
        self.answers = Answers()
        self.watch_versions: list[str] = []  # "stream" for a streamed list
        self.list_calls = 0
        self.idle = asyncio.Event()

    async def list_pages(self, *args: Any, **kwargs: Any) -> AsyncIterator[ListPage]:
        self.list_calls += 1
        items, rv = self.lists.pop(0)
        yield ListPage(items, rv, False, True)

    async def watch(self, *args: Any, resource_version: str, send_initial_events: bool = False,
                    **kw: Any) -> AsyncIterator[Any]:
        if send_initial_events:
            if not self.streaming:
                raise Invalid(422, "Invalid", "resourceVersionMatch is forbidden for watch")
            self.watch_versions.append("stream")
            items, rv = self.lists.pop(0)
            for item in items:
                yield WatchEvent("ADDED", item)
            yield WatchEvent("BOOKMARK", {"metadata": {
                "resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}})
        else:
            self.watch_versions.append(resource_version)
        if not self.watches:
            self.idle.set()
            await asyncio.Event().wait()
        for step in self.watches.pop(0):
            if isinstance(step, Exception):
                raise step
            if isinstance(step, float):
                await asyncio.sleep(step)
                continue
            yield step


@pytest.fixture(params=[True, False], ids=["streamed", "paginated"])
def streaming(request: pytest.FixtureRequest) -> bool:
    flag: bool = request.param
    return flag


class Recorder:
    def __init__(self, fail_on: str | None = None) -> None:
        self.events: list[tuple[str, str]] = []
        self.fail_on = fail_on

    def on_add(self, new: PodRecord) -> None:
        self.events.append(("add", new.name))
        if new.name == self.fail_on:
            raise RuntimeError("handler bug")

    def on_update(self, old: PodRecord, new: PodRecord) -> None:
        self.events.append(("update", new.name))

    def on_delete(self, old: PodRecord) -> None:
        self.events.append(("delete", old.name))


async def run_until_idle(client: ScriptedClient, recorder: Recorder | FanOut[PodRecord], *,
                         within: float = HANG_GUARD, **options: Any) -> Informer[PodRecord]:
    """Run until every script played (a TimeoutError after ``within`` seconds otherwise)."""
    options = {"backoff_initial": 0.01, "backoff_max": 0.02, **options}
    inf: Informer[PodRecord] = Informer(
        client, PODS, parse_pod, key=lambda p: p.key, handler=recorder,  # type: ignore[arg-type]
        **options,
    )
    task = asyncio.create_task(inf.run())
    try:
        async with asyncio.timeout(within):
            await client.idle.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return inf


async def test_gone_relists_and_emits_only_differences(streaming: bool) -> None:
    first = [raw("a", "1"), raw("b", "1"), raw("c", "1"), raw("d", "1")]
    second = [raw("a", "1"), raw("b", "5"), raw("c", "6", uid=False), raw("e", "7")]
    client = ScriptedClient([(first, "4"), (second, "9")], [[Gone(410, "Expired")]], streaming)
    recorder = Recorder()
    inf = await run_until_idle(client, recorder)
    initial = [("add", n) for n in "abcd"]
    assert recorder.events[:4] == initial
    # a unchanged; b updated; c unparsable now, so kept as it was; d gone; e new.
    assert sorted(recorder.events[4:]) == [("add", "e"), ("delete", "d"), ("update", "b")]
    assert sorted(inf.store.keys()) == ["ns/a", "ns/b", "ns/c", "ns/e"]
    # the expired "4" is never reused
    assert client.watch_versions == (["stream"] * 2 if streaming else ["4", "9"])
    assert (inf.stats.lists, inf.stats.relists, inf.stats.parse_errors) == (2, 1, 1)
    assert inf.stats.streamed_lists == (2 if streaming else 0)
    assert client.list_calls == (0 if streaming else 2)


async def test_watch_events_bookmarks_and_malformed_objects(streaming: bool) -> None:
    events = [
        WatchEvent("ADDED", raw("a", "2")),
        WatchEvent("MODIFIED", raw("bad", "3", uid=False)),
        WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "8"}}),
        WatchEvent("DELETED", raw("zzz", "9")),  # unknown key: nothing to delete
        WatchEvent("MODIFIED", raw("a", "10")),
    ]
    # After the stream ends normally, the next watch resumes from the last version seen.
    client = ScriptedClient([([], "1")], [events], streaming)
    recorder = Recorder()
    inf = await run_until_idle(client, recorder)
    assert recorder.events == [("add", "a"), ("update", "a")]
    assert client.watch_versions == ["stream" if streaming else "1", "10"]
    bookmarks = 2 if streaming else 1  # the streamed list's end is a bookmark too
    assert inf.stats.events == {"ADDED": 1, "MODIFIED": 2, "BOOKMARK": bookmarks, "DELETED": 1}
    assert inf.stats.parse_errors == 1 and inf.stats.lists == 1


async def test_error_event_relists_and_handler_failure_is_contained(streaming: bool) -> None:
    client = ScriptedClient(
        [([raw("a", "1")], "1"), ([raw("a", "1"), raw("b", "2")], "2")],
        [[ServerError(500, "InternalError", "boom")]], streaming,
    )
    recorder = Recorder(fail_on="a")
    inf = await run_until_idle(client, recorder)
    assert recorder.events == [("add", "a"), ("add", "b")]
    assert inf.synced.is_set()
    assert client.watch_versions == (["stream"] * 2 if streaming else ["1", "2"])


@pytest.mark.parametrize("item", [None, "text", 42])
async def test_non_object_list_items_are_skipped(item: Any, streaming: bool) -> None:
    client = ScriptedClient([([item, raw("a", "1")], "1")], [], streaming)
    inf = await run_until_idle(client, Recorder())
    assert list(inf.store.keys()) == ["ns/a"]
    assert inf.stats.parse_errors == 1


async def test_fan_out_isolates_handlers() -> None:
    failing, healthy = Recorder(fail_on="a"), Recorder()
    client = ScriptedClient([([raw("a", "1"), raw("b", "1")], "1")], [])
    await run_until_idle(client, FanOut(failing, healthy))
    assert healthy.events == [("add", "a"), ("add", "b")]
    assert failing.events == [("add", "a"), ("add", "b")]


async def test_refused_stream_falls_back_to_paginated_lists_for_good() -> None:
    client = ScriptedClient([([raw("a", "1")], "1"), ([raw("b", "2")], "2")],
                            [[Gone(410, "Expired")]], streaming=False)
    recorder = Recorder()
    inf = await run_until_idle(client, recorder)
    assert client.list_calls == 2 and inf.stats.streamed_lists == 0  # one refusal was enough
    assert recorder.events == [("add", "a"), ("add", "b"), ("delete", "a")]


class CutStreams(ScriptedClient):
    """Its first ``cuts`` streamed lists end before their end bookmark: after one event, by
    ``ending`` (an exception raised) or, when it is None, cleanly."""

    def __init__(self, *args: Any, cuts: int, ending: Exception | None = None,
                 **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.cuts, self.ending = cuts, ending

    async def watch(self, *args: Any, resource_version: str,
                    send_initial_events: bool = False, **kw: Any) -> AsyncIterator[Any]:
        if send_initial_events and self.watch_versions.count("stream") < self.cuts:
            self.watch_versions.append("stream")
            yield WatchEvent("ADDED", raw("a", "1"))
            if self.ending is not None:
                raise self.ending
            return
        async for event in super().watch(*args, resource_version=resource_version,
                                         send_initial_events=send_initial_events, **kw):
            yield event


async def test_a_stream_cut_short_is_streamed_again_after_a_backoff() -> None:
    client = CutStreams([([raw("a", "1"), raw("b", "2")], "2")], [], streaming=True, cuts=1)
    inf = await run_until_idle(client, Recorder())
    assert client.watch_versions == ["stream"] * 2 and client.list_calls == 0
    assert inf.stats.streamed_lists == 1 and sorted(inf.store.keys()) == ["ns/a", "ns/b"]
    assert inf.stats.failures == 1, "the list's events are no progress: a cut backs off"


@pytest.mark.parametrize("ending", [None, ConnectionResetError("cut")], ids=["clean", "error"])
async def test_streams_cut_short_twice_in_a_row_get_paginated_lists(
        ending: Exception | None) -> None:
    """A proxy that cuts every response before a list ends (a maximum duration or size): the
    informer must sync all the same, by paginated LISTs, as client-go falls back to a LIST."""
    client = CutStreams([([raw("a", "1"), raw("b", "2")], "2")], [], streaming=True,
                        cuts=1_000, ending=ending)
    inf = await run_until_idle(client, Recorder())
    assert client.watch_versions == ["stream", "stream", "2"] and client.list_calls == 1
    assert inf.synced.is_set() and sorted(inf.store.keys()) == ["ns/a", "ns/b"]
    assert inf.stats.failures == 2, "each cut stream backed off"


class AnsweredWithErrors(ScriptedClient):
    """Its first ``refusals`` streamed lists are answered with ``error`` (an HTTP status, no
    event streamed), as a real API server answers while it starts (503, 429) or while the
    resource is not served (404)."""

    def __init__(self, *args: Any, refusals: int, error: Exception, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.refusals, self.error = refusals, error

    async def watch(self, *args: Any, resource_version: str,
                    send_initial_events: bool = False, **kw: Any) -> AsyncIterator[Any]:
        if send_initial_events and self.refusals:
            self.refusals -= 1
            self.watch_versions.append("refused")
            raise self.error
        async for event in super().watch(*args, resource_version=resource_version,
                                         send_initial_events=send_initial_events, **kw):
            yield event


@pytest.mark.parametrize("error", [
    ServerError(503, "ServiceUnavailable", "the request has been made before all known HTTP "
                "paths have been installed"),
    TooManyRequests(429, "TooManyRequests", "storage is (re)initializing", retry_after=0.01),
    NotFound(404, "NotFound", "the server could not find the requested resource"),
    ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6443)"),
    aiohttp.ClientConnectionError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
], ids=["503", "429", "404", "refused", "tls"])
async def test_streamed_lists_answered_with_errors_are_not_cut_streams(
        error: Exception) -> None:
    """An API server answering errors for a few seconds (a restart, a CRD being replaced), or
    not reached at all (down, or a wrong CA until the kubeconfig is fixed), cut no stream: once
    it answers again, lists are still streamed, not paginated for good."""
    client = AnsweredWithErrors([([raw("a", "1")], "1")], [], streaming=True, refusals=3,
                                error=error)
    inf = await run_until_idle(client, Recorder())
    assert client.watch_versions == ["refused"] * 3 + ["stream"] and client.list_calls == 0
    assert inf.stats.streamed_lists == 1 and inf.synced.is_set()


async def test_a_server_ignoring_initial_events_gets_paginated_lists() -> None:
    class Ignoring(ScriptedClient):
        async def watch(self, *args: Any, resource_version: str,
                        send_initial_events: bool = False, **kw: Any) -> AsyncIterator[Any]:
            if send_initial_events:  # a plain watch from "": old-style ADDED, then a bookmark
                self.watch_versions.append("stream")
                yield WatchEvent("ADDED", raw("a", "1"))
                yield WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "3"}})
                return
            async for event in super().watch(*args, resource_version=resource_version, **kw):
                yield event

    client = Ignoring([([raw("a", "1")], "4")], [])
    inf = await run_until_idle(client, Recorder())
    assert client.watch_versions == ["stream", "4"] and client.list_calls == 1
    assert inf.stats.streamed_lists == 0 and inf.synced.is_set()


async def test_delete_during_a_streamed_list_is_not_a_resume_point() -> None:
    class DeleteMidList(ScriptedClient):
        async def watch(self, *args: Any, resource_version: str,
                        send_initial_events: bool = False, **kw: Any) -> AsyncIterator[Any]:
            if send_initial_events and len(self.watch_versions) == 0:
                self.watch_versions.append("stream")
                yield WatchEvent("ADDED", raw("a", "5"))
                yield WatchEvent("DELETED", raw("a", "6"))
                raise ConnectionResetError("cut before the end bookmark")
            async for event in super().watch(*args, resource_version=resource_version,
                                             send_initial_events=send_initial_events, **kw):
                yield event

    client = DeleteMidList([([raw("b", "7")], "7")], [], streaming=True)
    recorder = Recorder()
    inf = await run_until_idle(client, recorder)
    # the cut stream is listed again in full, never resumed from the DELETED event's "6"
    assert client.watch_versions == ["stream", "stream"]
    assert sorted(inf.store.keys()) == ["ns/b"] and inf.resource_version == "7"
    assert recorder.events == [("add", "a"), ("delete", "a"), ("add", "b")]


async def test_streams_timing_out_twice_before_their_end_get_paginated_lists() -> None:
    class Endless(ScriptedClient):
        async def watch(self, *args: Any, resource_version: str,
                        send_initial_events: bool = False, **kw: Any) -> AsyncIterator[Any]:
            if send_initial_events:  # events, never the end, until the server's timeout
                self.watch_versions.append("stream")
                yield WatchEvent("ADDED", raw("a", "1"))
                await asyncio.sleep(1.0)
                return
            async for event in super().watch(*args, resource_version=resource_version, **kw):
                yield event

    client = Endless([([raw("a", "1")], "4")], [])  # (never popped by a stream)
    await run_until_idle(client, Recorder(), watch_timeout=1)
    # one timeout may be a list too big for it; the second in a row means "ignored"
    assert client.watch_versions == ["stream", "stream", "4"] and client.list_calls == 1


@pytest.mark.parametrize("progress", [WatchEvent("ADDED", raw("a", "2")), 0.1],
                         ids=["delivered", "stayed_open"])
async def test_watches_that_worked_before_an_error_start_no_failure_streak(
        progress: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy cutting every long watch with a reset: each watch delivered (or stayed open a
    while) first, so each reconnect pauses as after a first failure, never up to the cap."""
    monkeypatch.setattr(informer_module, "HEALTHY_WATCH", 0.05)
    cut = aiohttp.ClientPayloadError("Response payload is not completed")
    client = ScriptedClient([([], "1")], [[progress, cut]] * 4, streaming=False)
    inf = await run_until_idle(client, Recorder())
    assert inf.stats.failures == 4
    assert inf.stats.consecutive_failures == 1


@pytest.mark.parametrize("error", [
    TooManyRequests(429, "TooManyRequests", "slow down", retry_after=3600.0),
    ServerError(503, "ServiceUnavailable", "later", retry_after=3600.0),
], ids=["429", "503"])
async def test_a_watch_retry_after_is_capped_as_the_clients(
        error: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy's ``Retry-After: 3600`` on a watch must not park the informer for an hour."""
    pauses: list[float] = []

    async def record(self: Informer[PodRecord], delay: float, *, early: bool) -> None:
        pauses.append(delay)

    monkeypatch.setattr(Informer, "_pause", record)
    client = ScriptedClient([([], "1"), ([], "2")], [[error]], streaming=False)
    await run_until_idle(client, Recorder())
    assert pauses == [MAX_RETRY_AFTER]


async def _resumes_within(client: ScriptedClient, seconds: float) -> Informer[PodRecord]:
    """A minute of backoff per failure; fail unless every script played within ``seconds``."""
    return await run_until_idle(client, Recorder(), within=seconds, backoff_initial=60.0,
                                backoff_max=60.0, stream_lists=False)


async def test_a_backoff_ends_when_the_server_answers_again() -> None:
    """Issue 8 (API server restart): a reconnect backoff grown while the server was away ends
    once any request is answered again, not up to 30 s later."""
    refused = aiohttp.ClientConnectionError("Connect call failed")
    added = [WatchEvent("ADDED", raw("a", "2"))]
    client = ScriptedClient([([], "1")], [[refused], added])

    async def server_back() -> None:
        await asyncio.sleep(0.2)
        client.answers.note(200)  # e.g. another informer's watch opened

    back = asyncio.create_task(server_back())
    inf = await _resumes_within(client, HANG_GUARD)
    await back
    assert list(inf.store.keys()) == ["ns/a"]
    assert inf.stats.failures == 1


async def test_answers_end_a_backoff_early_at_most_once_per_guard() -> None:
    """A watch failing on its own while the server answers everyone else still backs off."""
    refused = aiohttp.ClientConnectionError("Connect call failed")
    client = ScriptedClient([([], "1")], [[refused], [refused], []])

    async def others_answered() -> None:  # the server answers others all along
        while True:
            client.answers.note(200)
            await asyncio.sleep(0.05)

    others = asyncio.create_task(others_answered())
    with pytest.raises(TimeoutError):
        await _resumes_within(client, EARLY_RESUME_GUARD / 2)
    others.cancel()
    assert client.watch_versions == ["1", "1"], "one early resume, then the minute's backoff"


@pytest.mark.parametrize("refusal", [
    Forbidden(403, "Forbidden", 'pods is forbidden: User "system:serviceaccount:a:b" cannot '
              'watch resource "pods" in API group "" in the namespace "web"'),
    Unauthorized(401, "Unauthorized", "Unauthorized"),
], ids=["403", "401"])
async def test_a_refusal_is_not_retried_early_when_others_are_answered(
        refusal: Exception) -> None:
    """A watch the server refused (RBAC missing a verb, a bad token) failed because of what it
    asked, not because the server was away: other requests being answered, as they are all
    along, must not cut its backoff short. Before, each informer's own refusal ended the
    others' backoffs, and informers refused for good retried every few seconds, not 30."""
    client = ScriptedClient([([], "1"), ([], "2")], [[refusal], []])

    async def others_answered() -> None:  # the server answers others all along
        while True:
            client.answers.note(200)
            await asyncio.sleep(0.05)

    others = asyncio.create_task(others_answered())
    with pytest.raises(TimeoutError):
        await _resumes_within(client, 1.0)
    others.cancel()
    assert client.watch_versions == ["1"], "no retry before its own backoff ran out"
