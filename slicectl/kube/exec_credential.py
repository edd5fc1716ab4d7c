"""A kubeconfig user's exec credential plugin, run as client-go runs it.

kubernetes-asyncio's own runner leaves out what client-go does with an ``exec`` user, and each
gap is a kubeconfig kubectl works with and slicectl did not:

- ``provideClusterInfo: true``: the plugin is handed the cluster in ``KUBERNETES_EXEC_INFO``
  (``spec.cluster``: server, ``tls-server-name``, ``insecure-skip-tls-verify``, the CA bundle,
  the kubeconfig's ``proxy-url``, ``disable-compression``, and the cluster extension
  ``client.authentication.k8s.io/exec`` as ``config``). A plugin that mints its credential for
  that cluster (one it finds by its server, or configured through the extension) got nothing
  and failed.
- ``interactiveMode``: ``Never`` keeps the plugin off the terminal, ``IfAvailable`` gives it
  one only when standard input is one, ``Always`` refuses to run without one, and an ``exec``
  of ``client.authentication.k8s.io/v1`` must say which (client-go's kubeconfig validation).
  Not interactive, the plugin's standard input is empty, never the controller's.
- Only ``client.authentication.k8s.io/v1`` and ``v1beta1`` are spoken (client-go removed
  ``v1alpha1``); the answer must be an ``ExecCredential`` of that version with a token or a
  certificate and key pair, both or neither.
- A relative ``command`` with a slash is the kubeconfig's directory's; a bare name is looked up
  on ``PATH``. Not found, the error says so with the plugin's ``installHint``.
- A plugin that hangs is killed when whatever waits for it is cancelled (a shutdown).

What comes out is a :class:`Credential`; :mod:`slicectl.kube.config` hands it to the
connection. Every failure is an :class:`ExecPluginError` whose text says what to fix.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slicectl.kube.kubeconfig_merge import decode_base64

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"
_MODES = ("Never", "IfAvailable", "Always")
_INSTALL_HELP = ("It looks like you are trying to use a client-go credential plugin that is "
                 "not installed.\n\nTo learn more about this feature, consult the documentation "
                 "available at:\n      https://kubernetes.io/docs/reference/access-authn-authz/"
                 "authentication/#client-go-credential-plugins")


class ExecPluginError(Exception):
    """The plugin is misconfigured, missing, failed, or answered something unusable."""


@dataclass(frozen=True)
class Credential:
    """What the plugin handed out: a bearer token, or a client certificate and key (PEM)."""

    token: str = ""
    certificate: str = ""
    key: str = ""
    expires: datetime | None = None


@dataclass(frozen=True)
class Plugin:
    """One ``exec`` user, checked as client-go's kubeconfig validation checks it."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str
    interactive_mode: str
    provide_cluster_info: bool
    install_hint: str

    @classmethod
    def parse(cls, config: Mapping[str, Any], user: str, base_dir: str) -> Plugin:
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise _unspecified("command", user)
        api_version = config.get("apiVersion")
        if not api_version:
            raise _unspecified("apiVersion", user)
        if api_version not in API_VERSIONS:
            raise ExecPluginError(f'exec plugin: invalid apiVersion "{api_version}" for {user} '
                                  f"(one of {', '.join(API_VERSIONS)})")
        mode = config.get("interactiveMode") or (
            "IfAvailable" if api_version.endswith("/v1beta1") else "")
        if not mode:
            raise _unspecified("interactiveMode", user)
        if mode not in _MODES:
            raise ExecPluginError(f'invalid interactiveMode for {user}: "{mode}" '
                                  f"(one of {', '.join(_MODES)})")
        args = config.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ExecPluginError(f"exec plugin of {user}: args must be a list of strings")
        env: list[tuple[str, str]] = []
        for item in config.get("env") or []:
            name = item.get("name") if isinstance(item, Mapping) else None
            if not name:
                raise _unspecified("env variable name", user)
            env.append((str(name), str(item.get("value") or "")))
        if os.sep in command and not os.path.isabs(command):
            command = os.path.normpath(os.path.join(base_dir, command))
        return cls(command, tuple(args), tuple(env), str(api_version), mode,
                   config.get("provideClusterInfo") is True, str(config.get("installHint") or ""))

    def interactive(self) -> bool:
        """Whether the plugin gets the terminal (client-go's ``isInteractive``)."""
        terminal = sys.stdin is not None and sys.stdin.isatty()
        if self.interactive_mode == "Always" and not terminal:
            raise ExecPluginError("exec plugin cannot support interactive mode: standard input "
                                  "is not a terminal")
        return self.interactive_mode != "Never" and terminal


