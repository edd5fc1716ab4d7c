"""What an operator sees: /metrics scraped from the running controller over HTTP.

The figures are checked against what happened on the API server (its slices, and the
controller's own request counts in the same scrape), so they run on a real cluster too.
"""

from __future__ import annotations

import dataclasses

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from slicectl.kube.errors import ServerError
from tests.integration.client_faults import ClientFaults, matches
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

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(port: int | None) -> Samples:
    """Every sample of the controller's /metrics, by name and sorted labels."""
    assert port is not None
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        assert resp.status == 200
        text = await resp.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def test_writes_of_a_failed_sync_are_counted(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sync whose writes partly landed before one failed still made those changes: upstream
    counts ``changes`` per acknowledged write, whatever the rest of the sync does."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.61.0.{i + 1}", {"app": "web"})
    faults = ClientFaults(monkeypatch)
    posts = [0]

    async def fail_second_create(method: str, path: str) -> None:
        if matches(method, path, "POST", "/endpointslices"):
            posts[0] += 1
            if posts[0] == 2:
                raise ServerError(500, "InternalError", "injected: one create fails")

    faults.before.append(fail_second_create)
    opts = dataclasses.replace(
        options(c.kubeconfig, c.namespace, max_endpoints_per_slice=1),
        metrics_bind_address="127.0.0.1:0")
    async with running_controller(opts) as run:
        await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

        async def served() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return len(slices) == 3 and run.controller.idle()

        await wait_until(served, what="3 one-endpoint slices after a failed create")
        got = await scrape(run.health.metrics_port)
    assert posts[0] >= 4, "the failed create was not retried"
    created = got[("endpoint_slice_controller_changes_total", (("operation", "create"),))]
    acknowledged = got[("slicectl_api_requests_total",
                        (("code", "201"), ("resource", "endpointslices"), ("verb", "POST")))]
    assert acknowledged == 3
    assert created == acknowledged, "creates acknowledged in a failed sync were not counted"
    assert got[("endpoint_slice_controller_syncs_total", (("result", "error"),))] == 1
    assert got[("slicectl_trigger_to_write_seconds_count", ())] == 3
