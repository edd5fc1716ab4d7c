"""Credentials from a kubeconfig exec plugin (``aws eks get-token``, ``gke-gcloud-auth-plugin``,
``kubelogin``): run once, reused while they are valid, renewed once they expire or the server
refuses them, by one plugin run however many requests are waiting, as client-go does.

A plugin with ``provideClusterInfo`` mints its credential for the cluster it is handed.

A kubeconfig ``tokenFile`` is read again after a 401, so a rotated file is picked up.

The plugin here is a small Python script that hands out the tokens of a file in turn, with an
``expirationTimestamp`` when asked, and counts its runs. Every test runs on a real cluster too.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from slicectl.kube import errors
from slicectl.kube.client import KubeClient
from slicectl.kube.config import ConfigError
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.credentials import (
    current_cluster,
    user_kubeconfig,
    valid_token,
    with_cluster,
)

PLUGIN = """\
import datetime, json, os, sys
calls = os.environ["PLUGIN_CALLS"]
with open(calls, "a") as f:
    f.write("run\\n")
with open(calls) as f:
    n = len(f.read().split())
tokens = open(os.environ["PLUGIN_TOKENS"]).read().split()
if n > len(tokens):
    sys.exit("the identity provider is down")
status = {"token": tokens[n - 1]}
ttl = os.environ.get("PLUGIN_TTL")
if ttl:
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(ttl))
    status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": status}))
"""


class Plugin:
    """The plugin's files: the tokens it hands out (one per run), and its run count."""

    def __init__(self, tmp_path: Path, tokens: list[str], ttl: float | None = None) -> None:
        self.script = tmp_path / "plugin.py"
        self.script.write_text(PLUGIN)
        self.tokens = tmp_path / "tokens"
        self.tokens.write_text("\n".join(tokens))
        self.calls = tmp_path / "calls"
        self.calls.write_text("")
        self.ttl = ttl

    @property
    def runs(self) -> int:
        return len(self.calls.read_text().split())

    def kubeconfig(self, api: Cluster, path: Path) -> str:
        env = [{"name": "PLUGIN_CALLS", "value": str(self.calls)},
               {"name": "PLUGIN_TOKENS", "value": str(self.tokens)}]
        if self.ttl is not None:
            env.append({"name": "PLUGIN_TTL", "value": str(self.ttl)})
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                         "command": sys.executable, "args": [str(self.script)], "env": env,
                         "interactiveMode": "Never"}}
        return user_kubeconfig(api.kubeconfig, user, path)


async def test_a_valid_credential_is_reused_and_an_expired_one_renewed_by_one_run(
    api: Cluster, tmp_path: Path
) -> None:
    token = await valid_token(api)
    plugin = Plugin(tmp_path, [token, token, token], ttl=4.0)
    async with await KubeClient.connect(plugin.kubeconfig(api, tmp_path / "kc")) as client:
        for _ in range(5):
            await client.list(PODS, api.namespace)
        assert plugin.runs == 1, "the plugin ran again for a credential that was still valid"
        await asyncio.sleep(4.5)  # past the expirationTimestamp (whole seconds, rounded down)
        await asyncio.gather(*(client.list(PODS, api.namespace) for _ in range(20)))
        assert plugin.runs == 2, f"{plugin.runs - 1} plugin runs for one expiry"
        await client.list(PODS, api.namespace)
        assert plugin.runs == 2


async def test_a_refused_credential_is_renewed_once_and_the_requests_resent(
    api: Cluster, tmp_path: Path
) -> None:
    """The server refuses the first token (revoked, say): the 401s of every request in flight
    renew it with one plugin run, and each request is sent again with the new one."""
    token = await valid_token(api)
    plugin = Plugin(tmp_path, ["a-revoked-token", token])
    statuses: list[int] = []
    async with await KubeClient.connect(
        plugin.kubeconfig(api, tmp_path / "kc"), on_request=lambda v, r, s, t: statuses.append(s)
    ) as client:
        await asyncio.gather(*(client.list(PODS, api.namespace) for _ in range(5)))
    assert plugin.runs == 2
    assert sorted(statuses) == [200] * 5 + [401] * 5


async def test_a_plugin_that_fails_is_a_clear_error(api: Cluster, tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [])
    with pytest.raises(ConfigError, match="the identity provider is down"):
        await KubeClient.connect(plugin.kubeconfig(api, tmp_path / "kc"))


async def test_a_failed_renewal_keeps_the_last_credential_and_the_server_decides(
    api: Cluster, tmp_path: Path
) -> None:
    """The plugin fails when the credential expires: the request goes out with the last one (the
    server may still accept it), and is refused when the server says so, with no crash."""
    token = await valid_token(api)
    plugin = Plugin(tmp_path, [token], ttl=1.0)
    async with await KubeClient.connect(plugin.kubeconfig(api, tmp_path / "kc")) as client:
        await asyncio.sleep(1.5)
        await client.list(PODS, api.namespace)  # the server still accepts the token
        assert plugin.runs == 2