def _unspecified(what: str, user: str) -> ExecPluginError:
    return ExecPluginError(f"{what} must be specified for {user} to use exec authentication "
                           "plugin")


def cluster_info(cluster: Mapping[str, Any], base_dir: str, *, insecure: bool,
                 disable_compression: bool) -> dict[str, Any]:
    """``spec.cluster`` for a plugin with ``provideClusterInfo`` (client-go's
    ``ConfigToExecCluster``), from the kubeconfig's cluster entry."""
    info: dict[str, Any] = {"server": str(cluster.get("server") or "")}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = str(cluster["tls-server-name"])
    if insecure:
        info["insecure-skip-tls-verify"] = True
    ca = _ca_bundle(cluster, base_dir)
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    if cluster.get("proxy-url"):
        info["proxy-url"] = str(cluster["proxy-url"])
    if disable_compression:
        info["disable-compression"] = True
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, Mapping) and extension.get("name") == CLUSTER_EXTENSION:
            info["config"] = extension.get("extension")
    return info


def _ca_bundle(cluster: Mapping[str, Any], base_dir: str) -> bytes:
    data = cluster.get("certificate-authority-data")
    if data:
        try:
            return decode_base64(str(data))
        except ValueError as exc:
            raise ExecPluginError(f"certificate-authority-data is not base64: {exc}") from None
    path = cluster.get("certificate-authority")
    if not path:
        return b""
    path = os.path.join(base_dir, str(path))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ExecPluginError(f"failed to load CA bundle for execProvider: {path}: "
                              f"{exc.strerror}") from None


async def run(plugin: Plugin, cluster: dict[str, Any] | None) -> Credential:
    """Run the plugin once and return its credential; ``cluster`` is passed on only when the
    plugin asked for it (``provideClusterInfo``)."""
    interactive = plugin.interactive()
    spec: dict[str, Any] = {"interactive": interactive}
    if plugin.provide_cluster_info and cluster is not None:
        spec["cluster"] = cluster
    env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(
        {"kind": "ExecCredential", "apiVersion": plugin.api_version, "spec": spec})}
    try:
        proc = await asyncio.create_subprocess_exec(
            plugin.command, *plugin.args, env=env,
            stdin=None if interactive else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=None if interactive else asyncio.subprocess.PIPE)
    except (FileNotFoundError, PermissionError) as exc:
        raise _not_found(plugin) if isinstance(exc, FileNotFoundError) else ExecPluginError(
            f"exec: executable {plugin.command} cannot be run: {exc.strerror}") from None
    try:
        stdout, stderr = await proc.communicate()
    except BaseException:  # cancelled (a shutdown): the plugin goes with whoever waited on it
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode != 0:
        said = (stderr or b"").decode(errors="replace").strip()
        raise ExecPluginError(f"exec: executable {plugin.command} failed with exit code "
                              f"{proc.returncode}" + (f": {said}" if said else ""))
    return _credential(plugin, stdout)


def _not_found(plugin: Plugin) -> ExecPluginError:
    text = f"exec: executable {plugin.command} not found\n\n{_INSTALL_HELP}"
    return ExecPluginError(text + (f"\n\n{plugin.install_hint}" if plugin.install_hint else ""))


def _credential(plugin: Plugin, stdout: bytes) -> Credential:
    try:
        answer = json.loads(stdout)
    except ValueError as exc:
        raise ExecPluginError(f"exec plugin: decoding stdout: {exc}") from None
    if not isinstance(answer, dict):
        raise ExecPluginError("exec plugin: decoding stdout: not a JSON object")
    kind, version = answer.get("kind"), answer.get("apiVersion")
    if kind != "ExecCredential" or version != plugin.api_version:
        raise ExecPluginError(f"exec plugin is configured to use API version "
                              f"{plugin.api_version}, plugin returned {kind} of version {version}")
    status = answer.get("status")
    if not isinstance(status, dict):
        raise ExecPluginError("exec plugin didn't return a status field")
    token = str(status.get("token") or "")
    certificate = str(status.get("clientCertificateData") or "")
    key = str(status.get("clientKeyData") or "")
    if not (token or certificate or key):
        raise ExecPluginError("exec plugin didn't return a token or cert/key pair")
    if bool(certificate) != bool(key):
        raise ExecPluginError("exec plugin returned only certificate or key, not both")
    return Credential(token, certificate, key, _expiry(status.get("expirationTimestamp")))


def _expiry(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        expires = datetime.fromisoformat(str(value))
    except ValueError:
        expires = None
    if expires is None or expires.tzinfo is None:
        raise ExecPluginError(f"exec plugin: expirationTimestamp {value!r} is not RFC 3339")
    return expires
