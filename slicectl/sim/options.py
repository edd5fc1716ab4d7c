"""The options of a write or a delete, validated as the real handlers do before anything else.

Why: ``ValidateCreateOptions``, ``ValidateUpdateOptions``, ``ValidatePatchOptions`` and
``ValidateDeleteOptions`` (apimachinery's ``meta/v1/validation``) refuse a request with a 422
``<Kind>Options.meta.k8s.io "" is invalid`` right after its body is read, before the body is
decoded or the object looked up. Without them a misspelt ``dryRun`` would write for real here
(and nowhere else), and a misspelt ``fieldValidation`` would silently pick a mode. The rules:

* ``dryRun``: every value is ``All`` (a repeated or empty parameter counts; the message shows
  the whole list as Go's ``%#v`` prints a ``[]string``); any value makes the request a dry run;
* ``fieldValidation``: "", ``Ignore``, ``Warn`` or ``Strict`` ("" means Warn);
* ``fieldManager``: at most 128 characters, all printable; required for an apply patch;
* ``force``: only on an apply patch (present with any value, ``false`` too, it is set);
* DeleteOptions: not both ``orphanDependents`` and ``propagationPolicy``; a policy is
  Foreground, Background or Orphan. A DELETE's options are its body when it has one (a
  single byte is one), else its query: the handler decodes one or the other, never both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from multidict import MultiMapping

from slicectl.sim import deleteoptions, errors
from slicectl.sim.validation.errors import (
    Cause,
    forbidden,
    go_quote,
    go_strings,
    invalid,
    not_supported,
    required,
    too_long,
)

DRY_RUN_VALUES = ["All"]
FIELD_VALIDATION_VALUES = ["", "Ignore", "Strict", "Warn"]  # sets.List(): sorted
POLICIES = ["Foreground", "Background", "Orphan"]
MAX_FIELD_MANAGER = 128
_INT64 = re.compile(r"[+-]?[0-9]+")


def dry_run(query: MultiMapping[str]) -> bool:
    """A dry run (its values were validated: all ``All``)."""
    return bool(query.getall("dryRun", []))


def field_validation(query: MultiMapping[str]) -> str:
    """The decoder's directive: the ``fieldValidation`` parameter, Warn when empty."""
    return query.get("fieldValidation") or "Warn"


def validate_write(kind: str, query: MultiMapping[str], apply: bool = False) -> None:
    """Raise the 422 of ``kind`` (CreateOptions, UpdateOptions or PatchOptions) when the
    request's query is not valid options for it; ``apply``: a server-side apply patch."""
    causes: list[Cause] = []
    manager = query.get("fieldManager", "")
    if kind == "PatchOptions":
        if not apply and "force" in query:
            causes.append(forbidden("force", "may not be specified for non-apply patch"))
        if apply and not manager:
            causes.append(required("fieldManager", "is required for apply patch"))
    causes.extend(_field_manager(manager))
    causes.extend(_dry_run(query.getall("dryRun", [])))
    value = query.get("fieldValidation", "")
    if value not in FIELD_VALIDATION_VALUES:
        causes.append(not_supported("fieldValidation", value, FIELD_VALIDATION_VALUES))
    if causes:
        raise errors.options_invalid(kind, causes)


def _field_manager(manager: str) -> list[Cause]:
    """``ValidateFieldManager``."""
    causes: list[Cause] = []
    if len(manager) > MAX_FIELD_MANAGER:
        causes.append(too_long("fieldManager", MAX_FIELD_MANAGER))
    causes.extend(invalid("fieldManager", manager,
                          f"invalid character U+{ord(c):04X} (at position {i})")
                  for i, c in enumerate(manager) if not c.isprintable())
    return causes


def _dry_run(values: Any) -> list[Cause]:
    """``ValidateDryRun``: the values must be a subset of {All}."""
    if not values or (isinstance(values, list) and all(v in DRY_RUN_VALUES for v in values)):
        return []
    shown = go_strings(values) if isinstance(values, list) else None
    return [not_supported("dryRun", values, DRY_RUN_VALUES, shown=shown)]


def delete_options(raw: bytes, content_type: str,
                   query: MultiMapping[str]) -> dict[str, Any]:
    """A DELETE's options, validated: from its body if it has one (spaces or ``null`` too:
    :mod:`slicectl.sim.deleteoptions`), else from its query."""
    options = deleteoptions.decode(raw, content_type) if raw else _query_delete_options(query)
    validate_delete(options)
    return options


def query_int64(query: Mapping[str, str], name: str) -> int | None:
    """Query parameter ``name`` as the parameter codec decodes an integer option (Go's
    ``strconv.ParseInt(s, 10, 64)``), None when absent; a 400 with strconv's message when it
    is no int64 (an empty value, spaces, a fraction)."""
    if name not in query:
        return None
    text = query[name]
    if not _INT64.fullmatch(text):
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    if not -2**63 <= int(text) < 2**63:
        raise errors.bad_request(
            f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return int(text)


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """Query parameter ``name`` as the parameter codec decodes a bool option
    (``Convert_Slice_string_To_bool``), None when absent: false only for ``0`` or ``false``
    in any case (Go's ``strings.EqualFold``); anything else, the empty value and ``yes``
    too, is true."""
    if name not in query:
        return None
    text = query[name]
    folded = len(text) == 5 and all(a.casefold() == b
                                    for a, b in zip(text, "false", strict=True))
    return not (text == "0" or folded)


def _query_delete_options(query: MultiMapping[str]) -> dict[str, Any]:
    """DeleteOptions decoded from query parameters, as the parameter codec converts them."""
    options: dict[str, Any] = {}
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = query_int64(query, "gracePeriodSeconds")
    if "orphanDependents" in query:
        options["orphanDependents"] = query_bool(query, "orphanDependents")
    if "dryRun" in query:
        options["dryRun"] = query.getall("dryRun")
    return options


def validate_delete(options: dict[str, Any]) -> None:
    """Raise the 422 of ``ValidateDeleteOptions``."""
    causes: list[Cause] = []
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is not None and policy is not None:
        causes.append(invalid("propagationPolicy", policy,
                              "orphanDependents and deletionPropagation cannot be both set"))
    if policy is not None and policy not in POLICIES:
        causes.append(not_supported("propagationPolicy", policy, [*POLICIES, "nil"]))
    causes.extend(_dry_run(options.get("dryRun")))
    if causes:
        raise errors.options_invalid("DeleteOptions", causes)
