"""The Kubernetes versions slicectl supports, and one look at the API server to say so.

Why: on an API server that lacks an API slicectl needs (a release older than it, or one that
turned the API off with ``--runtime-config``), the informers only log their 404s, over and over,
and the controller never becomes ready; nothing said that the cluster is the problem. One look
at ``/version`` and at discovery when the process starts says it once: the server's version, a
warning below the oldest supported release, and an error per needed API that is not served,
naming the release that made it GA and what slicectl cannot do without it.

Nothing stops or exits: the caches keep waiting for a missing API (an API server upgraded or
reconfigured later serves it, with no restart here), and a version below the floor is only a
warning (a distribution may carry the APIs anyway; what is missing is named). The floor and its
reasons are README.md's "Supported Kubernetes versions". Discovery and ``/version`` are open to
every authenticated user (the ``system:discovery`` role), so no RBAC is needed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from slicectl.kube.client import KubeClient
from slicectl.kube.discovery import LOOKUP_ERRORS, resource_names
from slicectl.kube.resources import ENDPOINTSLICES, EVENTS, LEASES, NODES, PODS, Resource

log = structlog.get_logger("slicectl.compat")

# The oldest Kubernetes release slicectl supports (README.md, "Supported Kubernetes versions").
MIN_VERSION = (1, 29)
RETRY_MAX = 30.0  # seconds between two looks while the API server does not answer
_GIT_VERSION = re.compile(r"v?(\d+)\.(\d+)")


@dataclass(frozen=True)
class NeededApi:
    """A built-in API slicectl uses, the release that made it GA, and what fails without it."""

    resource: Resource
    since: str
    without: str


CACHES = "the caches wait for it, and nothing is written until it is served"
NEEDED = (
    NeededApi(PODS, "1.0", CACHES),
    NeededApi(NODES, "1.0", CACHES),
    NeededApi(ENDPOINTSLICES, "1.21", CACHES),
    NeededApi(EVENTS, "1.19", "Events are not written"),
)
LEASE = NeededApi(LEASES, "1.14", "leader election never succeeds: this replica never leads")


def needed_apis(leader_elect: bool) -> tuple[NeededApi, ...]:
    return (*NEEDED, LEASE) if leader_elect else NEEDED


def server_version(info: Any) -> tuple[int, int] | None:
    """(major, minor) of a ``/version`` answer (``gitVersion`` first: providers' ``minor``
    reads like ``"32+"``); None when it says neither."""
    if not isinstance(info, Mapping):
        return None
    if isinstance(git := info.get("gitVersion"), str) and (m := _GIT_VERSION.match(git)):
        return int(m[1]), int(m[2])
    try:
        return int(str(info.get("major"))), int(str(info.get("minor")).rstrip("+"))
    except ValueError:
        return None


async def check_server(client: KubeClient, needed: Iterable[NeededApi]) -> None:
    """Look at the API server once it answers, and log what it lacks (module docstring)."""
    delay = 1.0
    while True:
        try:
            info = await client.request("GET", "/version", background=True)
            served = await _served(client, needed)
            break
        except LOOKUP_ERRORS as exc:
            log.debug("server check failed; retrying", error=str(exc) or repr(exc))
            await asyncio.sleep(delay)
            delay = min(RETRY_MAX, delay * 2)
    version = server_version(info)
    git = info.get("gitVersion") if isinstance(info, Mapping) else None
    log.info("api server version", version=git)
    if version is not None and version < MIN_VERSION:
        log.warning("api server older than slicectl supports", version=git,
                    oldest_supported=f"v{MIN_VERSION[0]}.{MIN_VERSION[1]}",
                    hint="README.md, 'Supported Kubernetes versions', says what needs it")
    for api, ok in served.items():
        if not ok:
            res = api.resource
            log.error("required API not served", api=res.api_version, resource=res.plural,
                      ga_since=f"Kubernetes {api.since}", version=git, consequence=api.without)


async def _served(client: KubeClient, needed: Iterable[NeededApi]) -> dict[NeededApi, bool]:
    """Whether each API is served, one discovery look per group version (pods and nodes share
    ``/api/v1``)."""
    looked: dict[str, set[str] | None] = {}
    served = {}
    for api in needed:
        prefix = api.resource.prefix
        if prefix not in looked:
            looked[prefix] = await resource_names(client, prefix, background=True)
        names = looked[prefix]
        served[api] = names is not None and api.resource.plural in names
    return served
