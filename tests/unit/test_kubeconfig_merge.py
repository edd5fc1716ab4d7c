"""A ``$KUBECONFIG`` list merged as kubectl merges it (slicectl.kube.kubeconfig_merge): the first
``current-context`` set wins, each entry comes from the first file naming it, an empty file is
an empty kubeconfig. Where kubectl is installed it is the oracle: the server slicectl connects
to is the one ``kubectl config view --minify`` names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from slicectl.kube import kubeconfig_merge
from slicectl.kube.config import ConfigError, load_connection


def _kubeconfig(path: Path, current: str | None, clusters: dict[str, str],
                contexts: dict[str, str]) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in clusters.items()],
        "users": [{"name": f"user-{n}", "user": {"token": n}} for n in contexts],
        "contexts": [{"name": n, "context": {"cluster": c, "user": f"user-{n}"}}
                     for n, c in contexts.items()]}
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    return {
        "a": _kubeconfig(tmp_path / "a", "ctx-a", {"ca": "https://a.example:6443"},
                         {"ctx-a": "ca"}),
        # b names a cluster "ca" of its own: a's comes first wherever a is listed first
        "b": _kubeconfig(tmp_path / "b", "ctx-b", {"cb": "https://b.example:6443",
                                                   "ca": "https://not-a.example"},
                         {"ctx-b": "cb", "ctx-ba": "ca"}),
        "unset": _kubeconfig(tmp_path / "unset", "", {}, {}),
        "empty": _empty(tmp_path / "empty"),
    }


def _empty(path: Path) -> str:
    path.write_text("")
    return str(path)


CASES = [
    (["a", "b"], "https://a.example:6443"),  # the first current-context, not the last
    (["b", "a"], "https://b.example:6443"),
    (["unset", "b"], "https://b.example:6443"),  # an empty current-context sets none
    (["empty", "a"], "https://a.example:6443"),  # an empty file is an empty kubeconfig
]


@pytest.mark.parametrize(("order", "server"), CASES)
async def test_the_server_is_kubectl_s(files: dict[str, str], order: list[str],
                                       server: str) -> None:
    listed = os.pathsep.join(files[name] for name in order)
    assert (await load_connection(listed)).host == server
    if shutil.which("kubectl"):
        shown = subprocess.run(  # noqa: ASYNC221 (a local command, no server involved)
            ["kubectl", "config", "view", "--minify", "-o",
             "jsonpath={.clusters[0].cluster.server}"], capture_output=True, text=True,
            env={**os.environ, "KUBECONFIG": listed}, timeout=30, check=True)
        assert shown.stdout == server


async def test_an_entry_comes_from_the_first_file_that_names_it(files: dict[str, str]) -> None:
    listed = os.pathsep.join([files["a"], files["b"]])
    conn = await load_connection(listed, "ctx-ba")  # b's context, the cluster "ca" of a's
    assert conn.host == "https://a.example:6443"


async def test_missing_and_empty_names_are_skipped_and_a_bad_file_named(
    files: dict[str, str], tmp_path: Path,
) -> None:
    listed = os.pathsep.join(["", str(tmp_path / "gone"), files["a"]])
    assert (await load_connection(listed)).host == "https://a.example:6443"
    bad = tmp_path / "bad"
    for text, said in (("- a list\n", "not a kubeconfig"), ("clusters: {}\n", "must be a list"),
                       ("users: [a-user]\n", "not a map"),
                       ("clusters: [{name: c}, {name: c}]\n", 'duplicate name "c"'),
                       # kubectl v1.32 files unnamed entries under "": two are a duplicate,
                       # and a bad field in one is refused like any other
                       ("clusters: [{cluster: {}}, {name: null}]\n", 'duplicate name ""'),
                       ("users: [{user: {token: 5}}]\n", "user '': token must be a string"),
                       ("clusters: [{name: c, cluster: x}]\n", "cluster 'c' is not a map"),
                       ("current-context: 5\n", "current-context must be a string"),
                       ("contexts: [{name: 5}]\n", "a name in contexts must be a string"),
                       ("a: [\n", "while parsing")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=f"{bad}: .*{said}"):
            await load_connection(os.pathsep.join([str(bad), files["a"]]))


# A value of each Go type the decoder knows, and values kubectl refuses for it.
GOOD: dict[str, Any] = {
    "string": "x", "bool": True, "base64 data": "QU\nJD", "list": [{"name": "n"}],
    "list of strings": ["a", "b"], "map": {"name": "n"},
    "map of string lists": {"k": ["v"], "nil": None}}
BAD: dict[str, list[Any]] = {
    "string": [5, True], "bool": ["false", 1], "base64 data": [5, "QUJ*D", "QUJ"],
    "list": [{}, "x"], "list of strings": ["a", [1], {}],
    "map": [[], "x"], "map of string lists": [[], {"k": "v"}, {"k": [1]}]}
FIELD_TYPES = [(kind, key, type_name) for kind, checks in kubeconfig_merge.FIELDS.items()
               for key, (_, type_name) in checks.items()]


@pytest.mark.parametrize(("kind", "key", "type_name"), FIELD_TYPES)
def test_every_field_is_decoded_with_its_go_type(
    tmp_path: Path, kind: str, key: str, type_name: str,
) -> None:
    """Each known field of a cluster, user and context: its type's values are taken, and
    kubectl's refusals are refused naming the file, the entry and the field."""
    section = {"cluster": "clusters", "user": "users", "context": "contexts"}[kind]
    path = tmp_path / "kubeconfig"
    for value in (GOOD[type_name], *BAD[type_name]):
        path.write_text(yaml.safe_dump({section: [{"name": "e", kind: {key: value}}]}))
        if value is GOOD[type_name]:
            entry = kubeconfig_merge.merged(str(path)).entries[kind]["e"]
            assert entry.fields == {key: value}
        else:
            with pytest.raises(kubeconfig_merge.KubeconfigError,
                               match=f"{path}: {kind} 'e': {key} must be a {type_name} "):
                kubeconfig_merge.merged(str(path))


async def test_an_unnamed_entry_is_named_empty_as_kubectl_files_it(tmp_path: Path) -> None:
    """kubectl v1.32 (-v=6) sends a context that names no cluster to the unnamed cluster, and
    ignores a field it does not know."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "current-context": "c",
        "clusters": [{"cluster": {"server": "https://unnamed.example:1", "unknown-field": 1}}],
        "users": [{"user": {"token": "unnamed-user"}}],
        "contexts": [{"name": "c", "context": {}}]}))
    conn = await load_connection(str(path))
    assert conn.host == "https://unnamed.example:1"
    assert await conn.authorization() == "Bearer unnamed-user"
