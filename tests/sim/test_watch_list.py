"""Streaming lists (WatchList) and the ListOptions rules around them, as kube-apiserver v1.32
answers them: every expectation here was first probed on a real v1.32 server.

Clients rely on these answers: a 422 tells an informer to fall back to a paginated LIST, the
``k8s.io/initial-events-end`` bookmark tells it its store is complete, and a ``resourceVersion=0``
LIST arrives whole whatever the ``limit`` (so an informer that wants pages must not ask for it).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from tests.sim.conftest import PODS, Raw, pod


class StreamOptions(TypedDict, total=False):
    """The ListOptions of a streaming list, as query parameters."""

    sendInitialEvents: bool
    resourceVersionMatch: str
    allowWatchBookmarks: bool
    resourceVersion: str


STREAM: StreamOptions = {"sendInitialEvents": True, "resourceVersionMatch": "NotOlderThan",
                         "allowWatchBookmarks": True}


async def _pods(raw: Raw, n: int) -> str:
    for i in range(n):
        _, created, _ = await raw.request("POST", PODS, pod(f"p{i:02d}"))
    rv: str = created["metadata"]["resourceVersion"]
    return rv


async def _watch_status(raw: Raw, **params: Any) -> tuple[int, Any]:
    code, body, _ = await raw.request("GET", PODS, watch=True, timeoutSeconds=1, **params)
    return code, body


@pytest.mark.parametrize("rv", ["", "0", "1", "last"])
async def test_stream_sends_state_then_end_bookmark(raw: Raw, rv: str) -> None:
    last = await _pods(raw, 3)
    query: StreamOptions = {
        **STREAM, **({"resourceVersion": last if rv == "last" else rv} if rv else {})}
    events = await raw.watch_lines(PODS, 4, **query)
    assert [e["type"] for e in events] == ["ADDED"] * 3 + ["BOOKMARK"]
    assert {e["object"]["metadata"]["name"] for e in events[:3]} == {"p00", "p01", "p02"}
    end = events[3]["object"]["metadata"]
    assert end["annotations"]["k8s.io/initial-events-end"] == "true"
    assert int(end["resourceVersion"]) >= int(last)


async def test_stream_continues_as_a_watch(raw: Raw) -> None:
    await _pods(raw, 1)

    async def later() -> None:
        await asyncio.sleep(0.3)
        await raw.request("POST", PODS, pod("late"))

    task = asyncio.create_task(later())
    lines = await raw.watch_lines(PODS, 50, timeoutSeconds=2, **STREAM)
    await task
    seen = [(e["type"], e["object"]["metadata"].get("name")) for e in lines
            if e["type"] != "BOOKMARK" or e["object"]["metadata"].get("annotations")]
    assert seen == [("ADDED", "p00"), ("BOOKMARK", None), ("ADDED", "late")]


async def test_stream_ahead_of_the_server_is_an_error_event(raw: Raw) -> None:
    last = await _pods(raw, 1)
    events = await raw.watch_lines(PODS, 2, resourceVersion=str(int(last) + 1000), **STREAM)
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert status["code"] == 504 and status["reason"] == "Timeout"
    assert status["message"].startswith("Timeout: Too large resource version")


async def test_no_initial_events_when_asked_not_to(raw: Raw) -> None:
    await _pods(raw, 2)
    code, body = await _watch_status(raw, sendInitialEvents=False,
                                     resourceVersionMatch="NotOlderThan")
    assert code == 200 and body == ""  # from now on: nothing happened within the timeout


@pytest.mark.parametrize(("params", "messages"), [
    ({"sendInitialEvents": True}, ["resourceVersionMatch: Forbidden: sendInitialEvents requires "
                                   "setting resourceVersionMatch to NotOlderThan"]),
    ({"sendInitialEvents": False, "resourceVersion": "0"},
     ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
      "resourceVersionMatch to NotOlderThan"]),
    ({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "1"},
     ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
      "sendInitialEvents is provided"]),
    ({"sendInitialEvents": True, "resourceVersionMatch": "Exact", "resourceVersion": "1"},
     ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
      "resourceVersionMatch to NotOlderThan",
      'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"']),
    ({**STREAM, "continue": "abc"}, ["resourceVersionMatch: Forbidden: resourceVersionMatch is "
                                     "forbidden when continue is provided"]),
])
async def test_invalid_watch_options(raw: Raw, params: dict[str, Any],
                                     messages: list[str]) -> None:
    code, body = await _watch_status(raw, **params)
    assert code == 422 and body["reason"] == "Invalid"
    assert body["details"]["kind"] == "ListOptions"
    assert body["details"]["group"] == "meta.k8s.io"
    summary = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    assert body["message"] == f'ListOptions.meta.k8s.io "" is invalid: {summary}'
    assert [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]] == messages


@pytest.mark.parametrize(("params", "message"), [
    ({"sendInitialEvents": False, "limit": 1},
     "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
    ({"resourceVersionMatch": "NotOlderThan", "limit": 1},
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
     "resourceVersion is provided"),
])
async def test_invalid_list_options(raw: Raw, params: dict[str, Any], message: str) -> None:
    code, body, _ = await raw.request("GET", PODS, **params)
    assert code == 422
    assert body["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'


@pytest.mark.parametrize("match", [None, "NotOlderThan"])
async def test_list_at_zero_ignores_limit(raw: Raw, match: str | None) -> None:
    await _pods(raw, 3)
    params: dict[str, Any] = {"limit": 1, "resourceVersion": "0"}
    if match:
        params["resourceVersionMatch"] = match
    _, body, _ = await raw.request("GET", PODS, **params)
    assert len(body["items"]) == 3 and "continue" not in body["metadata"]


async def test_list_not_older_than_a_version_is_paginated(raw: Raw) -> None:
    await _pods(raw, 3)
    _, body, _ = await raw.request("GET", PODS, limit=1, resourceVersion="1",
                                   resourceVersionMatch="NotOlderThan")
    assert len(body["items"]) == 1 and body["metadata"]["continue"]
