"""A kubeconfig user's ``oidc`` auth provider behaves as client-go's (slicectl.kube.oidc).

Before slicectl ran it itself, kubernetes-asyncio's refresher failed to load most real
id-tokens (their claims are base64url), refreshed five minutes early, failed on public clients
and on answers without a new refresh token, ignored ``idp-certificate-authority`` and never
wrote the new tokens back. The identity provider here is tests/identity_provider.py; nothing
listens at the API server, what is checked is the header that would be sent.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from slicectl.kube import oidc
from slicectl.kube.config import ConfigError, load_connection
from slicectl.kube.oidc import OidcError, expires_at
from tests.identity_provider import IdentityProvider, fresh_jwt, jwt
from tests.unit.kubeconfigs import one_context

SERVER = "https://api.example:6443"


def _provider(idp: IdentityProvider, **config: str) -> dict[str, Any]:
    return {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": idp.url, "client-id": "slice ctl", "client-secret": "s/p+c",
        **config}}}


def _stored(path: str) -> dict[str, str]:
    """The provider config in the kubeconfig file, read by kubectl where it is installed (an
    independent reader of what was written back), else by YAML."""
    if shutil.which("kubectl"):
        out = subprocess.run(
            ["kubectl", "config", "view", "--raw", "--kubeconfig", path, "-o",
             "jsonpath={.users[0].user.auth-provider.config}"],
            check=True, capture_output=True, text=True).stdout
        return dict(yaml.safe_load(out))
    doc = yaml.safe_load(Path(path).read_text())
    return dict(doc["users"][0]["user"]["auth-provider"]["config"])


def _users(path: str, first: dict[str, Any] | None = None) -> dict[str, Any]:
    """The file's users by name, after putting the users ``first`` ahead of them."""
    doc = yaml.safe_load(Path(path).read_text())
    if first:
        doc["users"][:0] = [{"name": name, "user": user} for name, user in first.items()]
        Path(path).write_text(yaml.safe_dump(doc))
    return {u["name"]: u["user"] for u in doc["users"]}


def _text(path: str, new: str | None = None) -> str:
    """The file's text, after writing ``new`` into it if given."""
    if new is not None:
        Path(path).write_text(new)
    return Path(path).read_text()


def _server(path: str) -> str:
    return str(yaml.safe_load(Path(path).read_text())["clusters"][0]["cluster"]["server"])


@pytest.fixture
async def idp() -> Any:
    async with IdentityProvider() as provider:
        yield provider


def test_expiry_is_read_from_base64url_claims_as_client_go_reads_it() -> None:
    # claims chosen so that their encoding has both "-" and "_": standard base64 cannot read it
    token = jwt(1900000000, sub="\u00ff\u00fe>>>???", name="x~~~")
    assert "-" in token.split(".")[1] and "_" in token.split(".")[1]
    assert expires_at(token) == 1900000000.0
    assert expires_at(jwt(1900000000.9)) == 1900000000.0  # fractional: truncated
    assert expires_at(jwt(None)) == 0.0  # no exp: expired
    for broken in ("opaque-token", "a.b", "a.!!!.c", f"x.{base64.b64encode(b'[1]').decode()}.y",
                   jwt("tomorrow"), jwt(True), "a.eyJleHAiOjF9=.c"):
        with pytest.raises(OidcError, match="ID Token is not a valid JWT"):
            expires_at(broken)


async def test_a_valid_id_token_is_sent_and_the_provider_never_asked(
    tmp_path: Path, idp: IdentityProvider,
) -> None:
    # kubernetes-asyncio refreshed anything within five minutes; client-go within 10 s only
    token = fresh_jwt(20.0)
    conn = await load_connection(one_context(tmp_path, SERVER, _provider(
        idp, **{"id-token": token, "refresh-token": "rt-1"})))
    assert await conn.authorization() == f"Bearer {token}"
    assert (idp.discoveries, idp.grants) == (0, [])


