"""Serving an ASGI app the way agy's language server listens (docs/wire.md §1).

``TlsConnectServer`` serves any ASGI app (normally ``connect_app.ConnectApp``) with
hypercorn on TLS + HTTP/2 (ALPN h2, self-signed) at 127.0.0.1:N and a plain-HTTP listener
at N+1 that refuses every RPC with 404, as agy does. Inside a running loop: ``bind()``
(optional, to learn the port early) then ``await serve(shutdown_event)``. In tests:
``with TlsConnectServer(app) as server:`` runs it on its own loop in a thread; leaving the
block stops it promptly.

Composing (the simulator's fault injection): wrap the app, then serve the wrapper::

    app = ConnectApp(csrf_token=token, unary=unary, streams=streams)
    server = TlsConnectServer(DropStreamAfter(app, frames=3))   # any ASGI middleware
    server.start()
    ...
    server.stop()                                  # "agy restarts on a new port":
    server = TlsConnectServer(DropStreamAfter(app, frames=3)).start()   # fresh ports

A middleware sees plain ASGI: it may delay or drop ``send`` messages, send garbage bytes
or a 5xx itself, or stop calling ``send`` to stall.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import weakref
from typing import Any, Self, cast

from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config, Sockets

from agy_sim.certs import CertPaths, make_self_signed_cert
from agy_sim.connect_app import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    read_body,
    send_plain,
    serve_lifespan,
)
from agy_sim.errors import ServerError

__all__ = ["TlsConnectServer"]

logger = logging.getLogger(__name__)


class _Served:
    """What hypercorn runs: lifespan handled, plain HTTP refused with 404 like agy's port
    N+1, and every call in flight tracked so shutdown can end the ones that never finish."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._inflight: set[asyncio.Task[Any]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await serve_lifespan(receive, send)
        elif scope["type"] == "http" and scope.get("scheme") != "https":
            await read_body(receive)  # see ConnectApp.__call__
            await send_plain(send, 404, "404 page not found")
        else:
            task = asyncio.current_task()
            assert task is not None
            self._inflight.add(task)
            try:
                await self.app(scope, receive, send)
            finally:
                self._inflight.discard(task)

    def cancel_inflight(self) -> None:
        for task in self._inflight:
            task.cancel()


class _Listener(socket.socket):
    """A listening socket that remembers the connections it accepted, so that a stop can end
    the ones their clients never finish.

    hypercorn stops only once every connection is gone (asyncio's ``Server.wait_closed``
    waits for them), and a client can leave one half-made: httpx abandons a connection
    whose TLS handshake is cancelled without closing it (its task was cancelled by a
    deadline), and the server's handshake then waits for hypercorn's
    ``ssl_handshake_timeout``, 60 s. Idle keep-alive connections are no better: closing a
    TLS connection waits for the peer's close_notify, which an httpx client answers only
    while reading (bounded by ``_shorten_tls_shutdown`` below). Ending the socket
    (``shutdown``) makes asyncio see the end of the connection whatever state its TLS is in.
    """

    def __init__(self, family: int, kind: int) -> None:
        # proto given, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose
        # proto says TCP, and the connections accepted inherit it. With Nagle on, hypercorn's
        # three writes of one answer (HEADERS, DATA, END_STREAM) waited for the client's
        # delayed ACK: ~40 ms a unary call (benchmarks/bench_unary.py).
        super().__init__(family, kind, socket.IPPROTO_TCP)
        self.accepted: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def accept(self) -> tuple[socket.socket, Any]:
        conn, address = super().accept()
        self.accepted.add(conn)
        return conn, address

    def end_connections(self) -> int:
        """Shut down every accepted connection still open; how many there were."""
        ended = 0
        for conn in list(self.accepted):
            if conn.fileno() < 0:
                continue  # closed already
            with contextlib.suppress(OSError):  # the peer went meanwhile
                conn.shutdown(socket.SHUT_RDWR)
                ended += 1
        return ended


def _shorten_tls_shutdown(loop: asyncio.AbstractEventLoop, timeout: float) -> None:
    """Make TLS servers created on ``loop`` give up on a peer's close_notify after ``timeout``.

    hypercorn stops only once every connection is gone (asyncio's ``Server.wait_closed``
    waits for them), and closing a TLS connection waits for the peer's close_notify, 30 s
    by default. An httpx client answers it only while reading, and a pooled idle
    connection is not read; ending the socket (``_Listener.end_connections``) does not
    help while asyncio has paused reading it. hypercorn does not pass
    ``ssl_shutdown_timeout`` on, hence this default added to the loop (idempotent; it only
    fills in a value nobody gave).
    """
    if getattr(loop.create_server, "_short_tls_shutdown", False):
        return
    create_server = loop.create_server

    async def create_server_with_short_tls_shutdown(*args: Any, **kwargs: Any) -> asyncio.Server:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_shutdown_timeout", timeout)
        return await create_server(*args, **kwargs)

    create_server_with_short_tls_shutdown._short_tls_shutdown = True  # type: ignore[attr-defined]
    loop.create_server = create_server_with_short_tls_shutdown  # type: ignore[method-assign]


