"""The watch cache as harsh as the real one: a time-bounded history, bookmarks as the cacher
schedules them, and watchers closed when they do not keep up."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from slicectl.cli.main import build_parser
from slicectl.sim.backpressure import TimeBudget, channel_size
from slicectl.sim.server import EmbeddedApiServer
from tests.sim.conftest import PODS, Raw, pod, ssl_context

WINDOW = 2.0  # seconds of watch history (75 on a real server)


@pytest.fixture
async def short_history() -> AsyncIterator[Raw]:
    async with EmbeddedApiServer(watch_history_seconds=WINDOW, bookmark_interval=0.2) as srv:
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
                connector=connector, headers={"Authorization": f"Bearer {srv.token}"}) as s:
            yield Raw(srv, s)


async def test_resuming_from_before_the_window_is_410(short_history: Raw) -> None:
    raw = short_history
    _, first, _ = await raw.request("POST", PODS, pod("a"))
    rv = first["metadata"]["resourceVersion"]
    await raw.request("POST", PODS, pod("b"))
    events = await raw.watch_lines(PODS, 1, resourceVersion=rv)
    assert events[0]["type"] == "ADDED"  # still in the window
    await asyncio.sleep(WINDOW + 0.5)
    await raw.request("POST", PODS, pod("c"))  # b's event is older than the window now
    events = await raw.watch_lines(PODS, 1, resourceVersion=rv)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    # an Exact list is served by etcd: good until compaction (300 s), not the watch window
    code, body, _ = await raw.request("GET", PODS, resourceVersion=rv,
                                      resourceVersionMatch="Exact")
    assert code == 200 and [p["metadata"]["name"] for p in body["items"]] == ["a"]


async def test_exact_lists_and_continue_tokens_expire_with_compaction() -> None:
    async with EmbeddedApiServer(watch_history_seconds=0.2, compaction_seconds=0.5) as srv:
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
                connector=connector, headers={"Authorization": f"Bearer {srv.token}"}) as s:
            raw = Raw(srv, s)
            for name in ("a", "b", "c"):
                await raw.request("POST", PODS, pod(name))
            _, page, _ = await raw.request("GET", PODS, limit=1)
            await raw.request("POST", PODS, pod("d"))  # after the page's snapshot
            await asyncio.sleep(1.0)
            await raw.request("POST", PODS, pod("e"))  # d has been compacted away
            code, body, _ = await raw.request("GET", PODS, limit=1,
                                              **{"continue": page["metadata"]["continue"]})
    assert code == 410 and body["reason"] == "Expired"


async def test_idle_resource_resumes_from_a_recent_rv(short_history: Raw) -> None:
    raw = short_history
    await raw.request("POST", PODS, pod("a"))
    _, listed, _ = await raw.request("GET", PODS)
    await asyncio.sleep(WINDOW + 0.5)  # every event has left the window, none came after the list
    events = await raw.watch_lines(PODS, 1, resourceVersion=listed["metadata"]["resourceVersion"],
                                   allowWatchBookmarks=True, timeoutSeconds=3)
    assert events == []  # no 410; and no bookmark: nothing newer to tell (below)


async def test_bookmarks_only_carry_the_resources_own_newer_versions(raw: Raw) -> None:
    """The cacher's bookmarks carry the resource's last event's version and go only to watches
    that started before it: on a resource nothing writes, a watch hears nothing at all until
    its deadline, however much else the server writes (kube-apiserver v1.32,
    cache_watcher.go process())."""
    _, created, _ = await raw.request("POST", PODS, pod("a"))
    rv = created["metadata"]["resourceVersion"]
    for name in ("n1", "n2"):  # other resources move on
        code, _, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        assert code == 201
    events = await raw.watch_lines(PODS, 1, resourceVersion=rv, allowWatchBookmarks=True,
                                   timeoutSeconds=3)
    assert events == []
    _, older, _ = await raw.request("POST", PODS, pod("b"))
    events = await raw.watch_lines(PODS, 2, resourceVersion=rv, allowWatchBookmarks=True,
                                   timeoutSeconds=3)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["resourceVersion"] == older["metadata"][
        "resourceVersion"]


async def test_no_bookmark_for_a_watch_shorter_than_the_pre_timeout(raw: Raw) -> None:
    _, created, _ = await raw.request("POST", PODS, pod("a"))
    events = await raw.watch_lines(PODS, 10, resourceVersion=created["metadata"][
        "resourceVersion"], allowWatchBookmarks=True, timeoutSeconds=1)
    assert events == []  # nextBookmarkTime: deadline - 2 s is already past


def test_default_server_is_realistic() -> None:
    srv = EmbeddedApiServer()
    assert srv.store.history_seconds == 75.0 and srv.api.bookmark_interval == 60.0
    assert srv.store.compaction_seconds == 300.0
    assert srv.store.watch_cache_size == 100 * 1024 and srv.store.watcher_buffer is None
    assert srv.kubelet is not None


def test_channel_sizes_follow_the_cacher() -> None:
    assert channel_size(0, indexed=False, triggered=False) == 10
    assert channel_size(50_000, indexed=False, triggered=False) == 100
    assert channel_size(50_000, indexed=True, triggered=False) == 683  # ceil(51200 / 75)
    assert channel_size(50_000, indexed=True, triggered=True) == 10
    budget = TimeBudget()
    assert budget.take() < 0.01  # starts empty
    budget.give_back(1.0)
    assert budget.take() == pytest.approx(0.1)  # at most 100 ms


async def _stuck_watch(srv: EmbeddedApiServer) -> asyncio.StreamWriter:
    """A watch whose client never reads: the server's writes back up."""
    ctx: ssl.SSLContext = ssl_context(srv.kubeconfig_path)
    reader, writer = await asyncio.open_connection(srv.host, srv.port, ssl=ctx)
    writer.write((f"GET {PODS}?watch=true HTTP/1.1\r\nHost: {srv.host}\r\n"
                  f"Authorization: Bearer {srv.token}\r\n\r\n").encode())
    await writer.drain()
    await reader.readline()  # the status line: the watch is established
    return writer


