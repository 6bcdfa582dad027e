"""A stream cancelled in its TLS handshake closes its connection (rpc/stream_transport.py).

httpcore closes a connection whose handshake fails, not one whose handshake is cancelled: the
reader stopped while a stream was connecting left the socket open until the garbage collector
found it (a ResourceWarning, and on agy's side a handshake waiting out its timeout). The
server here accepts and never answers the ClientHello, as a busy or stopping agy may."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest
from waiting import wait_until

from omnigent_agy.rpc.connection import RpcConnection


class SilentServer:
    """A loopback TCP listener that accepts one connection, reads until the client closes it,
    and says whether it did."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.accepted = threading.Event()
        self.closed_by_client = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with self._listener:
            connection, _ = self._listener.accept()
        self.accepted.set()
        with connection:
            connection.settimeout(30)
            try:
                while connection.recv(4096):
                    pass  # the ClientHello, never answered
                self.closed_by_client.set()
            except OSError:
                pass


@pytest.fixture
def server() -> Iterator[SilentServer]:
    made = SilentServer()
    yield made
    if not made.accepted.is_set():  # unblock the accept a failed test never made
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", made.port)):
            pass


def test_a_stream_cancelled_in_its_tls_handshake_closes_its_connection(
    server: SilentServer,
) -> None:
    async def go() -> None:
        async with RpcConnection(port=server.port, csrf_token="t") as connection:

            async def read() -> None:
                async for _ in connection.stream("StreamAgentStateUpdates", {}):
                    pass

            task = asyncio.create_task(read())
            await asyncio.to_thread(server.accepted.wait, 10)
            await asyncio.sleep(0.2)  # the ClientHello is out; the handshake waits
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The loop still runs (the connection stays open): the server must see the close
            # now, not when the loop or the garbage collector ends.
            await asyncio.to_thread(
                wait_until,
                server.closed_by_client.is_set,
                timeout=10,
                what="the cancelled handshake's connection to be closed",
            )

    asyncio.run(go())
