"""agy-sim's listening sockets: the connections they accept send small writes at once.

asyncio disables Nagle's algorithm (TCP_NODELAY) only on a socket whose ``proto`` says TCP.
A listening socket made without it hands that on to every connection it accepts, and then
each of hypercorn's small writes of an answer waits for the client's delayed ACK.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from agy_sim.server import _bind_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_accepted_connections_have_nagle_off() -> None:
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future[int] = loop.create_future()

    class Note(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    tls, plain = _bind_pair("127.0.0.1", None, None)
    plain.close()
    server = await loop.create_server(Note, sock=tls)
    _, writer = await asyncio.open_connection("127.0.0.1", tls.getsockname()[1])
    try:
        async with asyncio.timeout(10):
            nodelay = await accepted
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
    assert nodelay != 0
