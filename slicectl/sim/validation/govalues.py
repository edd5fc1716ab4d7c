"""Values as a Go kube-apiserver sees and prints them in custom-resource validation errors.

Why: custom resources are decoded by Go (``k8s.io/apimachinery/pkg/util/json``: an integer
beyond int64 becomes a float64) and their ``field.Error`` causes print values with ``fmt``
(``%q`` for strings, ``%v`` for numbers, ``%#v`` otherwise), so a duplicate list-map key reads
``map[string]interface {}{"name":"a"}`` and a bound of a million reads ``1e+06``. Clients and
humans read those messages; they must read the same here.

A stored custom resource also goes through Go's JSON once more (encoded for etcd, decoded
back), so an integral float64 within int64 comes back as an int64: ``80.0`` is served as ``80``
(:func:`stored_numbers`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from slicectl.sim.validation.errors import Cause, go_quote

_INT64 = 2**63


def json_type(value: Any) -> str:
    """The JSON type kube-openapi sees (Go decoding: an integer beyond int64 is a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -_INT64 <= value < _INT64 else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def go_float(value: float) -> str:
    """``fmt`` ``%v`` of a float64: shortest digits, exponent form below 1e-4 or from 1e+06."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    point = len(text) + exp  # the decimal point is after this many digits
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        shown = f"{mantissa}e{'-' if point - 1 < 0 else '+'}{abs(point - 1):02d}"
    elif point <= 0:
        shown = "0." + "0" * -point + text
    elif point >= len(text):
        shown = text + "0" * (point - len(text))
    else:
        shown = text[:point] + "." + text[point:]
    return ("-" if sign else "") + shown


def go_value(value: Any, sharp: bool = False) -> str:
    """A value as ``field.Error`` prints it: ``%q`` for strings, ``%v`` numbers, else ``%#v``."""
    if value is None:
        return "interface {}(nil)" if sharp else '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int) and json_type(value) == "integer":
        return str(value)
    if isinstance(value, int | float):
        return go_float(float(value))
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v, True) for v in value) + "}"
    return "map[string]interface {}{" + ", ".join(
        f"{go_quote(k)}:{go_value(v, True)}"
        for k, v in sorted(value.items())) + "}"


def go_cause(reason: str, field: str, value: Any, detail: str) -> Cause:
    """A ``field.Error`` of a value-carrying type (Invalid, TypeInvalid) with ``value`` as Go
    prints it."""
    return {"reason": reason, "message": f"Invalid value: {go_value(value)}: {detail}",
            "field": field}


def stored_numbers(value: Any) -> Any:
    """``value`` after Go's JSON round trip through storage, integral floats within int64 made
    integers (``80.0`` -> ``80``, ``-0.0`` -> ``0``); changed in place where it is a container."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and -_INT64 <= value < _INT64 else value
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, float | dict | list):
                value[key] = stored_numbers(item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, float | dict | list):
                value[i] = stored_numbers(item)
    return value
