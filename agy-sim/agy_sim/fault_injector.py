"""agy-sim's fault injection: the plan (``faults``) applied to every request, on the wire.

``FaultInjector`` is ASGI middleware around the connect app: it delays a request, answers it
instead of the method (an HTTP error, garbage, an echo of its headers), or cuts the response
after K data frames (dropped or stalled, ``DropMode`` saying how a drop ends); a reshaped
answer or an unchecked token it asks of the connect app through the request's scope
(``reshape``). Every answer is
written here byte for byte, so a client sees exactly the broken server it is tested against.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from agy_sim.connect_app import code_for_http_status
from agy_sim.faults import DropMode, FaultKind, FaultRule, FaultSource
from agy_sim.reshape import NO_CSRF_SCOPE, RESHAPE_SCOPE, reshape_of

_log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Not JSON and not a valid envelope (flag 0xde is no connect flag): every decoder must fail.
GARBAGE_BODY: Final = b"\xde\xad\xbe\xef<agy-sim garbage, not json>\xff\x00"
_ENVELOPE_HEADER: Final = 5
_DATA_FLAG: Final = 0x00
# A data envelope header promising 256 bytes, followed by one: the stream ends inside it.
_TRUNCATED_ENVELOPE: Final = b"\x00\x00\x00\x01\x00{"
# connect's end-of-stream envelope (flag 0x02) with an empty JSON object: a clean end.
_TRAILER_ENVELOPE: Final = b"\x02\x00\x00\x00\x02{}"
# A data envelope header promising 1 GiB (more than any sane frame limit), then some of it.
_OVERSIZED_ENVELOPE: Final = b"\x00\x40\x00\x00\x00" + b"{" * 4096


def method_of(scope: Scope) -> str:
    """The connect method a request is for: the last path segment (docs/wire.md §1)."""
    return str(scope.get("path", "")).rstrip("/").rpartition("/")[2]


@dataclass(slots=True)
class FaultInjector:
    """ASGI middleware applying ``source``'s plan to every HTTP request to ``app``."""

    app: AsgiApp
    source: FaultSource
    _fired: dict[FaultRule, int] = field(default_factory=dict)
    _release: asyncio.Event | None = None

    def release_stalls(self) -> None:
        """End every stalled response (before a shutdown or restart closes the server)."""
        if self._release is not None:
            self._release.set()
        self._release = None

    def fired(self, rule: FaultRule) -> int:
        """How many requests ``rule`` has fired on."""
        return self._fired.get(rule, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method = method_of(scope)
        rules = [rule for rule in self.source.current().rules if self._arm(rule, method)]
        shape = reshape_of(rules)
        if shape is not None:
            _log.info("fault reshape on %s", method)
            scope[RESHAPE_SCOPE] = shape
        if any(rule.kind is FaultKind.NO_CSRF for rule in rules):
            scope[NO_CSRF_SCOPE] = True
        delays = [rule.seconds for rule in rules if rule.kind is FaultKind.DELAY]
        if delays:
            # Logged even at 0 s: a zero delay on "*" is a log of every request that came in.
            _log.info("fault delay %.3g s on %s", sum(delays), method)
            await asyncio.sleep(sum(delays))
        for rule in rules:
            if rule.kind in (FaultKind.HTTP_ERROR, FaultKind.GARBAGE, FaultKind.ECHO_HEADERS):
                _log.info("fault %s on %s", rule.kind, method)
                await _answer_instead(rule, scope, receive, send)
                return
        cut = next(
            (r for r in rules if r.kind in (FaultKind.DROP_STREAM, FaultKind.STALL_STREAM)), None
        )
        if cut is None:
            await self.app(scope, receive, send)
            return
        _log.info("fault %s after %d frames on %s", cut.kind, cut.after_frames, method)
        if self._release is None:
            self._release = asyncio.Event()
        cutter = _ResponseCutter(cut, send, _is_stream(scope), self._release)
        await self.app(scope, receive, cutter.send)

    def _arm(self, rule: FaultRule, method: str) -> bool:
        """Whether ``rule`` fires on this request, counting it when it does."""
        if not rule.matches(method):
            return False
        count = self._fired.get(rule, 0)
        if rule.times is not None and count >= rule.times:
            return False
        self._fired[rule] = count + 1
        return True


def _is_stream(scope: Scope) -> bool:
    headers: dict[bytes, bytes] = dict(scope.get("headers", []))
    return headers.get(b"content-type", b"").startswith(b"application/connect+")


async def _drain(receive: Receive) -> None:
    # Read the whole request first: hypercorn's HTTP/2 protocol drops the connection when
    # request data arrives for a stream whose response is already complete.
    while True:
        message = await receive()
        if message.get("type") != "http.request" or not message.get("more_body"):
            return


def _echo(rule: FaultRule, scope: Scope) -> str:
    """The request's headers as one line, the CSRF token's first, after ``pad`` dots."""
    headers = [
        (bytes(name).decode("latin-1"), bytes(value).decode("latin-1"))
        for name, value in scope.get("headers", [])
    ]
    headers.sort(key=lambda header: "csrf" not in header[0])
    echoed = "; ".join(f"{name}: {value}" for name, value in headers)
    return "." * rule.pad + f"request headers: {echoed}"


def _echo_answer(rule: FaultRule, scope: Scope) -> tuple[int, bytes, bytes]:
    """(status, content type, body) of an ``echo_headers`` answer."""
    echo = _echo(rule, scope)
    if rule.text:
        return rule.status, b"text/plain", echo.encode()
    code = code_for_http_status(rule.status)
    error = {"code": code, "message": echo, "details": [{"type": "echo", "debug": echo}]}
    if _is_stream(scope):
        # A stream's error travels in its end-of-stream envelope (docs/wire.md §2), after a 200.
        payload = json.dumps({"error": error}).encode()
        envelope = bytes([0x02]) + len(payload).to_bytes(4, "big") + payload
        return 200, b"application/connect+json", envelope
    return rule.status, b"application/json", json.dumps(error).encode()


async def _answer_instead(rule: FaultRule, scope: Scope, receive: Receive, send: Send) -> None:
    await _drain(receive)
    if rule.kind is FaultKind.ECHO_HEADERS:
        status, content_type, body = _echo_answer(rule, scope)
    elif rule.kind is FaultKind.GARBAGE:
        content_type = b"application/connect+json" if _is_stream(scope) else b"application/json"
        status, body = 200, GARBAGE_BODY
    else:
        content_type = b"application/json"
        status = rule.status
        message = f"agy-sim injected fault: HTTP {status}"
        body = json.dumps({"code": code_for_http_status(status), "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type)],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


_TAILS: Final = {
    DropMode.EOF: b"",
    DropMode.TRUNCATE: _TRUNCATED_ENVELOPE,
    DropMode.TRAILER: _TRAILER_ENVELOPE,
    DropMode.OVERSIZE: _OVERSIZED_ENVELOPE,
}


@dataclass(slots=True)
class _ResponseCutter:
    """Wraps ``send``: passes the first ``after_frames`` data envelopes, then drops or stalls.

    A unary response has no frames: it is cut before its body whatever ``after_frames``.
    Sends after the cut are swallowed rather than raised into the wrapped app (which would
    log a handler failure): hypercorn tells the app its stream is over with
    ``http.disconnect`` once the body ended, or once the connection closes.
    """

    rule: FaultRule
    downstream: Send
    is_stream: bool
    release: asyncio.Event
    _frames: int = 0
    _pending: bytearray = field(default_factory=bytearray)
    _done: bool = False

    async def send(self, message: Message) -> None:
        if self._done:
            return  # swallowed: the wrapped app learns of the end from http.disconnect
        if message.get("type") != "http.response.body":
            await self.downstream(message)
            return
        body = bytes(message.get("body", b""))
        keep = self._allowed_prefix(body) if self.is_stream else b""
        if keep is None:
            await self.downstream(message)
            return
        if keep:
            await self.downstream({"type": "http.response.body", "body": keep, "more_body": True})
        await self._cut()

    def _allowed_prefix(self, body: bytes) -> bytes | None:
        """The part of ``body`` before the cut, or None when the cut is not in it."""
        if self._frames >= self.rule.after_frames:
            return b""
        held = len(self._pending)  # bytes of an envelope begun in an earlier body
        self._pending += body
        offset = 0
        while len(self._pending) - offset >= _ENVELOPE_HEADER:
            end = offset + _ENVELOPE_HEADER + int.from_bytes(self._pending[offset + 1 : offset + 5])
            if end > len(self._pending):
                break
            if self._pending[offset] == _DATA_FLAG:
                self._frames += 1
                if self._frames >= self.rule.after_frames:
                    return body[: end - held]
            offset = end
        del self._pending[:offset]
        return None

    async def _cut(self) -> None:
        self._done = True
        if self.rule.kind is FaultKind.STALL_STREAM:
            await self.release.wait()
            return
        tail = _TAILS[self.rule.mode]
        await self.downstream({"type": "http.response.body", "body": tail, "more_body": False})