async def test_an_expiring_token_is_refreshed_and_written_back(
    tmp_path: Path, idp: IdentityProvider,
) -> None:
    """Ten seconds from expiry (client-go's margin) the refresh token buys a new id-token; the
    rotated refresh token replaces the old one in the file, for kubectl and the next start."""
    new = fresh_jwt()
    idp.answer(access_token="at", token_type="Bearer", id_token=new, refresh_token="rt-2")
    path = one_context(tmp_path, SERVER, _provider(
        idp, **{"id-token": fresh_jwt(9.0), "refresh-token": "rt-1"}))
    conn = await load_connection(path)
    assert await conn.authorization() == f"Bearer {new}"
    [grant] = idp.grants
    assert grant.form == {"grant_type": "refresh_token", "refresh_token": "rt-1"}
    # both query-escaped first, as golang.org/x/oauth2 (and kubectl, run against this provider)
    assert grant.authorization == "Basic " + base64.b64encode(b"slice+ctl:s%2Fp%2Bc").decode()
    stored = _stored(path)
    assert (stored["id-token"], stored["refresh-token"]) == (new, "rt-2")
    assert stored["client-secret"] == "s/p+c"
    assert _server(path) == SERVER  # the rest of the file as it was


async def test_a_public_client_keeps_its_refresh_token_when_none_comes_back(
    tmp_path: Path,
) -> None:
    """No client secret, a provider that takes client credentials only as form fields, and an
    answer without a new refresh token: golang.org/x/oauth2 retries with the fields, and
    client-go keeps the refresh token it has."""
    new = fresh_jwt()
    async with IdentityProvider(basic_auth=False) as idp:
        idp.answer(access_token="at", id_token=new)
        user = _provider(idp, **{"refresh-token": "rt-1"})
        del user["auth-provider"]["config"]["client-secret"]
        path = one_context(tmp_path, SERVER, user)
        conn = await load_connection(path)
    assert await conn.authorization() == f"Bearer {new}"
    assert [g.authorization is None for g in idp.grants] == [False, True]
    assert idp.grants[1].form == {"grant_type": "refresh_token", "refresh_token": "rt-1",
                                  "client_id": "slice ctl"}
    assert _stored(path)["refresh-token"] == "rt-1"


@pytest.mark.parametrize(("config", "answer", "refused"), [
    ({"client-id": ""}, None, "Must provide client-id"),
    ({"idp-issuer-url": ""}, None, "Must provide idp-issuer-url"),
    ({}, None, "No valid id-token, and cannot refresh without refresh-token"),
    ({"id-token": "opaque"}, None, "ID Token is not a valid JWT"),
    ({"refresh-token": "rt-1"}, None, "failed to refresh token: oauth2: cannot fetch token: 400"),
    ({"refresh-token": "rt-1"}, {"access_token": "at"},
     "token response did not contain an id_token"),
    ({"refresh-token": "rt-1"}, {"access_token": "at", "id_token": ""},
     "token response did not contain an id_token"),
    ({"refresh-token": "rt-1"}, {"access_token": "at", "id_token": 7},
     "token response did not contain an id_token"),
    ({"refresh-token": "rt-1"}, {"id_token": "x.y.z"},
     "failed to refresh token: oauth2: server response missing access_token"),
    ({"refresh-token": "rt-1"}, {"access_token": "at", "id_token": "opaque"},
     "ID Token is not a valid JWT"),
])
async def test_what_cannot_give_a_token_is_a_clear_error_at_start(
    tmp_path: Path, idp: IdentityProvider, config: dict[str, str],
    answer: dict[str, Any] | None, refused: str,
) -> None:
    if answer is not None:
        idp.answer(**answer)
    with pytest.raises(ConfigError, match=refused):
        await load_connection(one_context(tmp_path, SERVER, _provider(idp, **config)))


