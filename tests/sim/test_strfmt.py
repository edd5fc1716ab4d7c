"""String ``format``s of custom resources are checked as kube-openapi's strfmt checks them.

Each verdict below is Go's: ``strfmt.Default.Validates`` (kube-openapi, Go 1.27 toolchain) and,
for ``uri``/``email``/``mac``, also Go 1.23's ``net/url``, ``net/mail`` and ``net.ParseMAC``;
where those versions disagree the strictest verdict is expected (see the module docstring of
:mod:`slicectl.sim.validation.strfmt`).
"""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.sim.validation.schema import RULES_NOT_CHECKED
from slicectl.sim.validation.strfmt import format_ok
from tests.sim.conftest import Raw

REFUSED = [
    ("uuid", "not-a-uuid"), ("uuid", "123e4567-e89b-12d3-a456-42661417400"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000\n"),
    ("uuid3", "a987fbc9-4bed-4078-8f07-9141ba07c9f3"),
    ("uuid4", "a987fbc9-4bed-4078-cf07-9141ba07c9f3"),
    ("uuid5", "a987fbc9-4bed-4078-8f07-9141ba07c9f3"),
    ("ipv4", "999.1.1.1"), ("ipv4", "1.2.3"), ("ipv4", "::1"), ("ipv4", "1.2.3.4 "),
    ("ipv6", "1.2.3.4"), ("ipv6", "fe80::1%en0"), ("ipv6", "::1.2.3.04"), ("ipv6", "00001::"),
    ("cidr", "1.2.3.4"), ("cidr", "1.2.3.4/33"), ("cidr", "::1/129"), ("cidr", "1.2.3.4/+1"),
    ("mac", "00:00:5e:00:53"), ("mac", "00:00:5e-00:53:01"), ("mac", "00005e005301"),
    ("byte", "aGVsbG8"), ("byte", ""), ("byte", "a-_9"),
    ("uri", "example.com/path"), ("uri", "http://a b/"), ("uri", "http://h:8x/"), ("uri", ""),
    ("uri", "http://[1.2.3.4]/"), ("uri", "http://a:1:2/"), ("uri", "/p%zz"), ("uri", ":x"),
    ("email", "plainaddress"), ("email", "a..b@c.d"), ("email", "a@b c"), ("email", "<a@b>x"),
    ("email", "g: a@b, c@d;"), ("email", "a@b (unclosed"), ("email", "=?x?q?y?= <a@b>"),
    ("hostname", "-a.com"), ("hostname", "a_b.com"), ("hostname", "a.b1"), ("hostname", "a" * 64),
    ("hostname", "a.b\n"), ("duration", "1x"), ("duration", "abc"), ("duration", "-"),
    ("duration", "99999999999999999999h"), ("duration", "1μs x"), ("bsonobjectid", "507f1f77"),
    ("isbn", "3423214121"), ("isbn10", "978-4-87311-368-5"), ("isbn13", "3836221195"),
    ("creditcard", "4220855426213389"), ("ssn", "123456789"), ("ssn", "123-45-67890"),
    ("hexcolor", "#ff12FG"), ("rgbcolor", "rgb(01,31,255)"), ("rgbcolor", "rgb(1,2,3\v)"),
    ("date", "2019-02-29"), ("date-time", "2020-01-01T24:00:00Z"),
    ("k8s-short-name", "Abc"), ("k8s-short-name", "a" * 64), ("k8s-long-name", "a..b"),
]
ACCEPTED = [
    ("uuid", "123E4567E89B12D3A456426614174000"), ("uuid4", "a987fbc9-4bed-4078-8f07-9141ba07c9f3"),
    ("ipv4", "01.2.3.4"), ("ipv4", "::ffff:1.2.3.4"), ("ipv4", "0000000001.2.3.4"),
    ("ipv6", "::ffff:1.2.3.4"), ("ipv6", "1:2:3:4:5:6:7::"), ("cidr", "01.2.3.4/032"),
    ("cidr", "0000::1/128"), ("mac", "00-00-5E-00-53-01"), ("mac", "0000.5e00.5301"),
    ("byte", "aGVsbG8="), ("uri", "mailto:a@b"), ("uri", "a:"), ("uri", "*"), ("uri", "/p?%zz"),
    ("uri", "https://u:p@[fe80::1%25en0]:8443/x%20y"), ("uri", "ftp://a:1:2/"),
    ("email", "a@b"), ("email", "John Doe <j.d@example.com>"), ("email", '"a b"@c'),
    ("email", "a@[1.2.3.4]"), ("email", "a@b (comment)"), ("email", "g: x <a@b>;"),
    ("email", "=?utf-8?q?J?= D <a@b>"), ("email", "ü@ö.de"), ("hostname", "ünïcödé.com"),
    ("hostname", "a+b.com"), ("hostname", "😀.com"), ("hostname", "localhost"),
    ("duration", "1.5h"), ("duration", "0"), ("duration", "3 days"), ("duration", "abc 5 mins"),
    ("duration", "-2562047h47m16.854775808s"), ("bsonobjectid", "507F1F77BCF86CD799439011"),
    ("isbn", "3 401 01319 X"), ("isbn13", "978-4-87311-368-5"),
    ("creditcard", "4220 8554 2622 2389"),
    ("ssn", "123 45-6789"), ("hexcolor", "CCccCC"), ("rgbcolor", "rgb(0,\t31, 255 )"),
    ("date", "0000-02-29"), ("date-time", "2020-01-01t23:59:59.5+01:00"), ("password", "\x00"),
    ("k8s-short-name", "a-1"), ("k8s-long-name", "a." * 126 + "a"),
]


@pytest.mark.parametrize(("fmt", "value"), REFUSED)
def test_refused(fmt: str, value: str) -> None:
    assert not format_ok(fmt, value)


@pytest.mark.parametrize(("fmt", "value"), ACCEPTED)
def test_accepted(fmt: str, value: str) -> None:
    assert format_ok(fmt, value)


def test_format_names_are_normalized_as_the_registry_does() -> None:
    assert not format_ok("u-u-i-d", "x") and not format_ok("datetime", "x")
    for unchecked in ("UUID", "date_time", "quantity", "int32", "no-such-format", ""):
        assert format_ok(unchecked, "x")


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"
FIELDS = {"id": "uuid", "addr": "ipv4", "net": "cidr", "mail": "email", "wait": "duration"}


def _crd() -> dict[str, Any]:
    """A CRD whose spec has formatted strings and a rule (so that, as on a real server, a format
    error adds the "rules were not checked" cause)."""
    spec = {"type": "object", "x-kubernetes-validations": [{"rule": "true"}], "properties": {
        name: {"type": "string", "format": fmt} for name, fmt in FIELDS.items()}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]},
    }


