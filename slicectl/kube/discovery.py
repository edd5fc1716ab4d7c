"""One discovery look: the resources an API group version serves.

The start-up check (:mod:`slicectl.kube.compat`) and the controller's wait for a selector API
ask the same question the same way: a GET of the group version's ``APIResourceList``, a 404
meaning "not served". A look that fails (:data:`LOOKUP_ERRORS`: an error answer, no answer, or
a body that is not JSON or not an ``APIResourceList``, e.g. from a broken proxy) says nothing
about whether the API is served: callers retry it, never take it for "not served".
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import ApiError, NotFound

LOOKUP_ERRORS = (ApiError, aiohttp.ClientError, OSError, TimeoutError, ValueError)


async def resource_names(client: KubeClient, path: str, *, background: bool = False
                         ) -> set[str] | None:
    """The names (``pods``, ``pods/status``, ...) the group version at ``path`` serves; None
    when it is not served."""
    try:
        body = await client.request("GET", path, background=background)
    except NotFound:
        return None
    resources = body.get("resources") if isinstance(body, Mapping) else None
    if not isinstance(resources, list):
        raise ValueError(f"discovery of {path} answered no APIResourceList")
    return {name for r in resources
            if isinstance(r, Mapping) and isinstance(name := r.get("name"), str)}
