"""Event recording over real HTTPS: required fields, series, spam filter, failures swallowed.

Writes are counted by the recorder's client itself (its ``on_request`` hook), so these run on a
real cluster too.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import EVENTS
from slicectl.obs.events import WARNING, EventRecorder
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.credentials import token_kubeconfig
from tests.integration.wire import WireProxy


def regarding(ns: str, name: str = "llm", uid: str = "uid-1") -> dict[str, str]:
    return {
        "apiVersion": "slicectl.io/v1alpha1",
        "kind": "EndpointSelector",
        "namespace": ns,
        "name": name,
        "uid": uid,
    }


async def events(api: Cluster) -> list[dict[str, Any]]:
    items, _ = await api.client.list(EVENTS, api.namespace)
    return items


async def test_event_is_created_with_required_fields(api: Cluster) -> None:
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0")
    recorder.event(regarding(api.namespace), WARNING, "InvalidSpec",
                   "spec.selector: must not be empty", action="Validate")
    await recorder.flush()
    [ev] = await events(api)
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


async def test_limits_are_kept_in_bytes_and_a_long_name_still_makes_a_valid_event(
    api: Cluster,
) -> None:
    """The server counts note/reason/action in UTF-8 bytes, and an Event's name is a DNS
    subdomain of at most 253 characters while a selector's own name may be that long (too long
    for its slice label: exactly the selector that needs its InvalidSpec Warning)."""
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0")
    long_name = "b" * 200 + "-" + "c" * 52  # 253 characters, a '-' where the cut falls
    recorder.event(regarding(api.namespace, name=long_name), WARNING, "Grüße" * 40,
                   "é" * 1500, action="Ä" * 100)
    await recorder.flush()
    [ev] = await events(api)
    assert ev["regarding"]["name"] == long_name
    assert len(ev["metadata"]["name"]) <= 253 and ev["metadata"]["name"].startswith("b" * 200)
    assert ev["note"] == "é" * 512  # 1024 bytes
    assert len(ev["reason"].encode()) <= 128 and ev["reason"].startswith("Grüße")
    assert ev["action"] == "Ä" * 64


async def test_repeats_become_one_event_with_a_series(api: Cluster) -> None:
    sent = api.requests
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0")
    about = regarding(api.namespace)
    assert recorder.event(about, WARNING, "FailedToUpdateEndpointSlices", "conflict")
    await recorder.flush()  # the Event exists; repeats now go to its series
    for _ in range(9):  # each only a repeat: a caller logs the problem once
        assert not recorder.event(about, WARNING, "FailedToUpdateEndpointSlices", "conflict")
    await recorder.flush()
    assert sent.total(verb="POST", resource="events", code=201) == 1
    assert sent.total(verb="PATCH", resource="events", code=200) == 1  # one per series_interval
    [ev] = await events(api)
    assert ev["series"]["count"] == 10
    assert ev["series"]["lastObservedTime"].endswith("Z")
    # A different note is a different event.
    assert recorder.event(about, WARNING, "FailedToUpdateEndpointSlices", "timeout")
    await recorder.flush()
    assert sent.total(verb="POST", resource="events", code=201) == 2


async def test_spam_filter_limits_writes_per_object(api: Cluster) -> None:
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0", burst=3)
    for i in range(20):
        recorder.event(regarding(api.namespace), WARNING, "FailedToUpdateEndpointSlices",
                       f"attempt {i}")
    recorder.event(regarding(api.namespace, "other", "uid-2"), WARNING, "InvalidSpec", "bad")
    await recorder.flush()
    assert api.requests.total(verb="POST", resource="events") == 4  # 3 + the other object
    names = sorted(ev["regarding"]["name"] for ev in await events(api))
    assert names == ["llm", "llm", "llm", "other"]


async def test_refused_writes_never_reach_the_caller(api: Cluster, tmp_path: Path) -> None:
    """Credentials the server refuses (401 on every write): the recorder swallows it."""
    refused = token_kubeconfig(api.kubeconfig, "not-a-valid-token", tmp_path / "kubeconfig")
    async with await KubeClient.connect(refused) as client:
        recorder = EventRecorder(client, reporting_instance="slicectl-0")
        recorder.event(regarding(api.namespace), WARNING, "InvalidSpec", "bad")  # no raise
        await recorder.flush()
    assert await events(api) == []


async def test_a_refused_write_is_logged_as_a_warning_that_names_the_cause(
    api: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An Event the server refuses for good (RBAC without ``create`` on events, a bad token) is
    dropped, and an operator must learn why their Events never show: client-go logs "Server
    rejected event (will not retry!)" at error level. Before, this was a debug line only, so a
    Role missing the verb went unnoticed (seen on a real server: a 403 and no line at info)."""
    refused = token_kubeconfig(api.kubeconfig, "not-a-valid-token", tmp_path / "kubeconfig")
    async with await KubeClient.connect(refused) as client:
        recorder = EventRecorder(client, reporting_instance="slicectl-0")
        with caplog.at_level(logging.INFO, logger="slicectl.obs.events"):
            recorder.event(regarding(api.namespace), WARNING, "InvalidSpec", "bad")
            await recorder.flush()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1, warned
    assert "401" in warned[0] and "InvalidSpec" in warned[0], warned[0]


