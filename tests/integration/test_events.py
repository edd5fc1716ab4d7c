"""Event recording against the embedded API server: required fields, series, spam filter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import EVENTS
from slicectl.obs.events import WARNING, EventRecorder
from slicectl.sim.server import EmbeddedApiServer

pytestmark = pytest.mark.embedded_only


def regarding(name: str = "llm", uid: str = "uid-1") -> dict[str, str]:
    return {
        "apiVersion": "slicectl.io/v1alpha1",
        "kind": "EndpointSelector",
        "namespace": "default",
        "name": name,
        "uid": uid,
    }


@pytest.fixture
async def client(srv: EmbeddedApiServer) -> AsyncIterator[KubeClient]:
    c = await KubeClient.connect(kubeconfig=srv.kubeconfig_path)
    yield c
    await c.close()


async def events(client: KubeClient) -> list[dict[str, Any]]:
    items, _ = await client.list(EVENTS, "default")
    return items


async def test_event_is_created_with_required_fields(client: KubeClient) -> None:
    recorder = EventRecorder(client, reporting_instance="slicectl-0")
    recorder.event(regarding(), WARNING, "InvalidSpec", "spec.selector: must not be empty",
                   action="Validate")
    await recorder.flush()
    [ev] = await events(client)
    assert ev["type"] == "Warning"
    assert ev["reason"] == "InvalidSpec"
    assert ev["note"] == "spec.selector: must not be empty"
    assert ev["action"] == "Validate"
    assert ev["reportingController"] == "slicectl"
    assert ev["reportingInstance"] == "slicectl-0"
    assert ev["eventTime"].endswith("Z") and "." in ev["eventTime"]
    assert ev["regarding"]["kind"] == "EndpointSelector"
    assert ev["regarding"]["uid"] == "uid-1"
    assert ev["metadata"]["name"].startswith("llm.")
    assert "series" not in ev


async def test_repeats_become_one_event_with_a_series(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    recorder = EventRecorder(client, reporting_instance="slicectl-0")
    recorder.event(regarding(), WARNING, "FailedToUpdateEndpointSlices", "conflict")
    await recorder.flush()  # the Event exists; repeats now go to its series
    for _ in range(9):
        recorder.event(regarding(), WARNING, "FailedToUpdateEndpointSlices", "conflict")
    await recorder.flush()
    assert srv.request_counts(verb="create", resource="events") == 1
    assert srv.request_counts(verb="patch", resource="events") == 1  # one per series_interval
    [ev] = await events(client)
    assert ev["series"]["count"] == 10
    assert ev["series"]["lastObservedTime"].endswith("Z")
    # A different note is a different event.
    recorder.event(regarding(), WARNING, "FailedToUpdateEndpointSlices", "timeout")
    await recorder.flush()
    assert srv.request_counts(verb="create", resource="events") == 2


async def test_spam_filter_limits_writes_per_object(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    recorder = EventRecorder(client, reporting_instance="slicectl-0", burst=3)
    for i in range(20):
        recorder.event(regarding(), WARNING, "FailedToUpdateEndpointSlices", f"attempt {i}")
    recorder.event(regarding("other", "uid-2"), WARNING, "InvalidSpec", "bad")
    await recorder.flush()
    assert srv.request_counts(verb="create", resource="events") == 4  # 3 + the other object
    names = sorted(ev["regarding"]["name"] for ev in await events(client))
    assert names == ["llm", "llm", "llm", "other"]


async def test_write_failures_never_reach_the_caller(
    srv: EmbeddedApiServer, client: KubeClient
) -> None:
    srv.faults.error_rate = 1.0
    recorder = EventRecorder(client, reporting_instance="slicectl-0")
    recorder.event(regarding(), WARNING, "InvalidSpec", "bad")  # must not raise
    await recorder.flush()
    srv.faults.error_rate = 0.0
    assert await events(client) == []
