"""In-cluster configuration read as client-go reads it, without importing kubernetes-asyncio."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from slicectl.kube import config, static_credentials, tls_files
from slicectl.kube.config import ConfigError, Connection, ServiceAccount
from slicectl.sim.tls import make_certificates, server_context
from tests.tls_handshake import handshake

ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def mounted(tmp_path: Path) -> tuple[Path, Path]:
    """A pod's mounted service-account token and cluster CA certificate."""
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("first-token\n")
    ca.write_bytes(make_certificates("127.0.0.1")[0])
    return token, ca


def test_host_port_token_and_ca_as_client_go_joins_them(mounted: tuple[Path, Path]) -> None:
    token, ca = mounted
    account = ServiceAccount(ENV, str(token), str(ca))
    assert account.host == "https://10.96.0.1:443"
    assert account.ssl_ca_cert == str(ca) and account.verify_ssl
    v6 = ServiceAccount({**ENV, "KUBERNETES_SERVICE_HOST": "fd00::1"}, str(token), str(ca))
    assert v6.host == "https://[fd00::1]:443", "an IPv6 host is bracketed (net.JoinHostPort)"


@pytest.mark.parametrize("env, what", [
    ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "KUBERNETES_SERVICE_PORT"),
    ({**ENV, "KUBERNETES_SERVICE_HOST": ""}, "not empty"),
])
def test_missing_service_variables_are_a_clear_error(
    env: dict[str, str], what: str, mounted: tuple[Path, Path]
) -> None:
    token, ca = mounted
    with pytest.raises(ConfigError, match=what):
        ServiceAccount(env, str(token), str(ca))


def test_missing_or_empty_files_are_a_clear_error(mounted: tuple[Path, Path]) -> None:
    token, ca = mounted
    with pytest.raises(ConfigError, match=r"CA file .* missing or empty"):
        ServiceAccount(ENV, str(token), str(ca.parent / "absent.crt"))
    token.write_text("\n")
    with pytest.raises(ConfigError, match=r"token file .* is empty"):
        ServiceAccount(ENV, str(token), str(ca))
    token.unlink()
    with pytest.raises(ConfigError, match="cannot read the token file"):
        ServiceAccount(ENV, str(token), str(ca))


async def test_the_token_is_reread_after_a_minute_and_a_failed_reread_keeps_the_last(
    mounted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    token, ca = mounted
    account = ServiceAccount(ENV, str(token), str(ca))
    token.write_text("rotated-token")
    assert await account.get_api_key_with_prefix("BearerToken") == "Bearer first-token"
    monkeypatch.setattr(static_credentials, "REREAD_AFTER", 0.0)  # the minute has passed
    assert await account.get_api_key_with_prefix("BearerToken") == "Bearer rotated-token"
    token.unlink()  # a remount in progress: keep serving the last token
    assert await account.get_api_key_with_prefix("BearerToken") == "Bearer rotated-token"


async def test_a_401_rereads_the_token_file_at_once(mounted: tuple[Path, Path]) -> None:
    token, ca = mounted
    account = ServiceAccount(ENV, str(token), str(ca))
    conn = Connection(account, account, in_cluster=True)
    assert await conn.authorization() == "Bearer first-token"
    token.write_text("rotated-token")
    await conn.refresh()
    assert await conn.authorization() == "Bearer rotated-token"
    assert "rotated-token" not in conn.redact("rotated-token and first-token")
    token.unlink()
    await conn.refresh()  # unreadable now: logged, the last token stays
    assert await conn.authorization() == "Bearer rotated-token"


async def test_rotated_tokens_are_not_remembered_for_ever(
    mounted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubelet rotates a pod's projected token about hourly (an exec plugin's credential
    may last minutes): the credentials kept for redaction must not grow with every rotation of
    a process that runs for months (each ~1 KB, and every API error's text was searched for
    all of them), while the current and the previous ones are still redacted."""
    token, ca = mounted
    account = ServiceAccount(ENV, str(token), str(ca))
    conn = Connection(account, account, in_cluster=True)
    monkeypatch.setattr(static_credentials, "REREAD_AFTER", 0.0)
    for i in range(1000):
        token.write_text(f"token-{i:04d}")
        assert await conn.authorization() == f"Bearer token-{i:04d}"
    assert conn.redact("token-0999 token-0998") == "REDACTED REDACTED"
    assert len(conn._secrets) <= 2 * config.REMEMBERED_CREDENTIALS


async def test_a_rotated_cluster_ca_is_trusted_once_the_mounted_file_carries_it(
    mounted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster CA rotation: the kubelet updates the pod's ``ca.crt`` (from the
    ``kube-root-ca.crt`` ConfigMap) with the old and the new CA, then the API server presents a
    certificate of the new one. The file is read again, as client-go v1.36 reads it."""
    token, ca = mounted
    monkeypatch.setattr(config, "_IN_CLUSTER_TOKEN", str(token))
    monkeypatch.setattr(config, "_IN_CLUSTER_CA", str(ca))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    conn = await config.load_connection()
    new_ca, cert_pem, key_pem = make_certificates("10.96.0.1")
    rotated = server_context(cert_pem, key_pem)
    assert isinstance(conn.ssl, ssl.SSLContext)
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(conn.ssl, rotated, "10.96.0.1")
    ca.write_bytes(ca.read_bytes() + new_ca)
    monkeypatch.setattr(tls_files, "CHECK_EVERY", 0.0)
    conn.reload_tls_files()
    assert conn.identity == 1
    handshake(conn.ssl, rotated, "10.96.0.1")


def test_in_cluster_loading_never_imports_kubernetes_asyncio(mounted: tuple[Path, Path]) -> None:
    """Its generated client costs ~40 MB of RSS; a pod needs none of it."""
    token, ca = mounted
    probe = (
        "import asyncio, sys\n"
        "from slicectl.kube import config\n"
        f"config._IN_CLUSTER_TOKEN, config._IN_CLUSTER_CA = {str(token)!r}, {str(ca)!r}\n"
        "conn = asyncio.run(config.load_connection())\n"
        "assert conn.host == 'https://10.96.0.1:443', conn.host\n"
        "print(sorted(m for m in sys.modules if m.startswith('kubernetes_asyncio')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | ENV
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_token_file_is_read_a_minute_after_the_last_try_not_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """client-go's cachingTokenSource: a minute between reads; a read that fails is logged,
    keeps the last token and is itself a try (the next one is a minute later)."""
    now = 1000.0
    monkeypatch.setattr(time, "monotonic", lambda: now)
    path = tmp_path / "token"
    path.write_text("first\n")
    token = static_credentials.TokenFile(str(path))
    path.write_text("second")
    now += 59.5
    assert token.current() == "first"
    now += 1.0
    assert token.current() == "second"
    path.unlink()
    now += 60.5
    with capture_logs() as logs:
        assert token.current() == "second"
    assert [e["event"] for e in logs] == ["token file not re-read; the last token is kept"]
    path.write_text("third")
    now += 30.0
    assert token.current() == "second"
    now += 31.0
    assert token.current() == "third"