async def test_the_providers_ca_is_trusted_from_a_file_or_data(tmp_path: Path) -> None:
    async with IdentityProvider(tls=True) as idp:
        user = _provider(idp, **{"refresh-token": "rt-1"})
        with pytest.raises(ConfigError, match=r"failed to refresh token.*certificate verify"):
            await load_connection(one_context(tmp_path, SERVER, user))
        (tmp_path / "idp-ca.crt").write_bytes(idp.ca_pem)
        data = base64.b64encode(idp.ca_pem).decode()
        wrapped = "\n".join(data[i:i + 64] for i in range(0, len(data), 64))  # Go skips breaks
        for ca in ({"idp-certificate-authority": str(tmp_path / "idp-ca.crt")},
                   {"idp-certificate-authority-data": data},
                   {"idp-certificate-authority-data": wrapped + "\r\n"}):
            new = fresh_jwt()
            idp.answer(access_token="at", id_token=new)
            conn = await load_connection(one_context(tmp_path, SERVER, _provider(
                idp, **{"refresh-token": "rt-1"}, **ca)))
            assert await conn.authorization() == f"Bearer {new}"
        for bad in (data[:8] + "*" + data[9:], data[:-1]):  # a stray byte, a short group
            with pytest.raises(ConfigError, match="the identity provider's CA"):
                await load_connection(one_context(tmp_path, SERVER, _provider(
                    idp, **{"refresh-token": "rt-1", "idp-certificate-authority-data": bad})))


