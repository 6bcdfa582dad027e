"""The language server's ports through agy-sim's life (docs/wire.md §1).

What the process (``process``) puts around the connect app and the TLS server:
``ReadinessGate`` answers every call 503 ``unavailable`` until the start-up delay is over;
``RefuseHttp1`` answers HTTP/1.1 with 501, as some newer agy builds do (``--sim-http2-only``);
``RestartableServer`` keeps the server on the running loop and moves it to a fresh port pair
on a restart, the old pair closed.
"""

from __future__ import annotations

import asyncio
import json
import logging

from agy_sim.connect_app import ASGIApp, Message, Receive, Scope, Send
from agy_sim.fault_injector import FaultInjector
from agy_sim.server import TlsConnectServer

__all__ = ["ReadinessGate", "RefuseHttp1", "RestartableServer"]

_log = logging.getLogger("agy-sim")


class ReadinessGate:
    """Answers 503 to every call until the start-up delay is over (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.ready or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        while True:  # read the request first: hypercorn drops the connection otherwise
            message: Message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = json.dumps({"code": "unavailable", "message": "language server is starting"})
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode(), "more_body": False})


class RefuseHttp1:
    """Answers 501 to every HTTP/1.1 request, as some newer agy builds do (docs/wire.md §1).

    Only with ``--sim-http2-only``: the TLS port otherwise offers both (ALPN h2, http/1.1).
    The body is a guess (plain text); the status is the fact a client can rely on.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("http_version") == "2":
            await self.app(scope, receive, send)
            return
        while True:  # read the request first, as above
            message: Message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        headers = [(b"content-type", b"text/plain; charset=utf-8")]
        await send({"type": "http.response.start", "status": 501, "headers": headers})
        body = b"HTTP/1.1 is not supported: use HTTP/2\n"
        await send({"type": "http.response.body", "body": body, "more_body": False})


class RestartableServer:
    """The TLS server on the running loop; ``restart`` moves it to a fresh port pair."""

    def __init__(
        self, injector: FaultInjector, *, alpn: tuple[str, ...] = ("h2", "http/1.1")
    ) -> None:
        self._app: ASGIApp = injector
        self._alpn = alpn
        self._injector = injector
        self._server: TlsConnectServer | None = None
        self._shutdown = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.port

    @property
    def plain_port(self) -> int:
        assert self._server is not None
        return self._server.plain_port

    def start(self) -> int:
        self._launch(TlsConnectServer(self._app, alpn=self._alpn).bind())
        return self.port

    async def restart(self, *, pause: float = 0.0) -> int:
        """Move to a fresh port pair; it answers `pause` seconds after the old one closed."""
        # Bind the new pair while the old one is still held, so the port really changes.
        fresh = TlsConnectServer(self._app, alpn=self._alpn).bind()
        await self.stop()
        if pause:
            await asyncio.sleep(pause)
        self._launch(fresh)
        return self.port

    def _launch(self, server: TlsConnectServer) -> None:
        self._server = server
        self._shutdown = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(server.serve(self._shutdown))

    async def stop(self) -> None:
        self._injector.release_stalls()  # a stalled stream would hold hypercorn's shutdown
        self._shutdown.set()
        task, self._task = self._task, None
        if task is None:
            return
        # Waited for, not awaited: the old server failing as it stops (a client's TLS close
        # racing ours ends hypercorn with an SSLError, APPLICATION_DATA_AFTER_CLOSE_NOTIFY)
        # is that server's end, not agy-sim's. Raised here, it ended agy-sim in the middle
        # of a restart, as no agy does (docs/wire.md §1: its conversations are kept).
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            _log.warning("the language server on the old port ended with %r", task.exception())

    @property
    def failed(self) -> BaseException | None:
        task = self._task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()
