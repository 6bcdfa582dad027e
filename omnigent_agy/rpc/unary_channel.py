"""UnaryChannel: agy's unary calls on one persistent TLS HTTP/2 connection (h2 on asyncio).

A unary call is a small JSON POST and its JSON answer (docs/wire.md §1). Through httpx (its
client, httpcore's connection pool and HTTP/2 layer, anyio's TLS stream, h2 underneath) one
such call cost 2-3.5 ms of CPU on the benchmark machine; the same call framed by h2 on
asyncio's own TLS transport costs a quarter to a third of it (docs/performance.md). So the unary
calls keep their one connection here, and only the server streams go through httpx.

The channel connects on first use and again after the connection ended (agy-sim's server
closes an idle connection after a few seconds with a GOAWAY; agy may restart). Calls share
the connection (HTTP/2 streams), within the server's concurrent-stream limit and its
flow-control windows. Answers are received with 16 MiB windows, as httpcore opens them, so a
multi-megabyte trajectory arrives without a WINDOW_UPDATE round trip per 64 KB.

What the caller can rely on after a failure, for `endpoint.never_sent`: `NeverSentError` (an
OSError) only when agy cannot have acted on the call: no connection could be made. A call
agy refused unprocessed (a stream past a GOAWAY's last stream id, or REFUSED_STREAM, RFC
9113 §8.7) is sent again on a new connection here, once. Any other end of the connection
before the answer is a `ConnectionResetError`: agy may have acted.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final

from omnigent_agy.errors import NeverSentError
from omnigent_agy.rpc.pinning import shared_context
from omnigent_agy.rpc.unary_connection import Answer, Refused, UnaryConnection

__all__ = ["NeverSentError", "UnaryChannel"]


class UnaryChannel:
    """Unary calls to one agy on one persistent connection, owned by one event loop."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        headers: dict[str, str],
        max_answer_bytes: int,
        certificate: bytes | None = None,
    ) -> None:
        self._host = host
        self._port = port
        # Not httpx's context: ALPN offers only h2 (httpx sets ALPN on the contexts it is given).
        # It trusts only agy's pinned `certificate` (`pinning`): a stranger on the port fails
        # the handshake, a NeverSentError, before the headers with the token are written.
        self._ssl = shared_context(certificate, ("h2",))
        self._max_answer_bytes = max_answer_bytes
        authority = f"[{host}]" if ":" in host else host
        self._base_headers: Final = [
            (b":method", b"POST"),
            (b":scheme", b"https"),
            (b":authority", f"{authority}:{port}".encode()),
        ]
        self._extra_headers: Final = [
            (b"content-type", b"application/json"),
            *((name.lower().encode(), value.encode()) for name, value in headers.items()),
        ]
        self._connection: UnaryConnection | None = None
        self._retired: list[UnaryConnection] = []  # replaced, with calls still finishing on them
        self._connecting: asyncio.Lock = asyncio.Lock()

    async def post(self, path: str, body: bytes) -> Answer:
        """POST ``body`` (JSON) to ``path`` and return the whole answer.

        Raises NeverSentError (no connection), ConnectionResetError (the connection ended before
        the answer), ProtocolError (not HTTP/2, or an answer over the size limit). The
        caller bounds the time (``asyncio.timeout``); a call abandoned by a timeout or a
        cancellation is reset, so agy stops working on it.
        """
        headers = [
            *self._base_headers,
            (b":path", path.encode()),
            *self._extra_headers,
            (b"content-length", str(len(body)).encode()),
        ]
        for _ in range(2):
            connection = await self._connected()
            try:
                return await connection.call(headers, body)
            except Refused:
                continue  # agy did not process it: once more, on a new connection
        raise ConnectionResetError("agy refused the call twice without processing it")

    async def _connected(self) -> UnaryConnection:
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        async with self._connecting:
            connection = self._connection
            if connection is not None and not connection.closed:
                return connection
            if connection is not None:
                self._connection = None
                self._retire(connection)
            connection = await self._connect()
            self._connection = connection
            return connection

    async def _connect(self) -> UnaryConnection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(
                lambda: UnaryConnection(self._max_answer_bytes),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname="",  # an IP literal: no SNI, and the name is not checked
            )
        except (OSError, ssl.SSLError) as exc:
            raise NeverSentError(f"could not connect to agy at port {self._port}: {exc}") from exc
        connection.check_h2()
        return connection

    def _retire(self, old: UnaryConnection) -> None:
        """Drop a connection that takes no more calls, without waiting on it.

        One agy ended (a GOAWAY, a lost connection) has failed all its calls: it is aborted
        at once, as are retired ones whose calls have finished since. One that ran out of
        stream ids still finishes its calls; `aclose` ends it if nothing else did.
        """
        self._retired.append(old)
        for connection in list(self._retired):
            if not connection.calls:
                self._retired.remove(connection)
                connection.abort()

    async def aclose(self) -> None:
        connections = [*self._retired, *([self._connection] if self._connection else [])]
        self._connection, self._retired = None, []
        for connection in connections:
            await connection.aclose()
