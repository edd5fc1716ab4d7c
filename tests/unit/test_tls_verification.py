"""slicectl verifies an API server's certificate as client-go does, on every Python it supports.

Python 3.13's ``ssl.create_default_context()`` adds ``VERIFY_X509_STRICT``, OpenSSL's RFC 5280
checks, which Go's crypto/x509 does not make: a cluster CA made by ``openssl req -x509`` (basic
constraints, no key usage) is refused ("CA cert does not include key usage extension"), as is a
serving certificate without an Authority Key Identifier. kubectl talks to such a cluster (the
loopback v1.32.6 these tests use has such a CA); slicectl on 3.13 could not. The tests make
3.13's default on whatever Python runs them. Go also trusts an intermediate CA given without
its root, where OpenSSL before 3.13's default wants the chain up to a self-signed root.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from slicectl.kube.config import Connection
from slicectl.sim.tls import server_context
from tests.tls_handshake import handshake

PEM = serialization.Encoding.PEM


def handmade_chain() -> tuple[bytes, bytes, bytes]:
    """(CA PEM, server cert PEM, server key PEM): a CA with basic constraints only and a
    serving certificate with a SAN only, as bare ``openssl`` commands make them."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "handmade-ca")])

    def cert(subject: x509.Name, public: Any) -> x509.CertificateBuilder:
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
                .public_key(public).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(hours=1)))

    ca = (cert(ca_name, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server = (cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
                   key.public_key())
              .add_extension(x509.SubjectAlternativeName(
                  [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
              .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return ca.public_bytes(PEM), server.public_bytes(PEM), key_pem


def python_313_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ssl.create_default_context`` as Python 3.13 makes it."""
    original = ssl.create_default_context

    def strict(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        ctx = original(*args, **kwargs)
        ctx.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_PARTIAL_CHAIN
        return ctx

    monkeypatch.setattr(ssl, "create_default_context", strict)


def client_trusting(tmp_path: Path, ca_pem: bytes) -> ssl.SSLContext:
    """slicectl's TLS context for a kubeconfig whose certificate-authority is ``ca_pem``."""
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    config = SimpleNamespace(host="https://127.0.0.1:6443", verify_ssl=True,
                             ssl_ca_cert=str(tmp_path / "ca.crt"), cert_file=None,
                             key_file=None)
    client = Connection(config, None, in_cluster=False).ssl
    assert isinstance(client, ssl.SSLContext)
    return client


@pytest.mark.parametrize("default", ["this Python's", "Python 3.13's"])
def test_a_cluster_ca_that_kubectl_accepts_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default: str) -> None:
    if default == "Python 3.13's":
        python_313_default(monkeypatch)
    ca_pem, cert_pem, key_pem = handmade_chain()
    client = client_trusting(tmp_path, ca_pem)
    handshake(client, server_context(cert_pem, key_pem), "127.0.0.1")


def test_a_certificate_from_another_ca_is_still_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python_313_default(monkeypatch)
    client = client_trusting(tmp_path, handmade_chain()[0])
    _, cert_pem, key_pem = handmade_chain()
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(client, server_context(cert_pem, key_pem), "127.0.0.1")


def intermediate_chain() -> tuple[bytes, bytes, bytes]:
    """(intermediate CA PEM, server cert + intermediate PEM, server key PEM): a root CA signs
    an intermediate CA, which signs the serving certificate; the server sends both."""
    now = datetime.datetime.now(datetime.UTC)
    keys = [ec.generate_private_key(ec.SECP256R1()) for _ in range(3)]
    names = [x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, n)])
             for n in ("root-ca", "intermediate-ca", "kube-apiserver")]

    def cert(i: int, issuer: int, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(names[i]).issuer_name(names[issuer])
                   .public_key(keys[i].public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(keys[issuer], hashes.SHA256())

    intermediate, server = cert(1, 0, True), cert(2, 1, False)
    key_pem = keys[2].private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    return (intermediate.public_bytes(PEM),
            server.public_bytes(PEM) + intermediate.public_bytes(PEM), key_pem)


def test_an_intermediate_ca_in_the_kubeconfig_is_trusted_as_client_go_trusts_it(
        tmp_path: Path) -> None:
    """Go's crypto/x509 takes every certificate of the roots pool as a trust anchor, so a
    kubeconfig whose certificate-authority is an intermediate CA (the cluster's issuing CA,
    without the offline root) works with kubectl. OpenSSL wants a chain up to a self-signed
    root unless told otherwise (Python 3.13 tells it; 3.11 and 3.12 do not)."""
    ca_pem, chain_pem, key_pem = intermediate_chain()
    client = client_trusting(tmp_path, ca_pem)
    handshake(client, server_context(chain_pem, key_pem), "127.0.0.1")
