"""The trigger time of a selector's first sync by this process, taken from the objects.

Why: while the process runs, each change carries its own time into the queue (a pod's Ready
``lastTransitionTime``, else the moment it was observed; see
:mod:`slicectl.controller.routing`). A selector's first sync has no such history: a selector
just created, or one whose pods changed while no slicectl was running (and a failed first
sync's retry has none either: the history starts with a sync that completed). Upstream's tracker
answers with the Service's ``creationTimestamp`` for a Service it has not seen, combined with
every pod's Ready time; that turns each restart's writes into changes as old as the oldest pod.

What it decides, from what the slices already say:

* no slice owned by this selector (uid) exists: the write publishes the selector itself, so
  its ``creationTimestamp`` (a selector re-created under the same name gets its own);
* otherwise, the oldest Ready transition among its pods that is newer than the newest
  ``last-change-trigger-time`` its slices carry: the oldest change the last writer did not
  reflect (a pod that turned unready, or ready, while slicectl was down; one that changed
  within the last write's batch window may be counted again, an overstatement of at most that
  window). The transition the annotation itself came from is not newer: it was published;
* None when neither tells (no annotation, or no newer transition: a deletion has no time of
  its own), and the caller keeps the time it observed the change.
"""

from __future__ import annotations

from collections.abc import Iterable

from slicectl.model.records import ANNOTATION_TRIGGER_TIME, PodRecord, SelectorRecord, SliceRecord
from slicectl.model.timefmt import parse_rfc3339
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
    # Ready transitions are whole seconds. An annotation with a fraction was an observed time:
    # a transition stamped in its second may have followed it. A whole-second annotation was
    # itself a Ready transition, the one the last write published: only later ones are new.
    slack = 1.0 if last % 1.0 else 0.0
    parsed: dict[str, float | None] = {}  # pods share their transition strings
    oldest: float | None = None
    for pod in pods:
        text = pod.ready_transition
        if not text:
            continue
        when = parsed.get(text)
        if text not in parsed:
            when = parsed[text] = parse_rfc3339(text)
        if when is not None and when > last - slack and (oldest is None or when < oldest):
            oldest = when
    return oldest
