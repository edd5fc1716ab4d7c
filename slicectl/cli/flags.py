"""Flag value types shared by the subcommands: durations, bounded integers, booleans.

kube-controller-manager style flags take Go durations (``100ms``, ``10s``, ``1m30s``) and
``--flag=true|false`` booleans; a bad value must fail with a one-line reason and exit code 2,
which argparse does when a type function raises ``ArgumentTypeError``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from slicectl.controller.batching import STREAM_MAX_WINDOW
from slicectl.model.parse.common import dns_label_error
from slicectl.obs.health import parse_bind_address

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``1h2m3.5s``, ``250ms``, ``0``) in seconds."""
    value = text.strip()
    if value in ("0", "+0", "-0"):
        return 0.0
    pos, total = 0, 0.0
    while pos < len(value):
        m = _DURATION_PART.match(value, pos)
        if not m:
            raise argparse.ArgumentTypeError(
                f"invalid duration {text!r}: use a number with a unit, e.g. 100ms, 10s, 1m30s"
            )
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not value:
        raise argparse.ArgumentTypeError("invalid duration '': empty")
    return total


def duration(minimum: float = 0.0, *, strictly_positive: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        seconds = parse_duration(text)
        if seconds < minimum or (strictly_positive and seconds <= 0):
            bound = "greater than 0" if strictly_positive else f"at least {minimum}s"
            raise argparse.ArgumentTypeError(f"duration {text!r} must be {bound}")
        return seconds

    return parse


def namespace_name(text: str) -> str:
    """A namespace name (an RFC 1123 label). The API server answers a list in a namespace that
    cannot exist with an empty list, and an empty name means every namespace to the client."""
    if dns_label_error(text):
        raise argparse.ArgumentTypeError(
            f"invalid namespace {text!r}: must be a lowercase RFC 1123 label of at most 63 "
            "characters")
    return text


def int_between(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: must be {low}..{high}")
        return value

    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < math.inf:  # nan compares false too
        raise argparse.ArgumentTypeError(f"{text} must be a finite number greater than 0")
    return value


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "t", "yes"):
        return True
    if lowered in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean: use true or false")


def bind_address(text: str) -> str:
    """``host:port``, ``:port`` or ``0`` (off), checked before anything starts."""
    try:
        parse_bind_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


LOG_LEVELS = ("debug", "info", "warning", "error")


def add_packing_flags(p: argparse.ArgumentParser) -> None:
    """The slice-shaping flags ``slicectl run`` and ``slicectl demo`` share."""
    p.add_argument("--max-endpoints-per-slice", metavar="N", type=int_between(1, 1000),
                   default=100, help="maximum endpoints per EndpointSlice (1..1000)")
    p.add_argument("--batch-period", metavar="DURATION", type=duration(), default=0.1,
                   help="batching window of a selector: a change to a selector quiet that "
                        "long, or an isolated change, is synced at once; a burst waits for "
                        "the window's end")
    p.add_argument("--max-batch-period", metavar="DURATION", type=duration(),
                   default=STREAM_MAX_WINDOW,
                   help="the longest a selector's window grows to while it keeps gaining pods "
                        "(a scale-up, a new Deployment) and shares --kube-api-qps with the "
                        "others doing so: how long such pods may wait when many grow at "
                        "once; at or below --batch-period the window never grows")