async def test_at_run_time_one_refresh_serves_every_caller_and_a_failure_keeps_the_token(
    tmp_path: Path, idp: IdentityProvider, monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = fresh_jwt(), fresh_jwt(7200.0)
    path = one_context(tmp_path, SERVER, _provider(
        idp, **{"id-token": first, "refresh-token": "rt-1"}))
    conn = await load_connection(path)
    monkeypatch.setattr(oidc, "EXPIRY_MARGIN", 3600.0)  # ``first`` is now about to expire
    idp.answer(access_token="at", id_token=second, refresh_token="rt-2")
    sent = await asyncio.gather(*(conn.authorization() for _ in range(5)))
    assert sent == [f"Bearer {second}"] * 5
    assert len(idp.grants) == 1
    monkeypatch.setattr(oidc, "EXPIRY_MARGIN", 7200.0)  # and now ``second`` is
    os.unlink(path)  # nowhere to write back: kept in memory, with a warning
    for _ in range(3):  # the provider refuses (empty queue): asked once, the token kept
        assert await conn.authorization() == f"Bearer {second}"
    assert [g.form["refresh_token"] for g in idp.grants] == ["rt-1", "rt-2"]
    monkeypatch.setattr(oidc, "RETRY_AFTER", 0.0)
    third = fresh_jwt(10800.0)
    idp.answer(access_token="at", id_token=third)
    assert await conn.authorization() == f"Bearer {third}"
    assert conn._oidc is not None and conn._oidc.config["refresh-token"] == "rt-2"
    assert "rt-2" not in repr(conn._oidc) and third not in repr(conn._oidc)


async def test_a_token_or_basic_auth_wins_over_the_provider(
    tmp_path: Path, idp: IdentityProvider,
) -> None:
    user = {**_provider(idp, **{"refresh-token": "rt-1"}), "token": "inline"}
    conn = await load_connection(one_context(tmp_path, SERVER, user))
    assert await conn.authorization() == "Bearer inline"
    assert idp.grants == []


def test_a_refresh_that_failed_waits_ten_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = oidc.OidcProvider.parse(
        {"config": {"idp-issuer-url": "https://idp.example", "client-id": "c"}}, "u", "file")
    assert provider.needs_refresh()  # no id-token
    now = 1000.0
    monkeypatch.setattr(time, "monotonic", lambda: now)
    provider._failed_at = now - 9.5
    assert not provider.needs_refresh()
    provider._failed_at = now - 10.5
    assert provider.needs_refresh()


@pytest.mark.parametrize(("provider", "refused"), [
    ({"config": None}, "Must provide idp-issuer-url"),  # null is an empty map, as Go reads it
    ({"config": ["idp-issuer-url"]}, "must be a map of strings"),
    ({"config": {"idp-issuer-url": "https://idp.example", "client-id": 7}},
     "must be a map of strings"),
])
def test_a_config_that_is_no_map_of_strings_is_refused(
    provider: dict[str, Any], refused: str,
) -> None:
    with pytest.raises(OidcError, match=refused):
        oidc.OidcProvider.parse(provider, "u", "file")


@pytest.mark.parametrize(("discovery", "refused"), [
    ((404, {"error": "not found"}), "failed to query metadata endpoint 404 Not Found: '{"),
    ((404, {"error": "x" * 80}), r"""404 Not Found: '\{"error": "x{69}\.\.\.'$"""),  # 80 bytes
    ((200, {"issuer": "x"}), "discovery object doesn't contain a token_endpoint"),
    ((200, {"token_endpoint": 7}), "discovery object doesn't contain a token_endpoint"),
    ((200, {"token_endpoint": ""}), "discovery object doesn't contain a token_endpoint"),
])
async def test_a_discovery_document_without_a_token_endpoint_is_named(
    tmp_path: Path, idp: IdentityProvider, discovery: tuple[int, dict[str, Any]], refused: str,
) -> None:
    idp.discovery = discovery
    with pytest.raises(ConfigError, match=refused):
        await load_connection(one_context(tmp_path, SERVER, _provider(
            idp, **{"refresh-token": "rt-1"})))
    assert idp.grants == []


async def test_a_provider_that_does_not_answer_is_named_after_the_timeout(
    tmp_path: Path, idp: IdentityProvider, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(oidc, "TIMEOUT", aiohttp.ClientTimeout(total=0.2))
    idp.delay = 5.0
    with pytest.raises(ConfigError, match=r"failed to refresh token: TimeoutError$"):
        await load_connection(one_context(tmp_path, SERVER, _provider(
            idp, **{"refresh-token": "rt-1"})))


async def test_the_write_back_finds_its_user_among_others_and_keeps_a_held_refresh_token(
    tmp_path: Path, idp: IdentityProvider,
) -> None:
    """The file names another user first; an answer whose refresh token is empty keeps the
    one held, as client-go keeps it."""
    new = fresh_jwt()
    idp.answer(access_token="at", id_token=new, refresh_token="")
    path = one_context(tmp_path, SERVER, _provider(idp, **{"refresh-token": "rt-1"}))
    other = {"idp-issuer-url": "x", "client-id": "y"}
    _users(path, {"other": {"auth-provider": {"name": "oidc", "config": other}}})
    conn = await load_connection(path)
    assert await conn.authorization() == f"Bearer {new}"
    users = _users(path)
    assert users["u"]["auth-provider"]["config"]["id-token"] == new
    assert users["u"]["auth-provider"]["config"]["refresh-token"] == "rt-1"
    assert users["other"]["auth-provider"]["config"] == other


@pytest.mark.parametrize("rewritten", ["users: null\n", "users: [junk, null]\n", "users: [\n", ""])
async def test_a_file_rewritten_since_keeps_the_refreshed_tokens_in_memory(
    tmp_path: Path, idp: IdentityProvider, monkeypatch: pytest.MonkeyPatch, rewritten: str,
) -> None:
    """The file no longer names the user (or is no kubeconfig): a warning, and the new token
    is sent all the same."""
    path = one_context(tmp_path, SERVER, _provider(
        idp, **{"id-token": fresh_jwt(), "refresh-token": "rt-1"}))
    conn = await load_connection(path)
    _text(path, rewritten)
    monkeypatch.setattr(oidc, "EXPIRY_MARGIN", 7200.0)
    new = fresh_jwt(10800.0)
    idp.answer(access_token="at", id_token=new)
    assert await conn.authorization() == f"Bearer {new}"
    assert _text(path) == rewritten
