"""ListOptions validation of LIST and WATCH requests, answered as kube-apiserver v1.32 answers.

The real server validates the decoded ``ListOptions`` before anything else
(``ValidateListOptions`` in apimachinery's internalversion validation, with the WatchList gate
on, as it is by default in 1.32) and refuses with a 422 ``ListOptions.meta.k8s.io "" is invalid``
listing every failed field. The rules, as probed on a real v1.32 server:

* a LIST: ``resourceVersionMatch`` needs a ``resourceVersion`` and no ``continue``; it is
  ``Exact`` (not with ``resourceVersion=0``) or ``NotOlderThan``; ``sendInitialEvents`` is
  forbidden;
* a WATCH: ``sendInitialEvents`` needs ``resourceVersionMatch=NotOlderThan``; a
  ``resourceVersionMatch`` needs ``sendInitialEvents``, must be ``NotOlderThan`` and comes
  without ``continue``.

A watch from now (no ``resourceVersion``, or "0") that names neither ``sendInitialEvents`` nor
``resourceVersionMatch`` is first defaulted to a streaming list (``SetListOptionsDefaults``:
``sendInitialEvents=true``, ``resourceVersionMatch=NotOlderThan``), so it is validated, and
served, as one (:func:`watch_defaults`).

Before that, the parameter codec decodes the query: ``timeoutSeconds`` and then ``limit`` must
be int64s, or the answer is a 400 with strconv's message (:func:`query_int64`); then the label
selector and the field selector must parse (a 400 with the parser's message). A field label the
type does not know is found later, when the list converts the selector for its type.

Clients of old servers learn from this 422 that streaming lists are not available, so a sim
that accepted more than the real server would hide a client's fallback bugs.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.errors import bad_request, options_invalid
from slicectl.sim.fieldsets import FieldSelectorError, parse_field_terms
from slicectl.sim.options import query_int64
from slicectl.sim.selectors import LabelSelectorError, parse_label_selector

NOT_OLDER_THAN = "NotOlderThan"
EXACT = "Exact"


def watch_defaults(query: dict[str, str]) -> None:
    """``SetListOptionsDefaults`` with the WatchList gate on (v1.32's default): a watch from
    now becomes a streaming list, in ``query`` itself."""
    if "sendInitialEvents" in query or query.get("resourceVersionMatch"):
        return
    if query.get("resourceVersion", "") in ("", "0"):
        query["sendInitialEvents"] = "true"
        query["resourceVersionMatch"] = NOT_OLDER_THAN


def validate(query: dict[str, str], *, watch: bool) -> None:
    """Raise the real server's 400 when ``query`` does not decode into ListOptions, its 422
    when they are not valid."""
    for name in ("timeoutSeconds", "limit"):  # in the order of ListOptions' fields
        query_int64(query, name)
    try:  # then converted to internal ListOptions: the selectors parsed
        parse_label_selector(query.get("labelSelector", ""))
        parse_field_terms(query.get("fieldSelector", ""))
    except (LabelSelectorError, FieldSelectorError) as exc:
        raise bad_request(str(exc)) from exc
    causes = _watch_causes(query) if watch else _list_causes(query)
    if causes:
        raise options_invalid("ListOptions", causes)


def _list_causes(query: dict[str, str]) -> list[dict[str, Any]]:
    causes: list[dict[str, Any]] = []
    match = query.get("resourceVersionMatch", "")
    rv = query.get("resourceVersion", "")
    if match:
        if not rv:
            causes.append(_forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                     "forbidden unless resourceVersion is provided"))
        if query.get("continue"):
            causes.append(_forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                     "forbidden when continue is provided"))
        if match == EXACT:
            if rv == "0":
                causes.append(_forbidden("resourceVersionMatch", 'resourceVersionMatch '
                                         '"exact" is forbidden for resourceVersion "0"'))
        elif match != NOT_OLDER_THAN:
            causes.append(_not_supported("resourceVersionMatch", match,
                                         (EXACT, NOT_OLDER_THAN, "")))
    if "sendInitialEvents" in query:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _watch_causes(query: dict[str, str]) -> list[dict[str, Any]]:
    causes: list[dict[str, Any]] = []
    match = query.get("resourceVersionMatch", "")
    initial = "sendInitialEvents" in query
    if initial and match != NOT_OLDER_THAN:
        causes.append(_forbidden("resourceVersionMatch", "sendInitialEvents requires setting "
                                 f"resourceVersionMatch to {NOT_OLDER_THAN}"))
    if match:
        if not initial:
            causes.append(_forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden "
                                     "for watch unless sendInitialEvents is provided"))
        if match != NOT_OLDER_THAN:
            causes.append(_not_supported("resourceVersionMatch", match, (NOT_OLDER_THAN,)))
        if query.get("continue"):
            causes.append(_forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                     "forbidden when continue is provided"))
    return causes


def _forbidden(field: str, why: str) -> dict[str, Any]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {why}", "field": field}


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> dict[str, Any]:
    values = ", ".join(f'"{v}"' for v in supported)
    return {"reason": "FieldValueNotSupported",
            "message": f'Unsupported value: "{value}": supported values: {values}',
            "field": field}
