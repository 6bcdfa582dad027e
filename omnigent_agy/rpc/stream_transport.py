"""httpx's transport for the plugin's httpx connections (agy's streams), closing a connection
whose TLS handshake is cancelled.

httpcore (1.0) closes a TCP connection whose TLS handshake fails with an ``Exception``, not one
cancelled in it (``CancelledError`` is a ``BaseException``). A stream cancelled then (the
reader stopped, a deadline) left its socket open until the garbage collector found it: a
ResourceWarning in the harness, and on agy's side a handshake waiting out its timeout
(docs/reliability.md, the restart that waited 60 s). The network backend here closes it in
either case; everything else is httpcore's own (``AnyIOBackend``).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore
import httpx

__all__ = ["stream_transport"]


class _ClosingStream(httpcore.AsyncNetworkStream):
    """httpcore's stream, closed when its TLS handshake is cancelled."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            return await self._inner.start_tls(ssl_context, server_hostname, timeout)
        except Exception:
            raise  # httpcore closed it
        except BaseException:
            with anyio.CancelScope(shield=True):  # the close itself must not be cancelled
                await self._inner.aclose()
            raise

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _ClosingBackend(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _ClosingStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def stream_transport(
    *, verify: ssl.SSLContext, http1: bool, http2: bool
) -> httpx.AsyncHTTPTransport:
    """httpx's own transport over httpcore's pool, with the closing network backend.

    httpx does not take a network backend, so its pool is made again with one (the same
    arguments httpx gives it, which are its defaults here: no proxy, no socket options)."""
    transport = httpx.AsyncHTTPTransport(verify=verify, http1=http1, http2=http2)
    limits = httpx.Limits()
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=verify,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        http1=http1,
        http2=http2,
        network_backend=_ClosingBackend(),
    )
    return transport
