"""The informer's local copy of one resource: records by key.

:class:`Store` is a plain dict. :class:`PodStore` is the one copy of every pod the controller
holds, shared by the pod informers (one per watched namespace) and read by the indexes: its
primary map is namespace -> name -> record (the namespace index for free, no key strings kept)
and it keeps the pods-by-node index in step with every write.

Keys are ``"<namespace>/<name>"`` for namespaced objects and ``"<name>"`` for cluster-scoped
ones (:func:`object_key` computes the same key from raw JSON, for objects that failed to parse).
Only the informer writes; everybody else reads. Records are immutable, so readers may keep what
they got without copying.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from slicectl.model.records import PodRecord

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

    def keys_in(self, namespace: str | None) -> Iterable[str]:
        """The keys of one namespace (all keys for None): what one informer's relist owns."""
        if not namespace:
            return list(self._items)
        prefix = namespace + "/"
        return [k for k in self._items if k.startswith(prefix)]

    def values_in(self, namespace: str | None) -> list[T]:
        """The records of one namespace (all for None), as a list the caller may outlive."""
        if not namespace:
            return list(self._items.values())
        prefix = namespace + "/"
        return [v for k, v in self._items.items() if k.startswith(prefix)]

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


class PodStore(Store[PodRecord]):
    """Pods by namespace and name, with a by-node index; keys are ``namespace/name``."""

    def __init__(self) -> None:
        super().__init__()
        self._by_ns: dict[str, dict[str, PodRecord]] = {}
        # node -> pod name -> pod; a second pod of the same name (another namespace) on the
        # same node goes under (namespace, name). The name strings are the records' own.
        self._by_node: dict[str, dict[str | tuple[str, str], PodRecord]] = {}
        self._count = 0

    # -- reads ------------------------------------------------------------------------------

    def get(self, key: str) -> PodRecord | None:
        namespace, _, name = key.partition("/")
        pods = self._by_ns.get(namespace)
        return pods.get(name) if pods is not None else None

    def in_namespace(self, namespace: str) -> Mapping[str, PodRecord]:
        """The namespace's pods by name (a live view: do not hold it across awaits)."""
        return self._by_ns.get(namespace) or {}

    def holds(self, pod: PodRecord) -> bool:
        """Whether ``pod`` (this very record) is the stored one."""
        pods = self._by_ns.get(pod.namespace)
        return pods is not None and pods.get(pod.name) is pod

    def on_node(self, node: str) -> list[PodRecord]:
        return list(self._by_node.get(node, {}).values())

    def namespaces(self) -> list[str]:
        return list(self._by_ns)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        for namespace, pods in list(self._by_ns.items()):
            for name in list(pods):
                yield f"{namespace}/{name}"

    def keys(self) -> KeysView[str]:
        return {k: None for k in self}.keys()

    def values(self) -> ValuesView[PodRecord]:
        return {i: p for i, p in enumerate(self._all())}.values()

    def items(self) -> ItemsView[str, PodRecord]:
        return {p.key: p for p in self._all()}.items()

    def keys_in(self, namespace: str | None) -> Iterable[str]:
        if not namespace:
            return list(self)
        return [f"{namespace}/{name}" for name in self._by_ns.get(namespace, ())]

    def values_in(self, namespace: str | None) -> list[PodRecord]:
        if not namespace:
            return list(self._all())
        return list(self._by_ns.get(namespace, {}).values())

    def as_mapping(self) -> Mapping[str, PodRecord]:
        return MappingProxyType(dict(self.items()))

    def _all(self) -> Iterator[PodRecord]:
        for pods in self._by_ns.values():
            yield from pods.values()

    # -- writes -----------------------------------------------------------------------------

    def put(self, key: str, item: PodRecord) -> PodRecord | None:
        pods = self._by_ns.get(item.namespace)
        if pods is None:
            pods = self._by_ns[item.namespace] = {}
        old = pods.get(item.name)
        if old is item:
            return old
        pods[item.name] = item
        if old is None:
            self._count += 1
        self._reindex_node(old, item)
        return old

    def pop(self, key: str) -> PodRecord | None:
        namespace, _, name = key.partition("/")
        pods = self._by_ns.get(namespace)
        if pods is None:
            return None
        old = pods.pop(name, None)
        if old is None:
            return None
        self._count -= 1
        if not pods:
            del self._by_ns[namespace]
        self._reindex_node(old, None)
        return old

    def _reindex_node(self, old: PodRecord | None, new: PodRecord | None) -> None:
        if old is not None and old.node_name:
            on_node = self._by_node.get(old.node_name)
            if on_node is not None:
                if on_node.get(old.name) is old:
                    del on_node[old.name]
                else:
                    on_node.pop((old.namespace, old.name), None)
                if not on_node:
                    del self._by_node[old.node_name]
        if new is not None and new.node_name:
            on_node = self._by_node.get(new.node_name)
            if on_node is None:
                on_node = self._by_node[new.node_name] = {}
            if new.name in on_node:
                on_node[(new.namespace, new.name)] = new
            else:
                on_node[new.name] = new
