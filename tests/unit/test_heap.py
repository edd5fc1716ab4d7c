"""The heap release after big lists: skipped for small lists, done where glibc is."""

from __future__ import annotations

import platform

import pytest

from slicectl.cache import heap


def test_small_lists_do_not_walk_the_heap() -> None:
    assert heap.release_after_list(heap.BIG_LIST - 1) is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_big_lists_trim_the_heap_on_glibc() -> None:
    assert heap._TRIM is not None
    assert heap.release_after_list(heap.BIG_LIST) is True
