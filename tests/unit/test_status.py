"""Status write policy: conditions at once, counts at most once per period, never a no-op."""

from __future__ import annotations

from dataclasses import replace

from slicectl.controller.status import (
    MESSAGE_LIMIT,
    REASON_INVALID_SPEC,
    Counts,
    Outcome,
    decide,
    desired_status,
    same_status,
)
from slicectl.model.records import SelectorRecord, SelectorRef
from slicectl.model.selector import from_label_selector

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
