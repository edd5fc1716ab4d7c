"""Request accounting in the shape of kube-apiserver's ``apiserver_request_total``.

Decides the labels each request is counted under, as the real server's metrics filter does:
verb (GET for one object, LIST, WATCH, POST, PUT, PATCH, DELETE — upper case), group, version,
resource, subresource, scope (``resource`` for a named object or a create, ``namespace`` or
``cluster`` for collections) and the response code; and renders them as Prometheus text,
with ``apiserver_terminated_watchers_total`` (watchers closed for not keeping up).
"""

from __future__ import annotations

from collections import Counter

Key = tuple[str, str, str, str, str, str, int]  # verb, group, version, resource, sub, scope, code

VERB_ALIASES = {"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST",
                "post": "POST", "update": "PUT", "put": "PUT", "patch": "PATCH",
                "delete": "DELETE", "deletecollection": "DELETE"}


def canonical_verb(verb: str) -> str:
    return VERB_ALIASES.get(verb.lower(), verb.upper())


class RequestCounter:
    def __init__(self) -> None:
        self.counts: Counter[Key] = Counter()

    def record(self, key: Key) -> None:
        self.counts[key] += 1

    def total(self, verb: str | None = None, resource: str | None = None,
              code: int | None = None) -> int:
        want = canonical_verb(verb) if verb else None
        return sum(n for (v, _g, _ver, r, _s, _sc, c), n in self.counts.items()
                   if (want is None or v == want) and (resource is None or r == resource)
                   and (code is None or c == code))

    def by_key(self) -> dict[tuple[str, str, str, str, int], int]:
        out: Counter[tuple[str, str, str, str, int]] = Counter()
        for (verb, group, _version, resource, sub, _scope, code), n in self.counts.items():
            out[(verb, group, resource, sub, code)] += n
        return dict(out)

    def reset(self) -> None:
        self.counts.clear()

    def prometheus_text(self, terminated: dict[tuple[str, str], int] | None = None) -> str:
        """The request counts, and ``terminated`` watchers per (group, resource)."""
        lines = [
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out "
            "for each verb, dry run value, group, version, resource, scope, component, and "
            "HTTP response code.",
            "# TYPE apiserver_request_total counter",
        ]
        for (verb, group, version, resource, sub, scope, code), n in sorted(self.counts.items()):
            lines.append(
                f'apiserver_request_total{{code="{code}",component="apiserver",dry_run="",'
                f'group="{group}",resource="{resource}",scope="{scope}",'
                f'subresource="{sub}",verb="{verb}",version="{version}"}} {n}')
        lines += ["# HELP apiserver_terminated_watchers_total [ALPHA] Counter of watchers closed "
                  "due to unresponsiveness broken by resource type.",
                  "# TYPE apiserver_terminated_watchers_total counter"]
        for (group, resource), n in sorted((terminated or {}).items()):
            name = f"{resource}.{group}" if group else resource
            lines.append(f'apiserver_terminated_watchers_total{{resource="{name}"}} {n}')
        return "\n".join(lines) + "\n"
