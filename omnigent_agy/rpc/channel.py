"""UnaryChannel: agy's unary calls on one persistent TLS HTTP/2 connection (h2 on asyncio).

A unary call is a small JSON POST and its JSON answer (WIRE.md §1). Through httpx (its
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
import contextlib
import ssl
from dataclasses import dataclass
from typing import Final, cast

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from omnigent_agy.rpc.errors import Code, ProtocolError
from omnigent_agy.rpc.pinning import shared_context

__all__ = ["Answer", "NeverSentError", "UnaryChannel"]

WINDOW: Final = 16 * 1024 * 1024
# Past this stream id a connection takes no new calls (ids are 31 bits, odd for a client).
_LAST_STREAM_ID: Final = 2**31 - 1024


class NeverSentError(ConnectionError):
    """The call cannot have reached agy: no connection to it could be made."""


class _Refused(Exception):  # noqa: N818 - a signal inside UnaryChannel, never raised out
    """agy did not process the call (GOAWAY past it, REFUSED_STREAM): safe to send again."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole unary answer: its HTTP status, media type (lowercase, no parameters), body."""

    status: int
    media_type: str
    body: bytes
    http_version: str = "HTTP/2"


class _Call:
    """One call in flight on the connection: what has arrived of its answer."""

    __slots__ = ("body", "done", "media_type", "status")

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done
        self.status = 0
        self.media_type = ""
        self.body = bytearray()


