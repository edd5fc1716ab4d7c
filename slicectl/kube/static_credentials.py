"""Credentials that need no plugin: a kubeconfig user's ``token``, ``tokenFile`` or
``username``/``password``, and a bearer token kept in a file that something else rotates (a
pod's projected service-account token, renewed by the kubelet about hourly; a ``tokenFile``).

A token file is read as client-go's ``cachingFileTokenSource`` reads it: at once, whitespace
trimmed (``echo $TOKEN > file`` leaves a newline, which no header may carry), again once the
last read is a minute old, and again on demand (after a 401). A read that fails after the first
keeps the last token, with a warning: the server says whether it still works, and a file being
remounted is briefly absent.
"""

from __future__ import annotations

import base64
import math
import time
from dataclasses import dataclass

import structlog

_log = structlog.get_logger("slicectl.kube")
REREAD_AFTER = 60.0  # seconds a read token is used before the file is read again


class TokenFileError(Exception):
    """The token file cannot be read, or holds no token."""


class TokenFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self._token = ""
        self._read_at = -math.inf
        self.read()

    def read(self) -> None:
        """Read the file now: it must exist and hold a token."""
        try:
            with open(self.path, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise TokenFileError(f"cannot read the token file {self.path}: {reason}") from None
        if not token:
            raise TokenFileError(f"the token file {self.path} is empty")
        self._token, self._read_at = token, time.monotonic()

    def reread(self) -> None:
        """Read the file again; if that fails, keep the last token until the next try."""
        try:
            self.read()
        except TokenFileError as exc:
            _log.warning("token file not re-read; the last token is kept", error=str(exc))
            self._read_at = time.monotonic()

    def current(self) -> str:
        """The token, from a read at most :data:`REREAD_AFTER` seconds old."""
        if time.monotonic() - self._read_at >= REREAD_AFTER:
            self.reread()
        return self._token


@dataclass(frozen=True)
class StaticCredential:
    """A kubeconfig user's static credential, as client-go sends it: the token file's token
    (it wins over ``token``), else the token, else basic auth (a password may be empty)."""

    token: str = ""
    token_file: TokenFile | None = None
    basic: tuple[str, str] | None = None

    def header(self) -> str | None:
        """The ``Authorization`` header value, None if there is nothing to send."""
        if self.token_file is not None:
            return f"Bearer {self.token_file.current()}"
        if self.token:
            return f"Bearer {self.token}"
        if self.basic is not None:
            pair = f"{self.basic[0]}:{self.basic[1]}".encode()
            return f"Basic {base64.b64encode(pair).decode()}"
        return None
