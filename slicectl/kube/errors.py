"""Typed API errors: one exception class per outcome a caller has to tell apart.

The API server answers a failure with a ``Status`` object (``reason``, ``message``, ``code``).
Callers branch on the class, not on numbers: a 409 ``AlreadyExists`` (a create raced another)
is not a 409 ``Conflict`` (a stale resourceVersion precondition), and a 410 means "relist",
whether it came as an HTTP status or as an ``ERROR`` event inside a watch stream.

:class:`WatchStalled` is a :class:`TimeoutError`, not an :class:`ApiError`: no response says
anything went wrong, the stream just went quiet. The fix is to watch again from the last
resourceVersion, which an informer does without relisting.

:func:`answer_error` reads a failed HTTP answer into its typed error, and :func:`redacted`
takes the credential out of one (a proxy may echo the ``Authorization`` header back).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

_SECONDS = re.compile(r"[+-]?[0-9]+")  # what strconv.Atoi takes


class ApiError(Exception):
    """A non-2xx answer from the API server (or an ``ERROR`` watch event)."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    def has_cause(self, reason: str) -> bool:
        """The answer's ``details.causes`` name ``reason`` (a ``StatusCause``'s ``reason``)."""
        details = (self.body or {}).get("details")
        causes = details.get("causes") if isinstance(details, Mapping) else None
        return isinstance(causes, list) and any(
            isinstance(c, Mapping) and c.get("reason") == reason for c in causes)


class NotFound(ApiError):
    """404."""


class Conflict(ApiError):
    """409 with reason ``Conflict``: a resourceVersion precondition or update conflict."""


class AlreadyExists(ApiError):
    """409 with reason ``AlreadyExists``: a create of a name that is taken."""


class Gone(ApiError):
    """410 (reason ``Expired`` or ``Gone``): the resourceVersion or continue token is too old."""


class Invalid(ApiError):
    """422: the object failed validation."""


class TooManyRequests(ApiError):
    """429: the request was not processed; ``retry_after`` says when to come back."""


class Unauthorized(ApiError):
    """401."""


class Forbidden(ApiError):
    """403."""


NAMESPACE_TERMINATING = "NamespaceTerminating"
"""The cause of a 403 to a create in a namespace being deleted (upstream's
``corev1.NamespaceTerminatingCause``)."""


class ServerError(ApiError):
    """5xx."""


class WatchStalled(TimeoutError):
    """No byte arrived on a watch stream for longer than its inactivity timeout."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for(
    status: int, body: Any, retry_after: float | None = None, fallback_message: str = ""
) -> ApiError:
    """Build the typed error for an HTTP status and its (possibly non-Status) decoded body."""
    status_body = body if isinstance(body, dict) else None
    reason = message = ""
    if status_body is not None:
        reason = str(status_body.get("reason") or "")
        message = str(status_body.get("message") or "")
        details = status_body.get("details")
        if retry_after is None and isinstance(details, Mapping):
            seconds = details.get("retryAfterSeconds")
            if isinstance(seconds, int | float) and seconds > 0:
                retry_after = float(seconds)
    message = message or fallback_message
    cls: type[ApiError]
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, message, status_body, retry_after)


def retry_after_seconds(header: str | None) -> float | None:
    """A ``Retry-After`` header's wait, read as client-go's ``retryAfterSeconds`` reads it
    (``strconv.Atoi``): whole seconds, maybe signed (a negative wait is none); None when absent
    or anything else (an HTTP-date, a fraction)."""
    if header is None or not _SECONDS.fullmatch(header):
        return None
    return max(0.0, float(int(header)))


def resend_wait(status: int, retry_after: str | None) -> float | None:
    """client-go's ``checkWait``: the seconds to wait before sending a request again when its
    answer asks for that, a 429 or any 5xx with a ``Retry-After`` in seconds; None when it does
    not (the request is not resent: its caller decides)."""
    if status != 429 and status < 500:
        return None
    return retry_after_seconds(retry_after)


def answer_error(status: int, reason: str | None, retry_after: str | None, raw: bytes
                 ) -> ApiError:
    """The typed error of a failed HTTP answer: its status, reason phrase, ``Retry-After``
    header and body (a ``Status``, or else text whose start becomes the message)."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = None
    seconds = retry_after_seconds(retry_after)
    text = raw[:200].decode("utf-8", "replace") if body is None else reason or ""
    return error_for(status, body, seconds, text)


def redacted(error: ApiError, redact: Callable[[str], str]) -> ApiError:
    """The same error with ``redact`` applied to every text it carries."""
    text = str(error)
    if redact(text) == text and redact(repr(error.body)) == repr(error.body):
        return error
    body = error.body
    if body is not None:
        body = orjson.loads(redact(orjson.dumps(body).decode()))
    return type(error)(error.status, redact(error.reason), redact(error.message), body,
                       error.retry_after)
