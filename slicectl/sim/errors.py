"""Error responses exactly shaped as kube-apiserver's ``metav1.Status``.

Every failure the embedded server returns is an :class:`ApiError`; its :meth:`ApiError.status`
is the body the real server sends (``kind: Status``, ``reason``, ``details``, ``code``). The
constructors below decide the message wording and the ``details`` of each reason, copied from
``k8s.io/apimachinery/pkg/api/errors`` so clients that parse messages or reasons behave the same.
Headers gathered while a request is handled (the ``Warning`` of unknown fields or duplicate
ownerReferences, :func:`add_warning`) go out with its answer whatever it is, an error included,
as the real server's warning recorder sends them (:func:`response_headers`,
:func:`keeps_headers`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import orjson
from aiohttp import web

from slicectl.sim.types import ResourceType
from slicectl.sim.validation.errors import go_quote


class ApiError(Exception):
    """A failed request: HTTP ``code`` plus the Status ``reason``, ``message`` and ``details``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.metadata: dict[str, Any] = {}  # e.g. a fresh continue token on an expired one
        self.plain = False  # answered as Go's http.Error text, not a Status (flow control)

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": self.metadata,
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:  # an empty one is sent: {} (go-restful's errors)
            body["details"] = self.details
        body["code"] = self.code
        return body


_HEADERS = web.RequestKey("slicectl.sim.response_headers", dict[str, str])
_WARNINGS = web.RequestKey("slicectl.sim.warnings", list[str])
_P = ParamSpec("_P")
_S = TypeVar("_S")
_T = TypeVar("_T")


def response_headers(request: web.Request) -> dict[str, str]:
    """The headers every answer to ``request`` carries, kept with the request."""
    headers: dict[str, str] = request.setdefault(_HEADERS, {})
    return headers


def add_warning(request: web.Request, text: str) -> None:
    """A warning for the answer to ``request``: ``299 - "text"`` (quotes and backslashes
    escaped, as ``NewWarningHeader`` does), each text once, as the warning recorder keeps
    them; they are folded into one header line, which HTTP reads as one line each."""
    value = '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    warnings = request.setdefault(_WARNINGS, [])
    if value not in warnings:
        warnings.append(value)
        response_headers(request)["Warning"] = ", ".join(warnings)


def keeps_headers(
    handler: Callable[Concatenate[_S, web.Request, _P], Awaitable[_T]],
) -> Callable[Concatenate[_S, web.Request, _P], Awaitable[_T]]:
    """A handler whose errors also carry the :func:`response_headers` of its request."""
    async def wrapper(self: _S, request: web.Request, /, *args: _P.args,
                      **kwargs: _P.kwargs) -> _T:
        try:
            return await handler(self, request, *args, **kwargs)
        except ApiError as exc:
            exc.headers.update(request.get(_HEADERS) or {})
            raise
    return wrapper


def qualified(rt: ResourceType) -> str:
    """``pods`` or ``endpointslices.discovery.k8s.io``: how messages name a resource."""
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def _details(rt: ResourceType, name: str, kind: str | None = None,
             group: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}
    group = rt.group if group is None else group
    if group:
        details["group"] = group
    details["kind"] = kind or rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(rt)} "{name}" not found', _details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{qualified(rt)} "{name}" already exists', _details(rt, name)
    )


def uid_precondition_failed(rt: ResourceType, name: str, wanted: str, found: str,
                            namespace: str = "") -> ApiError:
    """A PUT body's ``metadata.uid`` that the stored object, or its absence (``found``
    empty), does not meet: the storage layer's check, whose error names the etcd key."""
    why = f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {found}"
    if found:
        why = (f"StorageError: invalid object, Code: 4, Key: {_registry_key(rt, namespace, name)}"
               f", ResourceVersion: 0, AdditionalErrorMsg: {why}")
    return conflict(rt, name, why)


def delete_precondition_failed(rt: ResourceType, name: str, field: str, wanted: str,
                               found: str) -> ApiError:
    """``rest.BeforeDelete``'s early check of a DELETE's preconditions (``field``: UID or
    ResourceVersion): a Conflict that names the kind, not the resource."""
    then = "deleted and then recreated" if field == "UID" else "modified"
    group = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    why = (f"the {field} in the precondition ({wanted}) does not match the {field} in record "
           f"({found}). The object might have been {then}")
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {group} "{name}": {why}',
                    _details(rt, name, kind=rt.kind))


def _registry_key(rt: ResourceType, namespace: str, name: str) -> str:
    """Where kube-apiserver keeps the object in etcd (its default resource prefixes)."""
    prefix = {"nodes": "minions", "services": "services/specs"}.get(rt.plural, rt.plural) if (
        not rt.group or not (rt.is_custom or rt.group == "apiextensions.k8s.io")) else (
        f"{rt.group}/{rt.plural}")
    return f"/registry/{prefix}/{namespace}/{name}" if namespace else f"/registry/{prefix}/{name}"


def api_version_not_a_string(rt: ResourceType, value: Any) -> ApiError:
    """Unstructured's accessor refusing a custom resource's ``apiVersion`` that is no string
    (``%v is of the type %T``, as Go prints a decoded JSON value)."""
    go_types = {type(None): "<nil>", bool: "bool", int: "int64", float: "float64",
                list: "[]interface {}", dict: "map[string]interface {}"}
    shown = "<nil>" if value is None else str(value).lower() if isinstance(value, bool) else (
        str(value))
    return bad_request(f'{rt.kind} in version "" cannot be handled as a {rt.kind}: .apiVersion '
                       f"accessor error: {shown} is of the type "
                       f"{go_types.get(type(value), 'interface {}')}, expected string")


