"""Upstream behaviours an audit against the reference checklist found missing, one test each.

* a selector being deleted (a finalizer holds it) gets no creates, but its slices still drop
  dead pods and follow readiness (checklist #34; before, its syncs stopped outright);
* an edit that strips our ownerReference bumps no generation, yet the slice is made the
  selector's again (else garbage collection would never remove it);
* a pod deleted and re-created under its name while the pod watch was down comes back as an
  update with a new uid, and its endpoint's targetRef follows it;
* ``last-change-trigger-time`` of a first sync comes from the objects: a new selector's
  creationTimestamp, or the Ready time of a pod that changed while no slicectl ran.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from slicectl.controller.sync import Syncer, SyncFailed
from slicectl.controller.tracker import SliceTracker
from slicectl.controller.writer import Prepaid, SliceWriter, WriteResult
from slicectl.kube.resources import ENDPOINTSLICES, NAMESPACES, PODS
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_selector
from slicectl.model.records import ANNOTATION_TRIGGER_TIME, SelectorRecord
from slicectl.model.timefmt import parse_rfc3339, rfc3339
from slicectl.reconcile import Plan, Settings
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    SyncInputs,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_for_garbage_collection,
    wait_until,
)
from tests.unit.reconcile_builders import make_pod

WEB = {"app": "web"}


def listed(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Endpoints by pod name."""
    return {ep["targetRef"]["name"]: ep for s in slices for ep in s.get("endpoints") or []}


async def settle(c: Cluster, what: str, predicate: Any, limit: float = 15.0) -> None:
    async def ok() -> bool:
        return bool(predicate(await slices_of(c.client, c.namespace, "web")))
    await wait_until(ok, what=what, limit=limit)


def trigger_of(slice_: dict[str, Any]) -> float:
    value = parse_rfc3339((slice_["metadata"].get("annotations") or {}).get(
        ANNOTATION_TRIGGER_TIME))
    assert value is not None, slice_["metadata"]
    return value


