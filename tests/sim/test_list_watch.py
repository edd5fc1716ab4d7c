"""LIST and WATCH semantics: selectors, paging, resourceVersion rules, bookmarks, 410."""

from __future__ import annotations

import asyncio
import base64

import orjson
import pytest

from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, until


async def _pods(raw: Raw, n: int, **labels: str) -> None:
    for i in range(n):
        await raw.request("POST", PODS, pod(f"p{i:02d}", {"i": str(i % 2), **labels}))


async def test_label_and_field_selectors(raw: Raw) -> None:
    await _pods(raw, 6)
    await raw.request("POST", PODS, pod("onnode", {"i": "1"}, node="n1"))
    _, body, _ = await raw.request("GET", PODS, labelSelector="i=1")
    assert len(body["items"]) == 4
    _, body, _ = await raw.request("GET", PODS, labelSelector="i in (0),i!=1")
    assert {p["metadata"]["name"] for p in body["items"]} == {"p00", "p02", "p04"}
    _, body, _ = await raw.request("GET", "/api/v1/pods", fieldSelector="spec.nodeName=n1")
    assert [p["metadata"]["name"] for p in body["items"]] == ["onnode"]
    selector = "metadata.name!=p00,status.phase==Pending"
    _, body, _ = await raw.request("GET", PODS, fieldSelector=selector)
    assert len(body["items"]) == 6
    code, body, _ = await raw.request("GET", PODS, fieldSelector="spec.bogus=1")
    assert code == 400 and body["reason"] == "BadRequest"
    code, _, _ = await raw.request("GET", PODS, labelSelector="a in (")
    assert code == 400


async def test_pagination_is_consistent(raw: Raw) -> None:
    await _pods(raw, 5)
    _, first, _ = await raw.request("GET", PODS, limit=2)
    assert len(first["items"]) == 2 and first["metadata"]["remainingItemCount"] == 3
    token, rv = first["metadata"]["continue"], first["metadata"]["resourceVersion"]
    await raw.request("DELETE", PODS + "/p03")
    names = [p["metadata"]["name"] for p in first["items"]]
    while token:
        _, page, _ = await raw.request("GET", PODS, limit=2, **{"continue": token})
        assert page["metadata"]["resourceVersion"] == rv
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["p00", "p01", "p02", "p03", "p04"]


async def test_continue_expires_after_compaction(srv: EmbeddedApiServer, raw: Raw) -> None:
    await _pods(raw, 3)
    _, first, _ = await raw.request("GET", PODS, limit=1)
    await raw.request("DELETE", PODS + "/p02")
    srv.faults.compact()
    code, body, _ = await raw.request("GET", PODS, limit=1,
                                      **{"continue": first["metadata"]["continue"]})
    assert code == 410 and body["reason"] == "Expired"
    assert body["metadata"]["continue"]


async def test_exact_list_rebuilds_old_state(raw: Raw) -> None:
    await _pods(raw, 2)
    _, listed, _ = await raw.request("GET", PODS)
    rv = listed["metadata"]["resourceVersion"]
    await raw.request("DELETE", PODS + "/p00")
    await raw.request("POST", PODS, pod("new"))
    _, old, _ = await raw.request("GET", PODS, resourceVersion=rv, resourceVersionMatch="Exact")
    assert [p["metadata"]["name"] for p in old["items"]] == ["p00", "p01"]
    assert old["metadata"]["resourceVersion"] == rv
    code, _, _ = await raw.request("GET", PODS, resourceVersionMatch="Exact")
    assert code == 422  # as v1.32: ListOptions invalid


