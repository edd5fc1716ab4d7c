"""Informer over real HTTPS: paginated sync, watch, bookmarks, relist-with-diff after compaction,
dropped and stalled watches, malformed objects.

Sync, watch, bookmarks, dropped and stalled watches and the relist after a 410 run on a real
cluster too (LIST pages are counted by the reader's own client, watches are broken by the wire
proxy, the 410 comes from the reader's client); the malformed lines need the embedded server.
Test pods name a scheduler that does not exist, so on a cluster with a scheduler and kubelets
nothing else writes to them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from slicectl.cache.informer import Informer
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import Gone
from slicectl.kube.resources import NAMESPACES, PODS
from slicectl.kube.watch import WatchEvent
from slicectl.model.parse import parse_pod
from slicectl.model.records import PodRecord
from slicectl.sim.server import EmbeddedApiServer
from slicectl.sim.watch import Watcher
from tests.integration.conftest import Cluster
from tests.integration.support import (
    HANG_GUARD,
    ClientRequests,
    create_namespace,
    unscheduled_pod,
)
from tests.integration.wire import WireProxy


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, new: PodRecord) -> None:
        self.events.append(("add", new.name))

    def on_update(self, old: PodRecord, new: PodRecord) -> None:
        assert old.resource_version != new.resource_version
        self.events.append(("update", new.name))

    def on_delete(self, old: PodRecord) -> None:
        self.events.append(("delete", old.name))


class GatedClient(KubeClient):
    """A client whose new watches wait for ``gate``: lets a test make the informer miss events;
    with ``gone``, the next watch is answered 410, as once the server's history no longer
    reaches back to the informer's resourceVersion."""

    gate: asyncio.Event
    gone: bool
    held: int  # watches waiting for the gate
    requests: ClientRequests

    async def watch(self, *args: Any, **kwargs: Any) -> AsyncGenerator[WatchEvent, None]:
        self.held += 1
        try:
            await self.gate.wait()
        finally:
            self.held -= 1
        if self.gone:
            self.gone = False
            raise Gone(410, "Expired", "injected: too old resource version")
        async for event in super().watch(*args, **kwargs):
            yield event


async def wait_for(cond: Callable[[], bool]) -> None:
    async with asyncio.timeout(HANG_GUARD):
        while True:
            if cond():
                return
            await asyncio.sleep(0.02)


def watchers(srv: EmbeddedApiServer) -> list[Watcher]:
    return [w for b in srv.store.buckets.values() for w in b.watchers if isinstance(w, Watcher)]


def server_of(api: Cluster) -> EmbeddedApiServer:
    assert api.server is not None, "embedded_only tests run on the embedded server"
    return api.server


@pytest.fixture
def embedded_options() -> dict[str, Any]:
    return {"watch_cache_size": 100_000, "bookmark_interval": 0.2}


@pytest.fixture
def writer(api: Cluster) -> KubeClient:
    return api.client


@pytest.fixture
async def reader(
    api: Cluster, wire: WireProxy | None, tmp_path: Path
) -> AsyncIterator[GatedClient]:
    """The informer's client; on a real cluster it goes through ``wire``."""
    requests = ClientRequests()
    kubeconfig = wire.kubeconfig(api.kubeconfig, tmp_path / "wire.yaml") if wire else None
    client = await GatedClient.connect(kubeconfig or api.kubeconfig, on_request=requests)
    client.requests = requests
    client.gate = asyncio.Event()
    client.gate.set()
    client.gone = False
    client.held = 0
    async with client:
        yield client


