"""Fault injection for agy-sim: what can go wrong between a client and agy, on demand.

The reliability tests need an agy that misbehaves in controlled ways while it runs. A
``FaultPlan`` is a list of ``FaultRule`` values plus a restart generation; it comes from
``--sim-fault`` specs given at start and from a JSON control file (``--sim-faults PATH``)
that a test may rewrite at any time: ``FaultSource.current()`` re-reads it on every request.

Control file (every key optional)::

    {"restart": 1,
     "faults": [
       {"kind": "drop_stream", "method": "StreamAgentStateUpdates", "after_frames": 2},
       {"kind": "stall_stream", "after_frames": 0, "times": 1},
       {"kind": "http_error", "method": "Heartbeat", "status": 503, "times": 2},
       {"kind": "garbage", "method": "GetAllCascadeTrajectories"},
       {"kind": "delay", "seconds": 1.5}]}

``method`` is a method name or ``"*"`` (default). ``times`` bounds how many requests a rule
fires on (absent: every request); a rule's count is keyed by its value, so rewriting the
file with the same rule keeps counting and a new ``"id"`` re-arms it. Raising ``restart``
asks the process to restart its server on a new port (process.py watches it).

``FaultInjector`` is the ASGI middleware that applies the plan around the connect app.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from omnigent_agy.rpc.errors import AgyError, code_from_http_status

_log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ANY_METHOD: Final = "*"
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


class FaultConfigError(AgyError):
    """A fault spec or control file that cannot be understood."""


class FaultKind(StrEnum):
    """What a rule does to a matching request."""

    DROP_STREAM = "drop_stream"  # end the response after K data frames, without the trailer
    STALL_STREAM = "stall_stream"  # stop sending after K data frames, keep the stream open
    HTTP_ERROR = "http_error"  # answer an HTTP error status instead of the method
    GARBAGE = "garbage"  # answer 200 with bytes no decoder accepts
    DELAY = "delay"  # wait before handing the request on
    # Not agy's behaviour: a hostile or broken server whose error text repeats the request's
    # headers (the CSRF token among them), so tests can prove no error text carries it.
    ECHO_HEADERS = "echo_headers"


class DropMode(StrEnum):
    """How a dropped stream ends.

    hypercorn's ASGI interface cannot send RST_STREAM: an app that stops without ending
    the body leaves the HTTP/2 stream open (that is what ``stall_stream`` models). So a
    drop ends the stream cleanly but without connect's end-of-stream envelope (WIRE.md §2)
    (``eof``), in the middle of an envelope (``truncate``), with a proper end-of-stream
    envelope as if agy had finished (``trailer``), or with an envelope header promising more
    than any client accepts (``oversize``).
    """

    EOF = "eof"
    TRUNCATE = "truncate"
    TRAILER = "trailer"
    OVERSIZE = "oversize"


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One fault: ``kind`` applied to requests for ``method`` (or every method)."""

    kind: FaultKind
    method: str = ANY_METHOD
    after_frames: int = 0
    mode: DropMode = DropMode.EOF
    status: int = 503
    times: int | None = None
    seconds: float = 0.0
    pad: int = 0
    text: bool = False
    id: str = ""

    def matches(self, method: str) -> bool:
        return self.method in (ANY_METHOD, method)


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The faults in force, and the restart generation the process should be at."""

    rules: tuple[FaultRule, ...] = ()
    restart: int = 0


NO_FAULTS: Final = FaultPlan()

_INT_KEYS: Final = frozenset({"after_frames", "status", "times", "pad"})
_KNOWN_KEYS: Final = frozenset({"kind", "method", "mode", "seconds", "id", "text"} | _INT_KEYS)


def parse_rule(raw: Mapping[str, object]) -> FaultRule:
    """One rule from its JSON object (control file) or its spec (command line)."""
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise FaultConfigError(
            f"unknown fault keys {sorted(unknown)}; known: {sorted(_KNOWN_KEYS)}"
        )
    try:
        kind = FaultKind(str(raw["kind"]))
        mode = DropMode(str(raw.get("mode", DropMode.EOF)))
    except (KeyError, ValueError) as exc:
        raise FaultConfigError(f"bad fault kind or mode in {dict(raw)}: {exc}") from exc
    ints = {key: _as_int(raw[key], key) for key in _INT_KEYS if key in raw}
    seconds = _as_float(raw.get("seconds", 0.0), "seconds")
    if any(value < 0 for value in ints.values()) or seconds < 0:
        raise FaultConfigError(f"negative value in fault {dict(raw)}")
    status = ints.get("status", 503)
    if not 400 <= status <= 599:
        raise FaultConfigError(f"http_error status must be 4xx or 5xx, not {status}")
    return FaultRule(
        kind=kind,
        method=str(raw.get("method", ANY_METHOD)),
        after_frames=ints.get("after_frames", 0),
        mode=mode,
        status=status,
        times=ints.get("times"),
        seconds=seconds,
        pad=ints.get("pad", 0),
        text=str(raw.get("text", "")).lower() in ("1", "true", "yes"),
        id=str(raw.get("id", "")),
    )


def parse_spec(spec: str) -> FaultRule:
    """A rule from the command line: ``kind[:key=value,...]``, e.g. ``delay:seconds=2``."""
    kind, _, rest = spec.strip().partition(":")
    raw: dict[str, object] = {"kind": kind.strip()}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise FaultConfigError(f"fault spec {spec!r}: expected key=value, got {item!r}")
        raw[key.strip()] = value.strip()
    return parse_rule(raw)


def parse_plan(raw: object) -> FaultPlan:
    """A plan from the control file's JSON value."""
    if not isinstance(raw, dict):
        raise FaultConfigError("the fault control file must hold a JSON object")
    faults = raw.get("faults", [])
    if not isinstance(faults, list) or not all(isinstance(item, dict) for item in faults):
        raise FaultConfigError('"faults" must be a list of objects')
    return FaultPlan(
        rules=tuple(parse_rule(item) for item in faults),
        restart=_as_int(raw.get("restart", 0), "restart"),
    )


