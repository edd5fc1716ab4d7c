"""A kubeconfig exec plugin run as client-go runs it (slicectl.kube.exec_credential): the
kubeconfig checks, ``KUBERNETES_EXEC_INFO``, the answer's checks, and the process itself
(a real subprocess: a small Python script that writes down what it was given)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from slicectl.kube.config import ConfigError, load_connection
from slicectl.kube.exec_credential import (
    ExecPluginError,
    Plugin,
    _credential,
    cluster_info,
    run,
)
from tests.unit.kubeconfigs import one_context

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"

# Writes its KUBERNETES_EXEC_INFO, its standard input and argv to the file named by
# PLUGIN_SEEN, then answers a token (or exits with PLUGIN_EXIT, or sleeps PLUGIN_SLEEP).
SCRIPT = """\
import json, os, sys, time
seen = {"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "stdin": sys.stdin.read(),
        "argv": sys.argv[1:], "extra": os.environ.get("EXTRA")}
open(os.environ["PLUGIN_SEEN"], "w").write(json.dumps(seen))
if os.environ.get("PLUGIN_SLEEP"):
    open(os.environ["PLUGIN_SEEN"] + ".pid", "w").write(str(os.getpid()))
    time.sleep(float(os.environ["PLUGIN_SLEEP"]))
if os.environ.get("PLUGIN_EXIT"):
    sys.exit("no credential for you")
print(json.dumps({"apiVersion": os.environ["PLUGIN_VERSION"], "kind": "ExecCredential",
                  "status": {"token": "minted", "expirationTimestamp": "2030-01-02T03:04:05Z"}}))
