"""A ``$KUBECONFIG`` list of files merged into one kubeconfig as kubectl merges them.

kubernetes-asyncio's merger keeps the *last* file's ``current-context``, where client-go keeps
the first file's that sets one. With ``KUBECONFIG=a:b``, kubectl talked to ``a``'s cluster and
slicectl to ``b``'s; and as clusters, users and contexts are taken from the first file that
names them, a context named by ``b`` could resolve to a cluster of ``a``'s of the same name: a
controller writing where nobody pointed it. An empty file (``touch ~/.kube/config``) was an
error too, where kubectl reads it as an empty kubeconfig.

The rules (client-go's ``ClientConfigLoadingRules.Load``, and the kubeconfig documentation's
"Merging kubeconfig files"): empty names in the list are ignored, and so are files that do not
exist (the caller checks that one does); a file that is not a YAML map, or whose sections are
not lists of maps, is an error naming it;
an entry of ``clusters``, ``users`` or ``contexts`` comes from the first file that names it;
``current-context`` is the first one set to something. Each entry keeps the path of the file
it came from, as its relative paths (certificates, a plugin's command) are that file's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import yaml

SECTIONS = ("clusters", "contexts", "users")

# kubernetes-asyncio's ConfigNode(name, value, path): how each entry remembers its file
Node = Callable[[str, Any, str], Any]


class KubeconfigError(Exception):
    """A file of the list cannot be read as a kubeconfig."""


def merged(kubeconfig: str, node: Node) -> Any:
    """The files of ``kubeconfig`` (one path, or a list as ``$KUBECONFIG`` has it) merged,
    as ``node(path, value, path)`` with every entry a ``node`` of its own file."""
    merged_doc: dict[str, Any] = {section: [] for section in SECTIONS}
    seen: dict[str, set[str]] = {section: set() for section in SECTIONS}
    first = ""
    for listed in kubeconfig.split(os.pathsep):
        path = os.path.expanduser(listed)
        if not listed or not os.path.exists(path):
            continue
        first = first or path
        doc = _read(path)
        for section in SECTIONS:
            entries = doc.get(section)
            if entries is None:
                continue
            if not isinstance(entries, list):
                raise KubeconfigError(f"{path}: {section} must be a list")
            for entry in entries:
                if not isinstance(entry, dict):
                    raise KubeconfigError(f"{path}: an entry of {section} is not a map")
                name = entry.get("name") or ""  # kubectl keeps it under "": nothing names that
                if name and name not in seen[section]:
                    seen[section].add(name)
                    merged_doc[section].append(node(f"{path}/{section}/{name}", entry, path))
        if not merged_doc.get("current-context") and doc.get("current-context"):
            merged_doc["current-context"] = doc["current-context"]
    return node(first, merged_doc, first)


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"{path}: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig (a YAML map)")
    return doc
