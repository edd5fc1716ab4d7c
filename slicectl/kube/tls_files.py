"""The TLS files a long-running client must read again: the CA file, and a client certificate and
key given as files.

A pod's ``ca.crt`` changes when the cluster's CA is rotated (the ``kube-root-ca.crt`` ConfigMap
projected into every pod carries the old and the new CA for a while), and a client certificate
on disk when cert-manager or a Vault agent renews it. A client that read them once is cut off
when the server switches to a certificate of the new CA, or when its own certificate expires,
and stays cut off until it restarts. client-go (v1.36) reads both again: a client certificate
and key given as files (no data) at most once a second at each handshake, with a five-minute
poll that closes every connection when they changed; a CA file (no data; the
``ClientsAllowCARotation`` gate, beta and on in 1.36) at most every five minutes.

slicectl's rule (:class:`TlsFiles`, applied by :class:`~slicectl.kube.connection.Connection`):
the files are read again every :data:`CHECK_EVERY` seconds (client-go's five minutes), on the
next request, and sooner, at most every :data:`RECHECK_AFTER` seconds, after a 401 (an expired
client certificate is one) or a TLS handshake that failed (the server's new certificate, or our
old one, refused). New content must load before it is used: a certificate written before its
key, or a CA file half rewritten, is tried again :data:`RECHECK_AFTER` seconds later and the
old context kept meanwhile. A file that cannot be read or is empty is skipped, as client-go
skips it.
"""

from __future__ import annotations

import time

CHECK_EVERY = 300.0  # seconds between two reads of the files
RECHECK_AFTER = 10.0  # seconds, after a refusal or a change that did not load


class TlsFiles:
    """The CA, client certificate and key files of a connection, and when to read them again."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths = paths
        self._contents = _read(paths)
        self._checked_at = time.monotonic()
        self._soon = False

    def due(self) -> bool:
        """Whether the files should be read again now."""
        wait = RECHECK_AFTER if self._soon else CHECK_EVERY
        return time.monotonic() - self._checked_at >= wait

    def check_soon(self) -> None:
        """Read the files again at the next request, unless they were read less than
        :data:`RECHECK_AFTER` seconds ago (after a refusal, or a change that did not load)."""
        self._soon = True

    def changed(self) -> tuple[bytes | None, ...] | None:
        """The files' contents if they changed since the last accepted ones (each readable and
        not empty), else None. Either way the next read is :data:`CHECK_EVERY` away."""
        self._checked_at, self._soon = time.monotonic(), False
        contents = _read(self.paths)
        if contents == self._contents or any(not c for c in contents):
            return None
        return contents

    def accept(self, contents: tuple[bytes | None, ...]) -> None:
        """``contents`` loaded and are in use."""
        self._contents = contents


def _read(paths: tuple[str, ...]) -> tuple[bytes | None, ...]:
    out: list[bytes | None] = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                out.append(f.read())
        except OSError:
            out.append(None)
    return tuple(out)