"""


def _exec(tmp_path: Path, **config: Any) -> tuple[dict[str, Any], Path]:
    """A kubeconfig ``exec`` running SCRIPT (``config`` added), and the file it writes."""
    script = tmp_path / "plugin.py"
    script.write_text(SCRIPT)
    seen = tmp_path / "seen.json"
    version = config.pop("apiVersion", V1)
    env = [{"name": "PLUGIN_SEEN", "value": str(seen)},
           {"name": "PLUGIN_VERSION", "value": version}, *config.pop("env", [])]
    return {"command": sys.executable, "args": [str(script), "an-arg"], "apiVersion": version,
            "interactiveMode": "Never", "env": env, **config}, seen


def _plugin(tmp_path: Path, **config: Any) -> tuple[Plugin, Path]:
    spec, seen = _exec(tmp_path, **config)
    return Plugin.parse(spec, "alice", str(tmp_path)), seen


@pytest.mark.parametrize(("config", "message"), [
    ({"apiVersion": V1}, "command must be specified for alice"),
    ({"command": "", "apiVersion": V1}, "command must be specified for alice"),
    ({"command": 7, "apiVersion": V1}, "command must be specified for alice"),
    ({"command": "p"}, "apiVersion must be specified for alice"),
    ({"command": "p", "apiVersion": "client.authentication.k8s.io/v1alpha1"},
     'invalid apiVersion "client.authentication.k8s.io/v1alpha1"'),
    ({"command": "p", "apiVersion": V1}, "interactiveMode must be specified for alice"),
    ({"command": "p", "apiVersion": V1, "interactiveMode": "Sometimes"},
     'invalid interactiveMode for alice: "Sometimes"'),
    ({"command": "p", "apiVersion": V1, "interactiveMode": "Never", "env": [{"value": "x"}]},
     "env variable name must be specified"),
    ({"command": "p", "apiVersion": V1, "interactiveMode": "Never", "args": "--one"},
     "args must be a list of strings"),
    ({"command": "p", "apiVersion": V1, "interactiveMode": "Never", "args": ["--n", 1]},
     "args must be a list of strings"),
])
def test_what_client_go_refuses_in_a_kubeconfig(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ExecPluginError, match=message):
        Plugin.parse(config, "alice", "/kube")


class _Stdin:
    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


@pytest.mark.parametrize(("mode", "stdin", "interactive"), [
    ("IfAvailable", _Stdin(True), True), ("Always", _Stdin(True), True),
    ("Never", _Stdin(True), False), ("IfAvailable", _Stdin(False), False),
    ("IfAvailable", None, False), ("Always", None, "refused"),
])
def test_the_plugin_is_interactive_as_client_go_decides(
    monkeypatch: pytest.MonkeyPatch, mode: str, stdin: _Stdin | None, interactive: Any,
) -> None:
    """client-go's isInteractive: a terminal on standard input (none at all under a service
    manager) and a mode that allows it."""
    plugin = Plugin.parse({"command": "p", "apiVersion": V1, "interactiveMode": mode}, "u", "/")
    monkeypatch.setattr(sys, "stdin", stdin)
    if interactive == "refused":
        with pytest.raises(ExecPluginError, match="standard input is not a terminal"):
            plugin.interactive()
    else:
        assert plugin.interactive() is interactive


def test_an_env_variable_without_a_value_is_empty() -> None:
    plugin = Plugin.parse({"command": "p", "apiVersion": V1, "interactiveMode": "Never",
                           "env": [{"name": "EMPTY"}, {"name": "N", "value": None}]}, "u", "/")
    assert plugin.env == (("EMPTY", ""), ("N", ""))


def test_v1beta1_defaults_to_if_available_and_paths_resolve_as_client_go_resolves_them() -> None:
    beta = Plugin.parse({"command": "bin/p", "apiVersion": V1BETA1}, "u", "/kube")
    assert beta.interactive_mode == "IfAvailable"
    assert beta.command == "/kube/bin/p"  # a relative path with a slash: the kubeconfig's
    assert Plugin.parse({"command": "aws", "apiVersion": V1BETA1}, "u", "/kube").command == "aws"
    assert Plugin.parse({"command": "/usr/bin/p", "apiVersion": V1BETA1}, "u",
                        "/kube").command == "/usr/bin/p"


def test_cluster_info_is_client_go_s(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    cluster = {"server": "https://api.example:6443", "tls-server-name": "kube.example",
               "certificate-authority": "ca.crt", "proxy-url": "socks5://proxy:1080",
               "extensions": [{"name": "client.authentication.k8s.io/exec",
                               "extension": {"audience": "prod", "region": "eu"}},
                              {"name": "other", "extension": {"x": 1}}]}
    assert cluster_info(cluster, str(tmp_path), insecure=False, disable_compression=True) == {
        "server": "https://api.example:6443", "tls-server-name": "kube.example",
        "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode(),
        "proxy-url": "socks5://proxy:1080", "disable-compression": True,
        "config": {"audience": "prod", "region": "eu"}}
    # false and empty fields are left out, as Go's omitempty leaves them out
    assert cluster_info({"server": "https://s", "certificate-authority-data": "QUJD"}, "/",
                        insecure=True, disable_compression=False) == {
        "server": "https://s", "insecure-skip-tls-verify": True,
        "certificate-authority-data": "QUJD"}
    # data wrapped over lines is read as Go reads it (kubectl accepts the file), and re-encoded
    assert cluster_info({"server": "https://s", "certificate-authority-data": "QU\nJD\r\n"},
                        "/", insecure=False, disable_compression=False)[
        "certificate-authority-data"] == "QUJD"
    with pytest.raises(ExecPluginError, match="certificate-authority-data is not base64"):
        cluster_info({"server": "https://s", "certificate-authority-data": "QU*D"}, "/",
                     insecure=False, disable_compression=False)
    with pytest.raises(ExecPluginError, match="failed to load CA bundle"):
        cluster_info({"server": "https://s", "certificate-authority": "gone.crt"},
                     str(tmp_path), insecure=False, disable_compression=False)


def _answer(status: Any, version: str = V1, kind: str = "ExecCredential") -> bytes:
    return json.dumps({"apiVersion": version, "kind": kind, "status": status}).encode()


@pytest.mark.parametrize(("stdout", "message"), [
    (b"token: abc", "decoding stdout"),
    (b'["token"]', "decoding stdout: not a JSON object"),
    (_answer({"token": "t"}, version=V1BETA1), "configured to use API version"),
    (_answer({"token": "t"}, kind="Secret"), "plugin returned Secret"),
    (json.dumps({"apiVersion": V1, "kind": "ExecCredential"}).encode(),
     "didn't return a status field"),
    (_answer({}), "didn't return a token or cert/key pair"),
    (_answer({"clientCertificateData": "PEM"}), "only certificate or key, not both"),
    (_answer({"token": "t", "expirationTimestamp": "tomorrow"}), "is not RFC 3339"),
    (_answer({"token": "t", "expirationTimestamp": "2030-01-02T03:04:05"}), "is not RFC 3339"),
])
def test_an_unusable_answer_is_a_clear_error(stdout: bytes, message: str) -> None:
    plugin = Plugin.parse({"command": "p", "apiVersion": V1, "interactiveMode": "Never"},
                          "u", "/")
    with pytest.raises(ExecPluginError, match=message):
        _credential(plugin, stdout)


def test_a_certificate_pair_and_its_expiry() -> None:
    plugin = Plugin.parse({"command": "p", "apiVersion": V1, "interactiveMode": "Never"},
                          "u", "/")
    got = _credential(plugin, _answer({"clientCertificateData": "C", "clientKeyData": "K",
                                       "expirationTimestamp": "2030-01-02T03:04:05+01:00"}))
    assert (got.token, got.certificate, got.key) == ("", "C", "K")
    assert got.expires == datetime(2030, 1, 2, 2, 4, 5, tzinfo=UTC)


async def test_the_plugin_gets_the_cluster_only_when_it_asks_and_never_our_stdin(
    tmp_path: Path,
) -> None:
    info = {"server": "https://api.example:6443"}
    plugin, seen = _plugin(tmp_path, env=[{"name": "EXTRA", "value": "from-kubeconfig"}])
    credential = await run(plugin, info)
    assert credential.token == "minted"
    assert credential.expires == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    given = json.loads(seen.read_text())
    assert given["info"] == {"apiVersion": V1, "kind": "ExecCredential",
                             "spec": {"interactive": False}}
    assert (given["stdin"], given["argv"], given["extra"]) == ("", ["an-arg"], "from-kubeconfig")

    plugin, seen = _plugin(tmp_path, provideClusterInfo=True)
    await run(plugin, info)
    assert json.loads(seen.read_text())["info"]["spec"] == {"interactive": False,
                                                            "cluster": info}
    await run(plugin, None)  # asked, but there is no cluster to give (in-cluster, no kubeconfig)
    assert json.loads(seen.read_text())["info"]["spec"] == {"interactive": False}


async def test_always_interactive_without_a_terminal_is_refused(tmp_path: Path) -> None:
    plugin, seen = _plugin(tmp_path, interactiveMode="Always")
    with pytest.raises(ExecPluginError, match="standard input is not a terminal"):
        await run(plugin, None)
    assert not seen.exists()


async def test_a_failing_or_missing_plugin_says_why(tmp_path: Path) -> None:
    plugin, _ = _plugin(tmp_path, env=[{"name": "PLUGIN_EXIT", "value": "1"}])
    with pytest.raises(ExecPluginError, match="failed with exit code 1: no credential for you"):
        await run(plugin, None)
    missing = Plugin.parse({"command": "no-such-plugin-anywhere", "apiVersion": V1,
                            "interactiveMode": "Never",
                            "installHint": "brew install no-such-plugin"}, "u", "/")
    with pytest.raises(ExecPluginError) as raised:
        await run(missing, None)
    assert str(raised.value).startswith("exec: executable no-such-plugin-anywhere not found")
    assert str(raised.value).endswith("\n\nbrew install no-such-plugin")
    without_hint = Plugin.parse({"command": "no-such-plugin-anywhere", "apiVersion": V1,
                                 "interactiveMode": "Never"}, "u", "/")
    with pytest.raises(ExecPluginError) as raised:
        await run(without_hint, None)
    assert str(raised.value).endswith("#client-go-credential-plugins")
    relative = Plugin.parse({"command": "./bin/gone", "apiVersion": V1,
                             "interactiveMode": "Never"}, "u", str(tmp_path))
    with pytest.raises(ExecPluginError, match=f"{tmp_path}/bin/gone not found"):
        await run(relative, None)


def _written_pid(path: Path) -> int | None:
    text = path.read_text() if path.exists() else ""
    return int(text) if text else None


async def test_a_plugin_that_hangs_is_killed_when_its_waiter_is_cancelled(
    tmp_path: Path,
) -> None:
    plugin, seen = _plugin(tmp_path, env=[{"name": "PLUGIN_SLEEP", "value": "600"}])
    running = asyncio.create_task(run(plugin, None))
    pid = None
    for _ in range(500):
        if (pid := _written_pid(Path(f"{seen}.pid"))) is not None:
            break
        await asyncio.sleep(0.02)
    assert pid is not None, "the plugin never started"
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, and reaped


async def test_a_kubeconfig_plugin_with_cluster_info_sees_the_kubeconfig_s_cluster(
    tmp_path: Path,
) -> None:
    spec, seen = _exec(tmp_path, provideClusterInfo=True)
    user = {"exec": spec}
    path = one_context(tmp_path, "https://api.example:6443", user,
                       proxy_url="http://proxy.example:3128")
    conn = await load_connection(path, disable_compression=True)
    assert await conn.authorization() == "Bearer minted"
    assert json.loads(seen.read_text())["info"]["spec"]["cluster"] == {
        "server": "https://api.example:6443", "proxy-url": "http://proxy.example:3128",
        "disable-compression": True}
    assert not conn.compression

    user["exec"]["interactiveMode"] = "Sometimes"
    with pytest.raises(ConfigError, match=r'kubeconfig .*: invalid interactiveMode for u'):
        await load_connection(one_context(tmp_path, "https://api.example:6443", user))


async def test_with_insecure_skip_tls_verify_the_plugin_gets_no_ca(tmp_path: Path) -> None:
    """kubectl's ``--insecure-skip-tls-verify`` clears the cluster's CA: the plugin is told
    the connection is insecure, and gets no CA that is not used."""
    spec, seen = _exec(tmp_path, provideClusterInfo=True)
    path = one_context(tmp_path, "https://api.example:6443", {"exec": spec},
                       certificate_authority_data="QUJD")
    await load_connection(path, insecure_skip_tls_verify=True)
    assert json.loads(seen.read_text())["info"]["spec"]["cluster"] == {
        "server": "https://api.example:6443", "insecure-skip-tls-verify": True}