class _Connection(asyncio.Protocol):
    """One TLS HTTP/2 connection to agy, driven by asyncio's callbacks (no reader task)."""

    def __init__(self, max_answer_bytes: int) -> None:
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            # The channel writes its few headers itself, already lowercase and valid.
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
        )
        self.h2 = h2.connection.H2Connection(config)
        self.transport: asyncio.Transport | None = None
        self.calls: dict[int, _Call] = {}
        self.closed = False  # no new calls: the connection ended or is ending
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._changed: asyncio.Event = asyncio.Event()  # a window opened, a stream ended
        self._max_answer_bytes = max_answer_bytes
        self._not_h2: str | None = None

    # -- asyncio's callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports (the loop omnigent's runner serves the
        # harness on) implement asyncio.Transport without subclassing it.
        self.transport = cast("asyncio.Transport", transport)
        tls = transport.get_extra_info("ssl_object")
        protocol = tls.selected_alpn_protocol() if tls is not None else None
        if protocol != "h2":  # agy's port N speaks HTTP/2 (WIRE.md §1); nothing else is agy
            self._not_h2 = str(protocol or "no protocol")
            self.closed = True
            self.transport.abort()
            return
        # Settings sent with the preface: no server push, and 16 MiB windows (per stream by
        # INITIAL_WINDOW_SIZE, for the connection by one increment) so answers need no
        # per-call WINDOW_UPDATE.
        self.h2.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
            },
        )
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(WINDOW - self.h2.inbound_flow_control_window)
        self._flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            self._end(ConnectionResetError(f"agy broke HTTP/2: {exc}"))
            self._flush()  # h2's GOAWAY saying why
            if self.transport is not None:
                self.transport.close()
            return
        for event in events:
            self._on_event(event)
        self._flush()

    def eof_received(self) -> bool | None:
        self._end(ConnectionResetError("agy closed the connection before answering"))
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(ConnectionResetError(f"the connection to agy was lost: {exc or 'closed'}"))
        if not self.lost.done():
            self.lost.set_result(None)

    # -- HTTP/2 events -------------------------------------------------------------------

    def _on_event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.DataReceived):
            self._on_data(event)
        elif isinstance(event, h2.events.ResponseReceived):
            call = self.calls.get(event.stream_id)
            if call is not None:
                _read_headers(call, event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            call = self.calls.get(event.stream_id)
            if call is not None and not call.done.done():
                call.done.set_result(None)
            self._changed.set()
        elif isinstance(event, h2.events.StreamReset):
            if event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                self._fail(event.stream_id, _Refused())
            else:
                code = _error_name(event.error_code)
                self._fail(event.stream_id, ConnectionResetError(f"agy reset the call ({code})"))
            self._changed.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._on_goaway(event)
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._changed.set()

    def _on_data(self, event: h2.events.DataReceived) -> None:
        if event.flow_controlled_length:
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        call = self.calls.get(event.stream_id)
        if call is None or call.done.done():
            return  # an abandoned or failed call's answer still arriving
        call.body += event.data
        if len(call.body) > self._max_answer_bytes:
            self._fail(event.stream_id, _too_large(self._max_answer_bytes))  # `call` resets it

    def _on_goaway(self, event: h2.events.ConnectionTerminated) -> None:
        # Streams past the last id agy names were never processed (RFC 9113 §6.8); h2 takes
        # no frame after a GOAWAY, so the ones agy did take cannot finish here either.
        last = event.last_stream_id if event.last_stream_id is not None else 0
        self.closed = True
        code = _error_name(event.error_code)
        for stream_id in list(self.calls):
            if stream_id > last:
                self._fail(stream_id, _Refused())
            else:
                message = f"agy closed the connection (GOAWAY {code}) before answering"
                self._fail(stream_id, ConnectionResetError(message))
        self._changed.set()
        if self.transport is not None:
            self.transport.close()

    def _fail(self, stream_id: int, exc: BaseException) -> None:
        call = self.calls.get(stream_id)
        if call is not None and not call.done.done():
            call.done.set_exception(exc)

    def _end(self, exc: BaseException) -> None:
        self.closed = True
        for stream_id in list(self.calls):
            self._fail(stream_id, exc)
        self._changed.set()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    # -- one call ------------------------------------------------------------------------

    def check_h2(self) -> None:
        if self._not_h2 is not None:
            raise ProtocolError(
                f"agy's port did not agree to HTTP/2 (TLS ALPN chose {self._not_h2}); "
                "agy's language server speaks HTTP/2: is this port agy's?"
            )

    async def call(self, headers: list[tuple[bytes, bytes]], body: bytes) -> Answer:
        while not self.closed and len(self.calls) >= self.h2.remote_settings.max_concurrent_streams:
            await self._wait_for_change()
        if self.closed:
            raise _Refused
        stream_id = self.h2.get_next_available_stream_id()
        if stream_id >= _LAST_STREAM_ID:
            self.closed = True  # this call is the last: the next opens a new connection
        call = _Call(asyncio.get_running_loop().create_future())
        self.calls[stream_id] = call
        try:
            self.h2.send_headers(stream_id, headers)
            await self._send_body(stream_id, body, call)
            await call.done
            return Answer(call.status, call.media_type, bytes(call.body))
        finally:
            del self.calls[stream_id]
            self._changed.set()
            done = call.done
            if not done.done() or done.cancelled() or done.exception() is not None:
                self._cancel(stream_id)

    async def _send_body(self, stream_id: int, body: bytes, call: _Call) -> None:
        """Send ``body`` within agy's flow-control windows; a small body is one frame."""
        view = memoryview(body)
        while not call.done.done():  # a failed call (connection gone, reset) stops sending
            # agy's window may be below zero: its SETTINGS can shrink it after we sent.
            size = max(
                0,
                min(
                    len(view),
                    self.h2.local_flow_control_window(stream_id),
                    self.h2.max_outbound_frame_size,
                ),
            )
            if size or not view:
                self.h2.send_data(stream_id, view[:size].tobytes(), end_stream=size == len(view))
                self._flush()
                view = view[size:]
                if not view:
                    return
            else:
                await self._wait_for_change()  # agy's window is full: wait for its update

    async def _wait_for_change(self) -> None:
        self._changed.clear()
        if self.closed:
            return
        await self._changed.wait()

    def _cancel(self, stream_id: int) -> None:
        """Tell agy the call is abandoned (a timeout, a cancelled caller, a refused answer)."""
        with contextlib.suppress(h2.exceptions.H2Error):
            stream = self.h2.streams.get(stream_id)
            if stream is not None and not stream.closed and not self.closed:
                self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
                self._flush()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def aclose(self) -> None:
        self.closed = True
        if self.transport is None:
            return
        if not self.transport.is_closing():
            with contextlib.suppress(h2.exceptions.H2Error):
                self.h2.close_connection()
                self._flush()
            self.transport.close()
        try:
            async with asyncio.timeout(1.0):  # TLS close_notify; a silent peer is aborted
                await asyncio.shield(self.lost)
        except TimeoutError:
            self.transport.abort()


def _read_headers(call: _Call, headers: list[tuple[bytes, bytes]]) -> None:
    for name, value in headers:
        if name == b":status":
            call.status = int(value)
        elif name == b"content-type":
            call.media_type = value.split(b";", 1)[0].strip().lower().decode("latin-1")


def _error_name(code: int | h2.errors.ErrorCodes | None) -> str:
    return code.name if isinstance(code, h2.errors.ErrorCodes) else f"error code {code}"


def _too_large(limit: int) -> ProtocolError:
    return ProtocolError(f"the answer exceeds the {limit}-byte limit", code=Code.RESOURCE_EXHAUSTED)


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
        self._connection: _Connection | None = None
        self._retired: list[_Connection] = []  # replaced, with calls still finishing on them
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
            except _Refused:
                continue  # agy did not process it: once more, on a new connection
        raise ConnectionResetError("agy refused the call twice without processing it")

    async def _connected(self) -> _Connection:
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

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(
                lambda: _Connection(self._max_answer_bytes),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname="",  # an IP literal: no SNI, and the name is not checked
            )
        except (OSError, ssl.SSLError) as exc:
            raise NeverSentError(f"could not connect to agy at port {self._port}: {exc}") from exc
        connection.check_h2()
        return connection

    def _retire(self, old: _Connection) -> None:
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