def conflict(rt: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(rt)} "{name}": {why}',
        _details(rt, name),
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def _summary(causes: list[dict[str, Any]]) -> str:
    """``ErrorList.ToAggregate()`` as ``NewInvalid`` prints it: ``field: message`` items."""
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def invalid(rt: ResourceType, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 listing ``causes`` (``{reason, message, field}``) as ``field: message`` items."""
    group = rt.extra.get("invalid_group", rt.group)  # the internal type's, where it differs
    group_kind = f"{rt.kind}.{group}" if group else rt.kind
    details = _details(rt, name, kind=rt.kind, group=group)
    details["causes"] = causes
    quoted = go_quote(name)
    return ApiError(422, "Invalid", f"{group_kind} {quoted} is invalid: {_summary(causes)}",
                    details)


def patch_undecodable(patched: Any, why: str | None = None) -> ApiError:
    """patch.go's refusal of a patched object it cannot decode: ``NewInvalid`` of an empty
    GroupKind and name, one Invalid of the field ``patch`` whose value is the whole object
    (as Go encodes it, keys sorted); no ``why`` is Unstructured's missing kind."""
    text = orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()
    why = why or f"Object 'Kind' is missing in '{text}'"
    cause = {"reason": "FieldValueInvalid", "field": "patch",
             "message": f"Invalid value: {go_quote(text)}: {why}"}
    return ApiError(422, "Invalid", f' "" is invalid: {_summary([cause])}', {"causes": [cause]})


def resource_version_required(rt: ResourceType, name: str) -> ApiError:
    """``Store.Update`` of a type without unconditional updates, given no resourceVersion: an
    Invalid whose kind is the resource (a TODO of store.go's)."""
    cause = {"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
             "message": "Invalid value: 0x0: must be specified for an update"}
    quoted = go_quote(name)
    return ApiError(422, "Invalid", f"{qualified(rt)} {quoted} is invalid: {_summary([cause])}",
                    {**_details(rt, name), "causes": [cause]})


def options_invalid(kind: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 of a request's options (``ListOptions``, ``CreateOptions``, ``DeleteOptions``...):
    ``NewInvalid`` of the ``meta.k8s.io`` kind with no name."""
    return ApiError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {_summary(causes)}',
                    {"group": "meta.k8s.io", "kind": kind, "causes": causes})


def request_entity_too_large(why: str) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: {why}")


def etcd_request_too_large() -> ApiError:
    """etcd's gRPC error, which reaches the client as it did ``resource_version_on_create``'s."""
    return ApiError(500, "", "etcdserver: request is too large")


def resource_version_on_create() -> ApiError:
    """etcd3 ``store.Create``'s plain error, which the handler answers as a 500 with no
    reason (``ErrorToAPIStatus`` of an error that is no Status)."""
    return ApiError(500, "", "resourceVersion should not be set on objects to be created")


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(rt: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        403, "Forbidden", f'{qualified(rt)} "{name}" is forbidden: {why}', _details(rt, name)
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    return expired(f"too old resource version: {requested} ({oldest})")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def impersonation_refused(as_user: str) -> ApiError:
    """A request to act as another user, which the embedded server cannot grant (the real
    impersonation filter's 403 when the sender may not impersonate)."""
    return ApiError(403, "Forbidden", f'users "{as_user}" is forbidden: User "admin" cannot '
                    'impersonate resource "users" in API group "" at the cluster scope: the '
                    "embedded API server has no other identities", {"kind": "users",
                                                                   "name": as_user})


def flow_control_rejected(retry_after: int = 1) -> ApiError:
    """API Priority and Fairness (or the max-in-flight filter) turning a request away:
    ``http.Error``'s text, no Status, as a real v1.32.6 answered when a priority level with
    ``limitResponse: Reject`` was full (2026-11-28): ``Too many requests, please try again
    later.`` as text/plain with ``Retry-After: 1``."""
    err = ApiError(429, "", "Too many requests, please try again later.", None,
                   {"Retry-After": str(retry_after), "X-Content-Type-Options": "nosniff"})
    err.plain = True
    return err


def too_large_resource_version(requested: int | str, current: int) -> ApiError:
    """The watch cache's answer to a version it has not reached (``NewTimeoutError``)."""
    return ApiError(504, "Timeout", f"Timeout: Too large resource version: {requested}, "
                    f"current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def internal(why: str) -> ApiError:
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {why}",
        {"causes": [{"message": why}]},
    )


def server_timeout(resource: str, group: str, operation: str, retry_after: int) -> ApiError:
    """``apierrors.NewServerTimeout``: the storage did not answer in time (an etcd timeout), a
    500 that says when to come back (``retryAfterSeconds``, sent as ``Retry-After`` too)."""
    qualified_resource = f"{resource}.{group}" if group else resource
    return ApiError(
        500,
        "ServerTimeout",
        f"The {operation} operation against {qualified_resource} could not be completed at "
        "this time, please try again.",
        {"group": group, "kind": resource, "name": operation, "retryAfterSeconds": retry_after},
    )


def method_not_allowed(rt: ResourceType, verb: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {qualified(rt)!r}",
        {"group": rt.group, "kind": rt.plural} if rt.group else {"kind": rt.plural},
    )


def no_route() -> ApiError:
    """go-restful's 405 for a built-in path without a route for the method, as
    ``NewGenericServerResponse`` words it."""
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


def name_required() -> ApiError:
    """The custom resource handler's answer to a PUT or PATCH of a collection."""
    return bad_request("name must be provided")


def page_not_found() -> ApiError:
    cause = {"reason": "UnexpectedServerResponse", "message": "404 page not found"}
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {"causes": [cause]})


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: application/json, application/yaml; got "{content_type}"')
