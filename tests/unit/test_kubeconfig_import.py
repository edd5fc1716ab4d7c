"""A kubeconfig loads without kubernetes-asyncio's generated client, and the client stays usable.

Each case runs in a fresh interpreter: what it checks is which modules an import pulls in.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret-token}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
"""

LOAD = (
    "import asyncio, sys\n"
    "from slicectl.kube.config import load_connection\n"
    "conn = asyncio.run(load_connection(sys.argv[1]))\n"
    "assert conn.host == 'https://127.0.0.1:6443', conn.host\n"
    "assert asyncio.run(conn.authorization()) == 'Bearer secret-token'\n"
    "generated = [m for m in sys.modules if m.startswith(('kubernetes_asyncio.client.models',\n"
    "             'kubernetes_asyncio.client.api.', 'kubernetes_asyncio.client.api_client'))]\n"
)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


def run(code: str, kubeconfig: Path) -> str:
    out = subprocess.run([sys.executable, "-c", code, str(kubeconfig)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]  # the last line: the log goes to stdout too


def test_loading_a_kubeconfig_imports_no_generated_model_or_api(kubeconfig: Path) -> None:
    assert run(LOAD + "print(len(generated))\n", kubeconfig) == "0"


def test_the_whole_client_still_imports_and_works_afterwards(kubeconfig: Path) -> None:
    code = LOAD + (
        "import kubernetes_asyncio\n"
        "from kubernetes_asyncio import watch\n"
        "from kubernetes_asyncio.client import ApiClient, CoreV1Api, V1Pod\n"
        "from kubernetes_asyncio.client.api_client import ApiClient as Real\n"
        "from kubernetes_asyncio.config.kube_config import new_client_from_config\n"
        "assert ApiClient is Real and V1Pod(metadata={'name': 'p'}).metadata == {'name': 'p'}\n"
        "api = asyncio.run(new_client_from_config(sys.argv[1]))\n"
        "assert isinstance(api, Real) and api.configuration.host == 'https://127.0.0.1:6443'\n"
        "print(kubernetes_asyncio.__version__ > '', CoreV1Api.__name__, watch.Watch.__name__)\n"
    )
    assert run(code, kubeconfig) == "True CoreV1Api Watch"


def test_an_unexpected_package_layout_falls_back_to_the_plain_import(kubeconfig: Path) -> None:
    code = (
        "import importlib.util\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name.endswith('.client') "
        "else real(name, *a)\n"
    ) + LOAD + "print(len(generated) > 0)\n"
    assert run(code, kubeconfig) == "True", "the plain import pulls the generated client in"


def test_an_already_imported_client_is_left_as_it_is(kubeconfig: Path) -> None:
    code = "import kubernetes_asyncio.client as before\n" + LOAD + (
        "import kubernetes_asyncio.client\n"
        "print(kubernetes_asyncio.client is before, type(before).__name__)\n"
    )
    assert run(code, kubeconfig) == "True module"
