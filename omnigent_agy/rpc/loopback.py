"""Loopback only: the address a client may connect to for a host it was given.

agy's certificate is self-signed (docs/wire.md §1), so a client must never be pointed anywhere but
this machine: every client (`connection.RpcConnection`) turns its host into a loopback address
here first, and refuses any other with NonLoopbackHostError.
"""

from __future__ import annotations

import ipaddress
import socket

from omnigent_agy.errors import NonLoopbackHostError

__all__ = ["ensure_loopback"]


def ensure_loopback(host: str) -> str:
    """The loopback address to connect to for ``host``, else NonLoopbackHostError.

    An IP literal must be loopback. A name (only ``localhost`` is accepted) is resolved here,
    once: every address it resolves to must be loopback, and the client then connects to that
    address, so a hosts file or resolver pointing the name elsewhere cannot redirect it.
    """
    bare = host.removeprefix("[").removesuffix("]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address is not None and address.is_loopback:
        return bare
    if address is None and bare.lower() == "localhost":
        resolved = _resolve(bare)
        if resolved and all(ip.is_loopback for ip in resolved):
            return str(resolved[0])
        raise NonLoopbackHostError(
            f"refusing host {host!r}: it resolves to {', '.join(map(str, resolved)) or 'nothing'}"
            ", not only to loopback; agy's certificate is not verified, so the client only "
            "talks to loopback (fix the hosts file, or use 127.0.0.1)"
        )
    raise NonLoopbackHostError(
        f"refusing host {host!r}: agy's certificate is self-signed and not verified, "
        "so the client only talks to loopback (127.0.0.0/8, ::1, localhost)"
    )


def _resolve(name: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found
