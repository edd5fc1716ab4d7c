"""Structured logging: one structlog pipeline for slicectl's logs and every library's.

Decisions:

* Format ``json`` writes one JSON object per line (what log collectors in a container want);
  ``console`` a readable, coloured line for a terminal; ``auto`` picks console when stderr is
  a TTY, else JSON.
* Timestamps are ISO 8601 in UTC.
* The standard ``logging`` module (aiohttp, asyncio, kubernetes_asyncio, and our modules that
  use ``logging.getLogger``) goes through structlog's ``ProcessorFormatter``, so every line on
  stderr has the same shape.
* Secrets never reach the output: :func:`redact_secrets` replaces values of keys that look like
  credentials (token, authorization, password, secret, ...) and ``Bearer ...`` strings anywhere
  in the event text or string values.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

LogFormat = Literal["json", "console", "auto"]

REDACTED = "[REDACTED]"
_SECRET_KEY = re.compile(
    r"(token|authorization|password|passwd|secret|bearer|api[-_]?key|client[-_]?key|cookie)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
# Noisy libraries kept at WARNING unless the user asked for DEBUG.
QUIET_LOGGERS = ("aiohttp.access", "asyncio", "kubernetes_asyncio")


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", value)
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else _scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(_scrub(v) for v in value)
    return value


def redact_secrets(_logger: WrappedLogger, _method: str, event_dict: EventDict) -> EventDict:
    """structlog processor: blank credential-like keys and Bearer/Basic values, recursively."""
    for key, value in list(event_dict.items()):
        if _SECRET_KEY.search(key):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = _scrub(value)
    return event_dict


def _render_stdlib_message(
    logger: WrappedLogger, method: str, event_dict: EventDict
) -> EventDict:
    """Run before redaction so stdlib ``%``-args are merged into the text that gets scrubbed."""
    return structlog.stdlib.PositionalArgumentsFormatter()(logger, method, event_dict)


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        _render_stdlib_message,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        redact_secrets,
    ]


def _renderer(fmt: LogFormat) -> Processor:
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    if fmt == "console":
        return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    return structlog.processors.JSONRenderer(sort_keys=False)


def configure_logging(
    level: str = "info", fmt: LogFormat = "auto", stream: Any = None
) -> None:
    """Set up structlog and route the stdlib root logger through it (idempotent).

    ``stream`` defaults to stderr; tests pass a StringIO.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    shared = _shared_processors()
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _renderer(fmt),
        ],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    quiet = numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

