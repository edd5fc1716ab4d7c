"""Status causes phrased like ``k8s.io/apimachinery/pkg/util/validation/field`` errors.

Why: clients match on a cause's ``reason``/``field`` and humans read its ``message``; both must
read as a real kube-apiserver's. ``message`` is ``field.Error.ErrorBody()`` (the text after the
field path), e.g. ``Invalid value: "1.2.3": must be a valid IPv4 address``.
"""

from __future__ import annotations

import json
from typing import Any

Cause = dict[str, str]


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``): printable characters kept, the rest escaped as
    ``\\n``, ``\\x01``, ``\\u00a0`` or ``\\U0001f600``; a lone surrogate, which Go's decoder
    would have made U+FFFD, as that."""
    out = []
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        elif char.isprintable():  # Go's unicode.IsPrint: no separators but ' ', no controls
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def show(value: Any) -> str:
    """A value as Go's ``%#v`` roughly prints it: strings as ``%q`` quotes them, numbers
    bare."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return '"null"'
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def invalid(field: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {show(value)}: {detail}",
            "field": field}


def invalid_printed(field: str, printed: str, detail: str) -> Cause:
    """An Invalid cause whose value is already printed as Go prints it (a struct, say)."""
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {printed}: {detail}",
            "field": field}


def required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return {"reason": "FieldValueRequired", "message": message, "field": field}


def go_strings(values: list[Any]) -> str:
    """A ``[]string`` as Go's ``%#v`` prints it: ``[]string{"a", "b"}``."""
    return "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def not_supported(field: str, value: Any, supported: list[str], shown: str | None = None) -> Cause:
    """``shown``: the value as the message prints it, when :func:`show` would not (a list)."""
    allowed = ", ".join(json.dumps(s) for s in supported)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {shown or show(value)}: supported values: {allowed}",
            "field": field}


def too_many(field: str, actual: int, limit: int) -> Cause:
    return {"reason": "FieldValueTooMany",
            "message": f"Too many: {actual}: must have at most {limit} items", "field": field}


def too_long(field: str, limit: int, unit: str = "bytes") -> Cause:
    return {"reason": "FieldValueTooLong",
            "message": f"Too long: may not be more than {limit} {unit}", "field": field}


def duplicate(field: str, value: Any) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {show(value)}",
            "field": field}


def duplicate_printed(field: str, printed: str) -> Cause:
    """A Duplicate cause whose value is already printed as Go prints it (a struct, say)."""
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {printed}",
            "field": field}


def internal(field: str, detail: str) -> Cause:
    return {"reason": "InternalError", "message": f"Internal error: {detail}", "field": field}


def forbidden(field: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}
