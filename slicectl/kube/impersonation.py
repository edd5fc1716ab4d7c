"""Impersonation from a kubeconfig user (``as``, ``as-uid``, ``as-groups``, ``as-user-extra``).

Why: client-go sends a kubeconfig user's impersonation with every request (``Impersonate-User``
and the rest), so a kubeconfig made to act as a restricted identity (``as:
system:serviceaccount:slicectl:slicectl``, the way to try the chart's RBAC from a laptop) acts as
that identity. kubernetes-asyncio ignores these fields: slicectl ran as the kubeconfig's own,
often all-powerful, user instead, and nothing said so.

What it decides, as client-go does: the headers (one ``Impersonate-Group`` line per group, one
``Impersonate-Extra-<key>`` line per value, the key percent-escaped where a header name cannot
hold it, ``%`` included: client-go's ``headerKeyEscape``), sent only when something is
impersonated; and, as ``clientcmd``'s validation, that a uid, groups or extras without a user
to impersonate are a configuration error.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "!#$&'*+-.^_`|~")  # not "%"


class ImpersonationError(ValueError):
    """The kubeconfig user's impersonation fields do not make sense together."""


def headers(user: Mapping[str, Any], name: str = "") -> list[tuple[str, str]]:
    """The impersonation headers of kubeconfig user ``user`` (its ``user:`` map, its fields'
    types already checked as Go decodes them: :mod:`slicectl.kube.kubeconfig_merge`), in
    order; empty when it impersonates nothing. ``name`` names the user in an error."""
    as_user, uid = user.get("as") or "", user.get("as-uid") or ""
    groups, extra = user.get("as-groups") or [], user.get("as-user-extra") or {}
    if not as_user and (uid or groups or extra):
        raise ImpersonationError(f"user {name!r}: requesting uid, groups or user-extra "
                                 "without impersonating a user (as)")
    if not as_user:
        return []
    out = [("Impersonate-User", as_user)]
    if uid:
        out.append(("Impersonate-Uid", uid))
    out.extend(("Impersonate-Group", group) for group in groups)
    for key, values in extra.items():  # a null list (Go's nil slice) sends nothing
        out.extend((f"Impersonate-Extra-{escape_key(key)}", value) for value in values or [])
    return out


def escape_key(key: str) -> str:
    """``key`` with every byte a header name cannot hold as ``%XX`` (``%`` itself too)."""
    return "".join(chr(b) if chr(b) in _TOKEN_CHARS else f"%{b:02X}"
                   for b in key.encode("utf-8"))