def _quiet_tls_shutdown_timeouts(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Expected at stop (see _shorten_tls_shutdown): logged at debug, the rest as usual."""
    exception = context.get("exception")
    if isinstance(exception, TimeoutError) and "SSL shutdown" in str(exception):
        logger.debug("a client did not answer TLS close_notify; connection aborted")
        return
    loop.default_exception_handler(context)


class _OwnSockets(Config):
    """hypercorn's configuration, serving on sockets bound beforehand (the pair above)."""

    def __init__(self, tls: socket.socket, plain: socket.socket) -> None:
        super().__init__()
        self._own = Sockets(secure_sockets=[tls], insecure_sockets=[plain], quic_sockets=[])

    def create_sockets(self) -> Sockets:
        return self._own


def _bind_pair(host: str, port: int | None, plain_port: int | None) -> tuple[_Listener, _Listener]:
    """Listening sockets for the TLS port and the plain port (N+1 unless given)."""
    for _ in range(64):
        tls = _listen(host, port or 0)
        chosen = tls.getsockname()[1]
        try:
            plain = _listen(host, plain_port if plain_port is not None else chosen + 1)
        except OSError:
            tls.close()
            if port is not None:
                raise
            continue  # N+1 is taken: try another N
        return tls, plain
    raise ServerError(f"found no free port pair N, N+1 on {host}")


def _listen(host: str, port: int) -> _Listener:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = _Listener(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # Listening now, so connections made before hypercorn accepts wait in the backlog.
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class TlsConnectServer:
    """An ASGI app on TLS HTTP/2 at ``host:port`` plus a refusing plain port at ``port+1``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        plain_port: int | None = None,
        certs: CertPaths | None = None,
        graceful_timeout: float = 0.5,
        alpn: tuple[str, ...] = ("h2", "http/1.1"),
    ) -> None:
        self.app = app
        self._alpn = alpn
        self.host = host
        self._want_port = port
        self._want_plain_port = plain_port
        self._certs = certs
        self._own_certs = certs is None
        self._graceful_timeout = graceful_timeout
        self._sockets: tuple[_Listener, _Listener] | None = None
        self._ports: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._shutdown: asyncio.Event | None = None
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        """The TLS HTTP/2 port (known once bound)."""
        return self._bound_ports()[0]

    @property
    def plain_port(self) -> int:
        """The plain-HTTP port that refuses RPC."""
        return self._bound_ports()[1]

    def _bound_ports(self) -> tuple[int, int]:
        if self._ports is None:
            raise ServerError("the server is not bound yet: call bind(), start() or serve()")
        return self._ports

    def bind(self) -> Self:
        """Reserve the two ports now (idempotent), so ``port`` is known before serving."""
        if self._sockets is None and self._ports is None:
            tls, plain = _bind_pair(self.host, self._want_port, self._want_plain_port)
            self._sockets = (tls, plain)
            self._ports = (tls.getsockname()[1], plain.getsockname()[1])
        return self

    async def serve(self, shutdown_event: asyncio.Event) -> None:
        """Serve on the running loop until ``shutdown_event`` is set."""
        self.bind()
        if self._sockets is None:
            raise ServerError("a TlsConnectServer serves once; make a new one to serve again")
        if self._certs is None:
            self._certs = make_self_signed_cert()
        tls, plain = self._sockets
        self._sockets = None
        # hypercorn closes these when it stops.
        config = _OwnSockets(tls, plain)
        config.certfile = str(self._certs.certfile)
        config.keyfile = str(self._certs.keyfile)
        config.alpn_protocols = list(self._alpn)
        config.graceful_timeout = self._graceful_timeout
        config.errorlog = logger
        served = _Served(self.app)

        def end_stragglers() -> None:
            served.cancel_inflight()
            ended = tls.end_connections() + plain.end_connections()
            if ended:
                logger.debug("ended %d connection(s) still open after the grace period", ended)

        async def shutdown_trigger() -> None:
            await shutdown_event.wait()
            # hypercorn waits for every connection to close before its own grace period
            # starts (asyncio's Server.wait_closed does), and neither a stream that never
            # ends nor a client that never finishes its TLS handshake or close would ever
            # let it: after our grace, end the calls still running and their connections.
            asyncio.get_running_loop().call_later(self._graceful_timeout, end_stragglers)

        loop = asyncio.get_running_loop()
        _shorten_tls_shutdown(loop, self._graceful_timeout)
        if loop.get_exception_handler() is None:  # agy-sim's log: no traceback at every stop
            loop.set_exception_handler(_quiet_tls_shutdown_timeouts)
        try:
            await hypercorn_serve(
                cast(Any, served), config, shutdown_trigger=shutdown_trigger, mode="asgi"
            )
        finally:
            if self._own_certs:
                self._certs.remove()

    # -- in-process use: its own loop in a thread -------------------------------------

    def start(self, *, timeout: float = 10.0) -> Self:
        """Serve on a private event loop in a daemon thread; returns once it runs."""
        self.bind()
        running = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(running,), name=f"tls-connect-server:{self.port}", daemon=True
        )
        self._thread.start()
        if not running.wait(timeout) or self._failure is not None:
            self.stop()
            raise ServerError(f"the server on port {self.port} did not start") from self._failure
        return self

    def _run(self, running: threading.Event) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._shutdown = asyncio.Event()
            running.set()
            await self.serve(self._shutdown)

        try:
            asyncio.run(main())
        except Exception as exc:  # reported by stop(); a thread must not die silently
            logger.exception("the server thread failed")
            self._failure = exc
            running.set()

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop serving, close both ports and join the thread."""
        if self._sockets is not None:  # bound but never served
            for sock in self._sockets:
                sock.close()
            self._sockets = None
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._shutdown is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._shutdown.set)
        thread.join(timeout)
        if thread.is_alive():
            raise ServerError(f"the server on port {self.port} did not stop within {timeout:g} s")
        if self._failure is not None:
            raise ServerError(f"the server on port {self.port} failed") from self._failure

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
