"""Endpoint records cache their hash and identity: the cached values must be the ones the
fields give, for every record, including copies made with ``dataclasses.replace``."""

from __future__ import annotations

from dataclasses import replace

from slicectl.model.records import Endpoint, TargetRef


def _ep(*addresses: str, ready: bool = True) -> Endpoint:
    return Endpoint(addresses, ready, ready, False, TargetRef("ns", "p", "u"), "n", "z", "h")


def test_equal_records_hash_equal_and_differing_ones_differ() -> None:
    a, b = _ep("10.0.0.1"), _ep("10.0.0.1")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert hash(a) == hash((a.addresses, a.ready, a.serving, a.terminating, a.target,
                            a.node_name, a.zone, a.hostname))
    assert len({a, _ep("10.0.0.1", ready=False), _ep("10.0.0.2")}) == 3


def test_a_replaced_copy_does_not_inherit_the_cache() -> None:
    a = _ep("fd00::2", "fd00::1")
    assert a.identity == (("fd00::1", "fd00::2"), "h", "ns", "p") and hash(a)
    b = replace(a, addresses=("10.0.0.9",), ready=False, serving=False)
    assert b.identity == (("10.0.0.9",), "h", "ns", "p")
    assert hash(b) == hash(_ep("10.0.0.9", ready=False)) and b != a
