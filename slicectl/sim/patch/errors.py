"""Why a patch is refused: the exceptions of :mod:`slicectl.sim.patch`, which the request
handlers turn into the Status a real server answers (their own module so that every kind of
patch can raise them)."""

from __future__ import annotations

from typing import Any

# evanphx/json-patch's and patch.go's 422 for a patch that cannot be applied
INVALID = "the server rejected our request due to an error in our request"


class PatchError(Exception):
    """A patch the server rejects: ``code`` is the HTTP status, ``reason`` the Status reason."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


class UndecodablePatch(Exception):
    """A patch whose result is no object: patch.go's 422 on the field ``patch`` with
    ``value`` and ``why``."""

    def __init__(self, value: Any, why: str) -> None:
        super().__init__(why)
        self.value = value
        self.why = why
