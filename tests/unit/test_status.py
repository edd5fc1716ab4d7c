"""Status write policy: conditions at once, counts at most once per period, never a no-op;
and the counts of an invalid selector are those of the slices it is left with."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from slicectl.controller.publish import StatusPublisher
from slicectl.controller.routing import record_key
from slicectl.controller.status import (
    MESSAGE_LIMIT,
    REASON_INVALID_SPEC,
    Counts,
    Outcome,
    decide,
    desired_status,
    same_status,
)
from slicectl.controller.sync import Syncer
from slicectl.model.records import SelectorRecord, SelectorRef
from slicectl.model.selector import Selector, from_label_selector
from slicectl.reconcile import Settings
from tests.unit.reconcile_builders import make_pod, make_selector
from tests.unit.test_routing import a_slice, router
from tests.unit.test_tracker_expectations import _RouterInputs, _Server

API = SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector", "endpointselectors")
SEL = SelectorRecord(
    api=API, namespace="ns", name="web", uid="u1", resource_version="5", generation=3,
    labels={}, selector=from_label_selector({"matchLabels": {"app": "web"}}),
)
OK = Outcome(Counts(endpoints=250, ready_endpoints=249, endpoint_slices=3))


def test_first_sync_writes_ready_condition_and_counts() -> None:
    d = decide(SEL, OK, last_write=None, now=100.0, period=10.0)
    assert d.patch is not None
    status = d.patch["status"]
    assert status["observedGeneration"] == 3
    assert status["endpoints"] == 250 and status["readyEndpoints"] == 249
    assert status["endpointSlices"] == 3
    (cond,) = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Ready", "True", "Reconciled")
    assert cond["observedGeneration"] == 3
    assert status["selector"] == "app=web"


def test_no_write_when_status_already_says_it() -> None:
    current = replace(SEL, status=desired_status(SEL, OK))
    d = decide(current, OK, last_write=None, now=100.0, period=10.0)
    assert d.patch is None and d.retry_after is None


def test_count_change_alone_is_rate_limited_then_retried() -> None:
    current = replace(SEL, status=desired_status(SEL, OK))
    changed = Outcome(Counts(endpoints=251, ready_endpoints=250, endpoint_slices=3))
    held = decide(current, changed, last_write=95.0, now=100.0, period=10.0)
    assert held.patch is None
    assert held.retry_after == 5.0
    later = decide(current, changed, last_write=95.0, now=105.0, period=10.0)
    assert later.patch is not None and later.patch["status"]["endpoints"] == 251


def test_generation_change_is_written_at_once_even_inside_period() -> None:
    current = replace(SEL, status=desired_status(SEL, OK))
    bumped = replace(current, generation=4)
    d = decide(bumped, OK, last_write=99.9, now=100.0, period=10.0)
    assert d.patch is not None and d.patch["status"]["observedGeneration"] == 4


def test_invalid_spec_turns_ready_false_and_keeps_transition_time_stable() -> None:
    bad = Outcome(None, reason=REASON_INVALID_SPEC, message="spec.selector must not be empty")
    first = desired_status(SEL, bad, now="2026-01-01T00:00:00Z")
    cond = first["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("False", REASON_INVALID_SPEC)
    assert cond["message"] == "spec.selector must not be empty"
    again = desired_status(replace(SEL, status=first), bad, now="2026-02-02T00:00:00Z")
    assert again["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    flipped = desired_status(replace(SEL, status=first), OK, now="2026-03-03T00:00:00Z")
    assert flipped["conditions"][0]["lastTransitionTime"] == "2026-03-03T00:00:00Z"


def test_decide_says_what_it_wants_even_when_it_holds_the_write_back() -> None:
    sel = replace(SEL, status=desired_status(SEL, OK))
    fewer = Outcome(Counts(endpoints=249, ready_endpoints=248, endpoint_slices=3))
    held = decide(sel, fewer, last_write=0.0, now=1.0, period=10.0)
    assert held.patch is None and held.retry_after == 9.0
    assert same_status(held.want, desired_status(sel, fewer))
    assert not same_status(held.want, sel.status)
    assert same_status(decide(sel, OK, last_write=0.0, now=1.0, period=10.0).want, sel.status)


def test_a_message_longer_than_the_crd_allows_is_clipped() -> None:
    """A 422 listing many field errors can be longer than a condition's message may be: the
    status patch carrying it whole would be refused, and the selector would keep showing its
    previous condition while its writes fail."""
    failed = Outcome(None, "SyncFailed", "x" * (MESSAGE_LIMIT + 10))
    (cond,) = desired_status(SEL, failed)["conditions"]
    assert len(cond["message"]) == MESSAGE_LIMIT and cond["reason"] == "SyncFailed"


async def _status_patch_of_a_sync(
    sel: SelectorRecord, *, last_valid: SelectorRecord | None = None, pods: int, slices: int
) -> Any:
    """Sync ``sel`` (updated from ``last_valid``, if given) with ``pods`` pods matching
    app=web and ``slices`` empty slices of its own; the status it wrote."""
    r = router()
    if last_valid is not None:
        r.selector_added(last_valid)
        r.selector_updated(last_valid, sel)
    else:
        r.selector_added(sel)
    for i in range(pods):
        r.pod_added(make_pod(f"web-{i}", f"10.0.0.{i + 1}"))
    for i in range(slices):
        r.slice_added(a_slice(f"s{i}"))
    patches: list[dict[str, Any]] = []

    async def write(_sel: SelectorRecord, patch: dict[str, Any]) -> None:
        patches.append(patch)

    pub = StatusPublisher(write)
    syncer = Syncer(_RouterInputs(r), r.tracker, _Server([]), Settings(managed_by="m"),
                    publish_status=pub, warn=lambda *_: None)
    await syncer.sync(record_key(sel), None)
    await pub.flush()
    await pub.close()
    (patch,) = patches
    return patch["status"]


STALE = {"endpoints": 3, "readyEndpoints": 3, "endpointSlices": 1, "selector": "app=web"}


async def test_an_invalid_selector_served_from_its_last_valid_spec_reports_its_slices() -> None:
    """Its slices keep following the pods of its last valid spec: so must its status counts,
    or they freeze at the last valid sync's and then lie (web-0 is gone here)."""
    valid = make_selector("web")
    invalid = replace(valid, selector=Selector(), generation=2, error="spec.selector: invalid",
                      status=desired_status(valid, Outcome(Counts(3, 3, 1))))
    status = await _status_patch_of_a_sync(invalid, last_valid=valid, pods=2, slices=0)
    assert status["conditions"][0]["reason"] == REASON_INVALID_SPEC
    assert (status["endpoints"], status["readyEndpoints"], status["endpointSlices"]) == (2, 2, 1)
    assert status["selector"] == "app=web"  # the spec it is served with


async def test_an_invalid_selector_emptied_to_the_placeholder_reports_no_endpoints() -> None:
    """No valid spec seen: its slices are emptied to the placeholder. The status says so, and
    drops the selector string a previous process wrote (a merge patch keeps a key it omits)."""
    invalid = replace(make_selector("web"), selector=Selector(), error="spec.selector: invalid",
                      status=STALE)
    status = await _status_patch_of_a_sync(invalid, pods=0, slices=1)
    assert status["conditions"][0]["reason"] == REASON_INVALID_SPEC
    assert (status["endpoints"], status["readyEndpoints"]) == (0, 0)
    assert "selector" in status and status["selector"] is None


async def test_an_invalid_selector_without_slices_reports_none() -> None:
    invalid = replace(make_selector("web"), selector=Selector(), error="spec.selector: invalid",
                      status=STALE)
    status = await _status_patch_of_a_sync(invalid, pods=0, slices=0)
    assert (status["endpoints"], status["readyEndpoints"], status["endpointSlices"]) == (0, 0, 0)
    assert status["selector"] is None
