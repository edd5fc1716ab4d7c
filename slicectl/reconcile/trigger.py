"""The trigger time of a selector's first sync by this process, taken from the objects.

Why: while the process runs, each change carries its own time into the queue (a pod's Ready
``lastTransitionTime``, else none of its own; see
:mod:`slicectl.controller.routing`). A selector's first sync has no such history: a selector
just created, or one whose pods changed while no slicectl was running (and a failed first
sync's retry has none either: the history starts with a sync that completed). Upstream's tracker
answers with the Service's ``creationTimestamp`` for a Service it has not seen, combined with
every pod's Ready time; that turns each restart's writes into changes as old as the oldest pod.

What it decides, from what the slices already say:

* no slice owned by this selector (uid) exists: the write publishes the selector itself, so
  its ``creationTimestamp`` (a selector re-created under the same name gets its own);
* otherwise, the oldest Ready transition among its pods that is newer than the newest
  ``last-change-trigger-time`` its slices carry (by a second: Ready times are whole seconds)
  and that the slices do not show: the oldest change the last writer did not reflect (a pod
  that turned unready, or ready, while slicectl was down). A transition the slices show was
  published (often it is the one the annotation came from, or another of the last write's
  batch): counted, it would date a write made after a restart by a change published hours
  before;
* None when neither tells (no annotation, or no newer transition: a deletion has no time of
  its own), and the write carries no trigger time, as upstream's for a change it cannot date.
"""

from __future__ import annotations

from collections.abc import Iterable

from slicectl.model.records import ANNOTATION_TRIGGER_TIME, PodRecord, SelectorRecord, SliceRecord
from slicectl.model.timefmt import parse_rfc3339
from slicectl.reconcile.endpoints import pod_included
from slicectl.reconcile.plan import is_owned
from slicectl.reconcile.types import Settings


def first_sync_trigger(
    selector: SelectorRecord,
    pods: Iterable[PodRecord],
    existing_slices: Iterable[SliceRecord],
    settings: Settings,
) -> float | None:
    """The trigger time (Unix seconds) of ``selector``'s first sync (module docstring)."""
    owned = [s for s in existing_slices if is_owned(selector, s, settings)]
    if not owned:
        return parse_rfc3339(selector.creation_timestamp)
    written = [parse_rfc3339(s.annotations.get(ANNOTATION_TRIGGER_TIME)) for s in owned]
    last = max((t for t in written if t is not None), default=None)
    if last is None:
        return None
    shown: dict[str, bool] = {}  # pod uid -> the serving condition the slices show
    for s in owned:
        for ep in s.endpoints:
            if ep.target is not None:
                shown[ep.target.uid] = ep.serving
    parsed: dict[str, float | None] = {}  # pods share their transition strings
    oldest: float | None = None
    for pod in pods:
        text = pod.ready_transition
        if not text:
            continue
        when = parsed.get(text)
        if text not in parsed:
            when = parsed[text] = parse_rfc3339(text)
        # Whole seconds: a transition stamped in the last write's second may follow it.
        if when is None or when <= last - 1.0 or (oldest is not None and when >= oldest):
            continue
        # Published: the slices show the pod as it is now (listed with its serving condition,
        # or absent when it is not to be listed): the last write or an earlier one carried it.
        published = (shown.get(pod.uid) == pod.ready if pod_included(pod)
                     else pod.uid not in shown)
        if not published:
            oldest = when
    return oldest
