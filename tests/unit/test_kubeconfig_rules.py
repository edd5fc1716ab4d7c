"""The server, TLS settings and credential slicectl takes from a kubeconfig are client-go's
(slicectl.kube.kubeconfig_rules, kubeconfig_merge, static_credentials).

Each case below was run through kubectl v1.32 against a recording TLS server on 2026-11-29, and
before these rules slicectl did otherwise in every one (RELIABILITY.md, "Found by a review of
kubeconfig handling against client-go"); the expected answers are kubectl's. Nothing listens
at the servers here: what is checked is what would be sent.
"""

from __future__ import annotations

import base64
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slicectl.kube import static_credentials
from slicectl.kube.config import ConfigError, load_connection
from slicectl.kube.kubeconfig_rules import normalized_server
from slicectl.sim.tls import make_certificates

SERVER = "https://api.example:6443"
PLUGIN = """\
import json, os, sys
open(os.environ["RUNS"], "a").write("run\\n")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": "exec-token"}}))
"""


def _write(path: Path, cluster: dict[str, Any], user: dict[str, Any] | None) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": SERVER, **cluster}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [] if user is None else [{"name": "u", "user": user}]}
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    """A CA (file and base64 data) and a client certificate and key, as files."""
    ca, cert, key = make_certificates("api.example")
    files = {"ca": tmp_path / "ca.crt", "cert": tmp_path / "client.crt", "key": tmp_path / "k"}
    for name, pem in (("ca", ca), ("cert", cert), ("key", key)):
        files[name].write_bytes(pem)
    return {"ca-data": base64.b64encode(ca).decode(), "cert-data": base64.b64encode(cert).decode(),
            "key-data": base64.b64encode(key).decode(), **{n: str(f) for n, f in files.items()}}


