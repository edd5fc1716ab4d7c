"""Query parameters decoded as a real kube-apiserver v1.32.6 decodes them.

Each expected answer below was captured from that server (on loopback, 2026-11-28) with the
same raw request; the embedded server was kinder or answered otherwise before:

- a bool option (``watch``, ``allowWatchBookmarks``, ``sendInitialEvents``,
  ``orphanDependents``) is false only when absent, ``0`` or ``false`` in any case
  (``Convert_Slice_string_To_bool``); ``yes``, ``abc`` and the empty value are true;
- a watch without a resourceVersion (or "0") and without ``sendInitialEvents`` or
  ``resourceVersionMatch`` is defaulted to a streaming list (``SetListOptionsDefaults``, the
  WatchList gate being on in v1.32): it ends its initial events with the initial-events-end
  bookmark when bookmarks are allowed, refuses a ``continue`` with a 422, and a Table with a
  406 (``watchListEndpointRestrictions``);
- a ``resourceVersion`` is read with ``strconv.ParseUint`` (no sign, no space, at most
  2**64-1) by a get, a list and a watch alike: what the watch cache serves answers a bad one
  with the storage error itself (a 500 without a reason), what it hands to etcd (a paged list
  at an exact version, ``Exact``) with etcd3's 400; a get from a version the server has not
  reached is the 504 a list gets, and a list at an exact version past etcd's, etcd's 500.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from tests.sim.conftest import PODS, Raw, pod


def _events(body: Any) -> list[tuple[str, str]]:
    """A watch's events as (type, name or initial-events-end annotation)."""
    lines = body if isinstance(body, list) else [body]
    out = []
    for event in lines:
        meta = event["object"]["metadata"]
        out.append((event["type"], meta.get("name") or ",".join(sorted(
            meta.get("annotations") or {}))))
    return out


async def _watch(raw: Raw, **params: str) -> tuple[int, list[tuple[str, str]]]:
    """A one-second watch of the pods, read to its end."""
    async with raw.session.get(raw.srv.url + PODS, params={"timeoutSeconds": "1", **params}
                               ) as resp:
        text = await resp.text()
    return resp.status, _events([orjson.loads(line) for line in text.splitlines() if line])


