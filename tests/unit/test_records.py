"""Endpoint records cache their hash and identity: the cached values must be the ones the
fields give, for every record, including copies made with ``dataclasses.replace``."""

from __future__ import annotations

from dataclasses import replace

from slicectl.model.records import Endpoint, PodRecord, TargetRef


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


def test_a_record_with_its_cache_filled_equals_a_fresh_one() -> None:
    """The caches are no part of the value: an endpoint or a pod whose cached hash, identity
    or order was computed equals a fresh equal record (else a slice whose endpoints a sync
    looked at compares unequal to its watch echo, and is written again)."""
    a = _ep("10.0.0.1")
    assert a.identity and hash(a)
    assert a == _ep("10.0.0.1")
    pod = PodRecord("ns", "web-2", "u", "1", {}, "Running", ("10.0.0.1",), True, None, False,
                    "n", "", "", creation_timestamp="2024-01-01T00:00:00Z")
    assert pod.order
    assert pod == replace(pod)


def test_an_endpoint_without_a_target_has_an_identity() -> None:
    """A slice edited by someone else may list an endpoint without a targetRef."""
    bare = Endpoint(("10.0.0.2", "10.0.0.1"), True, True, False)
    assert bare.identity == (("10.0.0.1", "10.0.0.2"), None, None, None)
