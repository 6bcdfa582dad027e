"""Where our agy listens now: the one owner of agy's port, followed by every part that talks to it.

agy may restart its language server on a new random port and log a new "listening on random
port" line; its conversations are kept (WIRE.md §1, "Port discovery"). The reader, the
interaction bridge, the interrupt, steering, the turn's send and the model catalog must all
follow such a move, or an answer given after it goes to a port nobody listens on. So there is
ONE `AgyEndpoint` per agy process, shared by every thread and loop: it knows the port now, and
`relocate()` asks discovery again after a failure, at most once per move however many parts
fail at the same time.

Each event loop talks through its own `FollowingClient` (one connection, one owner:
DESIGN-NOTES §10): it makes a new `RpcClient` whenever the endpoint's port is not its client's,
and `run()` turns one failed call into a relocation. A call agy may already have carried out is
not sent again on the new port unless the caller says it is safe (``resend_safe``): only a
connection that was never made, or a request that could not be written, proves agy never
acted on it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

import httpx

from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.errors import AgyError, Code, CsrfError, RpcError

__all__ = ["AgyEndpoint", "FollowingClient", "Locator", "never_sent"]

_logger = logging.getLogger(__name__)

Locator = Callable[[], Awaitable[int]]
"""Finds agy again (discovery): its port now, or a DiscoveryError. Runs on the caller's loop."""


def never_sent(exc: RpcError) -> bool:
    """Whether agy cannot have acted on the failed call: no connection could be made, or the
    request could not be written whole (a connect handler reads the whole body first, and
    HTTP/2 ends a request only with its END_STREAM flag: a failed write never got there)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, httpx.ConnectError | httpx.WriteError | ConnectionRefusedError):
            return True
        cause = cause.__cause__
    return False


class AgyEndpoint:
    """The port of one agy process now, and finding it again; safe from any thread."""

    def __init__(
        self, *, port: int, csrf_token: str, locate: Locator | None = None, timeout: float = 10.0
    ) -> None:
        self._lock = threading.Lock()
        self._port = port
        self._token = csrf_token
        self._locate = locate
        self._timeout = timeout
        self._moves = 0
        self._on_move: list[Callable[[int], None]] = []

    def __repr__(self) -> str:  # never shows the token
        return f"AgyEndpoint(port={self.port})"

    @property
    def port(self) -> int:
        with self._lock:
            return self._port

    @property
    def csrf_token(self) -> str:
        return self._token

    @property
    def moves(self) -> int:
        """How many times agy was found on a new port (diagnostics, tests)."""
        with self._lock:
            return self._moves

    def on_move(self, callback: Callable[[int], None]) -> None:
        """Call `callback(new_port)` after each move (on the thread that found it)."""
        self._on_move.append(callback)

    def new_client(self, port: int | None = None) -> RpcClient:
        """A new client for the port now (or `port`); the caller owns it and its loop."""
        return RpcClient(
            port=self.port if port is None else port,
            csrf_token=self._token,
            timeout=self._timeout,
        )

    async def relocate(self, failed_port: int) -> int:
        """After a failure on `failed_port`: where agy listens now.

        If another part already found agy elsewhere, that port, without asking again. Else
        discovery runs; the same port back means agy did not move (it is slow, or gone).
        Raises what the locator raises (a DiscoveryError) when agy cannot be found.
        """
        with self._lock:
            if self._port != failed_port:
                return self._port
        if self._locate is None:
            return failed_port
        port = await self._locate()
        with self._lock:
            moved = port != self._port
            if moved:
                self._port = port
                self._moves += 1
        if moved:
            _logger.info("agy's language server moved to a new port; following it")
            for callback in self._on_move:
                callback(port)
        return port


class FollowingClient:
    """One event loop's connection to wherever `endpoint` says agy is; not thread-safe."""

    def __init__(self, endpoint: AgyEndpoint) -> None:
        self.endpoint = endpoint
        self._client: RpcClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def client(self) -> RpcClient:
        """The client for the endpoint's port now, owned by this loop (re-made after a move)."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop:
            raise AgyError("a FollowingClient is owned by one event loop; make one per loop")
        self._loop = loop
        client = self._client
        port = self.endpoint.port
        if client is not None and client.port == port:
            return client
        if client is not None:
            await client.aclose()
        self._client = self.endpoint.new_client(port)
        return self._client

    async def run[T](
        self, call: Callable[[RpcClient], Awaitable[T]], *, resend_safe: bool = True
    ) -> T:
        """`call` on the client now; after a transport failure, follow agy to a new port and
        call again there if that is safe (`resend_safe`, or the call never left)."""
        client = await self.client()
        try:
            return await call(client)
        except CsrfError:
            raise
        except RpcError as exc:
            if exc.code is not Code.UNAVAILABLE and exc.code is not Code.DEADLINE_EXCEEDED:
                raise
            if not await self._moved(client.port, exc):
                raise
            if not (resend_safe or never_sent(exc)):
                raise  # the caller re-checks agy's state; the next call uses the new port
            return await call(await self.client())

    async def _moved(self, failed_port: int, exc: RpcError) -> bool:
        try:
            return await self.endpoint.relocate(failed_port) != failed_port
        except AgyError as lookup:
            _logger.info("agy not found on another port after %s: %s", exc.code.value, lookup)
            return False

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