def _gadget(name: str, **spec: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name},
            "spec": spec}


async def test_bad_formats_are_refused_by_the_server(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", CRDS, _crd())
    assert code == 201, body
    good = {"id": "123e4567-e89b-12d3-a456-426614174000", "addr": "10.0.0.1",
            "net": "10.0.0.0/8", "mail": "Ops <ops@example.com>", "wait": "1m30s"}
    code, body, _ = await raw.request("POST", GADGETS, _gadget("good", **good))
    assert code == 201, body
    bad = {"id": "not-a-uuid", "addr": "999.1.1.1", "net": "10.0.0.0/33", "mail": "ops",
           "wait": "soon"}
    code, body, _ = await raw.request("POST", GADGETS, _gadget("bad", **bad))
    assert code == 422, body
    assert body["reason"] == "Invalid"
    causes = [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]
    assert causes == [
        *(("FieldValueTypeInvalid", f"spec.{name}",
           f'Invalid value: "{bad[name]}": spec.{name} in body must be of type '
           f'{FIELDS[name]}: "{bad[name]}"') for name in sorted(FIELDS)),
        ("FieldValueInvalid", "<nil>", f'Invalid value: "null": {RULES_NOT_CHECKED}')]
    code, body, _ = await raw.request("POST", GADGETS, _gadget("one", id="not-a-uuid"))
    assert code == 422 and body["message"] == (
        'Gadget.example.com "one" is invalid: [spec.id: Invalid value: "not-a-uuid": spec.id in '
        f'body must be of type uuid: "not-a-uuid", <nil>: Invalid value: "null": '
        f'{RULES_NOT_CHECKED}]')
