"""Unknown-field pruning with schema walkers compiled once per schema node.

Why: every write prunes its body against the type's schema; walking the raw OpenAPI each time
(following ``$ref``/``allOf`` and re-reading ``properties``/``additionalProperties`` at every
node) dominated the write path. A :class:`Node` is that schema node with references already
followed and its decision precomputed (accept anything here, or check keys against the declared
properties, or check every value against ``additionalProperties``); children are compiled on
first use and memoized, so recursive schemas (JSONSchemaProps) compile lazily and finitely.

The rules are the decoder's: a field the schema does not declare is unknown, except under
``x-kubernetes-preserve-unknown-fields``, ``additionalProperties: true`` or a schema with no
structure at all (RawExtension, FieldsV1, JSON), which accept anything.
"""

from __future__ import annotations

from typing import Any

from slicectl.sim.validation.builtin import resolve


class Node:
    __slots__ = ("_extra", "_items", "_props", "anything", "compiler", "extra_any", "schema")

    def __init__(self, compiler: Compiler, schema: dict[str, Any]) -> None:
        self.compiler = compiler
        self.schema = schema
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        opaque = not any(k in schema for k in ("properties", "additionalProperties", "items"))
        # The whole subtree is accepted as is.
        self.anything = preserve and not props
        # Keys not in ``properties`` (and not covered by a schema) are accepted.
        self.extra_any = extra is True or preserve or (
            props is None and schema.get("type") in (None, "object") and extra is None and opaque)
        self._props: dict[str, Node] | None = None
        self._extra: Node | None = None
        self._items: Node | None = None

    def prop(self, key: str) -> Node | None:
        """The node for property ``key``, or the additionalProperties node, or None."""
        if self._props is None:
            self._props = {}
        node = self._props.get(key)
        if node is None:
            props = self.schema.get("properties")
            if props is not None and key in props:
                node = self._props[key] = self.compiler.node(props[key])
            else:
                return self.extra()
        return node

    def extra(self) -> Node | None:
        if self._extra is None:
            extra = self.schema.get("additionalProperties")
            if not isinstance(extra, dict):
                return None
            self._extra = self.compiler.node(extra)
        return self._extra

    def items(self) -> Node | None:
        if self._items is None:
            items = self.schema.get("items")
            if not isinstance(items, dict):
                return None
            self._items = self.compiler.node(items)
        return self._items

    def prune(self, value: Any, path: str, remove: bool, found: list[str]) -> None:
        if self.anything:
            return
        if isinstance(value, dict):
            known = self._props
            for key in list(value):
                child = known.get(key) if known is not None else None
                if child is None:
                    child = self.prop(key)
                    known = self._props
                if child is not None:
                    sub = value[key]
                    if isinstance(sub, (dict, list)):
                        child.prune(sub, f"{path}.{key}" if path else key, remove, found)
                elif not self.extra_any:
                    found.append(f"{path}.{key}" if path else key)
                    if remove:
                        del value[key]
        elif isinstance(value, list):
            items = self.items()
            if items is not None and not items.anything:
                for i, item in enumerate(value):
                    if isinstance(item, (dict, list)):
                        items.prune(item, f"{path}[{i}]", remove, found)


class Compiler:
    """Compiles the schema nodes reachable from one root, each once."""

    def __init__(self) -> None:
        self._nodes: dict[int, Node] = {}
        self._keep: list[dict[str, Any]] = []  # raw nodes whose id() is a memo key

    def node(self, raw: dict[str, Any]) -> Node:
        node = self._nodes.get(id(raw))
        if node is None:
            resolved = resolve(raw)
            node = self._nodes.get(id(resolved))
            if node is None:
                node = Node(self, resolved if isinstance(resolved, dict) else {})
                self._nodes[id(resolved)] = node
                self._keep.append(resolved)
            self._nodes[id(raw)] = node
            self._keep.append(raw)
        return node


def prune(value: Any, root: Node, remove: bool) -> list[str]:
    """Paths of fields the schema does not declare; removed from ``value`` when ``remove``."""
    found: list[str] = []
    root.prune(value, "", remove, found)
    return found
