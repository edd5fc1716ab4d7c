"""Answers gzip-encoded as a real kube-apiserver encodes them (``APIResponseCompression``, on
by default since v1.16): so a client here must decode them as it must on a cluster.

A real server (``responsewriters.deferredResponseWriter``) encodes an answer with gzip at level
1 when the request's ``Accept-Encoding`` has ``gzip`` as one of its comma-separated tokens (a
``gzip;q=1`` is not one) and the body is over 128 KiB: in practice a LIST of a few hundred
objects or more. It then also says ``Vary: Accept-Encoding``. A watch is never encoded, nor a
smaller answer, nor one to a client that asked for none (``disable-compression``).
"""

from __future__ import annotations

import gzip

from aiohttp import web

THRESHOLD = 128 * 1024  # bytes; a body this size or smaller goes as it is
LEVEL = 1  # the real server's defaultGzipContentEncodingLevel


def wants_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` names gzip as the real server reads it."""
    return any(token.strip() == "gzip" for token in accept_encoding.split(","))


def encoded(request: web.BaseRequest, response: web.StreamResponse) -> web.StreamResponse:
    """``response`` gzip-encoded if the real server would have encoded it."""
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        return response
    if len(response.body) <= THRESHOLD or "Content-Encoding" in response.headers:
        return response
    if not wants_gzip(request.headers.get("Accept-Encoding", "")):
        return response
    response.body = gzip.compress(response.body, compresslevel=LEVEL)
    response.headers["Content-Encoding"] = "gzip"
    response.headers.add("Vary", "Accept-Encoding")
    return response