async def test_watch_initial_state_then_changes(raw: Raw) -> None:
    await _pods(raw, 2)
    task = asyncio.create_task(raw.watch_lines(PODS, 5))
    await asyncio.sleep(0.3)
    await raw.request("POST", PODS, pod("late"))
    await raw.request("DELETE", PODS + "/p00")
    events = await task
    # a pod is deleted gracefully even when never scheduled (grace 0): first written with its
    # deletionTimestamp (MODIFIED), then removed (DELETED), as the real registry does
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "p00"), ("ADDED", "p01"), ("ADDED", "late"), ("MODIFIED", "p00"),
        ("DELETED", "p00")]
    assert events[3]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0


async def test_watch_resumes_after_resource_version(raw: Raw) -> None:
    _, a, _ = await raw.request("POST", PODS, pod("a"))
    await raw.request("POST", PODS, pod("b"))
    await raw.request("PATCH", PODS + "/a", {"metadata": {"labels": {"x": "y"}}},
                      content_type="application/merge-patch+json")
    events = await raw.watch_lines(PODS, 2, resourceVersion=a["metadata"]["resourceVersion"])
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "a")]


async def test_watch_label_transitions(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("a", {"app": "x"}))
    rv = created["metadata"]["resourceVersion"]
    merge = "application/merge-patch+json"
    await raw.request("PATCH", PODS + "/a", {"metadata": {"labels": {"app": "y"}}},
                      content_type=merge)
    await raw.request("PATCH", PODS + "/a", {"metadata": {"labels": {"app": "x"}}},
                      content_type=merge)
    events = await raw.watch_lines(PODS, 2, resourceVersion=rv, labelSelector="app=x")
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


