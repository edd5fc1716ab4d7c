"""The raw Kubernetes REST client: JSON dicts in and out over one pooled aiohttp session.

It decides the wire behaviour every caller shares: the client-side rate limit (one
:class:`~slicectl.kube.ratelimit.RequestLimit`; a watch takes one token for its initial
request, and one for each resend), typed errors, resends (below), one credential refresh and
retry on a 401, lists streamed page by page (what a LIST asks is
:mod:`slicectl.kube.paging`'s), and watch streams read line by line with an inactivity
watchdog (:mod:`slicectl.kube.watch`).

Resends, as client-go's ``rest.Request`` makes them, at most ``MAX_RESENDS`` of one request (a
watch's too, until its stream begins), each through the rate limiter and reported to the
``on_retry`` hook (client-go counts its retries): where the server asks for one (a 429 or any
5xx with a ``Retry-After`` in seconds: sleep for it, at most ``MAX_RETRY_AFTER``, for every
verb, as ``checkWait``; a 5xx without it is the caller's to retry), and a GET 1 s after its
connection was reset or closed before the answer (client-go resends only GETs so: a write may
have been applied).

Connection failures are not wrapped: callers see ``aiohttp.ClientError`` / ``OSError`` /
``TimeoutError``. A stalled watch raises :class:`~slicectl.kube.errors.WatchStalled`.

Writes can carry a ``guard``: a callable run right before each send (after the rate-limiter
wait, and again before every resend) that raises to stop the request, so a write that had
to wait is never sent once the caller may no longer write (leader election).

The server's ``Warning`` headers are logged, each text once while it repeats
(:mod:`slicectl.kube.server_warnings`). The credential never leaves the client in text: error
messages built from a server's answer (a proxy may echo the ``Authorization`` header), logged
warnings and logged watch lines are redacted.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from importlib import metadata
from types import TracebackType
from typing import Any, Literal, Self

import aiohttp
import orjson

from slicectl.kube.answers import Answers
from slicectl.kube.config import Connection, load_connection
from slicectl.kube.errors import (
    ApiError,
    Unauthorized,
    WatchStalled,
    answer_error,
    redacted,
    resend_wait,
)
from slicectl.kube.lean import decode_body
from slicectl.kube.paging import ListPage, collect, read_pages, selectors
from slicectl.kube.ratelimit import RateLimitHook, RequestLimit
from slicectl.kube.resources import Resource, request_labels
from slicectl.kube.server_warnings import WarningLog
from slicectl.kube.transport import Transport, broke_before_answer
from slicectl.kube.watch import MAX_LINE_BYTES, LineDecoder, WatchEvent, read_lines

RequestHook = Callable[[str, str, int, float], None]  # (verb, resource, status or 0, seconds)
RetryHook = Callable[[str, str, int], None]  # (verb, resource, status or 0): to be resent
Guard = Callable[[], None]  # raises to stop a request before it is sent

MAX_RESENDS = 10  # client-go's maxRetries: resends of one request the server asked for
MAX_RETRY_AFTER = 60.0  # seconds: the longest Retry-After obeyed (a proxy may say an hour)
RESEND_AFTER_BREAK = 1.0  # seconds before a GET whose connection broke goes again (client-go's)
_JSON = "application/json"
_META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_META_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


def _version() -> str:
    try:
        return metadata.version("slicectl")
    except metadata.PackageNotFoundError:
        return "dev"


@dataclass(frozen=True)
class ClientSettings:
    qps: float = 50.0
    burst: int = 100
    request_timeout: float = 30.0
    user_agent: str = f"slicectl/{_version()}"


class KubeClient:
    def __init__(
        self, conn: Connection, settings: ClientSettings, on_request: RequestHook | None,
        on_rate_limit: RateLimitHook | None = None, on_retry: RetryHook | None = None,
    ) -> None:
        self._conn = conn
        self._settings = settings
        self._on_request = on_request
        self._on_retry = on_retry
        self._limit = RequestLimit(settings.qps, settings.burst, on_rate_limit)
        self._timeout = aiohttp.ClientTimeout(total=settings.request_timeout)
        self._transport = Transport(conn, settings.user_agent)
        self._lines = LineDecoder(conn.redact)
        self._warnings = WarningLog(conn.redact)
        self.answers = Answers()  # whether the server answers: ends outage backoffs early

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        settings: ClientSettings = ClientSettings(),
        on_request: RequestHook | None = None,
        *,
        on_rate_limit: RateLimitHook | None = None,
        on_retry: RetryHook | None = None,
        insecure_skip_tls_verify: bool = False, disable_compression: bool = False,
    ) -> Self:
        conn = await load_connection(kubeconfig, context,
                                     insecure_skip_tls_verify=insecure_skip_tls_verify,
                                     disable_compression=disable_compression)
        return cls(conn, settings, on_request, on_rate_limit, on_retry)

    def sibling(self, settings: ClientSettings, on_request: RequestHook | None = None,
                on_retry: RetryHook | None = None) -> KubeClient:
        """Another client on the same connection (server, TLS, credential and its renewals)
        with its own rate limit, timeouts and connections: leader election's, so that a
        renewal never queues behind the controller's writes for a token, as
        kube-controller-manager gives its elector a client of its own."""
        return KubeClient(self._conn, settings, on_request, on_retry=on_retry)

    def __repr__(self) -> str:
        return f"KubeClient({self._conn!r})"

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", res.path(namespace, name, subresource))
        return result

    async def list(
        self, res: Resource, namespace: str | None = None, *,
        label_selector: str | None = None, field_selector: str | None = None,
        limit: int | None = 500, metadata_only: bool = False,
    ) -> tuple[list[dict[str, Any]], str]:
        """All items (following continue tokens) and the list's resourceVersion.

        Holds the whole list: for small lists only. Informers use :meth:`list_pages`.
        """
        return await collect(self.list_pages(
            res, namespace, label_selector=label_selector, field_selector=field_selector,
            limit=limit, metadata_only=metadata_only,
        ))

    def list_pages(
        self, res: Resource, namespace: str | None = None, *,
        label_selector: str | None = None, field_selector: str | None = None,
        limit: int | None = 500, metadata_only: bool = False,
        resource_version: str | None = None, resource_version_match: str | None = None,
    ) -> AsyncGenerator[ListPage, None]:
        """One LIST, page by page, holding one page at a time.

        ``resource_version="0"`` (any state) or a version with ``resource_version_match=
        "NotOlderThan"`` lets the server answer from its watch cache, as client-go's reflector
        asks; unset is a consistent read from etcd. Continue requests carry neither (the token
        pins the snapshot). When a continue token expires, the list starts over from the first
        page, still paginated (``restarted`` is set on that page: drop what the earlier pages
        said); after a few expiries :class:`Gone` is raised. There is no unpaginated fallback.
        """
        params = selectors(label_selector, field_selector)
        if resource_version is not None:
            params["resourceVersion"] = resource_version
            if resource_version_match:
                params["resourceVersionMatch"] = resource_version_match
        headers = {"Accept": _META_LIST if metadata_only else _JSON}
        path = res.path(namespace)

        async def fetch(query: dict[str, str]) -> bytes:
            raw: bytes = await self.request("GET", path, params=query, headers=headers,
                                            raw_body=True)
            return raw

        return read_pages(fetch, params, limit)

    async def watch(
        self, res: Resource, namespace: str | None = None, *, resource_version: str,
        label_selector: str | None = None, field_selector: str | None = None,
        timeout_seconds: int | None = None, allow_bookmarks: bool = True,
        metadata_only: bool = False, inactivity_timeout: float | None = None,
        send_initial_events: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Stream events until the server ends the watch (then return normally).

        With ``send_initial_events`` (a streaming list, WatchList), the state not older than
        ``resource_version`` comes first as ADDED events, then a BOOKMARK annotated
        ``k8s.io/initial-events-end``. Raises Gone on an ERROR event with code 410, the typed
        ApiError for other ERROR events or a failed request (Invalid when a server does not
        stream lists), and WatchStalled when nothing arrives for ``inactivity_timeout``.
        """
        params = selectors(label_selector, field_selector)
        params["watch"] = "true"
        params["resourceVersion"] = resource_version
        if send_initial_events:
            params["sendInitialEvents"] = "true"
            params["resourceVersionMatch"] = "NotOlderThan"
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        headers = {"Accept": _META_ONE if metadata_only else _JSON}
        path = res.path(namespace)
        resp = await self._open_watch(path, params, headers, inactivity_timeout)
        async with resp:
            reads = read_lines(resp.content, path, inactivity_timeout)
            async with contextlib.aclosing(reads):
                async for lines in reads:
                    since = time.monotonic()
                    for i, line in enumerate(lines):
                        if i % 32 == 31 and time.monotonic() - since > 0.005:
                            await asyncio.sleep(0)  # a backlog of events must not stall the loop
                            since = time.monotonic()
                        if (event := self._lines.decode(line)) is not None:
                            yield event
                    del lines  # a quiet watch waits for its next read holding none of them

    async def _open_watch(
        self, path: str, params: dict[str, str], headers: dict[str, str],
        inactivity_timeout: float | None,
    ) -> aiohttp.ClientResponse:
        """The watch's 2xx answer, its stream yet unread; sent again, the same, where the
        server asks for that (a 429 or 5xx with a ``Retry-After``), as client-go's ``Watch``
        does, else the answer's typed error (resending the watch is the caller's then)."""
        limits = aiohttp.ClientTimeout(
            total=None, sock_connect=self._settings.request_timeout, sock_read=inactivity_timeout
        )
        resent = 0
        while True:
            await self._limit.take(False)
            session = await self._transport.authorize(headers)
            started = time.monotonic()
            try:
                resp = await session.get(
                    self._conn.host + path, params=params, headers=headers, timeout=limits,
                    read_bufsize=MAX_LINE_BYTES // 2, **self._transport.options(),
                )
            except TimeoutError as exc:
                self._report("GET", path, True, 0, started)
                raise WatchStalled(
                    f"no response to watch {path} in {inactivity_timeout}s") from exc
            except aiohttp.ClientError as exc:
                self._report("GET", path, True, 0, started)
                if isinstance(exc, aiohttp.ClientSSLError):
                    self._conn.tls_refused()
                raise
            self._report("GET", path, True, resp.status, started)
            self._warnings.note("WATCH", path, resp.headers.getall("Warning", ()))
            if resp.status < 300:
                return resp
            async with resp:
                error = await self._error(resp)
                wait = resend_wait(resp.status, resp.headers.get("Retry-After"))
            if wait is not None and resent < MAX_RESENDS:
                resent += 1
                await self._resend_after("GET", path, True, resp.status, wait)
                continue
            if isinstance(error, Unauthorized):  # the caller's next watch gets a new one
                await self._conn.refresh(headers.get("Authorization"))
            raise error

    async def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None, *,
        background: bool = False, guard: Guard | None = None, prepaid: bool = False,
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "POST", res.path(namespace), json=body, background=background, guard=guard,
            prepaid=prepaid)
        return result

    async def patch(
        self, res: Resource, name: str, patch: dict[str, Any] | builtins.list[Any],
        namespace: str | None = None, *, subresource: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        field_manager: str | None = None, background: bool = False, guard: Guard | None = None,
        prepaid: bool = False, metadata_only: bool = False,
    ) -> dict[str, Any]:
        """Apply ``patch``; the patched object, or with ``metadata_only`` only its
        PartialObjectMetadata (kube-apiserver answers any write in the form Accept asks for,
        as client-go's metadata client asks: the answer is then a few hundred bytes however
        large the object)."""
        params = {"fieldManager": field_manager} if field_manager else None
        result: dict[str, Any] = await self.request(
            "PATCH", res.path(namespace, name, subresource), params=params, json=patch,
            content_type=_PATCH_TYPES[patch_type], background=background, guard=guard,
            prepaid=prepaid, headers={"Accept": _META_ONE} if metadata_only else None,
        )
        return result

    async def replace(
        self, res: Resource, name: str, body: dict[str, Any], namespace: str | None = None, *,
        subresource: str | None = None, guard: Guard | None = None,
    ) -> dict[str, Any]:
        path = res.path(namespace, name, subresource)
        result: dict[str, Any] = await self.request("PUT", path, json=body, guard=guard)
        return result

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, *,
        preconditions: dict[str, Any] | None = None, propagation_policy: str | None = None,
        grace_period_seconds: int | None = None, guard: Guard | None = None,
        prepaid: bool = False,
    ) -> dict[str, Any] | None:
        options: dict[str, Any] | None = None
        if preconditions or propagation_policy or grace_period_seconds is not None:
            options = {"kind": "DeleteOptions", "apiVersion": "v1"}
            if preconditions:
                options["preconditions"] = preconditions
            if propagation_policy:
                options["propagationPolicy"] = propagation_policy
            if grace_period_seconds is not None:
                options["gracePeriodSeconds"] = grace_period_seconds
        result = await self.request("DELETE", res.path(namespace, name), json=options,
                                    guard=guard, prepaid=prepaid)
        return result if isinstance(result, dict) else None

    async def request(
        self, method: str, path: str, *, params: dict[str, str] | None = None,
        json: Any = None, content_type: str | None = None, headers: dict[str, str] | None = None,
        background: bool = False, guard: Guard | None = None, raw_body: bool = False,
        prepaid: bool = False,
    ) -> Any:
        """Send one request (resending when the server asks, and once after a 401); the decoded
        body, or a typed error.

        ``background`` requests (status, Events) only spend rate-limit tokens the bucket can
        spare, so they never delay foreground requests (slice writes). ``prepaid``: the caller
        already holds a token (:meth:`reserve_token`) for the first send. ``guard`` runs right
        before every send (after the rate-limiter wait) and stops the request by raising.
        """
        hdrs = {"Accept": _JSON, **(headers or {})}
        data = None
        if json is not None:
            data = orjson.dumps(json)
            hdrs["Content-Type"] = content_type or _JSON
        resent = 0
        reauthenticated = False
        while True:
            if prepaid:
                prepaid = False
            else:
                await self._limit.take(background)
            session = await self._transport.authorize(hdrs)
            if guard is not None:
                guard()
            started = time.monotonic()
            try:
                async with session.request(
                    method, self._conn.host + path, params=params, data=data, headers=hdrs,
                    timeout=self._timeout, **self._transport.options(),
                ) as resp:
                    raw = await resp.read()
                    status = resp.status
                    self._warnings.note(method, path, resp.headers.getall("Warning", ()))
                    error = await self._error(resp, raw) if status >= 300 else None
                    wait = resend_wait(status, resp.headers.get("Retry-After"))
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._report(method, path, False, 0, started)
                if isinstance(exc, aiohttp.ClientSSLError):
                    self._conn.tls_refused()
                if method != "GET" or not broke_before_answer(exc) or resent == MAX_RESENDS:
                    raise
                resent += 1
                await self._resend_after(method, path, False, 0, RESEND_AFTER_BREAK)
                continue
            self._report(method, path, False, status, started)
            if error is None:
                if raw_body:
                    return raw
                return decode_body(raw) if raw else None
            if wait is not None and resent < MAX_RESENDS:
                resent += 1
                await self._resend_after(method, path, False, status, wait)
                continue
            if isinstance(error, Unauthorized) and not reauthenticated:
                reauthenticated = True
                await self._conn.refresh(hdrs.get("Authorization"))
                continue
            raise error

    @property
    def qps(self) -> float:
        """The client's rate limit in requests per second (0: none)."""
        return self._settings.qps

    @property
    def malformed_lines(self) -> int:
        """Watch lines skipped as malformed."""
        return self._lines.malformed

    def reserve_token(self) -> float:
        """Take the rate-limit token of a foreground request to come, which then goes out
        with ``prepaid=True``; the seconds until it may be used (the caller waits them, and
        they are reported as waited). Give back an unused one with :meth:`refund_token`."""
        return self._limit.reserve()

    def refund_token(self) -> None:
        self._limit.refund()

    async def _resend_after(self, method: str, path: str, watch: bool, status: int,
                            wait: float) -> None:
        """Count a resend of what ``status`` answered (0: the connection broke) and wait
        ``wait`` seconds (at most ``MAX_RETRY_AFTER``) before it."""
        if self._on_retry is not None:
            self._on_retry(*request_labels(method, path, watch), status)
        await asyncio.sleep(min(wait, MAX_RETRY_AFTER))

    def _report(self, method: str, path: str, watch: bool, status: int, started: float) -> None:
        self.answers.note(status)
        if self._on_request is not None:
            verb, resource = request_labels(method, path, watch)
            self._on_request(verb, resource, status, time.monotonic() - started)

    async def _error(self, resp: aiohttp.ClientResponse, raw: bytes | None = None) -> ApiError:
        if raw is None:
            raw = await resp.read()
        error = answer_error(resp.status, resp.reason, resp.headers.get("Retry-After"), raw)
        return redacted(error, self._conn.redact)
