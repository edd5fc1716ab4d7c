"""EndpointSelector status: what it should say, and whether saying it is worth a write.

Status writes are API writes too (they fan out to every watcher of EndpointSelectors), so the
decision is explicit and pure:

* a change of the Ready condition (status, reason, message) or of ``observedGeneration`` is
  written at once — it tells a consumer something new about its object;
* a change of the counts alone is written at most once per ``--status-update-period`` per
  selector; when it is held back, :func:`decide` says how long until it may go, so the caller
  schedules one more sync and the final counts always land.

The counts are those of the slices a sync left, whether it served the selector's own spec or,
the spec being invalid, its last valid one (or the placeholder); only a sync that failed to
write reports none and keeps the previous counts. A status write is a merge patch, which keeps
a key it leaves out, so a ``selector`` string that no longer applies is removed explicitly.

Status is written after the slice writes of a sync, so it never delays them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slicectl.model.records import SelectorRecord
from slicectl.model.timefmt import rfc3339
from slicectl.obs.events import clip

# The CRD's maxLength of a condition's message (metav1.Condition's): longer, the status patch
# itself would be refused (422) and the selector would keep its previous condition.
MESSAGE_LIMIT = 32768

REASON_RECONCILED = "Reconciled"
REASON_INVALID_SPEC = "InvalidSpec"
REASON_SYNC_FAILED = "SyncFailed"
# The Warning Event of a failed sync: upstream's reason for any failed Service sync.
REASON_FAILED_TO_UPDATE = "FailedToUpdateEndpointSlices"


@dataclass(frozen=True, slots=True)
class Counts:
    endpoints: int
    ready_endpoints: int
    endpoint_slices: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the sync found: the counts of the slices it left (None when its writes failed),
    and whether the selector is Ready or why not."""

    counts: Counts | None
    reason: str = REASON_RECONCILED
    message: str = ""

    @property
    def ready(self) -> bool:
        return self.reason == REASON_RECONCILED


@dataclass(frozen=True, slots=True)
class Decision:
    patch: dict[str, Any] | None  # merge patch for the status subresource, or None
    retry_after: float | None  # counts held back: sync again after this many seconds
    want: dict[str, Any]  # the status the selector should carry, written now or not


def _ready_condition(sel: SelectorRecord) -> Mapping[str, Any] | None:
    conditions = sel.status.get("conditions")
    if isinstance(conditions, list):
        for c in conditions:
            if isinstance(c, Mapping) and c.get("type") == "Ready":
                return c
    return None


def desired_status(sel: SelectorRecord, outcome: Outcome, now: str | None = None) -> dict[str, Any]:
    """The full status the selector should carry after this sync."""
    status = "True" if outcome.ready else "False"
    old = _ready_condition(sel)
    transition = (
        str(old["lastTransitionTime"])
        if old and old.get("status") == status and old.get("lastTransitionTime")
        else (now or rfc3339())
    )
    condition = {
        "type": "Ready",
        "status": status,
        "observedGeneration": sel.generation,
        "lastTransitionTime": transition,
        "reason": outcome.reason,
        "message": clip(outcome.message, MESSAGE_LIMIT)
        or ("EndpointSlices reflect the selected pods" if outcome.ready else outcome.reason),
    }
    result: dict[str, Any] = {"observedGeneration": sel.generation, "conditions": [condition]}
    if outcome.counts is not None:
        result["endpoints"] = outcome.counts.endpoints
        result["readyEndpoints"] = outcome.counts.ready_endpoints
        result["endpointSlices"] = outcome.counts.endpoint_slices
    else:
        for field in ("endpoints", "readyEndpoints", "endpointSlices"):
            if field in sel.status:
                result[field] = sel.status[field]
    if not sel.selector.empty:
        result["selector"] = sel.selector.to_string()
    return result


def _significant(status: Mapping[str, Any]) -> tuple[Any, ...]:
    cond = None
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            cond = (c.get("status"), c.get("reason"), c.get("message"), c.get("observedGeneration"))
    return (status.get("observedGeneration"), cond, status.get("selector"))


def _counts(status: Mapping[str, Any]) -> tuple[Any, ...]:
    return (status.get("endpoints"), status.get("readyEndpoints"), status.get("endpointSlices"))


def same_status(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two statuses say the same (transition times aside)."""
    return _significant(a) == _significant(b) and _counts(a) == _counts(b)


def decide(
    sel: SelectorRecord,
    outcome: Outcome,
    *,
    last_write: float | None,
    now: float,
    period: float,
) -> Decision:
    """Whether to write status now (``last_write``/``now`` are monotonic seconds)."""
    want = desired_status(sel, outcome)
    have = sel.status
    if _significant(want) != _significant(have):
        return Decision(_merge_patch(want), None, want)
    if _counts(want) == _counts(have):
        return Decision(None, None, want)
    if last_write is None or now - last_write >= period:
        return Decision(_merge_patch(want), None, want)
    return Decision(None, period - (now - last_write), want)


def _merge_patch(want: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that makes the status ``want``: a null removes a stale selector string
    (``want`` has none when the selector is empty), which leaving the key out would keep."""
    return {"status": {"selector": None, **want}}
