"""Logging: JSON lines that parse, secrets redacted, stdlib records in the same format."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import structlog

from slicectl.obs.logging import QUIET_LOGGERS, REDACTED, LogFormat, configure_logging


@contextmanager
def captured(level: str, fmt: LogFormat) -> Iterator[io.StringIO]:
    """Configure logging into a buffer, then put the root logger back as it was."""
    buf = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    libraries = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    try:
        configure_logging(level, fmt, stream=buf)
        yield buf
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for name, was in libraries.items():
            logging.getLogger(name).setLevel(was)
        structlog.reset_defaults()


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    with captured("debug", "json") as buf:
        yield buf


def lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_structlog_lines_are_json_with_iso_timestamp(out: io.StringIO) -> None:
    structlog.get_logger("slicectl.test").info("synced", selector="ns/a", writes=2)
    [line] = lines(out)
    assert line["event"] == "synced"
    assert line["selector"] == "ns/a" and line["writes"] == 2
    assert line["level"] == "info" and line["logger"] == "slicectl.test"
    assert isinstance(line["timestamp"], str) and line["timestamp"].endswith("Z")


def test_secrets_are_redacted(out: io.StringIO) -> None:
    structlog.get_logger().warning(
        "request with Authorization: Bearer abc.def-ghi",
        token="s3cr3t",
        headers={"Authorization": "Bearer zzz", "Accept": "application/json"},
        client_key_data="PEM",
    )
    [line] = lines(out)
    text = json.dumps(line)
    for secret in ("abc.def-ghi", "s3cr3t", "zzz", "PEM"):
        assert secret not in text
    assert line["token"] == REDACTED
    assert line["headers"] == {"Authorization": REDACTED, "Accept": "application/json"}
    assert line["event"] == f"request with Authorization: Bearer {REDACTED}"


def test_stdlib_logs_are_routed_through_structlog(out: io.StringIO) -> None:
    logging.getLogger("kubernetes_asyncio.client").warning("token %s", "Bearer tkn123")
    logging.getLogger("slicectl.kube").debug("got %d items", 3)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("aiohttp.server").exception("handler failed")
    first, second, third = lines(out)
    assert first["logger"] == "kubernetes_asyncio.client" and first["level"] == "warning"
    assert "tkn123" not in str(first["event"])
    assert second["event"] == "got 3 items" and second["level"] == "debug"
    assert third["level"] == "error" and "RuntimeError: boom" in str(third["exception"])


def test_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError):
        configure_logging("loud", "json", stream=io.StringIO())


def test_console_format_is_not_json() -> None:
    with captured("info", "console") as buf:
        structlog.get_logger().info("hello", password="hunter2")
        logging.getLogger("slicectl.debug").debug("hidden at info level")
    text = buf.getvalue()
    assert "hello" in text and "hunter2" not in text and REDACTED in text
    assert "hidden" not in text
    assert not text.lstrip().startswith("{")


def test_noisy_libraries_are_quiet_unless_debug_is_asked_for() -> None:
    """aiohttp, asyncio and kubernetes_asyncio stay at WARNING at the info level, and speak
    at the debug level: someone who asks for debug logs is chasing a problem down there."""
    library = logging.getLogger("asyncio")
    with captured("info", "json"):
        assert library.getEffectiveLevel() == logging.WARNING
    with captured("debug", "json"):
        assert library.getEffectiveLevel() == logging.DEBUG
