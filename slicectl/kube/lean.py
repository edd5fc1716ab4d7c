"""Decoding big API JSON cheaply: lists item by item, and without ``managedFields``.

Two byte-level shortcuts, each checked, each falling back to plain ``orjson.loads``, and one
decode of a whole body (:func:`decode_body`) with the cyclic collector paused for big ones:

* :func:`split_list` cuts a LIST body into its envelope and one byte string per item, so the
  caller decodes and drops one item at a time (a 500-pod page is ~3 MB of JSON and ~10^5
  Python objects at once otherwise, and a 50-150 ms stall of the event loop). Items are found
  by the byte prefix every item starts with (``{"metadata":{"name":"`` from a kube-apiserver);
  a prefix that also occurs inside an item only makes a piece that does not decode, and such a
  piece is joined with the next one before decoding.
* :func:`without_managed_fields` drops ``metadata.managedFields`` (half the bytes and two
  thirds of the objects of a typical pod) before decoding. A kube-apiserver writes it as the
  last key of ``metadata``, followed by ``spec``; the cut is made only when the first ``]``
  after the array's start is immediately followed by ``},"spec":{``. Entries hold no arrays
  (their fields are strings and the ``fieldsV1`` object), so that ``]`` closes the array
  itself, and what follows it closes ``metadata``: nothing but managedFields is cut. A ``]``
  inside an entry's strings only stops the cut (a full decode follows), never misplaces it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import orjson

_MANAGED = b',"managedFields":['
_END = b']},"spec":{'
_ITEMS = b'"items":['


def without_managed_fields(raw: bytes) -> bytes:
    """``raw`` (one object, or a watch event line) minus ``metadata.managedFields`` when it is
    safe to cut (see the module docstring); else ``raw`` unchanged."""
    start = raw.find(_MANAGED)
    if start < 0:
        return raw
    close = raw.find(b"]", start + len(_MANAGED))
    if close < 0 or not raw.startswith(_END, close):
        return raw
    return raw[:start] + raw[close + 1:]


def loads_lean(raw: bytes) -> Any:
    """Decode one object without its managedFields (or in full if the cut does not decode)."""
    lean = without_managed_fields(raw)
    if lean is not raw:
        try:
            return orjson.loads(lean)
        except orjson.JSONDecodeError:
            pass
    return orjson.loads(raw)


def split_list(body: bytes) -> tuple[dict[str, Any], Iterator[Any]] | None:
    """``(list without its items, the items decoded one by one)``, or None when the body does
    not have the expected shape (``"items"`` last); the caller then decodes it whole."""
    at = body.find(_ITEMS)
    tail = body.rstrip()
    if at < 0 or not tail.endswith(b"]}"):
        return None
    try:
        envelope = orjson.loads(body[:at] + b'"items":[]}')
    except orjson.JSONDecodeError:
        return None
    if not isinstance(envelope, dict):
        return None
    region = tail[at + len(_ITEMS):-2]
    return envelope, _items(region)


def _items(region: bytes) -> Iterator[Any]:
    if not region.strip():
        return
    first_value = region.find(b'":"')
    if not region.startswith(b"{") or first_value < 0:
        yield from orjson.loads(b"[" + region + b"]")
        return
    separator = b"}," + region[:first_value + 3]
    prefix = region[:first_value + 3]
    pieces = region.split(separator)
    piece = pieces[0]
    for nxt in pieces[1:]:
        # The separator's "}" ends this piece; its prefix starts the next one.
        try:
            item = loads_lean(piece + b"}")
        except orjson.JSONDecodeError:  # the prefix occurred inside an item: keep joining
            piece = piece + separator + nxt
            continue
        yield item
        piece = prefix + nxt
    try:
        item = loads_lean(piece)
    except orjson.JSONDecodeError:  # several items after all (an odd prefix): decode them
        yield from orjson.loads(b"[" + piece + b"]")
        return
    yield item


_GC_PAUSE_BYTES = 256 * 1024


def decode_body(raw: bytes) -> Any:
    """JSON -> Python; big bodies (list pages) with the cyclic GC paused meanwhile.

    Decoding a 500-pod page makes ~10^5 containers; with the collector running it triggers
    dozens of collections that each traverse the young page objects (and, as they survive,
    older generations), tripling the decode time. Decoded JSON has no cycles, so pausing it
    for the one C call is safe; the next allocation afterwards collects as usual.
    """
    if len(raw) < _GC_PAUSE_BYTES or not gc.isenabled():
        return orjson.loads(raw)
    gc.disable()
    try:
        return orjson.loads(raw)
    finally:
        gc.enable()
