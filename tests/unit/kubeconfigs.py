"""A one-context kubeconfig written for a unit test (nothing listens at its server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def one_context(tmp_path: Path, server: str, user: dict[str, Any],
                proxy_url: str | None = None) -> str:
    """The path of a kubeconfig whose one context is ``server`` as kubeconfig user ``user``."""
    cluster: dict[str, Any] = {"server": server}
    if proxy_url is not None:
        cluster["proxy-url"] = proxy_url
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "c", "cluster": cluster}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return str(path)
