"""A kubeconfig user's impersonation, as client-go sends it (slicectl.kube.impersonation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slicectl.kube.config import ConfigError, load_connection
from slicectl.kube.impersonation import ImpersonationError, escape_key, headers
from slicectl.kube.transport import Transport
from tests.unit.kubeconfigs import one_context

SERVER = "https://api.example:6443"


def test_every_field_becomes_headers_groups_and_extras_one_line_each() -> None:
    user = {"token": "t", "as": "system:serviceaccount:ops:slicectl", "as-uid": "1234",
            "as-groups": ["system:serviceaccounts", "team-a"],
            "as-user-extra": {"example.com/scopes": ["view", "edit"], "reason": ["test"]}}
    assert headers(user) == [
        ("Impersonate-User", "system:serviceaccount:ops:slicectl"),
        ("Impersonate-Uid", "1234"),
        ("Impersonate-Group", "system:serviceaccounts"),
        ("Impersonate-Group", "team-a"),
        ("Impersonate-Extra-example.com%2Fscopes", "view"),
        ("Impersonate-Extra-example.com%2Fscopes", "edit"),
        ("Impersonate-Extra-reason", "test"),
    ]


def test_nothing_impersonated_sends_nothing() -> None:
    assert headers({"token": "t"}) == []
    assert headers({"as": "", "as-groups": [], "as-user-extra": {}}) == []


@pytest.mark.parametrize(("key", "escaped"), [
    ("plain-Key_1.x", "plain-Key_1.x"), ("a/b", "a%2Fb"), ("100%", "100%25"),
    ("with space", "with%20space"), ("a:b", "a%3Ab"), ("ü", "%C3%BC"),
    ("!#$&'*+^`|~", "!#$&'*+^`|~"),
])
def test_extra_keys_are_escaped_as_client_go_escapes_them(key: str, escaped: str) -> None:
    assert escape_key(key) == escaped


@pytest.mark.parametrize("user", [
    {"as-groups": ["g"]}, {"as-uid": "u"}, {"as-user-extra": {"k": ["v"]}},
    {"as-user-extra": {"k": None}},
])
def test_what_client_go_refuses(user: dict[str, Any]) -> None:
    with pytest.raises(ImpersonationError, match="'me'"):
        headers(user, "me")


def test_a_null_extra_sends_nothing_for_its_key() -> None:
    """Go decodes ``k: null`` as a nil slice: kubectl v1.32 sends the other keys' values."""
    assert headers({"as": "u", "as-user-extra": {"k": None, "j": ["v"]}}) == [
        ("Impersonate-User", "u"), ("Impersonate-Extra-j", "v")]


@pytest.mark.parametrize(("user", "refused"), [
    ({"as": 5}, "'u': as must be a string"),
    ({"as": "u", "as-groups": "g"}, "'u': as-groups must be a list of strings"),
    ({"as": "u", "as-user-extra": {"k": "v"}}, "'u': as-user-extra must be a map of string lists"),
])
async def test_a_field_of_the_wrong_type_is_refused_with_the_file(
    tmp_path: Path, user: dict[str, Any], refused: str,
) -> None:
    with pytest.raises(ConfigError, match=refused):
        await load_connection(one_context(tmp_path, SERVER, {"token": "t", **user}))


async def test_every_request_of_the_session_carries_them(tmp_path: Path) -> None:
    conn = await load_connection(one_context(tmp_path, SERVER, {
        "token": "t", "as": "alice", "as-groups": ["g1", "g2"]}))
    transport = Transport(conn, "slicectl/test")
    session = await transport.authorize({})
    assert session.headers.getall("Impersonate-Group") == ["g1", "g2"]
    assert session.headers["Impersonate-User"] == "alice"
    assert session.headers["User-Agent"] == "slicectl/test"
    await transport.close()

    with pytest.raises(ConfigError, match="without impersonating a user"):
        await load_connection(one_context(tmp_path, SERVER, {"token": "t", "as-groups": ["g"]}))
