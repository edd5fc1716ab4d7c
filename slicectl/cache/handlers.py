"""What an informer tells: the handler protocol, a fan-out to several handlers, the counters.

An informer calls its handler inline with the watch stream, so handlers must be synchronous and
cheap; one that raises is logged and never stops the stream. :class:`FanOut` gives several
consumers one informer (one watch, one store), each consumer isolated from the others'
failures. :class:`InformerStats` is what the informer counts for ``obs/`` to export.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import structlog

_log = structlog.get_logger()


class Versioned(Protocol):
    @property
    def resource_version(self) -> str: ...


T_contra = TypeVar("T_contra", contravariant=True)


class InformerHandler(Protocol[T_contra]):
    def on_add(self, new: T_contra) -> None: ...
    def on_update(self, old: T_contra, new: T_contra) -> None: ...
    def on_delete(self, old: T_contra) -> None: ...


class FanOut(Generic[T_contra]):
    """Several handlers behind one: each sees every event, in order; one failing is logged and
    does not keep the event from the others."""

    def __init__(self, *handlers: InformerHandler[T_contra]) -> None:
        self._handlers = handlers

    def on_add(self, new: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_add, new)

    def on_update(self, old: T_contra, new: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_update, old, new)

    def on_delete(self, old: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_delete, old)


def _guarded(callback: Callable[..., None], *args: Any) -> None:
    try:
        callback(*args)
    except Exception:
        _log.exception("informer_handler_failed", handler=repr(callback))


@dataclass
class InformerStats:
    """Plain counters for obs/ to export; the informer only ever increments them."""

    events: dict[str, int] = field(default_factory=dict)  # by watch event type
    lists: int = 0  # every completed LIST, the first included
    relists: int = 0  # LISTs after the first (410, ERROR events, API errors)
    parse_errors: int = 0
    watches: int = 0  # watch requests started (streamed lists included)
    streamed_lists: int = 0  # lists that came as a stream of initial events (WatchList)
    stalls: int = 0  # watches ended by the inactivity watchdog
    failures: int = 0  # connection or API errors that caused a backoff
    consecutive_failures: int = 0  # since the last successful list or watch; liveness reads it