async def test_a_refused_credential_the_plugin_cannot_renew_is_unauthorized(
    api: Cluster, tmp_path: Path
) -> None:
    plugin = Plugin(tmp_path, ["a-revoked-token"])
    async with await KubeClient.connect(plugin.kubeconfig(api, tmp_path / "kc")) as client:
        with pytest.raises(errors.Unauthorized):
            await client.list(PODS, api.namespace)
    assert plugin.runs == 2


async def test_a_refused_token_file_is_read_again(api: Cluster, tmp_path: Path) -> None:
    """A kubeconfig ``tokenFile`` rotated by something else (as a projected token is): the 401
    to the old token reads the file again and the request is resent with the new one."""
    token = await valid_token(api)
    token_file = tmp_path / "token"
    token_file.write_text("a-revoked-token")
    kubeconfig = user_kubeconfig(api.kubeconfig, {"tokenFile": str(token_file)}, tmp_path / "kc")
    statuses: list[int] = []
    async with await KubeClient.connect(
        kubeconfig, on_request=lambda v, r, s, t: statuses.append(s)
    ) as client:
        token_file.write_text(token)
        await client.list(PODS, api.namespace)
    assert statuses == [401, 200]


async def test_a_watch_refused_renews_the_credential_for_the_next_watch(
    api: Cluster, tmp_path: Path
) -> None:
    """A watch is not resent (its caller reopens it), but its 401 renews the credential first."""
    token = await valid_token(api)
    plugin = Plugin(tmp_path, ["a-revoked-token", token])
    async with await KubeClient.connect(plugin.kubeconfig(api, tmp_path / "kc")) as client:
        with pytest.raises(errors.Unauthorized):
            async for _ in client.watch(PODS, api.namespace, resource_version="0",
                                        timeout_seconds=1):
                pass
        assert plugin.runs == 2
        async for _ in client.watch(PODS, api.namespace, resource_version="0",
                                    timeout_seconds=1):
            pass  # the namespace has no pods: the watch ends after a second, authorized
    assert plugin.runs == 2


CLUSTER_PLUGIN = """\
import json, os, sys
cluster = json.loads(os.environ["KUBERNETES_EXEC_INFO"])["spec"].get("cluster")
if cluster is None:
    sys.exit("no cluster info: which cluster is the token for?")
if (cluster["server"], cluster.get("config")) != (os.environ["SERVER"], {"audience": "test"}):
    sys.exit(f"not a cluster of ours: {cluster}")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": os.environ["TOKEN"]}}))
"""


async def test_a_plugin_that_asks_for_the_cluster_is_handed_it(
    api: Cluster, tmp_path: Path
) -> None:
    """``provideClusterInfo: true``: the plugin reads the server and the cluster's
    ``client.authentication.k8s.io/exec`` extension from ``KUBERNETES_EXEC_INFO`` (an
    identity provider serving several clusters picks the audience from it). Without the flag it
    is handed no cluster, and its refusal is the error."""
    script = tmp_path / "plugin.py"
    script.write_text(CLUSTER_PLUGIN)
    host = current_cluster(api.kubeconfig)["server"]
    exec_user = {"apiVersion": "client.authentication.k8s.io/v1beta1",
                 "command": sys.executable, "args": [str(script)],
                 "env": [{"name": "SERVER", "value": host},
                         {"name": "TOKEN", "value": await valid_token(api)}]}
    extension = [{"name": "client.authentication.k8s.io/exec",
                  "extension": {"audience": "test"}}]
    kubeconfig = with_cluster(user_kubeconfig(api.kubeconfig, {"exec": {
        **exec_user, "provideClusterInfo": True}}, tmp_path / "kc"), tmp_path / "kc",
        {"extensions": extension})
    async with await KubeClient.connect(kubeconfig) as client:
        await client.list(PODS, api.namespace)

    kubeconfig = with_cluster(user_kubeconfig(api.kubeconfig, {"exec": exec_user},
                                              tmp_path / "kc2"), tmp_path / "kc2",
                              {"extensions": extension})
    with pytest.raises(ConfigError, match="no cluster info: which cluster is the token for"):
        await KubeClient.connect(kubeconfig)


async def test_a_token_file_wins_over_a_stale_token_and_is_read_trimmed(
    api: Cluster, tmp_path: Path
) -> None:
    """client-go sends the ``tokenFile``'s token, whitespace trimmed, where kubernetes-asyncio
    sent the inline ``token`` and never read the file, and sent a file's trailing newline into
    the header (every request then failed before it left)."""
    token_file = tmp_path / "token"
    token_file.write_text(await valid_token(api) + "\n")
    kubeconfig = user_kubeconfig(api.kubeconfig, {"token": "a-revoked-token",
                                                  "tokenFile": str(token_file)}, tmp_path / "kc")
    statuses: list[int] = []
    async with await KubeClient.connect(
        kubeconfig, on_request=lambda v, r, s, t: statuses.append(s)
    ) as client:
        await client.list(PODS, api.namespace)
    assert statuses == [200]