async def test_watch_too_old_gets_410_error_event() -> None:
    async with EmbeddedApiServer(watch_cache_size=3) as srv:
        import aiohttp

        from tests.sim.conftest import ssl_context
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
            connector=connector, headers={"Authorization": f"Bearer {srv.token}"}
        ) as session:
            raw = Raw(srv, session)
            await _pods(raw, 6)
            events = await raw.watch_lines(PODS, 5, resourceVersion="2")
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 2 (")


async def test_bookmarks_and_timeout(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("a"))
    rv = created["metadata"]["resourceVersion"]
    _, newer, _ = await raw.request("POST", PODS, pod("b"))
    # bookmarks come every interval (0.2 s here) but never later than 2 s before the deadline,
    # as the cacher's nextBookmarkTime schedules them: a 3 s watch gets ~5 before it ends
    # (only because the pods moved on after rv: test_watch_cache.py)
    events = await raw.watch_lines(PODS, 100, resourceVersion=rv, allowWatchBookmarks=True,
                                   timeoutSeconds=3, limit_s=20)
    assert len(events) > 1, "expected bookmarks before the timeout ended the stream"
    assert events[0]["type"] == "ADDED" and {e["type"] for e in events[1:]} == {"BOOKMARK"}
    assert events[1]["object"]["kind"] == "Pod"
    assert events[-1]["object"]["metadata"]["resourceVersion"] == newer["metadata"][
        "resourceVersion"]


async def test_send_initial_events_end_bookmark(raw: Raw) -> None:
    await _pods(raw, 2)
    events = await raw.watch_lines(PODS, 3, sendInitialEvents=True, allowWatchBookmarks=True,
                                   resourceVersionMatch="NotOlderThan")
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    annotations = events[2]["object"]["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    blueprint = base64.b64decode(annotations["kubernetes.io/initial-events-list-blueprint"])
    assert orjson.loads(blueprint) == {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                                       "items": None}


async def test_a_write_is_answered_after_its_watch_event(srv: EmbeddedApiServer,
                                                         raw: Raw) -> None:
    """As on a real server, where a write's watch event often reaches a client before the
    write's answer, never the kinder order: a client must not take its own echo for someone
    else's write for want of the answer."""
    _, a, _ = await raw.request("POST", PODS, pod("a"))
    order: list[str] = []

    async def watch() -> None:
        query = {"watch": "true", "resourceVersion": a["metadata"]["resourceVersion"]}
        async with raw.session.get(srv.url + PODS, params=query) as resp:
            async for line in resp.content:
                if line.strip() and orjson.loads(line)["type"] == "MODIFIED":
                    order.append("echo")
                    return

    task = asyncio.create_task(watch())
    await until(lambda: any(bucket.watchers for bucket in srv.store.buckets.values()))
    status, _, _ = await raw.request("PATCH", PODS + "/a", {"metadata": {"labels": {"x": "y"}}},
                                     content_type="application/merge-patch+json")
    order.append("answer")
    await asyncio.wait_for(task, 5.0)
    assert status == 200
    assert order == ["echo", "answer"]


async def test_a_watch_ends_when_its_client_goes_away(srv: EmbeddedApiServer, raw: Raw) -> None:
    """A real API server (Go net/http) cancels a request's context as soon as its connection
    closes, so a watch whose client went away ends at once, not at its next write (a bookmark,
    up to a minute later, or an event): nothing is written here, and its watcher must go."""
    query = {"watch": "true", "resourceVersion": "0"}
    async with raw.session.get(srv.url + PODS, params=query) as resp:
        assert resp.status == 200
        await until(lambda: srv.faults.open_watches("pods") == 1)
        resp.close()  # the connection is closed, not returned to the pool
    await until(lambda: srv.faults.open_watches("pods") == 0)


@pytest.mark.parametrize(("query", "value"), [
    ({"timeoutSeconds": "1.5"}, "1.5"),
    ({"watch": "true", "timeoutSeconds": "1.5"}, "1.5"),
    ({"watch": "true", "timeoutSeconds": "abc"}, "abc"),
    ({"timeoutSeconds": ""}, ""),
    ({"limit": "abc"}, "abc"),
    ({"limit": " 5"}, " 5"),
    ({"timeoutSeconds": "x", "limit": "y", "resourceVersionMatch": "Bogus"}, "x"),
])
async def test_integer_options_are_parsed_as_the_real_server_does(
        raw: Raw, query: dict[str, str], value: str) -> None:
    """As a real v1.32.6 answered: the parameter codec decodes ``timeoutSeconds`` and ``limit``
    with strconv.ParseInt before anything else (timeoutSeconds first, a 400 before any 422),
    for a list and a watch alike; a watch does not take a fraction of a second."""
    code, body, _ = await raw.request("GET", PODS, **query)
    assert (code, body["reason"], body["message"]) == (
        400, "BadRequest", f'strconv.ParseInt: parsing "{value}": invalid syntax')


async def test_an_out_of_range_timeout_is_refused(raw: Raw) -> None:
    code, body, _ = await raw.request("GET", PODS, timeoutSeconds="99999999999999999999")
    assert (code, body["message"]) == (
        400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range')


async def test_a_zero_watch_timeout_is_the_server_default(srv: EmbeddedApiServer,
                                                          raw: Raw) -> None:
    """``timeoutSeconds=0`` is no timeout of the client's: the server's own (1800 to 3600 s)
    applies, so the stream is still open for the next event."""
    task = asyncio.create_task(raw.watch_lines(PODS, 1, limit_s=20, resourceVersion="0",
                                               timeoutSeconds=0))
    await until(lambda: srv.faults.open_watches("pods") == 1 or task.done())
    await raw.request("POST", PODS, pod("after"))
    events = await asyncio.wait_for(task, 20)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after")]


async def test_an_error_that_says_when_to_come_back_carries_retry_after(raw: Raw) -> None:
    """A real server (``responsewriters.ErrorNegotiated``) puts a Status's
    ``details.retryAfterSeconds`` in a ``Retry-After`` header, which is what clients obey:
    a v1.32.6 answered a LIST from a future resourceVersion with a 504 and ``Retry-After: 1``."""
    code, body, headers = await raw.request(
        "GET", PODS, resourceVersion="999999999", resourceVersionMatch="NotOlderThan")
    assert (code, body["details"]["retryAfterSeconds"]) == (504, 1)
    assert headers.get("Retry-After") == "1"
