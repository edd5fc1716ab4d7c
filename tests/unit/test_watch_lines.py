"""A watch stream's bytes become exactly its lines, however the reads cut them."""

from __future__ import annotations

from itertools import pairwise
from typing import Any, cast

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.kube import watch
from slicectl.kube.watch import read_lines


class _Reads:
    """A StreamReader whose reads return the given pieces, then the end."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = list(pieces)

    async def readany(self) -> bytes:
        return self._pieces.pop(0) if self._pieces else b""


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in pairwise(points) if b > a]


async def _lines(pieces: list[bytes]) -> list[bytes]:
    got: list[bytes] = []
    reads = cast(aiohttp.StreamReader, _Reads(pieces))
    async for lines in read_lines(reads, "/w", None):
        got.extend(lines)
    return got


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
       st.booleans(), st.lists(st.integers(min_value=0), max_size=12))
async def test_reads_cut_anywhere_give_the_same_lines(
    lines: list[bytes], ended: bool, cuts: list[int],
) -> None:
    data = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    want = list(lines)
    if want and want[-1] == b"" and not ended:
        want.pop()  # a stream that ends in a newline has no line after it
    assert await _lines(_cut(data, cuts)) == want


async def test_a_line_longer_than_the_limit_ends_the_stream(monkeypatch: Any) -> None:
    monkeypatch.setattr(watch, "MAX_LINE_BYTES", 10)
    assert await _lines([b"0123456789\n", b"ab"]) == [b"0123456789", b"ab"]
    with pytest.raises(ValueError, match="a line longer than 10"):
        await _lines([b"x\n01234", b"56789", b"a"])
