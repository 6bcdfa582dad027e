"""Where our agy listens now: the one owner of agy's port, followed by every part that talks to it.

agy may restart its language server on a new random port and log a new "listening on random
port" line; its conversations are kept (docs/wire.md §1, "Port discovery"). The reader, the
interaction bridge, the interrupt, steering, the turn's send and the model catalog must all
follow such a move, or an answer given after it goes to a port nobody listens on. So there is
ONE `AgyEndpoint` per agy process, shared by every thread and loop: it knows the port now, and
`relocate()` asks discovery again after a failure, at most once per move however many parts
fail at the same time.

Each event loop talks through its own `FollowingClient` (one connection, one owner:
docs/decisions.md §10): it makes a new `RpcClient` whenever the endpoint's port is not its client's,
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
from dataclasses import dataclass

import httpx
from tenacity import AsyncRetrying, retry_if_exception

from omnigent_agy.errors import AgyError, Code, CsrfError, NeverSentError, ProtocolError, RpcError
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.pinning import Pin
from omnigent_agy.rpc.retry import RetryPolicy, is_transient

__all__ = ["AgyEndpoint", "FollowingClient", "Locator", "never_sent"]

_logger = logging.getLogger(__name__)

Locator = Callable[[], Awaitable[Pin | int]]
"""Finds agy again (discovery): its port now with the certificate agy serves there
(`discovery.discover_pin`; a bare port is trusted unverified), or a DiscoveryError. Runs on
the caller's loop."""


def never_sent(exc: RpcError) -> bool:
    """Whether agy cannot have acted on the failed call: no connection could be made
    (`channel.NeverSentError` for unary calls, httpx's ConnectError for streams), or httpx could
    not write the request whole (a connect handler reads the whole body first, and HTTP/2
    ends a request only with its END_STREAM flag: a failed write never got there)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(
            cause, NeverSentError | httpx.ConnectError | httpx.WriteError | ConnectionRefusedError
        ):
            return True
        cause = cause.__cause__
    return False


@dataclass(frozen=True, slots=True)
class _FollowingRetry(RetryPolicy):
    """Reads are retried as usual, except when nothing listens on the port any more: then
    the caller looks for agy elsewhere at once instead of knocking on the old port for
    seconds (a refused connection on loopback is no blip: the server is gone or moved)."""

    def retrying(self) -> AsyncRetrying:
        # Not super(): a slotted dataclass is a new class, which zero-argument super() misses.
        base = RetryPolicy.retrying(self)
        return base.copy(retry=retry_if_exception(_worth_retrying_here))


def _worth_retrying_here(exc: BaseException) -> bool:
    return is_transient(exc) and not (isinstance(exc, RpcError) and never_sent(exc))


_RETRY = _FollowingRetry()
_GARBLED_TRIES = 3


class AgyEndpoint:
    """The port of one agy process now, and finding it again; safe from any thread.

    With `certificate` (agy's on `port`, `discovery.pin_port`) every client trusts only the
    certificate discovery found on its port: a stranger that took over a port agy left fails
    the TLS handshake before a request is written (`pinning`), which `run` follows as a move.
    """

    def __init__(
        self,
        *,
        port: int,
        csrf_token: str,
        locate: Locator | None = None,
        timeout: float = 10.0,
        certificate: bytes | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._port = port
        self._certificates: dict[int, bytes | None] = {port: certificate}
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

    def certificate(self, port: int | None = None) -> bytes | None:
        """The certificate pinned on `port` (default: the port now); None: not pinned."""
        with self._lock:
            return self._certificates.get(self._port if port is None else port)

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
        """A new client for the port now (or `port`), trusting only the certificate pinned
        on it; the caller owns it and its loop."""
        with self._lock:
            port = self._port if port is None else port
            certificate = self._certificates.get(port)
        return RpcClient(
            port=port,
            csrf_token=self._token,
            timeout=self._timeout,
            retry=_RETRY,
            certificate=certificate,
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
        found = await self._locate()
        pin = found if isinstance(found, Pin) else Pin(found)
        port = pin.port
        with self._lock:
            # A new certificate on the same port (agy restarted there) is a move too: the
            # clients trusting the old one must be made again.
            moved = port != self._port or pin.certificate != self._certificates.get(port)
            if moved:
                self._port = port
                self._certificates[port] = pin.certificate
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
        self._retired: list[RpcClient] = []
        self._busy: dict[RpcClient, int] = {}  # calls in flight per client
        self._loop: asyncio.AbstractEventLoop | None = None

    async def client(self) -> RpcClient:
        """The client for the endpoint's port now, owned by this loop (re-made after a move).

        The client for the old port is closed once no call of this loop is using it any
        more: closing it under a call would turn a move into "the client has been closed"
        instead of a failure on the old port, which `run` follows.
        """
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop:
            raise AgyError("a FollowingClient is owned by one event loop; make one per loop")
        self._loop = loop
        client = self._client
        port = self.endpoint.port
        if client is not None and self._current(client):
            return client
        self._client = self.endpoint.new_client(port)
        if client is not None:
            if self._busy.get(client):
                self._retired.append(client)
            else:
                await client.aclose()
        return self._client

    def _current(self, client: RpcClient) -> bool:
        """Whether `client` talks to the endpoint's port now, trusting its certificate now."""
        return client.port == self.endpoint.port and (
            client.certificate == self.endpoint.certificate(client.port)
        )

    async def run[T](
        self, call: Callable[[RpcClient], Awaitable[T]], *, resend_safe: bool = True
    ) -> T:
        """`call` on the client now; after a transport failure, follow agy to a new port and
        call again there if that is safe (`resend_safe`, or the call never left). A call
        that may be repeated is also tried again after an answer that breaks the protocol
        (a garbled body), a few times, before that error is raised."""
        for attempt in range(_GARBLED_TRIES):
            try:
                return await self._run_once(call, resend_safe=resend_safe)
            except ProtocolError as exc:
                if not resend_safe or attempt == _GARBLED_TRIES - 1:
                    raise
                _logger.info("agy's answer was garbled (%s); asking again", exc)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _run_once[T](
        self, call: Callable[[RpcClient], Awaitable[T]], *, resend_safe: bool
    ) -> T:
        client = await self.client()
        try:
            return await self._call_on(client, call)
        except CsrfError:
            raise
        except RpcError as exc:
            if exc.connect_code not in {Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED}:
                raise
            if not await self._moved(client, exc):
                raise
            if not (resend_safe or never_sent(exc)):
                raise  # the caller re-checks agy's state; the next call uses the new port
            return await self._call_on(await self.client(), call)

    async def _call_on[T](self, client: RpcClient, call: Callable[[RpcClient], Awaitable[T]]) -> T:
        self._busy[client] = self._busy.get(client, 0) + 1
        try:
            return await call(client)
        finally:
            left = self._busy.pop(client) - 1
            if left:
                self._busy[client] = left
            elif client in self._retired:
                self._retired.remove(client)
                await client.aclose()

    async def _moved(self, failed: RpcClient, exc: RpcError) -> bool:
        try:
            await self.endpoint.relocate(failed.port)
        except AgyError as lookup:
            _logger.info(
                "agy not found on another port after %s: %s", exc.connect_code.value, lookup
            )
            return False
        return not self._current(failed)

    async def aclose(self) -> None:
        clients = [*self._retired, *([self._client] if self._client is not None else [])]
        self._client, self._retired = None, []
        for client in clients:
            await client.aclose()
