"""Pinning agy's TLS certificate to the port discovery found it on (docs/reliability.md).

Discovery proves that the agy we started alone holds a port (`listeners`), but only at that
moment: a client keeps calling that port, and a process (another user's, say) that binds it
in the instant after agy moved would get the next new connection, a stream's or the unary
channel's reconnect, with the CSRF token in its headers. So when discovery has established
that agy holds the port, it also takes the certificate agy serves there (`fetch_certificate`)
and every client of that port trusts exactly that certificate (`client_context`): a different
one fails the TLS handshake, before a byte of any request is written, and the failure is a
connection that was never made (`endpoint.never_sent`), so the endpoint looks for agy again.

agy's certificate is self-signed (docs/wire.md §1), so what is pinned is the certificate itself,
not a chain, a name or a validity period. Whether agy keeps it across a restart of its
language server is not known; discovery pins whatever agy serves when found again.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ssl
from dataclasses import dataclass
from typing import Final

__all__ = ["Pin", "client_context", "fetch_certificate", "shared_context"]

# OpenSSL's X509_V_FLAG_NO_CHECK_TIME (not named by the ssl module): the pinned certificate is
# trusted because it is the very one agy served, not for its dates, so an agy that runs past
# its certificate's expiry (or a clock that moved) does not lose its client.
_NO_CHECK_TIME: Final = 0x200000


@dataclass(frozen=True, slots=True)
class Pin:
    """A port of agy's and the certificate agy served on it (None: not pinned)."""

    port: int
    certificate: bytes | None = None

    def __repr__(self) -> str:
        cert = self.certificate
        shown = hashlib.sha256(cert).hexdigest()[:16] if cert is not None else "unpinned"
        return f"Pin(port={self.port}, certificate={shown})"


def client_context(certificate: bytes | None) -> ssl.SSLContext:
    """A client TLS context trusting exactly ``certificate`` (DER); None: no verification.

    No CA store is loaded: the system's would cost ~0.1-0.2 s of CPU per client
    (docs/performance.md) and trust what agy's self-signed certificate is not.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # an IP literal, and agy's certificate names what it likes
    if certificate is None:
        context.verify_mode = ssl.CERT_NONE
        return context
    context.load_verify_locations(cadata=certificate)
    context.verify_mode = ssl.CERT_REQUIRED
    # PARTIAL_CHAIN: the pinned certificate is a trust anchor even when it is no CA
    # (agy-sim's says CA:FALSE) or names an issuer agy does not send.
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | _NO_CHECK_TIME
    return context


@functools.lru_cache(maxsize=16)
def shared_context(certificate: bytes | None, alpn: tuple[str, ...]) -> ssl.SSLContext:
    """`client_context` offering ``alpn``, made once per certificate and shared by every
    client that never changes its ALPN (the unary channel; httpx sets ALPN on the contexts it
    is given, so its own are not shared). Building one costs about 0.3-0.6 ms of CPU."""
    context = client_context(certificate)
    context.set_alpn_protocols(list(alpn))
    return context


async def fetch_certificate(port: int, *, host: str = "127.0.0.1", timeout: float = 2.0) -> bytes:
    """The certificate (DER) served on ``host:port``: a TLS handshake, nothing sent after it.

    Raises OSError (refused, reset, a timeout) or ssl.SSLError (not TLS, e.g. agy's plain
    port N+1).
    """
    context = client_context(None)
    async with asyncio.timeout(timeout):
        _, writer = await asyncio.open_connection(host, port, ssl=context, server_hostname="")
    try:
        tls = writer.get_extra_info("ssl_object")
        certificate = tls.getpeercert(binary_form=True) if tls is not None else None
    finally:
        writer.transport.abort()  # no close_notify round trip: nothing was said
    if not certificate:
        raise ssl.SSLError(f"port {port} served no certificate")
    return bytes(certificate)
