"""metav1 ``Time`` and ``MicroTime`` as a real server decodes and re-encodes them.

Why: a built-in object's timestamps go through Go's ``time.Parse`` on the way in and
``MarshalJSON`` on the way out, so what a client reads back is not always what it wrote. The
parse checks ranges, not only the shape (month 13, 30 February, hour 25, second 60 and an offset
hour over 24 are refused); the encoding is UTC, whole seconds for ``Time`` and exactly six
fraction digits for ``MicroTime``, and the zero time is ``null``. The controller's own time
handling lives in :mod:`slicectl.model.timefmt`; this is the server's, kept apart on purpose.
"""

from __future__ import annotations

import datetime as dt
import re

RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d+))?"
                     r"(?:Z|([+-])(\d\d):(\d\d))", re.ASCII)  # Go's \d: ASCII only
"""A ``metav1.Time`` as Go's RFC 3339 parser takes it: date, time, fraction, sign, offset.
Upper-case ``T`` and ``Z`` only: Go's layout matches them literally, though RFC 3339 allows
``t`` and ``z`` (a real server answers ``cannot parse "t10:00:00Z" as "T"``)."""
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)", re.ASCII)
_ZERO = dt.datetime(1, 1, 1, tzinfo=dt.UTC)


class TimeError(ValueError):
    """Go's ``time.ParseError`` text for a value it refuses."""


def _parse(value: str, layout: str) -> dt.datetime | None:
    found = RFC3339.fullmatch(value)
    if found is None:
        raise TimeError(f'parsing time "{value}" as "{layout}": cannot parse')
    date, clock, fraction, sign, off_h, off_m = found.groups()
    year, month, day = (int(p) for p in date.split("-"))
    hour, minute, second = (int(p) for p in clock.split(":"))
    for what, number, limit in (("month", month, 12), ("hour", hour, 23),
                                ("minute", minute, 59), ("second", second, 59)):
        if number > limit or (what == "month" and number < 1):
            raise TimeError(f'parsing time "{value}": {what} out of range')
    if sign and (int(off_h) > 24 or int(off_m) > 60):
        raise TimeError(f'parsing time "{value}": time zone offset hour out of range')
    try:
        stamp = dt.datetime(year, month, day, hour, minute, second,
                            int((fraction or "0")[:6].ljust(6, "0")), tzinfo=dt.UTC)
    except ValueError:
        raise TimeError(f'parsing time "{value}": day out of range') from None
    if sign:
        offset = dt.timedelta(hours=int(off_h), minutes=int(off_m))
        try:
            stamp = stamp - offset if sign == "+" else stamp + offset
        except OverflowError:  # past year 1 or 9999: Go has room, Python not; keep as is
            return None
    return stamp


def go_string(value: str) -> str | None:
    """``time.Time.String()`` in UTC (the server's zone) of a ``Time`` written as ``value``,
    e.g. ``2020-01-01 00:00:00.5 +0000 UTC``, as a field error prints it; None if Go would not
    parse it."""
    try:
        stamp = _parse(value, "2006-01-02T15:04:05Z07:00")
    except TimeError:
        return None
    found = RFC3339.fullmatch(value)
    if stamp is None or found is None:
        return None
    fraction = (found[3] or "")[:9].rstrip("0")
    return (_utc(stamp, micro=False)[:-1].replace("T", " ")
            + (f".{fraction}" if fraction else "") + " +0000 UTC")


def _utc(stamp: dt.datetime, micro: bool) -> str:
    text = (f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}T"
            f"{stamp.hour:02d}:{stamp.minute:02d}:{stamp.second:02d}")
    return f"{text}.{stamp.microsecond:06d}Z" if micro else f"{text}Z"


def stored_time(value: str) -> str | None:
    """A ``metav1.Time`` written as ``value``, as the server stores and returns it."""
    stamp = _parse(value, "2006-01-02T15:04:05Z07:00")
    if stamp is None:
        return value
    return None if stamp == _ZERO else _utc(stamp, micro=False)


def stored_micro_time(value: str) -> str | None:
    """A ``metav1.MicroTime`` (``RFC3339Micro``: six fraction digits, no fewer)."""
    if not _MICRO.fullmatch(value):
        raise TimeError(f'parsing time "{value}" as "{MICRO_LAYOUT}": cannot parse as MicroTime')
    stamp = _parse(value, MICRO_LAYOUT)
    if stamp is None:
        return value
    return None if stamp == _ZERO else _utc(stamp, micro=True)
