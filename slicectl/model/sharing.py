"""One object per equal value, for values that many records hold (port lists, group keys).

Why: a tuple built per pod (its named ports, its endpoint group key) is equal to thousands of
others. Made one object, it is held once, and comparisons that meet it again stop at identity
(``is``), which the planner's grouping and its "did this slice change" check rely on for speed.

What it decides: a table bounded in size and cleared when full, so memory stays bounded and a
value seen after a clear is simply shared again; a clear loses sharing, never correctness.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V", bound=Hashable)


class SharedValues(Generic[V]):
    """``shared(value)`` returns the first equal value it was given (since its last clear)."""

    __slots__ = ("_limit", "_table")

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._table: dict[V, V] = {}

    def __call__(self, value: V) -> V:
        found = self._table.get(value)
        if found is None:
            if len(self._table) >= self._limit:
                self._table.clear()
            found = self._table[value] = value
        return found

    def __len__(self) -> int:
        return len(self._table)