async def test_an_event_in_a_namespace_that_is_gone_is_dropped_quietly(
    api: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A selector's namespace deleted just before its Event was sent (404): expected, no
    warning (client-go logs it at error; here it is routine, and the sync logs the problem)."""
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0")
    with caplog.at_level(logging.INFO, logger="slicectl.obs.events"):
        recorder.event(regarding(f"{api.namespace}-gone"), WARNING, "InvalidSpec", "bad")
        await recorder.flush()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_write_failures_never_reach_the_caller(
    api: Cluster, wire: WireProxy | None, tmp_path: Path
) -> None:
    """Every write fails: the embedded server answers 500, a real one is unreachable."""
    async with contextlib.AsyncExitStack() as stack:
        if wire is None:
            assert api.server is not None
            api.server.faults.error_rate = 1.0
            stack.callback(setattr, api.server.faults, "error_rate", 0.0)
            client = api.client
        else:
            client = await KubeClient.connect(wire.kubeconfig(api.kubeconfig, tmp_path / "w"))
            stack.push_async_callback(client.close)
            wire.refuse()
        recorder = EventRecorder(client, reporting_instance="slicectl-0")
        recorder.event(regarding(api.namespace), WARNING, "InvalidSpec", "bad")  # no raise
        await recorder.flush()
    assert await events(api) == []


async def test_an_event_the_server_refuses_is_dropped_not_retried_for_ever(api: Cluster) -> None:
    """An Event the server rejects (here: its namespace is gone, 404; a terminating one answers
    403) can never be written. client-go's recorder drops such an event ("Server rejected
    event (will not retry!)"); kept pending, it was re-sent on every flush and its series was
    never forgotten, so a long-running process gathered one series (and a write every few
    minutes) per selector of every deleted namespace."""
    now = [0.0]
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0", series_window=60.0,
                             clock=lambda: now[0])
    gone = f"{api.namespace}-gone"  # no such namespace
    recorder.event(regarding(gone), WARNING, "InvalidSpec", "bad")
    await recorder.flush()
    assert api.requests.total(verb="POST", resource="events", code=404) == 1
    await recorder.flush()  # nothing left to write
    assert api.requests.total(verb="POST", resource="events") == 1
    now[0] += 61.0  # past the series window: the recorder holds nothing for it any more
    recorder.event(regarding(api.namespace, "other", "uid-2"), WARNING, "InvalidSpec", "bad")
    await recorder.flush()
    assert len(recorder) == 1  # only the new one, until its own window passes


async def test_a_create_whose_answer_was_lost_is_resent_under_the_same_name(
    api: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server stored the Event, the answer never came back (a reset, injected at the
    client, so this runs on a real cluster too). client-go resends the same Event object, so
    the resend is a 409 and nothing is doubled; a fresh name per
    attempt created a second Event for the one occurrence."""
    faults = ClientFaults(monkeypatch)
    lost = [0]

    async def lose_first_answer(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/events") and lost[0] == 0:
            lost[0] += 1
            raise aiohttp.ServerDisconnectedError("injected: response lost after the write")

    faults.after.append(lose_first_answer)
    recorder = EventRecorder(api.client, reporting_instance="slicectl-0")
    about = regarding(api.namespace)
    recorder.event(about, WARNING, "InvalidSpec", "bad")
    await recorder.flush()  # stored; the recorder saw only the reset
    assert lost[0] == 1 and len(await events(api)) == 1
    await recorder.flush()  # the resend
    assert len(await events(api)) == 1
    assert not recorder.event(about, WARNING, "InvalidSpec", "bad")  # a repeat: the series
    await recorder.flush()
    [ev] = await events(api)
    assert ev["series"]["count"] == 2
