"""Warning headers as client-go's ParseWarningHeaders reads them, and each logged once."""

from __future__ import annotations

import pytest
import structlog

from slicectl.kube.server_warnings import REMEMBERED, WarningLog, parse


@pytest.mark.parametrize(("values", "texts"), [
    (['299 - "unknown field \\"spec.x\\""'], ['unknown field "spec.x"']),
    (['299 - "a, b", 299 kube-apiserver:6443 "c"'], ["a, b", "c"]),  # commas inside a text
    (['299 - "a"', '299 - "b"'], ["a", "b"]),  # one header line each
    (['299 - "dated" "Sat, 28 Nov 2026 10:00:00 GMT"'], ["dated"]),
    (['199 - "not 299", 299 - "kept"'], ["kept"]),
    (['299 - "back\\\\slash"'], ["back\\slash"]),
    (['299 - unquoted, 299 - "after"'], []),  # the rest of a malformed line is skipped
    (["", "garbage", '299 - "ok"'], ["ok"]),
    (['299 - ""'], [""]),
])
def test_parse(values: list[str], texts: list[str]) -> None:
    assert parse(values) == texts


def test_each_text_is_logged_once_while_it_repeats() -> None:
    log = WarningLog(lambda text: text.replace("s3cret", "REDACTED"))
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            log.note("PUT", "/p", ['299 - "dropped field"', '299 - "token s3cret"'])
        for i in range(REMEMBERED):  # the first texts are forgotten ...
            log.note("PUT", "/p", [f'299 - "other {i}"'])
        log.note("PUT", "/p", ['299 - "dropped field"'])  # ... and said again
    said = [e["warning"] for e in logs]
    assert said[:2] == ["dropped field", "token REDACTED"]
    assert said[-1] == "dropped field" and len(said) == 2 + REMEMBERED + 1
    assert logs[0]["log_level"] == "warning" and logs[0]["path"] == "/p"
