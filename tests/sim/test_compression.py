"""Answers gzip-encoded as a real kube-apiserver encodes them (slicectl/sim/compression.py):
over 128 KiB, to an ``Accept-Encoding`` with a bare ``gzip`` token, never a watch
(kubectl, which asks for gzip, reads them: ``test_kubectl.py``)."""

from __future__ import annotations

import gzip

import orjson
import pytest

from slicectl.sim.compression import THRESHOLD, wants_gzip
from tests.sim.conftest import PODS, Raw, pod


@pytest.mark.parametrize(("accept", "wanted"), [
    ("gzip", True), ("deflate, gzip", True), (" gzip ,br", True), ("", False),
    ("br, deflate", False), ("gzip;q=1.0", False), ("x-gzip", False), ("GZIP", False),
])
def test_the_real_server_s_reading_of_accept_encoding(accept: str, wanted: bool) -> None:
    assert wants_gzip(accept) is wanted


async def _get(raw: Raw, path: str, accept_encoding: str,
               **params: str) -> tuple[str | None, str | None, bytes]:
    async with raw.session.get(raw.srv.url + path, params=params, auto_decompress=False,
                               headers={"Accept-Encoding": accept_encoding}) as resp:
        assert resp.status == 200
        return (resp.headers.get("Content-Encoding"), resp.headers.get("Vary"),
                await resp.read())


async def test_a_list_over_the_threshold_is_gzipped_a_small_answer_and_a_watch_never(
    raw: Raw,
) -> None:
    for i in range(3):
        body = pod(f"big-{i}", annotations={"ballast": "x" * 60_000})
        assert (await raw.request("POST", PODS, body))[0] == 201
    encoding, vary, answer = await _get(raw, PODS, "gzip")
    assert (encoding, vary) == ("gzip", "Accept-Encoding")
    listed = orjson.loads(gzip.decompress(answer))
    assert len(orjson.dumps(listed)) > THRESHOLD and len(listed["items"]) == 3

    assert (await _get(raw, PODS, "identity"))[0] is None
    assert (await _get(raw, PODS, "gzip;q=1.0"))[0] is None
    assert (await _get(raw, f"{PODS}/big-0", "gzip"))[0] is None  # 60 KB: under it
    async with raw.session.get(raw.srv.url + PODS, auto_decompress=False,
                               params={"watch": "true", "resourceVersion": "0",
                                       "timeoutSeconds": "1"},
                               headers={"Accept-Encoding": "gzip"}) as resp:
        assert resp.headers.get("Content-Encoding") is None
        events = [orjson.loads(line) for line in (await resp.read()).splitlines()]
    assert len(events) == 3
