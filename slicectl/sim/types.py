"""What the embedded API server knows about a served resource type.

Built-in types are declared once in :mod:`slicectl.sim.resources`; custom resources get a
``ResourceType`` from their CRD when it is created. Discovery, OpenAPI, validation, tables and
storage all read this one description, so they cannot disagree about a type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()  # e.g. {"status"}
    verbs: tuple[str, ...] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )
    categories: tuple[str, ...] = ()
    # Custom resources only: the version's openAPIV3Schema and additionalPrinterColumns.
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    # Built-in types: the OpenAPI definition name, e.g. "io.k8s.api.core.v1.Pod".
    definition: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def is_custom(self) -> bool:
        return self.schema is not None