async def test_a_watcher_that_does_not_keep_up_is_closed() -> None:
    async with EmbeddedApiServer(watcher_buffer=5) as srv:
        writer = await _stuck_watch(srv)
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
                connector=connector, headers={"Authorization": f"Bearer {srv.token}"}) as s:
            raw = Raw(srv, s)
            big = {"note": "x" * 200_000}
            started = time.monotonic()
            i = 0
            while not srv.store.terminated_watchers and time.monotonic() - started < 60:
                await raw.request("POST", PODS, pod(f"p{i:04d}", annotations=big))
                i += 1
            # a watcher that reads along is not closed: it takes its buffer each time
            events = await raw.watch_lines(PODS, 3)
            _, metrics, _ = await raw.request("GET", "/metrics")
        writer.close()
        assert srv.store.terminated_watchers[("", "pods")] == 1
        assert 'apiserver_terminated_watchers_total{resource="pods"} 1' in metrics
        assert len(events) == 3


async def test_a_reading_watcher_survives_a_burst() -> None:
    async with EmbeddedApiServer(watcher_buffer=5) as srv:
        connector = aiohttp.TCPConnector(ssl=ssl_context(srv.kubeconfig_path))
        async with aiohttp.ClientSession(
                connector=connector, headers={"Authorization": f"Bearer {srv.token}"}) as s:
            raw = Raw(srv, s)
            watching = asyncio.create_task(raw.watch_lines(PODS, 40, limit_s=60))
            await asyncio.sleep(0.3)
            for i in range(40):
                await raw.request("POST", PODS, pod(f"p{i:02d}"))
            events = await watching
        assert len(events) == 40 and not srv.store.terminated_watchers


def test_apiserver_command_defaults_to_the_realistic_server() -> None:
    args = build_parser().parse_args(["apiserver", "--port", "0"])
    assert (args.watch_history_seconds, args.bookmark_interval, args.watch_cache_size,
            args.compaction_seconds) == (75.0, 60.0, 100 * 1024, 300.0)
    assert args.watcher_buffer is None and args.kubelet and args.pod_grace_scale == 1.0
    assert args.gc
    args = build_parser().parse_args(["apiserver", "--port", "0", "--no-kubelet",
                                      "--watcher-buffer", "0", "--pod-grace-scale", "0.1",
                                      "--no-garbage-collector"])
    assert not args.kubelet and args.watcher_buffer == 0 and args.pod_grace_scale == 0.1
    assert not args.gc
