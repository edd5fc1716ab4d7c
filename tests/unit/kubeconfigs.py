"""A one-context kubeconfig written for a unit test (nothing listens at its server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def one_context(tmp_path: Path, server: str, user: dict[str, Any],
                proxy_url: str | None = None, **cluster_fields: Any) -> str:
    """The path of a kubeconfig whose one context is ``server`` as kubeconfig user ``user``
    (its cluster also has ``cluster_fields``, given with ``_`` for ``-``)."""
    cluster: dict[str, Any] = {"server": server, **{
        k.replace("_", "-"): v for k, v in cluster_fields.items()}}
    if proxy_url is not None:
        cluster["proxy-url"] = proxy_url
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": cluster}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)
