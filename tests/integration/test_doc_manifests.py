"""The EndpointSelectors the documents show are accepted by the API server as written.

README.md's example, ``examples/endpointselector.yaml`` and the one the chart's NOTES.txt prints
are what users copy. Each is created on the server under test, with slicectl's CRD installed and
strict field validation (an unknown or misspelt field is refused, not dropped); only its
namespace is the test's.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest
import yaml

from tests.integration.conftest import Cluster
from tests.integration.support import ESEL, ROOT


def readme_manifests() -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]


def notes_manifests() -> list[dict[str, Any]]:
    notes = (ROOT / "charts/slicectl/templates/NOTES.txt").read_text()
    blocks = re.findall(r"<<YAML\n(.*?)\n\s*YAML\n", notes, re.S)
    return [yaml.safe_load(textwrap.dedent(block)) for block in blocks]


def example_manifests() -> list[dict[str, Any]]:
    return [doc for path in sorted((ROOT / "examples").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]


MANIFESTS = {
    "README.md": readme_manifests(),
    "NOTES.txt": notes_manifests(),
    "examples": example_manifests(),
}


def test_every_document_shows_an_endpoint_selector() -> None:
    for where, docs in MANIFESTS.items():
        assert docs, f"no manifest found in {where}"
        for doc in docs:
            assert (doc["apiVersion"], doc["kind"]) == ("slicectl.io/v1alpha1",
                                                       "EndpointSelector"), where


@pytest.mark.parametrize("where", sorted(MANIFESTS))
async def test_the_server_accepts_the_documents_selectors(cluster: Cluster, where: str) -> None:
    for doc in MANIFESTS[where]:
        body = {**doc, "metadata": {**doc["metadata"], "namespace": cluster.namespace}}
        created = await cluster.client.request(
            "POST", ESEL.path(cluster.namespace), params={"fieldValidation": "Strict"},
            json=body)
        assert created["spec"]["selector"] == doc["spec"]["selector"]
