"""SharedValues: one object per equal value, a bounded table, correct values after a clear."""

from __future__ import annotations

from slicectl.model.sharing import SharedValues


def test_equal_values_come_back_as_the_first_object() -> None:
    shared: SharedValues[tuple[str, ...]] = SharedValues()
    first = shared(tuple(["http", "TCP"]))
    again = shared(tuple(["http", "TCP"]))
    assert again is first
    other = shared(("grpc", "TCP"))
    assert other is not first and other == ("grpc", "TCP")


def test_the_table_is_bounded_and_a_clear_only_loses_sharing() -> None:
    shared: SharedValues[tuple[int, ...]] = SharedValues(limit=3)
    first = shared((0,))
    for i in range(1, 3):
        shared((i,))
    assert len(shared) == 3
    shared((3,))  # full: cleared, then this one kept
    assert len(shared) == 1
    again = shared(tuple([0]))
    assert again == first and again is not first, "a new object after the clear, same value"