async def test_a_selector_being_deleted_keeps_its_slices_true(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i, name in enumerate(("a", "b")):
        await create_pod(c.client, c.namespace, name, f"10.0.0.{i + 1}", WEB)
    body = selector_body("web", WEB)
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    await c.client.create(ESEL, body, c.namespace)
    try:
        async with running_controller(options(c.kubeconfig, c.namespace)):
            await settle(c, "2 endpoints", lambda s: len(listed(s)) == 2)
            await c.client.delete(ESEL, "web", c.namespace)
            assert (await c.client.get(ESEL, "web", c.namespace))["metadata"].get(
                "deletionTimestamp")
            await c.client.delete(PODS, "b", c.namespace, grace_period_seconds=0)
            await set_ready(c.client, c.namespace, "a", False)
            await create_pod(c.client, c.namespace, "new", "10.0.0.9", WEB)
            await settle(c, "b dropped, a unready", lambda s: set(listed(s)) == {"a"}
                         and listed(s)["a"]["conditions"]["ready"] is False)
            await asyncio.sleep(0.5)  # the new pod would need a create: none comes
            assert set(listed(await slices_of(c.client, c.namespace, "web"))) == {"a"}
    finally:
        await c.client.patch(ESEL, "web", {"metadata": {"finalizers": None}}, c.namespace)


async def test_a_stripped_owner_reference_is_put_right(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "a", "10.0.0.1", WEB)
    sel = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await settle(c, "1 endpoint", lambda s: len(listed(s)) == 1)
        (s,) = await slices_of(c.client, c.namespace, "web")
        stripped = await c.client.patch(ENDPOINTSLICES, s["metadata"]["name"],
                                        {"metadata": {"ownerReferences": None}}, c.namespace)
        assert stripped["metadata"]["generation"] == s["metadata"]["generation"]
        uid = sel["metadata"]["uid"]
        await settle(c, "owned again", lambda s: len(s) == 1 and len(listed(s)) == 1 and [
            o["uid"] for o in s[0]["metadata"].get("ownerReferences") or []] == [uid])


async def test_a_pod_recreated_during_a_watch_gap_gets_its_new_uid(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted and created again under its name while the pod watch is away (it ends in 410,
    as after an API server restart): the relist shows the pod with another uid, and no
    deletion of the old one; the slice must name the new uid."""
    c = cluster
    faults = ClientFaults(monkeypatch)
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.0.0.1", WEB)
    await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await settle(c, "1 endpoint", lambda s: len(listed(s)) == 1)
        faults.open_gap("pods")
        await c.client.delete(PODS, "web-0", c.namespace, grace_period_seconds=0)
        new = await create_pod(c.client, c.namespace, "web-0", "10.0.0.1", WEB)
        faults.close_gap("pods", gone=True)
        uid = new["metadata"]["uid"]
        await settle(c, "the new uid", lambda s: len(listed(s)) == 1
                     and listed(s)["web-0"]["targetRef"]["uid"] == uid)


async def test_a_new_selectors_first_write_carries_its_creation_time(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "a", "10.0.0.1", WEB)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        sel = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
        await settle(c, "1 endpoint", lambda s: len(listed(s)) == 1)
        (s,) = await slices_of(c.client, c.namespace, "web")
        assert trigger_of(s) == parse_rfc3339(sel["metadata"]["creationTimestamp"])
        # Written as Go's time.RFC3339Nano writes it (upstream: ``.UTC().Format(RFC3339Nano)``):
        # no trailing zeros in the fraction, no fraction at all for a whole second.
        created = sel["metadata"]["creationTimestamp"]
        assert s["metadata"]["annotations"][ANNOTATION_TRIGGER_TIME] == created


async def test_a_change_while_down_carries_its_ready_time(cluster: Cluster) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "a", "10.0.0.1", WEB)
    await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await settle(c, "1 endpoint", lambda s: len(listed(s)) == 1)
    changed = rfc3339()
    await c.client.patch(PODS, "a", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": changed}]}},
        c.namespace, subresource="status")
    await asyncio.sleep(1.2)  # the restart is later than the change by more than a second
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await settle(c, "a unready", lambda s: listed(s)["a"]["conditions"]["ready"] is False)
        (s,) = await slices_of(c.client, c.namespace, "web")
        assert trigger_of(s) == parse_rfc3339(changed)


async def test_a_write_of_changes_with_no_time_of_their_own_carries_none(
    cluster: Cluster,
) -> None:
    """A pod deleted or relabelled away has no time of its own: upstream's tracker finds no
    changed trigger time and its write removes the annotation, so a consumer (kube-proxy's
    network-programming latency) leaves that write out. It was stamped with the moment
    slicectl saw the change, which the spec rules out."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i, name in enumerate(("a", "b", "c")):
        await create_pod(c.client, c.namespace, name, f"10.0.0.{i + 1}", WEB)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
        await settle(c, "3 endpoints", lambda s: len(listed(s)) == 3)
        (s,) = await slices_of(c.client, c.namespace, "web")
        trigger_of(s)  # the first write is dated (the selector's creation)
        await c.client.delete(PODS, "b", c.namespace, grace_period_seconds=0)
        await settle(c, "b removed", lambda s: set(listed(s)) == {"a", "c"})
        (s,) = await slices_of(c.client, c.namespace, "web")
        assert ANNOTATION_TRIGGER_TIME not in (s["metadata"].get("annotations") or {})
        changed = rfc3339(datetime.now(UTC) - timedelta(seconds=30))  # dated by the kubelet
        await c.client.patch(PODS, "a", {"status": {"conditions": [
            {"type": "Ready", "status": "False", "lastTransitionTime": changed}]}},
            c.namespace, subresource="status")
        await settle(c, "a unready", lambda s: listed(s)["a"]["conditions"]["ready"] is False)
        (s,) = await slices_of(c.client, c.namespace, "web")
        assert trigger_of(s) == parse_rfc3339(changed)
        await c.client.patch(PODS, "c", {"metadata": {"labels": {"app": "other"}}}, c.namespace)
        await settle(c, "c relabelled away", lambda s: set(listed(s)) == {"a"})
        (s,) = await slices_of(c.client, c.namespace, "web")
        assert ANNOTATION_TRIGGER_TIME not in (s["metadata"].get("annotations") or {})


async def test_a_selector_re_created_at_once_replaces_the_old_slices(cluster: Cluster) -> None:
    """Deleted and re-created under its name before the garbage collector acted: the slices
    of the old uid are not reused (their owner is gone) but deleted, the new one gets its own."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i, name in enumerate(("a", "b")):
        await create_pod(c.client, c.namespace, name, f"10.0.0.{i + 1}", WEB)
    old = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace)):
        await settle(c, "2 endpoints", lambda s: len(listed(s)) == 2)
        await c.client.delete(ESEL, "web", c.namespace)
        new = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
        assert new["metadata"]["uid"] != old["metadata"]["uid"]

        def owners(slices: list[dict[str, Any]]) -> set[str]:
            return {o["uid"] for s in slices for o in s["metadata"].get("ownerReferences") or []}

        await settle(c, "only the new selector's slices", lambda s: owners(s) == {
            new["metadata"]["uid"]} and set(listed(s)) == {"a", "b"} and len(s) == 1)


async def test_a_foreground_deletion_is_not_fought(cluster: Cluster) -> None:
    """Foreground: the collector deletes the slices while the selector waits on them, and
    slicectl keeps syncing the selector meanwhile (a pod changes): the deletion still
    finishes, with no slice left behind."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"p{i}", f"10.0.0.{i + 1}", WEB)
    sel = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace,
                                          max_endpoints_per_slice=1)):
        await settle(c, "3 slices", lambda s: len(s) == 3 and len(listed(s)) == 3)
        await c.client.delete(ESEL, "web", c.namespace, propagation_policy="Foreground")
        await set_ready(c.client, c.namespace, "p0", False)  # a change while it is deleted

        async def gone() -> bool:
            selectors, _ = await c.client.list(ESEL, c.namespace)
            return not selectors and not await slices_of(c.client, c.namespace, "web")

        await wait_for_garbage_collection(c.client, c.namespace, sel["metadata"]["uid"], gone,
                                          real=c.real, what="the selector and its slices")