@pytest.fixture
async def heartbeat(api: Cluster, writer: KubeClient) -> AsyncIterator[None]:
    """A pod relabelled every 0.3 s: the namespace's watches never go quiet."""
    await writer.create(PODS, unscheduled_pod("heartbeat"), api.namespace)

    async def beat() -> None:
        for n in itertools.count():
            await writer.patch(PODS, "heartbeat", {"metadata": {"labels": {"beat": str(n)}}},
                               api.namespace)
            await asyncio.sleep(0.3)

    task = asyncio.create_task(beat())
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def informer(
    request: pytest.FixtureRequest, api: Cluster, reader: GatedClient, writer: KubeClient
) -> AsyncIterator[tuple[Informer[PodRecord], Recorder]]:
    for i in range(5):
        await writer.create(PODS, unscheduled_pod(f"p{i}"), api.namespace)
    recorder = Recorder()
    # A real server is silent on an idle watch until its bookmark near the timeout, so there
    # short stall detection needs a namespace that is never quiet (the heartbeat fixture).
    short = api.server is not None or "heartbeat" in request.fixturenames
    inf: Informer[PodRecord] = Informer(
        reader, PODS, parse_pod, key=lambda p: p.key, namespace=api.namespace, page_size=2,
        watch_timeout=20, inactivity_timeout=2.0 if short else None, handler=recorder,
        backoff_initial=0.05, backoff_max=0.2, stream_lists=getattr(request, "param", True),
    )
    task = asyncio.create_task(inf.run())
    async with asyncio.timeout(HANG_GUARD):
        await inf.synced.wait()
    yield inf, recorder
    assert not task.done(), "the informer must never stop on its own"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_streamed_sync_then_watch(
    api: Cluster, reader: GatedClient, writer: KubeClient,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """The list comes as the start of the watch (WatchList): no LIST request at all."""
    inf, rec = informer
    ns = api.namespace
    assert sorted(inf.store.keys()) == [f"{ns}/p{i}" for i in range(5)]
    assert sorted(rec.events) == [("add", f"p{i}") for i in range(5)]
    assert reader.requests.total(verb="LIST", resource="pods") == 0
    assert inf.stats.streamed_lists == 1 and inf.stats.watches == 1
    await _watch_goes_on(inf, rec, writer, ns)


@pytest.mark.parametrize("informer", [False], indirect=True, ids=["no-stream"])
async def test_paginated_sync_then_watch(
    api: Cluster, reader: GatedClient, writer: KubeClient,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """Without streamed lists: a consistent LIST (never resourceVersion=0, which a v1.32 server
    answers whole whatever the limit) in pages of 2."""
    inf, rec = informer
    ns = api.namespace
    assert sorted(inf.store.keys()) == [f"{ns}/p{i}" for i in range(5)]
    assert sorted(rec.events) == [("add", f"p{i}") for i in range(5)]
    assert reader.requests.total(verb="LIST", resource="pods", code=200) == 3
    assert inf.stats.streamed_lists == 0
    await _watch_goes_on(inf, rec, writer, ns)


async def _watch_goes_on(inf: Informer[PodRecord], rec: Recorder, writer: KubeClient,
                         ns: str) -> None:
    rec.events.clear()
    await writer.create(PODS, unscheduled_pod("new"), ns)
    await writer.patch(PODS, "new", {"metadata": {"labels": {"app": "y"}}}, ns)
    await writer.delete(PODS, "p0", ns)
    await wait_for(lambda: len(rec.events) == 4)
    # a real server writes the deletionTimestamp before it removes a pod, even an unscheduled
    # one: an update, then the delete
    assert rec.events == [("add", "new"), ("update", "new"), ("update", "p0"), ("delete", "p0")]
    record = inf.store.get(f"{ns}/new")
    assert record is not None and record.labels == {"app": "y"}
    assert f"{ns}/p0" not in inf.store
    assert inf.stats.lists == 1 and inf.stats.relists == 0


async def test_bookmarks_advance_resource_version(
    api: Cluster, writer: KubeClient, informer: tuple[Informer[PodRecord], Recorder]
) -> None:
    """On a real server a bookmark comes about 2 s before the watch's timeout (20 s here)."""
    inf, rec = informer
    before = int(inf.resource_version or 0)
    elsewhere = f"{api.namespace}-elsewhere"
    await create_namespace(writer, elsewhere, real=api.real)
    try:
        other = await writer.create(PODS, unscheduled_pod("elsewhere"), elsewhere)
        other_rv = int(other["metadata"]["resourceVersion"])
        # The informer watches only its namespace: only a bookmark can carry it past this write.
        await wait_for(lambda: int(inf.resource_version or 0) >= other_rv)
    finally:
        await writer.delete(NAMESPACES, elsewhere)
    assert int(inf.resource_version or 0) > before
    assert inf.stats.events.get("BOOKMARK", 0) > 0
    assert ("add", "elsewhere") not in rec.events


async def test_relist_after_a_410_emits_exactly_the_missed_changes(
    api: Cluster, reader: GatedClient, writer: KubeClient, wire: WireProxy | None,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """The watch ends and the informer's next one waits; meanwhile pods change, then the
    history is gone (410): the relist's diff must be exactly the changes missed."""
    inf, rec = informer
    ns = api.namespace
    reader.gate.clear()
    assert (wire.drop() if wire else server_of(api).faults.drop_watches()) >= 1
    await wait_for(lambda: reader.held == 1)  # the informer is now waiting to re-watch
    rec.events.clear()
    await writer.create(PODS, unscheduled_pod("added"), ns)
    await writer.patch(PODS, "p1", {"metadata": {"labels": {"app": "changed"}}}, ns)
    await writer.delete(PODS, "p2", ns)
    reader.gone = True
    reader.gate.set()  # re-watch from the old resourceVersion: 410, relist, diff
    await wait_for(lambda: inf.stats.relists == 1 and len(rec.events) >= 3)
    await asyncio.sleep(0.3)  # nothing else may follow
    assert sorted(rec.events) == [("add", "added"), ("delete", "p2"), ("update", "p1")]
    assert sorted(inf.store.keys()) == sorted(
        f"{ns}/{n}" for n in ("p0", "p1", "p3", "p4", "added")
    )
    record = inf.store.get(f"{ns}/p1")
    assert record is not None and record.labels == {"app": "changed"}


async def test_dropped_watch_resumes_without_relist(
    api: Cluster, reader: GatedClient, writer: KubeClient, wire: WireProxy | None,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """The embedded server ends its watches; a real one's connections are reset."""
    inf, rec = informer
    ns = api.namespace
    await writer.create(PODS, unscheduled_pod("before-drop"), ns)
    await wait_for(lambda: ("add", "before-drop") in rec.events)  # the watch is open
    watches = inf.stats.watches
    assert (wire.drop() if wire else server_of(api).faults.drop_watches()) >= 1
    await writer.create(PODS, unscheduled_pod("after-drop"), ns)
    await wait_for(lambda: ("add", "after-drop") in rec.events)
    assert inf.stats.watches > watches
    assert inf.stats.lists == 1 and inf.stats.relists == 0
    assert reader.requests.total(verb="LIST", resource="pods") == 0  # the list was streamed


@pytest.mark.embedded_only(reason="fault injection: watches answered 500 with Retry-After")
async def test_a_watch_the_server_asks_to_resend_resumes_without_relist(
    api: Cluster, reader: GatedClient, writer: KubeClient,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """A watch answered with a 5xx that says when to come back (an etcd timeout's
    ServerTimeout) is sent again with the same resourceVersion after its ``Retry-After``, as
    client-go's ``Watch`` resends it: no relist of what the informer already holds."""
    inf, rec = informer
    srv, ns = server_of(api), api.namespace
    await writer.create(PODS, unscheduled_pod("before"), ns)
    await wait_for(lambda: ("add", "before") in rec.events)  # the watch is open
    srv.faults.resource_error_rate, srv.faults.error_retry_after = {"pods": 1.0}, 1
    try:
        assert srv.faults.drop_watches() >= 1
        await wait_for(lambda: reader.requests.total(verb="WATCH", code=500) >= 2)
    finally:
        srv.faults.resource_error_rate, srv.faults.error_retry_after = {}, 0
    await writer.create(PODS, unscheduled_pod("after"), ns)
    await wait_for(lambda: ("add", "after") in rec.events)
    assert inf.stats.lists == 1 and inf.stats.relists == 0


@pytest.mark.usefixtures("heartbeat")
async def test_stalled_watch_is_detected_and_recovered(
    api: Cluster, writer: KubeClient, wire: WireProxy | None,
    informer: tuple[Informer[PodRecord], Recorder],
) -> None:
    """The embedded server stops sending on its watches; a real one's bytes stop flowing."""
    inf, rec = informer
    ns = api.namespace
    await writer.create(PODS, unscheduled_pod("before-stall"), ns)
    await wait_for(lambda: ("add", "before-stall") in rec.events)  # the watch is open
    # a watch of its own, not the streamed list's (whose watch the informer ends itself)
    await wait_for(lambda: inf.stats.watches >= 2)
    async with asyncio.timeout(HANG_GUARD):
        # The informer's watches end every second here (deadlines inside its 2 s inactivity
        # timeout): a stall that lands on a watch as it ends, or on one whose client has just
        # left, goes with it. Stall again until a stalled watch is the one being read.
        while inf.stats.stalls < 1:
            if (wire.stall() if wire else server_of(api).faults.stall_watches(60)) >= 1:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(3.0):
                        await wait_for(lambda: inf.stats.stalls >= 1)
            else:
                await asyncio.sleep(0.02)
    await writer.create(PODS, unscheduled_pod("after-stall"), ns)
    await wait_for(lambda: ("add", "after-stall") in rec.events)
    assert inf.stats.lists == 1 and inf.stats.relists == 0


@pytest.mark.parametrize("stream_lists", [True, False], ids=["streamed", "paginated"])
async def test_a_quiet_watch_is_not_taken_for_a_stalled_one(
    api: Cluster, reader: GatedClient, writer: KubeClient, stream_lists: bool,
) -> None:
    """A real server sends nothing on a watch of a resource nothing writes, not even bookmarks
    (they carry only versions newer than the watch's start): silence longer than the
    inactivity timeout is no sign of a half-open connection, unless the watch's own deadline
    has passed. The informer asks for deadlines inside its inactivity timeout, so a quiet
    watch ends on the server's side and resumes from the same version: no stall, no relist."""
    ns = api.namespace
    await writer.create(PODS, unscheduled_pod("only"), ns)
    recorder = Recorder()
    inf: Informer[PodRecord] = Informer(
        reader, PODS, parse_pod, key=lambda p: p.key, namespace=ns, watch_timeout=300,
        inactivity_timeout=3.0, handler=recorder, stream_lists=stream_lists)
    task = asyncio.create_task(inf.run())
    try:
        async with asyncio.timeout(HANG_GUARD):
            await inf.synced.wait()
        await asyncio.sleep(9.0)  # three inactivity timeouts, nothing written
        assert inf.stats.stalls == 0 and inf.stats.relists == 0, inf.stats
        assert inf.stats.watches >= 3  # each ended at its deadline and was resumed
        await writer.create(PODS, unscheduled_pod("later"), ns)
        await wait_for(lambda: ("add", "later") in recorder.events)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.embedded_only(reason="fault injection: garbage lines written into the watch")
async def test_malformed_objects_are_skipped(
    api: Cluster, writer: KubeClient, informer: tuple[Informer[PodRecord], Recorder]
) -> None:
    inf, rec = informer
    srv, ns = server_of(api), api.namespace
    reader_client = inf._client
    assert isinstance(reader_client, KubeClient)
    await wait_for(lambda: bool(watchers(srv)))
    nameless = {"type": "ADDED", "object": {"kind": "Pod", "metadata": {"namespace": ns}}}
    for watcher in watchers(srv):
        watcher.send_raw(b"{this is not json\n")
        watcher.send_raw(b'["an", "array"]\n')
        watcher.send_raw(orjson.dumps(nameless) + b"\n")
    await writer.create(PODS, unscheduled_pod("after-garbage"), ns)
    await wait_for(lambda: ("add", "after-garbage") in rec.events)
    assert reader_client.malformed_lines >= 2
    assert inf.stats.parse_errors >= 1
    assert len(inf.store) == 6
