"""A TLS handshake between two ``ssl.SSLContext`` objects in memory: what a client context
accepts, checked without a socket or a server process."""

from __future__ import annotations

import ssl


def handshake(client: ssl.SSLContext, server: ssl.SSLContext, host: str) -> bytes | None:
    """A TLS handshake between the two contexts through memory buffers; the client's
    certificate (DER) as the server received it, if it asked for one."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname=host)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for side, obj in (("client", c), ("server", s)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            return s.getpeercert(binary_form=True)
    raise AssertionError("handshake did not finish")
