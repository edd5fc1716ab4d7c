"""A client certificate and key given as files are read again as they rotate, as client-go reads
them (slicectl.kube.tls_files); certificate data is not.

The handshakes are in memory (tests/tls_handshake.py) against a server that asks for a client
certificate: what is checked is the certificate it receives.
"""

from __future__ import annotations

import base64
import datetime
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from slicectl.kube import tls_files
from slicectl.kube.config import load_connection
from slicectl.kube.connection import Connection
from slicectl.sim.tls import make_certificates, server_context
from tests.tls_handshake import handshake
from tests.unit.kubeconfigs import one_context

HOST = "api.example"


class ClientCa:
    """A CA that signs client certificates (``clientAuth``), as a cluster's client CA does."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client-ca")])
        self.cert = self._builder(name, self.key.public_key()).add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True,
        ).sign(self.key, hashes.SHA256())

    def _builder(self, subject: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        issuer = subject if not hasattr(self, "cert") else self.cert.subject
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                .public_key(public_key).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1)))

    def issue(self, user: str) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)])
        cert = self._builder(name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False,
        ).sign(self.key, hashes.SHA256())
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


def _presented(conn: Connection, server: ssl.SSLContext) -> str:
    assert isinstance(conn.ssl, ssl.SSLContext)
    der = handshake(conn.ssl, server, HOST)
    assert der is not None
    name = x509.load_der_x509_certificate(der).subject
    return str(name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


@pytest.fixture
def setting(tmp_path: Path) -> tuple[ClientCa, ssl.SSLContext, dict[str, Any]]:
    """The client CA, a server that asks for its certificates, and a kubeconfig user's files."""
    server_ca, cert_pem, key_pem = make_certificates(HOST)
    client_ca = ClientCa()
    server = server_context(cert_pem, key_pem)
    server.verify_mode = ssl.CERT_REQUIRED
    server.load_verify_locations(cadata=client_ca.pem().decode())
    (tmp_path / "ca.crt").write_bytes(server_ca)
    return client_ca, server, {"ca": str(tmp_path / "ca.crt"),
                               "cert": tmp_path / "client.crt", "key": tmp_path / "client.key"}


def _append(path: str, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def _write(files: dict[str, Any], pair: tuple[bytes, bytes], which: str = "both") -> None:
    if which in ("both", "cert"):
        files["cert"].write_bytes(pair[0])
    if which in ("both", "key"):
        files["key"].write_bytes(pair[1])


async def test_a_renewed_certificate_is_presented_once_due_and_a_half_written_one_waits(
    tmp_path: Path, setting: tuple[ClientCa, ssl.SSLContext, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client_ca, server, files = setting
    _write(files, client_ca.issue("first"))
    conn = await load_connection(one_context(tmp_path, f"https://{HOST}", {
        "client-certificate": str(files["cert"]), "client-key": str(files["key"])},
        certificate_authority=files["ca"]))
    assert _presented(conn, server) == "first"
    second = client_ca.issue("second")
    _write(files, second, "cert")  # renewed, the key not yet written
    conn.reload_tls_files()
    assert (_presented(conn, server), conn.identity) == ("first", 0)  # not due for 5 minutes
    monkeypatch.setattr(tls_files, "CHECK_EVERY", 0.0)
    conn.reload_tls_files()  # the pair does not match: the last one kept
    assert (_presented(conn, server), conn.identity) == ("first", 0)
    _write(files, second, "key")
    monkeypatch.setattr(tls_files, "CHECK_EVERY", 300.0)
    monkeypatch.setattr(tls_files, "RECHECK_AFTER", 0.0)  # the retry after a pair that failed
    conn.reload_tls_files()
    assert (_presented(conn, server), conn.identity) == ("second", 1)


async def test_a_401_reads_the_certificate_files_again(
    tmp_path: Path, setting: tuple[ClientCa, ssl.SSLContext, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server answers 401 to an expired client certificate (kube-apiserver asks for one and
    checks it in its x509 authenticator): the files are read again before the resend."""
    client_ca, server, files = setting
    _write(files, client_ca.issue("first"))
    conn = await load_connection(one_context(tmp_path, f"https://{HOST}", {
        "client-certificate": str(files["cert"]), "client-key": str(files["key"])},
        certificate_authority=files["ca"]))
    _write(files, client_ca.issue("second"))
    monkeypatch.setattr(tls_files, "RECHECK_AFTER", 0.0)
    conn.reload_tls_files()
    assert _presented(conn, server) == "first"
    await conn.refresh(None)
    conn.reload_tls_files()
    assert _presented(conn, server) == "second"


async def test_certificate_data_stays_and_a_ca_file_is_watched(
    tmp_path: Path, setting: tuple[ClientCa, ssl.SSLContext, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """client-go reloads only a certificate and key that are both files; the CA file is read
    again too, and a context built from it keeps the inline certificate."""
    client_ca, server, files = setting
    cert, key = client_ca.issue("inline")
    _write(files, client_ca.issue("file"))
    conn = await load_connection(one_context(tmp_path, f"https://{HOST}", {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode()}, certificate_authority=files["ca"]))
    monkeypatch.setattr(tls_files, "CHECK_EVERY", 0.0)
    _append(files["ca"], b"\n")
    conn.reload_tls_files()  # the CA file changed (it is watched): the same certificate
    assert (_presented(conn, server), conn.identity) == ("inline", 1)


def test_when_the_files_are_read_again_and_what_counts_as_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every five minutes, or ten seconds after check_soon(); only a change where every file
    is readable and not empty is one."""
    now = 1000.0
    monkeypatch.setattr(time, "monotonic", lambda: now)
    ca, cert = tmp_path / "ca.crt", tmp_path / "client.crt"
    ca.write_bytes(b"ca-1")
    cert.write_bytes(b"cert-1")
    files = tls_files.TlsFiles((str(ca), str(cert)))
    now += 299.5
    assert not files.due()
    now += 1.0
    assert files.due()
    assert files.changed() is None  # read, and the same
    files.check_soon()
    now += 9.5
    assert not files.due()
    now += 1.0
    assert files.due()
    ca.write_bytes(b"ca-2")
    assert files.changed() == (b"ca-2", b"cert-1")
    now += 11.0
    assert not files.due()  # not accepted, but the next read is five minutes away again
    files.accept((b"ca-2", b"cert-1"))
    assert files.changed() is None
    cert.unlink()
    assert files.changed() is None  # a file gone is skipped, the last contents kept
    cert.write_bytes(b"")
    assert files.changed() is None  # and so is an empty one
    cert.write_bytes(b"cert-2")
    assert files.changed() == (b"ca-2", b"cert-2")
