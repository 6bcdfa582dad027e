"""UnaryConnection: one TLS HTTP/2 connection to agy carrying unary calls (h2 on asyncio).

Driven by asyncio's callbacks, with no reader task: the bytes agy sends go through h2 as they
arrive, and each call in flight awaits its own answer. A connection serves until it ends (a
GOAWAY, a lost connection, stream ids running out); `channel.UnaryChannel` keeps the current
one, opens the next and sends again a call that agy refused unprocessed (`Refused`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Final, cast

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from omnigent_agy.errors import Code, ProtocolError

__all__ = ["Answer", "Refused", "UnaryConnection"]

WINDOW: Final = 16 * 1024 * 1024
# Past this stream id a connection takes no new calls (ids are 31 bits, odd for a client).
_LAST_STREAM_ID: Final = 2**31 - 1024


class Refused(Exception):  # noqa: N818 - a signal to UnaryChannel, never raised out of it
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


class UnaryConnection(asyncio.Protocol):
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
        if protocol != "h2":  # agy's port N speaks HTTP/2 (docs/wire.md §1); nothing else is agy
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
                self._fail(event.stream_id, Refused())
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
                self._fail(stream_id, Refused())
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
            raise Refused
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
    return ProtocolError(
        f"the answer exceeds the {limit}-byte limit", connect_code=Code.RESOURCE_EXHAUSTED
    )
