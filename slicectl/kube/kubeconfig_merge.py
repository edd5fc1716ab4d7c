"""A ``$KUBECONFIG`` list of files read and merged into one kubeconfig as kubectl reads them.

kubernetes-asyncio's merger kept the *last* file's ``current-context``, where client-go keeps
the first file's that sets one: with ``KUBECONFIG=a:b``, kubectl talked to ``a``'s cluster and
slicectl to ``b``'s, and as entries come from the first file naming them, a context of ``b``'s
could resolve to a cluster of ``a``'s of the same name. It also read a field of the wrong type
as whatever Python made of it: ``insecure-skip-tls-verify: "false"`` (a string) turned
verification *off*, where kubectl refuses the file.

The rules (client-go's ``ClientConfigLoadingRules.Load`` and its strict decoding, and the
kubeconfig documentation's "Merging kubeconfig files"):

- empty names in the list are ignored, and so are files that do not exist (the caller checks
  that one does); an empty file is an empty kubeconfig;
- every file is decoded whole, each known field with its Go type (a string, a bool, base64 data,
  a list); a value of the wrong type anywhere, or a name twice in one file, is an error naming
  the file, as kubectl refuses such a file; a ``null`` is the zero value, as Go decodes it;
  unknown fields are ignored, as kubectl's decoder ignores them; an entry without a name is
  named ``""``, as kubectl files it: two are a name twice, and a context that names no cluster
  (or user) gets it;
- an entry of ``clusters``, ``users`` or ``contexts`` comes from the first file that names it,
  and ``current-context`` is the first one set to something.

Each entry keeps the directory of the file it came from: its relative paths (certificates, a
token file, a plugin's command) are that file's.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def decode_base64(value: str) -> bytes:
    """Kubeconfig data decoded as Go's ``base64.StdEncoding`` decodes it: padded, line breaks
    skipped, any other byte outside the alphabet refused (a ``ValueError``)."""
    return base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)


def _base64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        decode_base64(value)
    except ValueError:  # binascii.Error is one
        return False
    return True


def _list(value: Any) -> bool:
    return isinstance(value, list)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _map(value: Any) -> bool:
    return isinstance(value, dict)


def _string_lists(value: Any) -> bool:
    return isinstance(value, dict) and all(_strings(v) or v is None for v in value.values())


# The Go type of each known field (clientcmd/api/v1 types), by entry kind: (check, type name).
_Check = tuple[Callable[[Any], bool], str]
FIELDS: dict[str, dict[str, _Check]] = {
    "cluster": {
        "server": (_string, "string"), "tls-server-name": (_string, "string"),
        "insecure-skip-tls-verify": (_bool, "bool"),
        "certificate-authority": (_string, "string"),
        "certificate-authority-data": (_base64, "base64 data"),
        "proxy-url": (_string, "string"), "disable-compression": (_bool, "bool"),
        "extensions": (_list, "list"),
    },
    "user": {
        "client-certificate": (_string, "string"),
        "client-certificate-data": (_base64, "base64 data"),
        "client-key": (_string, "string"), "client-key-data": (_base64, "base64 data"),
        "token": (_string, "string"), "tokenFile": (_string, "string"),
        "as": (_string, "string"), "as-uid": (_string, "string"),
        "as-groups": (_strings, "list of strings"),
        "as-user-extra": (_string_lists, "map of string lists"),
        "username": (_string, "string"), "password": (_string, "string"),
        "auth-provider": (_map, "map"), "exec": (_map, "map"), "extensions": (_list, "list"),
    },
    "context": {
        "cluster": (_string, "string"), "user": (_string, "string"),
        "namespace": (_string, "string"), "extensions": (_list, "list"),
    },
}


class KubeconfigError(Exception):
    """A kubeconfig kubectl would refuse, or that cannot be read."""


@dataclass(frozen=True)
class Entry:
    """A cluster, user or context: its fields (``null`` ones left out) and its file (absolute
    path)."""

    name: str
    fields: dict[str, Any]
    file: str

    @property
    def directory(self) -> str:
        return os.path.dirname(self.file)


@dataclass
class Kubeconfig:
    """The merged kubeconfig: entries by kind (``cluster``, ``user``, ``context``) and name."""

    entries: dict[str, dict[str, Entry]] = field(
        default_factory=lambda: {kind: {} for kind in SECTIONS.values()})
    current_context: str = ""


def merged(kubeconfig: str) -> Kubeconfig:
    """The files of ``kubeconfig`` (one path, or a list as ``$KUBECONFIG`` has it), merged."""
    out = Kubeconfig()
    for listed in kubeconfig.split(os.pathsep):
        path = os.path.expanduser(listed)
        if not listed or not os.path.exists(path):
            continue
        doc = _read(path)
        for section, kind in SECTIONS.items():
            for entry in _entries(doc, section, kind, path):
                out.entries[kind].setdefault(entry.name, entry)
        current = doc.get("current-context")
        if current is not None and not isinstance(current, str):
            raise KubeconfigError(f"{path}: current-context must be a string")
        if not out.current_context and current:
            out.current_context = current
    return out


def _entries(doc: dict[str, Any], section: str, kind: str, path: str) -> list[Entry]:
    listed = doc.get(section)
    if listed is None:
        return []
    if not isinstance(listed, list):
        raise KubeconfigError(f"{path}: {section} must be a list")
    entries: dict[str, Entry] = {}
    for item in listed:
        if not isinstance(item, dict):
            raise KubeconfigError(f"{path}: an entry of {section} is not a map")
        name = item.get("name")
        if name is not None and not isinstance(name, str):
            raise KubeconfigError(f"{path}: a name in {section} must be a string")
        name = name or ""  # unnamed: kubectl files it under "", a context's unset cluster/user
        if name in entries:
            raise KubeconfigError(f'{path}: duplicate name "{name}" in {section}')
        body = item.get(kind)
        if body is not None and not isinstance(body, dict):
            raise KubeconfigError(f"{path}: {kind} {name!r} is not a map")
        fields = {k: v for k, v in (body or {}).items() if v is not None}
        for key, value in fields.items():
            check = FIELDS[kind].get(key)
            if check is not None and not check[0](value):
                raise KubeconfigError(f"{path}: {kind} {name!r}: {key} must be a {check[1]} "
                                      f"(kubectl refuses this file too)")
        entries[name] = Entry(name, fields, os.path.abspath(path))
    return list(entries.values())


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
