"""Import kubernetes-asyncio's kubeconfig loader without its generated API client.

``kubernetes_asyncio/__init__.py`` imports ``kubernetes_asyncio.client``, whose ``__init__``
imports every generated API class and model: about 33 MB of RSS (a third of the controller's
peak) and about half a second at start, none of it used by slicectl, which talks raw JSON. The
kubeconfig loader needs only two names from that package: ``Configuration`` (a plain settings
class in its own small module) and ``ApiClient`` (in an annotation and in two helpers slicectl
never calls).

So, when nothing has imported kubernetes-asyncio yet, :func:`kube_config_api` registers the
two packages as modules whose ``__init__`` is deferred: the real module objects (real spec,
real ``__path__``, so every submodule imports normally), with ``Configuration`` bound up front
and ``ApiClient`` bound to a stand-in that builds the real one when called. The first lookup
of any other name on either package runs its real ``__init__`` into it, so a later
``from kubernetes_asyncio.client import CoreV1Api`` (a test, a plugin) still works, paying
the import only then. If anything in that set-up fails (a new layout of the package), the
modules it registered are removed and the plain import is used: slower, never wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client")


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs at the first lookup of a name it does not have yet,
    unless that name is one of its submodules: ``from package import submodule`` inside the
    package (which looks the name up first) imports just that submodule, as it would have."""

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        if state.get("_slicectl_initialised", False):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        if not name.startswith("__") and importlib.util.find_spec(f"{self.__name__}.{name}"):
            return importlib.import_module(f"{self.__name__}.{name}")
        state["_slicectl_initialised"] = True
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(self)
        return getattr(self, name)


class _ApiClientOnDemand:
    """Stands in for ``kubernetes_asyncio.client.ApiClient``: calling it returns the real one."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        api_client = importlib.import_module("kubernetes_asyncio.client.api_client")
        return api_client.ApiClient(*args, **kwargs)


def kube_config_api() -> tuple[Any, type[Exception], Any]:
    """``(Configuration, ConfigException, kube_config)`` from kubernetes-asyncio: its settings
    class, its error, and the module of its kubeconfig loader."""
    if "kubernetes_asyncio" not in sys.modules:
        try:
            _register_deferred_packages()
        except Exception:  # any surprise in the package layout: the plain import below
            for name in [m for m in sys.modules if m.startswith("kubernetes_asyncio")]:
                del sys.modules[name]
    configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
    exception = importlib.import_module("kubernetes_asyncio.config.config_exception")
    kube_config = importlib.import_module("kubernetes_asyncio.config.kube_config")
    return configuration.Configuration, exception.ConfigException, kube_config


def _register_deferred_packages() -> None:
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            raise ImportError(f"{name} is not a package")
        module = importlib.util.module_from_spec(spec)
        module.__class__ = _DeferredPackage
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    client = sys.modules["kubernetes_asyncio.client"]
    configuration = importlib.import_module("kubernetes_asyncio.client.configuration")
    setattr(client, "Configuration", configuration.Configuration)  # noqa: B010
    setattr(client, "ApiClient", _ApiClientOnDemand)  # noqa: B010
    importlib.import_module("kubernetes_asyncio.config.kube_config")
