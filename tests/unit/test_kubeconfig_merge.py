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
                       ("a: [\n", "while parsing")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=f"{bad}: .*{said}"):
            await load_connection(os.pathsep.join([str(bad), files["a"]]))
