"""A raw TLS HTTP/2 server on loopback (h2, server side) that misbehaves on request.

For the unary channel's tests of what no well-behaved server core does on demand: a
GOAWAY or a reset in the middle of a call, a connection cut mid-answer, a port that
refuses HTTP/2. It runs on the test's own event loop:
``async with RawH2Server(handler) as server:``; ``handler(call)`` runs once per request,
when the request is whole, and answers it through ``call``. It records what it saw.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Self

import h2.config
import h2.connection
import h2.errors
import h2.events

from agy_sim.certs import CertPaths, make_self_signed_cert

__all__ = ["RawCall", "RawH2Server"]


class RawCall:
    """One request the server received, and the ways to answer it."""

    def __init__(self, link: _Link, stream_id: int, headers: dict[bytes, bytes], body: bytes):
        self.link = link
        self.stream_id = stream_id
        self.headers = headers
        self.body = body

    @property
    def connection(self) -> int:
        """Which connection (0, 1, ...) the request came on."""
        return self.link.number

    def answer(
        self, status: int = 200, body: bytes = b"{}", media: bytes = b"application/json"
    ) -> None:
        h2c = self.link.h2
        h2c.send_headers(
            self.stream_id, [(b":status", str(status).encode()), (b"content-type", media)]
        )
        h2c.send_data(self.stream_id, body, end_stream=True)
        self.link.flush()

    def answer_in_part(self, body: bytes) -> None:
        """Headers and the start of the body, then the connection is cut."""
        h2c = self.link.h2
        h2c.send_headers(
            self.stream_id, [(b":status", b"200"), (b"content-type", b"application/json")]
        )
        h2c.send_data(self.stream_id, body)
        self.link.flush()
        self.link.cut()

    def reset(self, code: h2.errors.ErrorCodes) -> None:
        self.link.h2.reset_stream(self.stream_id, code)
        self.link.flush()

    def goaway(self, last_stream_id: int) -> None:
        """Close the connection with a GOAWAY saying the last stream processed."""
        self.link.h2.close_connection(last_stream_id=last_stream_id)
        self.link.flush()
        self.link.transport.close()


type Handler = Callable[[RawCall], Awaitable[None] | None]


class _Link(asyncio.Protocol):
    def __init__(self, server: RawH2Server, number: int) -> None:
        self.server = server
        self.number = number
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self.h2 = h2.connection.H2Connection(config)
        self.transport: asyncio.Transport
        self.pending: dict[int, tuple[dict[bytes, bytes], bytearray]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.links.append(self)
        self.h2.initiate_connection()
        self.flush()

    def data_received(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                self.pending[event.stream_id] = (dict(event.headers), bytearray())
            elif isinstance(event, h2.events.DataReceived):
                self.pending[event.stream_id][1].extend(event.data)
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                headers, body = self.pending.pop(event.stream_id)
                call = RawCall(self, event.stream_id, headers, bytes(body))
                self.server.calls.append(call)
                self.server.spawn(call)
            elif isinstance(event, h2.events.StreamReset):
                self.server.resets.append(event.stream_id)
        self.flush()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def cut(self) -> None:
        self.transport.abort()


class RawH2Server:
    """Serves TLS on 127.0.0.1 with the given ALPN protocols; ``handler`` answers each call."""

    def __init__(self, handler: Handler, *, alpn: tuple[str, ...] = ("h2",)) -> None:
        self.handler = handler
        self.alpn = alpn
        self.links: list[_Link] = []
        self.calls: list[RawCall] = []
        self.resets: list[int] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._certs: CertPaths | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, call: RawCall) -> None:
        result = self.handler(call)
        if result is not None:
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def __aenter__(self) -> Self:
        self._certs = make_self_signed_cert()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self._certs.certfile, self._certs.keyfile)
        context.set_alpn_protocols(list(self.alpn))
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Link(self, len(self.links)),
            "127.0.0.1",
            0,
            ssl=context,
            ssl_shutdown_timeout=1,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        assert self._server is not None
        self._server.close()
        for link in self.links:
            link.transport.abort()
        await self._server.wait_closed()
        if self._certs is not None:
            self._certs.remove()