class _FailsOnce(SliceWriter):
    """A writer whose first plan fails before any write, as a refused request would."""

    failed = False

    async def apply(self, key: str, selector: SelectorRecord, plan: Plan,
                    trigger_time: str | None, result: WriteResult | None = None,
                    token: Prepaid | None = None) -> WriteResult:
        if not self.failed:
            self.failed = True
            raise RuntimeError("refused")
        return await super().apply(key, selector, plan, trigger_time, result, token)


class _Applies(SliceWriter):
    """The real writer, remembering the plans it was asked to apply."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.plans: list[Plan] = []

    async def apply(self, key: str, selector: SelectorRecord, plan: Plan,
                    trigger_time: str | None, result: WriteResult | None = None,
                    token: Prepaid | None = None) -> WriteResult:
        self.plans.append(plan)
        return await super().apply(key, selector, plan, trigger_time, result, token)


async def test_a_first_sync_that_failed_keeps_its_trigger_time_for_the_retry(
    cluster: Cluster,
) -> None:
    """The retry of a failed first sync is still a first sync: no change history yet."""
    c = cluster
    raw = await c.client.create(ESEL, selector_body("web", WEB), c.namespace)
    inputs = SyncInputs(parse_selector(raw, SLICECTL))
    inputs.pods = [make_pod("a", "10.0.0.1", namespace=c.namespace, node="")]
    tracker = SliceTracker()
    syncer = Syncer(inputs, tracker, _FailsOnce(c.client, tracker), Settings(),
                    publish_status=None, warn=lambda *_: None)
    key = f"slicectl.io/{c.namespace}/web"
    observed = time.time()
    with pytest.raises(SyncFailed):
        await syncer.sync(key, observed)
    await syncer.sync(key, observed)  # as the queue retries: the change's observed time
    (s,) = await slices_of(c.client, c.namespace, "web")
    created = parse_rfc3339(raw["metadata"]["creationTimestamp"])
    assert created is not None and trigger_of(s) == created < observed


async def test_a_create_refused_because_the_namespace_is_being_deleted_is_dropped(
    cluster: Cluster,
) -> None:
    """Upstream drops a sync whose create meets a namespace being deleted: every create there
    fails until the namespace's deletion removes the selector too, so retrying it only makes
    warnings, failure metrics and backoff. The selector's finalizer keeps the namespace
    terminating while the sync runs (on a real cluster too, whose namespace controller deletes
    the selector meanwhile: the sync plans from the copy read before)."""
    c = cluster
    body = selector_body("web", WEB)
    body["metadata"]["finalizers"] = ["example.com/cleanup"]
    inputs = SyncInputs(parse_selector(await c.client.create(ESEL, body, c.namespace), SLICECTL))
    inputs.pods = [make_pod("a", "10.0.0.1", namespace=c.namespace, node="")]
    warned: list[tuple[Any, ...]] = []
    tracker = SliceTracker()
    writer = _Applies(c.client, tracker)
    syncer = Syncer(inputs, tracker, writer, Settings(),
                    publish_status=None, warn=lambda *args: warned.append(args))
    key = f"slicectl.io/{c.namespace}/web"
    try:
        await c.client.delete(NAMESPACES, c.namespace)
        ns = await c.client.get(NAMESPACES, c.namespace)
        assert ns["metadata"].get("deletionTimestamp"), "the namespace is terminating"
        result = await syncer.sync(key, time.time())  # no SyncFailed: nothing to retry
        assert [len(p.creates) for p in writer.plans] == [1], "a create was tried, and refused"
        assert result.writes.writes == 0 and result.plan is None, "no plan recorded as landed"
        assert warned == [], "no FailedToUpdateEndpointSlices warning for a dying namespace"
        assert not tracker.has_unknown_creates(key), "a refused create landed nowhere"
        assert await slices_of(c.client, c.namespace, "web") == []
    finally:
        await c.client.patch(ESEL, "web", {"metadata": {"finalizers": None}}, c.namespace)
