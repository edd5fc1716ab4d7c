"""Issue 8, item 6 end to end: a watch that goes silent (a half-open connection: no events, no
bookmarks) is noticed within --watch-inactivity-timeout and reopened, so a change made during
the stall reaches the slices long before the stall ends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)
from tests.integration.wire import WireProxy

STALL = 60.0  # far longer than the test waits: only the watchdog can end it


async def test_a_silent_watch_is_reopened_within_the_inactivity_timeout(
    cluster: Cluster, wire: WireProxy | None, tmp_path: Path,
) -> None:
    """The embedded server stops sending on its watches; on a real cluster the controller talks
    through ``wire``, whose open connections stop forwarding: its idle pooled ones too, so a
    write may first wait on one of those for the request timeout (5 s here, not 30 s) before
    it is retried on a new connection."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.96.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    kubeconfig = wire.kubeconfig(c.kubeconfig, tmp_path / "wire.yaml") if wire else c.kubeconfig
    opts = options(kubeconfig, c.namespace, batch_period=0.0)
    opts = dataclasses.replace(
        opts, client=dataclasses.replace(opts.client, request_timeout=5.0),
        controller=dataclasses.replace(opts.controller, watch_inactivity_timeout=2.0))

    async def names() -> set[str]:
        return {ep["targetRef"]["name"] for s in await slices_of(c.client, c.namespace, "web")
                for ep in s["endpoints"]}

    async with running_controller(opts):
        async def first() -> bool:
            return await names() == {"web-0"}

        await wait_until(first, what="initial sync")
        if wire is not None:
            assert wire.stall() > 0
        else:
            assert c.server is not None
            assert c.server.faults.stall_watches(STALL) > 0
        await create_pod(c.client, c.namespace, "web-1", "10.96.0.2", {"app": "web"})

        async def second() -> bool:
            return await names() == {"web-0", "web-1"}

        await wait_until(second, limit=20.0, what="the change seen through a reopened watch")
