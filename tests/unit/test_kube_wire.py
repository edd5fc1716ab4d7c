"""Pure pieces of kube/: paths, request labels, typed errors, watch-line decoding."""

from __future__ import annotations

import errno

import aiohttp
import orjson
import pytest

from slicectl.kube import errors
from slicectl.kube.resources import CRDS, ENDPOINTSLICES, NAMESPACES, NODES, PODS, request_labels
from slicectl.kube.transport import broke_before_answer
from slicectl.kube.watch import WatchEvent, decode_event


def test_resource_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert NODES.path("ignored", "n1") == "/api/v1/nodes/n1"
    assert ENDPOINTSLICES.path("ns") == "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"
    assert CRDS.api_version == "apiextensions.k8s.io/v1"
    with pytest.raises(ValueError):
        PODS.path("ns", None, "status")


@pytest.mark.parametrize(
    ("method", "path", "watch", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", False, ("LIST", "pods")),
        ("GET", "/api/v1/pods", True, ("WATCH", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods/p", False, ("GET", "pods")),
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status", False, ("PATCH", "pods/status")),
        ("GET", "/api/v1/namespaces", False, ("LIST", "namespaces")),
        ("PUT", "/api/v1/namespaces/ns/finalize", False, ("PUT", "namespaces/finalize")),
        ("DELETE", "/api/v1/namespaces/ns", False, ("DELETE", "namespaces")),
        ("POST", "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices", False,
         ("POST", "endpointslices")),
        ("GET", "/version", False, ("GET", "")),
    ],
)
def test_request_labels(method: str, path: str, watch: bool, expected: tuple[str, str]) -> None:
    assert request_labels(method, path, watch) == expected
    assert NAMESPACES.path(name="ns") == "/api/v1/namespaces/ns"


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "Conflict", errors.Conflict),
        (410, "Expired", errors.Gone),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (401, "Unauthorized", errors.Unauthorized),
        (403, "Forbidden", errors.Forbidden),
        (503, "ServiceUnavailable", errors.ServerError),
        (400, "BadRequest", errors.ApiError),
    ],
)
def test_error_for_status(status: int, reason: str, cls: type[errors.ApiError]) -> None:
    body = {"kind": "Status", "code": status, "reason": reason, "message": "m"}
    err = errors.error_for(status, body)
    assert type(err) is cls
    assert (err.status, err.reason, err.message, err.body) == (status, reason, "m", body)


def test_retry_after_from_status_details_when_no_header() -> None:
    body = {"reason": "TooManyRequests", "details": {"retryAfterSeconds": 3}}
    assert errors.error_for(429, body).retry_after == 3.0
    assert errors.error_for(429, body, retry_after=1.0).retry_after == 1.0


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("2", 2.0), ("+3", 3.0), ("0", 0.0), ("-1", 0.0), ("007", 7.0), ("1.5", None),
     ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("nan", None), ("inf", None), ("1e3", None),
     ("", None), (None, None)],
)
def test_retry_after_header_is_read_as_client_go_reads_it(
    header: str | None, seconds: float | None,
) -> None:
    """client-go's ``retryAfterSeconds`` takes what ``strconv.Atoi`` takes: whole seconds,
    maybe signed (a negative wait is no wait); an HTTP-date or anything else is no answer."""
    assert errors.answer_error(429, "Too Many Requests", header, b"").retry_after == seconds
    assert errors.resend_wait(429, header) == seconds
    assert errors.resend_wait(503, header) == seconds


@pytest.mark.parametrize("status", [200, 400, 401, 404, 409, 410, 422])
def test_only_a_429_or_a_5xx_is_resent_on_retry_after(status: int) -> None:
    """client-go's ``checkWait``: a Retry-After on any other answer asks for nothing."""
    assert errors.resend_wait(status, "1") is None
    assert errors.resend_wait(500, None) is None and errors.resend_wait(429, None) is None


def _refused() -> aiohttp.ClientConnectorError:
    key = aiohttp.client_reqrep.ConnectionKey("h", 443, True, True, None, None, None)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(errno.ECONNREFUSED, "no"))


@pytest.mark.parametrize(
    ("exc", "resent"),
    [
        (aiohttp.ServerDisconnectedError(), True),  # closed before the answer: an early EOF
        (aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer"), True),
        (_refused(), False),  # nobody listens: the server is down, not going away
        (aiohttp.ClientOSError(errno.EHOSTUNREACH, "No route to host"), False),
        (aiohttp.ClientPayloadError("Response payload is not completed"), False),  # body cut
        (TimeoutError(), False),
    ],
)
def test_a_get_is_resent_after_the_breaks_client_go_resends_it_after(
    exc: BaseException, resent: bool,
) -> None:
    """client-go's ``request`` resends a GET on ``IsConnectionReset`` or ``IsProbableEOF`` of
    ``client.Do``'s error, not on a refused connection, a timeout or a body read error."""
    assert broke_before_answer(exc) is resent


def test_decode_event_kinds() -> None:
    bad: list[str] = []

    def on_bad(line: bytes, why: str) -> None:
        bad.append(why)

    line = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "x"}}})
    assert decode_event(line + b"\n", on_bad) == WatchEvent("ADDED", {"metadata": {"name": "x"}})
    assert decode_event(b"\n", on_bad) is None
    assert decode_event(b"{not json\n", on_bad) is None
    assert decode_event(b"[1,2]\n", on_bad) is None
    assert decode_event(b'{"type":"WHAT","object":{}}\n', on_bad) is None
    assert decode_event(b'{"type":"ADDED","object":"str"}\n', on_bad) is None
    assert len(bad) == 4
    gone = orjson.dumps({"type": "ERROR", "object": {"code": 410, "reason": "Expired"}})
    with pytest.raises(errors.Gone):
        decode_event(gone, on_bad)
    other = orjson.dumps({"type": "ERROR", "object": {"code": 500, "message": "boom"}})
    with pytest.raises(errors.ServerError):
        decode_event(other, on_bad)
