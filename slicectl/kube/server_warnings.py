"""The API server's warnings (``Warning: 299 - "text"`` headers), logged as client-go logs them.

Why: a real API server answers 2xx and still says something is off, in a ``Warning`` header:
a field it dropped (unknown fields, under the default ``fieldValidation=Warn``), a duplicate
owner reference, a deprecated API version, an admission webhook's or a validating policy's
``warn`` action. Nothing else tells the client; client-go's default handler logs every one.
A controller that dropped them would write, for weeks, a field the server throws away.

What it decides: which header values count (client-go's ``ParseWarningHeaders``: code 299,
any agent, a quoted text with backslash escapes, an optional date, several per header,
comma-separated; a malformed value is skipped), and how often one is logged: each distinct
text once per ``REMEMBERED`` texts seen (a write repeated every second would otherwise log
every second), at warning level with the verb and path of the request that drew it.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable

import structlog

_log = structlog.get_logger("slicectl.kube")

REMEMBERED = 256  # distinct warning texts remembered, so each is logged once while it repeats
# one warning-value: code, agent (a token or host[:port]), quoted text, optional quoted date
_VALUE = re.compile(r'\s*(\d{3})\s+(\S+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,|$)')


def parse(header_values: Iterable[str]) -> list[str]:
    """The texts of the 299 warnings in ``header_values`` (each header line as received)."""
    texts: list[str] = []
    for value in header_values:
        pos = 0
        while pos < len(value):
            match = _VALUE.match(value, pos)
            if match is None:
                break  # the rest of this line does not parse: skipped, as client-go skips it
            code, _, text = match.groups()
            if code == "299":
                texts.append(re.sub(r"\\(.)", r"\1", text))
            pos = match.end()
    return texts


class WarningLog:
    """Logs each distinct warning text once while it keeps coming (module docstring)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._redact = redact
        self._seen: OrderedDict[str, None] = OrderedDict()

    def note(self, method: str, path: str, header_values: Iterable[str]) -> None:
        for text in parse(header_values):
            if text in self._seen:
                self._seen.move_to_end(text)
                continue
            self._seen[text] = None
            if len(self._seen) > REMEMBERED:
                self._seen.popitem(last=False)
            _log.warning("api_server_warning", warning=self._redact(text), method=method,
                         path=path)