@pytest.mark.parametrize("value", ["1", "true", "True", "yes", "abc", ""])
async def test_any_watch_value_but_false_or_0_is_a_watch(raw: Raw, value: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, events = await _watch(raw, watch=value, resourceVersion="0")
    assert (code, events) == (200, [("ADDED", "a")])


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "False"])
async def test_false_or_0_is_a_list(raw: Raw, value: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, body, _ = await raw.request("GET", PODS, watch=value)
    assert (code, body["kind"], len(body["items"])) == (200, "PodList", 1)


@pytest.mark.parametrize("value", ["true", "yes", "abc", ""])
async def test_send_initial_events_takes_any_true_value(raw: Raw, value: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, events = await _watch(raw, watch="1", sendInitialEvents=value,
                                resourceVersionMatch="NotOlderThan", allowWatchBookmarks=value)
    assert (code, events) == (200, [
        ("ADDED", "a"),
        ("BOOKMARK", "k8s.io/initial-events-end,kubernetes.io/initial-events-list-blueprint")])


async def test_an_empty_orphan_dependents_is_true(raw: Raw) -> None:
    """``orphanDependents=`` orphans: the dependent stays, without its ownerReference (a
    false one would have it collected)."""
    _, owner, _ = await raw.request("POST", PODS, pod("owner"))
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner["metadata"]["uid"]}
    await raw.request("POST", PODS, pod("dependent", ownerReferences=[ref]))
    code, body, _ = await raw.request("DELETE", f"{PODS}/owner", orphanDependents="",
                                      gracePeriodSeconds=0)
    assert code == 200, body
    for _ in range(500):  # until the garbage collector has acted (a hang guard, no SLA)
        code, body, _ = await raw.request("GET", f"{PODS}/dependent")
        if code == 404 or not body["metadata"].get("ownerReferences"):
            break
        await asyncio.sleep(0.02)
    assert code == 200 and not body["metadata"].get("ownerReferences"), body


END = ("BOOKMARK", "k8s.io/initial-events-end,kubernetes.io/initial-events-list-blueprint")


@pytest.mark.parametrize("version", [{}, {"resourceVersion": "0"}])
async def test_a_watch_from_now_is_a_streaming_list(raw: Raw, version: dict[str, str]) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, events = await _watch(raw, watch="1", allowWatchBookmarks="true", **version)
    assert (code, events) == (200, [("ADDED", "a"), END])
    code, events = await _watch(raw, watch="1", **version)
    assert (code, events) == (200, [("ADDED", "a")])


async def test_a_watch_from_now_takes_no_continue(raw: Raw) -> None:
    code, body, _ = await raw.request("GET", PODS, watch="1", timeoutSeconds="1",
                                      labelSelector="i=0", **{"continue": "abc"})
    assert (code, body["message"]) == (422, 'ListOptions.meta.k8s.io "" is invalid: '
                                       "resourceVersionMatch: Forbidden: resourceVersionMatch "
                                       "is forbidden when continue is provided")


async def test_a_streaming_list_is_never_a_table(raw: Raw) -> None:
    await raw.request("POST", PODS, pod("a"))
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    query = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    async with raw.session.get(raw.srv.url + PODS, params=query,
                               headers={"Accept": table}) as resp:
        body = await resp.json()
    assert (resp.status, body["reason"], body["message"]) == (
        406, "NotAcceptable", "only the following media types are accepted: application/json, "
        "application/yaml, application/vnd.kubernetes.protobuf")
    async with raw.session.get(raw.srv.url + PODS, params=query,
                               headers={"Accept": table + ",application/json"}) as resp:
        first = orjson.loads((await resp.text()).splitlines()[0])
    assert (resp.status, first["object"]["kind"]) == (200, "Pod")


def _parse_uint(value: str, why: str = "invalid syntax") -> str:
    return (f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing '
            f'"{value}": {why}')


@pytest.mark.parametrize(("value", "why"), [("abc", "invalid syntax"), ("-1", "invalid syntax"),
                                            ("+5", "invalid syntax"), (" 5", "invalid syntax"),
                                            ("1_0", "invalid syntax"),
                                            ("18446744073709551616", "value out of range")])
@pytest.mark.parametrize("query", [{}, {"watch": "1", "timeoutSeconds": "1"},
                                   {"resourceVersionMatch": "NotOlderThan"},
                                   {"limit": "1", "resourceVersionMatch": "NotOlderThan"},
                                   {"name": "a"}])
async def test_a_bad_resource_version_is_the_watch_cache_s_500(
        raw: Raw, query: dict[str, str], value: str, why: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    path = f"{PODS}/{query.pop('name')}" if "name" in query else PODS
    code, body, _ = await raw.request("GET", path, resourceVersion=value, **query)
    assert (code, body.get("reason"), body["message"]) == (500, None, _parse_uint(value, why))


@pytest.mark.parametrize("query", [{"limit": "1"}, {"resourceVersionMatch": "Exact"}])
async def test_a_bad_resource_version_sent_to_etcd_is_a_400(raw: Raw,
                                                            query: dict[str, str]) -> None:
    code, body, _ = await raw.request("GET", PODS, resourceVersion="abc", **query)
    assert (code, body["reason"], body["message"]) == (
        400, "BadRequest", "invalid resource version: " + _parse_uint("abc"))


@pytest.mark.parametrize("path", [PODS, f"{PODS}/a"])
async def test_a_resource_version_ahead_is_a_504(raw: Raw, path: str) -> None:
    await raw.request("POST", PODS, pod("a"))
    code, body, _ = await raw.request("GET", path, resourceVersion="99999999999")
    assert (code, body["reason"], body["details"]["causes"][0]["reason"]) == (
        504, "Timeout", "ResourceVersionTooLarge")
    assert body["message"].startswith("Timeout: Too large resource version: 99999999999, "
                                      "current: ")


@pytest.mark.parametrize("query", [{"limit": "1"}, {"resourceVersionMatch": "Exact"}])
async def test_an_exact_version_ahead_is_etcd_s_500(raw: Raw, query: dict[str, str]) -> None:
    code, body, _ = await raw.request("GET", PODS, resourceVersion="99999999999", **query)
    assert (code, body.get("reason"), body["message"]) == (
        500, None, "etcdserver: mvcc: required revision is a future revision")


_LABEL_A_DOLLAR = ('unable to parse requirement: <nil>: Invalid value: "a$": name part must '
                   "consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                   "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                   "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


@pytest.mark.parametrize(("method", "query", "message"), [
    ("GET", {"labelSelector": "a$", "resourceVersionMatch": "Bogus"}, _LABEL_A_DOLLAR),
    ("GET", {"watch": "1", "labelSelector": "a$", "resourceVersionMatch": "Bogus"},
     _LABEL_A_DOLLAR),
    ("GET", {"fieldSelector": "a$$", "resourceVersionMatch": "Bogus"},
     "invalid selector: 'a$$'; can't understand 'a$$'"),
    ("GET", {"fieldSelector": "b$$", "labelSelector": "a$"}, _LABEL_A_DOLLAR),
    ("GET", {"labelSelector": "a$", "limit": "abc"},
     'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("DELETE", {"dryRun": "All", "labelSelector": "a$", "resourceVersionMatch": "Bogus"},
     _LABEL_A_DOLLAR),
])
async def test_a_selector_that_does_not_parse_is_refused_before_the_list_options(
        raw: Raw, method: str, query: dict[str, str], message: str) -> None:
    """The parameter codec decodes the query (integers, then the label selector, then the
    field selector's syntax) before ``ValidateListOptions``: its 400 comes before the 422."""
    code, body, _ = await raw.request(method, PODS, **query)
    assert (code, body["reason"], body["message"]) == (400, "BadRequest", message)


async def test_a_field_label_is_checked_after_the_list_options(raw: Raw) -> None:
    """An unknown field label is found when the selector is converted for the type, after the
    ListOptions are validated (their 422 first)."""
    code, body, _ = await raw.request("GET", PODS, fieldSelector="bogus=x",
                                      resourceVersionMatch="Bogus")
    assert (code, body["reason"]) == (422, "Invalid")
    code, body, _ = await raw.request("GET", PODS, fieldSelector="bogus=x")
    assert (code, body["message"]) == (400, "field label not supported: bogus")
