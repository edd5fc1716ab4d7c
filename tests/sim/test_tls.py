"""The embedded server's certificates pass a strict client's checks.

Python 3.13's ``ssl.create_default_context()`` verifies with ``VERIFY_X509_STRICT`` (OpenSSL's
RFC 5280 checks), which refuses a chain whose certificates lack key identifiers ("Missing
Authority Key Identifier"); pyproject.toml allows 3.13, and on it ``slicectl demo`` failed its
first request. Certificates that Kubernetes' own tools make (kubeadm, kind) carry them.
"""

from __future__ import annotations

import ssl

import pytest

from slicectl.sim.tls import make_certificates, server_context
from tests.tls_handshake import handshake


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_strict_client_verifies_the_servers_certificate(host: str) -> None:
    ca_pem, cert_pem, key_pem = make_certificates("127.0.0.1")
    client = ssl.create_default_context(cadata=ca_pem.decode())
    client.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_PARTIAL_CHAIN
    handshake(client, server_context(cert_pem, key_pem), host)