@pytest.fixture
def plugin(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    return {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
            "args": [str(script)], "interactiveMode": "Never",
            "env": [{"name": "RUNS", "value": str(tmp_path / "runs")}]}


def _runs(tmp_path: Path) -> int:
    runs = tmp_path / "runs"
    return len(runs.read_text().split()) if runs.exists() else 0


def _read(path: str) -> str:
    return Path(path).read_text()


async def _sent(path: str) -> tuple[str, str | None]:
    conn = await load_connection(path)
    return conn.host, await conn.authorization()


async def test_a_token_file_wins_over_the_token_and_is_read_trimmed_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")  # as `echo $TOKEN > file` leaves it
    path = _write(tmp_path / "kc", {}, {"token": "stale-inline", "tokenFile": "token"})
    conn = await load_connection(path)
    assert await conn.authorization() == "Bearer file-token"
    token_file.write_text("rotated\n")
    assert await conn.authorization() == "Bearer file-token"  # read again after a minute
    monkeypatch.setattr(static_credentials, "REREAD_AFTER", 0.0)
    assert await conn.authorization() == "Bearer rotated"
    # an empty token is no token: the file is read
    path = _write(tmp_path / "kc2", {}, {"token": "", "tokenFile": str(token_file)})
    assert (await _sent(path))[1] == "Bearer rotated"


async def test_a_static_credential_means_the_exec_plugin_never_runs(
    tmp_path: Path, pki: dict[str, str], plugin: dict[str, Any],
) -> None:
    (tmp_path / "token").write_text("from-file")
    cert_data = {"client-certificate-data": pki["cert-data"], "client-key-data": pki["key-data"]}
    for static, header in (({"token": "inline"}, "Bearer inline"),
                           ({"tokenFile": str(tmp_path / "token")}, "Bearer from-file"),
                           ({"username": "alice", "password": "pw"}, "Basic YWxpY2U6cHc="),
                           ({"client-certificate": pki["cert"], "client-key": pki["key"]},
                            None),
                           (cert_data, None)):
        path = _write(tmp_path / "kc", {"certificate-authority": pki["ca"]},
                      {**static, "exec": plugin})
        assert (await _sent(path))[1] == header
    assert _runs(tmp_path) == 0
    path = _write(tmp_path / "kc", {}, {"exec": plugin})
    assert (await _sent(path))[1] == "Bearer exec-token"
    assert _runs(tmp_path) == 1


async def test_a_plain_http_server_reads_no_credential(
    tmp_path: Path, plugin: dict[str, Any],
) -> None:
    for user in ({"exec": plugin}, {"tokenFile": str(tmp_path / "absent")}):
        conn = await load_connection(_write(tmp_path / "kc", {"server": "http://api:8080"}, user))
        assert await conn.authorization() is None
    assert _runs(tmp_path) == 0


async def test_empty_and_null_values_are_unset(tmp_path: Path, pki: dict[str, str]) -> None:
    """An empty ``certificate-authority-data`` next to the CA file once left the file unread
    and every public CA trusted."""
    for empty in ("", None):
        path = _write(tmp_path / "kc", {"certificate-authority-data": empty,
                                        "certificate-authority": pki["ca"]}, {"token": "t"})
        conn = await load_connection(path)
        assert not isinstance(conn.ssl, bool)
        assert len(conn.ssl.get_ca_certs()) == 1  # the cluster's CA only


async def test_a_username_alone_is_basic_auth_with_an_empty_password(tmp_path: Path) -> None:
    assert (await _sent(_write(tmp_path / "kc", {}, {"username": "alice"})))[1] == (
        "Basic YWxpY2U6")


async def test_a_password_alone_is_no_basic_auth(tmp_path: Path, plugin: dict[str, Any]) -> None:
    """client-go's HasBasicAuth is a username: a password alone sends nothing (kubectl would
    prompt for the username), and the exec plugin or the token file is used instead."""
    (tmp_path / "token").write_text("from-file")
    for also, header in (({}, None), ({"exec": plugin}, "Bearer exec-token"),
                         ({"tokenFile": "token"}, "Bearer from-file")):
        path = _write(tmp_path / "kc", {}, {"password": "pw", **also})
        assert (await _sent(path))[1] == header


async def test_no_user_is_anonymous(tmp_path: Path) -> None:
    assert (await _sent(_write(tmp_path / "kc", {}, None)))[1] is None


async def test_oidc_yields_to_a_token_a_token_file_or_basic_auth(tmp_path: Path) -> None:
    oidc = {"name": "oidc", "config": {"client-id": "k", "id-token": "id-token",
                                       "idp-issuer-url": "https://issuer.example"}}
    (tmp_path / "token").write_text("from-file")
    for static, header in (({"token": "inline"}, "Bearer inline"),
                           ({"tokenFile": "token"}, "Bearer from-file"),
                           ({"username": "alice"}, "Basic YWxpY2U6")):
        path = _write(tmp_path / "kc", {}, {**static, "auth-provider": oidc})
        assert (await _sent(path))[1] == header


async def test_the_context_is_the_one_asked_for_else_the_current_one(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    doc = yaml.safe_load(_read(_write(path, {}, {"token": "t"})))
    doc["clusters"].append({"name": "other", "cluster": {"server": "https://other:6443"}})
    doc["contexts"] += [{"name": "o", "context": {"cluster": "other", "user": "u"}},
                        {"name": "lost", "context": {"cluster": "gone", "user": "u"}}]
    path.write_text(yaml.safe_dump(doc))
    assert (await load_connection(str(path))).host == SERVER
    assert (await load_connection(str(path), context="o")).host == "https://other:6443"
    for context, refused in (("nosuch", 'context "nosuch" does not exist'),
                             ("lost", 'context "lost": cluster "gone" does not exist')):
        with pytest.raises(ConfigError, match=refused):
            await load_connection(str(path), context=context)
    doc["current-context"] = ""
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="current-context is not set"):
        await load_connection(str(path))


@pytest.mark.parametrize(("cluster", "user", "refused"), [
    ({"insecure-skip-tls-verify": "false"}, {}, "insecure-skip-tls-verify must be a bool"),
    ({}, {"token": 12345}, "token must be a string"),
    ({"certificate-authority-data": "!!!"}, {}, "certificate-authority-data must be a base64"),
    ({"insecure-skip-tls-verify": True, "certificate-authority-data": "QUJD"}, {},
     "specifying a root certificates file with the insecure flag is not allowed"),
    ({"insecure-skip-tls-verify": True, "certificate-authority": "/ca"}, {},
     "specifying a root certificates file with the insecure flag is not allowed"),
    ({}, {"token": "t", "password": "pw"},
     r"more than one authentication method found for u; found \['token', 'basicAuth'\]"),
    ({}, {"client-certificate": "/c"}, "client-key-data or client-key must be specified"),
    ({}, {"client-certificate": "/c", "client-certificate-data": "QUJD", "client-key": "/k"},
     r"client-cert-data and client-cert are both specified for u\. client-cert-data will"),
    ({}, {"client-certificate-data": "QUJD", "client-key": "/k", "client-key-data": "QUJD"},
     "client-key-data and client-key are both specified for u; client-key-data will override"),
    ({"certificate-authority": "/ca", "certificate-authority-data": "QUJD"}, {},
     "certificate-authority-data and certificate-authority are both specified for k"),
    ({}, {"token": "t", "username": "alice"},
     r"more than one authentication method found for u; found \['token', 'basicAuth'\]"),
    ({}, {"tokenFile": "/t", "username": "alice"},
     "username/password or bearer token may be set, but not both"),
    ({}, {"client-certificate-data": "QUJD"}, "client-key-data or client-key must be specified"),
    ({}, {"exec": {"command": "x"}, "auth-provider": {"name": "oidc"}},
     "authProvider cannot be provided in combination with an exec plugin for u"),
    ({}, {"auth-provider": {"name": "gcp"}}, "The gcp auth plugin has been removed"),
    ({}, {"auth-provider": {"name": "azure"}}, "The azure auth plugin has been removed"),
    ({}, {"auth-provider": {"name": "nosuch"}}, 'no Auth Provider found for name "nosuch"'),
    ({"server": ""}, {}, 'no server found for cluster "k"'),
])
async def test_what_kubectl_refuses(tmp_path: Path, cluster: dict[str, Any],
                                    user: dict[str, Any], refused: str) -> None:
    with pytest.raises(ConfigError, match=refused):
        await load_connection(_write(tmp_path / "kc", cluster, user))


async def test_relative_paths_are_their_own_file_s(tmp_path: Path, pki: dict[str, str]) -> None:
    """A user's relative certificate in another file of the list: that file's directory."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for name in ("cert", "key"):
        shutil.copyfile(pki[name], tmp_path / "b" / f"client.{name}")
    shutil.copyfile(pki["ca"], tmp_path / "a" / "ca.crt")
    cluster_file = _write(tmp_path / "a" / "kc", {"certificate-authority": "ca.crt"}, None)
    (tmp_path / "b" / "kc").write_text(yaml.safe_dump({"users": [{"name": "u", "user": {
        "client-certificate": "client.cert", "client-key": "client.key"}}]}))
    conn = await load_connection(f"{cluster_file}:{tmp_path / 'b' / 'kc'}")
    assert conn._cfg.cert_file == str(tmp_path / "b" / "client.cert")
    assert conn._cfg.ssl_ca_cert == str(tmp_path / "a" / "ca.crt")


@pytest.mark.parametrize(("server", "url"), [
    ("HTTPS://api:6443", "https://api:6443"), ("127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("localhost:8080", "http://localhost:8080"), ("https://api/prefix?x=1#f", "https://api/prefix"),
    ("https://api:6443/", "https://api:6443"), ("https://[::1]:6443", "https://[::1]:6443"),
])
def test_the_server_url_is_client_go_s(server: str, url: str) -> None:
    assert normalized_server(server) == url