def _as_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FaultConfigError(f"{key} must be an integer, not {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise FaultConfigError(f"{key} must be an integer, not {value!r}") from exc


def _as_float(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FaultConfigError(f"{key} must be a number, not {value!r}")
    try:
        return float(value)
    except ValueError as exc:
        raise FaultConfigError(f"{key} must be a number, not {value!r}") from exc


@dataclass(slots=True)
class FaultSource:
    """Start-up rules plus the control file, re-read each time it is asked.

    A file that is missing means no file faults. A file that cannot be parsed (for
    instance caught half-written) keeps the last good plan and is logged once per text.
    """

    static_rules: tuple[FaultRule, ...] = ()
    control_file: Path | None = None
    _last_good: FaultPlan = NO_FAULTS
    _reported: str = ""

    def current(self) -> FaultPlan:
        file_plan = self._read_file()
        return FaultPlan(rules=self.static_rules + file_plan.rules, restart=file_plan.restart)

    def _read_file(self) -> FaultPlan:
        if self.control_file is None:
            return NO_FAULTS
        try:
            text = self.control_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._last_good = NO_FAULTS
            return NO_FAULTS
        except OSError as exc:
            _log.warning("fault control file unreadable, keeping last plan: %s", exc)
            return self._last_good
        try:
            self._last_good = parse_plan(json.loads(text)) if text.strip() else NO_FAULTS
        except (ValueError, FaultConfigError) as exc:
            if text != self._reported:
                self._reported = text
                _log.warning("fault control file not understood, keeping last plan: %s", exc)
        return self._last_good


def method_of(scope: Scope) -> str:
    """The connect method a request is for: the last path segment (WIRE.md §1)."""
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
    code = code_from_http_status(rule.status).value
    error = {"code": code, "message": echo, "details": [{"type": "echo", "debug": echo}]}
    if _is_stream(scope):
        # A stream's error travels in its end-of-stream envelope (WIRE.md §2), after a 200.
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
        body = json.dumps(
            {"code": code_from_http_status(status).value, "message": message}
        ).encode()
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
