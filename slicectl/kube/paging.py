"""A LIST page by page: what each request of it asks, and how its pages are read.

The client sends requests; this decides what one LIST is made of. The first request carries
the caller's resourceVersion semantics (watch-cache friendly, or a consistent read); continue
requests carry only the selectors and the token, which pins the snapshot. When a token expires
the list starts over from its first page, still paginated, a few times before :class:`Gone`
is raised; there is never an unpaginated fallback. Each page's items are decoded one by one as
they are iterated, so a caller holds one page at a time.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from slicectl.kube.errors import Gone
from slicectl.kube.lean import decode_body, split_list

LIST_RESTARTS = 3  # expired continue tokens one list survives
_SELECTORS = ("labelSelector", "fieldSelector")

Fetch = Callable[[dict[str, str]], Awaitable[bytes]]  # one GET with these parameters: its body


class ListPage(NamedTuple):
    items: Iterable[Any]  # decoded one by one as they are iterated (iterate once)
    resource_version: str
    restarted: bool  # the list started over (expired continue token): forget earlier pages
    last: bool


def selectors(label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    """The query parameters of a label and a field selector (either may be unset)."""
    params: dict[str, str] = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


async def read_pages(fetch: Fetch, query: dict[str, str], limit: int | None
                     ) -> AsyncGenerator[ListPage, None]:
    """The pages of one LIST whose first request asks ``query`` (its selectors, and maybe a
    resourceVersion and its match), ``limit`` items a page (module docstring)."""
    restarts = 0
    restarted = False
    token: str | None = None
    while True:
        if token:
            page = {k: v for k, v in query.items() if k in _SELECTORS}
            page["continue"] = token
        else:
            page = dict(query)
        if limit:
            page["limit"] = str(limit)
        try:
            raw = await fetch(page)
        except Gone:
            if not token or restarts >= LIST_RESTARTS:
                raise
            restarts, token, restarted = restarts + 1, None, True  # expired: start over
            continue
        split = split_list(raw) if raw else None
        items: Iterable[Any]
        if split is None:
            body = decode_body(raw) if raw else {}
            items = body.get("items") or []
        else:
            body, items = split
        meta = body.get("metadata") or {}
        token = meta.get("continue") or None
        yield ListPage(items, str(meta.get("resourceVersion") or ""), restarted, not token)
        restarted = False
        if not token:
            return


async def collect(pages: AsyncIterable[ListPage]) -> tuple[list[dict[str, Any]], str]:
    """Every item of a list's pages (those before a restart dropped), and its
    resourceVersion."""
    items: list[dict[str, Any]] = []
    rv = ""
    async for page in pages:
        if page.restarted:
            items = []
        items.extend(page.items)
        rv = page.resource_version
    return items, rv
