"""The informer's local copy of one resource: records by key.

Keys are ``"<namespace>/<name>"`` for namespaced objects and ``"<name>"`` for cluster-scoped
ones (:func:`object_key` computes the same key from raw JSON, for objects that failed to parse).
Only the informer writes; everybody else reads. Records are immutable, so readers may keep what
they got without copying.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def object_key(raw: Mapping[str, Any]) -> str | None:
    """The store key of a raw object, or None when it has no usable name."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


class Store(Generic[T]):
    def __init__(self) -> None:
        self._items: dict[str, T] = {}

    def get(self, key: str) -> T | None:
        return self._items.get(key)

    def put(self, key: str, item: T) -> T | None:
        """Store ``item``; return what it replaced."""
        old = self._items.get(key)
        self._items[key] = item
        return old

    def pop(self, key: str) -> T | None:
        return self._items.pop(key, None)

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def values(self) -> ValuesView[T]:
        return self._items.values()

    def items(self) -> ItemsView[str, T]:
        return self._items.items()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def as_mapping(self) -> Mapping[str, T]:
        """A read-only live view, for pure code that takes a Mapping."""
        return MappingProxyType(self._items)
