"""The connect protocol as agy's language server speaks it, as an ASGI app (docs/wire.md §1-§2).

``ConnectApp`` routes ``POST /<service>/<Method>`` to async handlers. It checks the CSRF
header like agy (missing → 401 JSON error, wrong → 403 ``Invalid CSRF token``), answers
unary calls as ``application/json`` and server streams as ``application/connect+json``
envelopes, one per yielded message and flushed per frame, closed by an end-of-stream
envelope (carrying the error if the handler raised :class:`ConnectHandlerError`). A stream
handler is cancelled as soon as its client goes away.

It is plain ASGI, served by ``server.TlsConnectServer`` (TLS HTTP/2) or by any ASGI
server; middleware (the simulator's fault injection) wraps it. Stream bodies are sent one
``http.response.body`` message per envelope, so "after K frames" is "after K body sends".
The small ASGI helpers here (lifespan, body reading, plain answers) serve the server's
plain-HTTP refusal too. Envelopes are agy-sim's own (``envelopes``), not the plugin's.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final

from agy_sim.envelopes import decode_request, encode_envelope
from agy_sim.reshape import NO_CSRF_SCOPE, RESHAPE_SCOPE, SAME, Reshape

__all__ = [
    "ASGIApp",
    "ConnectApp",
    "ConnectHandlerError",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "StreamHandler",
    "UnaryHandler",
    "code_for_http_status",
    "read_body",
    "send_plain",
    "serve_lifespan",
]

logger = logging.getLogger(__name__)

type Scope = MutableMapping[str, Any]
type Message = MutableMapping[str, Any]
type Receive = Callable[[], Awaitable[Message]]
type Send = Callable[[Message], Awaitable[None]]
type ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
type UnaryHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
type StreamHandler = Callable[[dict[str, Any]], AsyncIterator[dict[str, Any]]]

DEFAULT_SERVICE = "exa.language_server_pb.LanguageServerService"
CSRF_HEADER = b"x-codeium-csrf-token"
MAX_REQUEST_BYTES = 16 * 1024 * 1024
# The connect protocol's code for an HTTP error status whose answer names none; what a
# client makes of an answer agy-sim's faults give with a bare status.
_CODE_FOR_HTTP_STATUS: Final = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def code_for_http_status(status: int) -> str:
    """The connect code (its wire string) for the HTTP error ``status``."""
    return _CODE_FOR_HTTP_STATUS.get(status, "unknown")


class ConnectHandlerError(Exception):
    """Raised by a handler to fail its call with a connect error.

    Unary: answered with ``http_status`` and ``{"code", "message"}``. Stream: carried in the
    end-of-stream envelope (the HTTP status of a started stream is always 200).
    """

    def __init__(self, code: str, message: str, http_status: int = 500) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


class ConnectApp:
    """ASGI app serving connect unary calls and server streams for one service."""

    def __init__(
        self,
        *,
        csrf_token: str | None,
        unary: Mapping[str, UnaryHandler],
        streams: Mapping[str, StreamHandler],
        service: str = DEFAULT_SERVICE,
    ) -> None:
        self._csrf_token = None if csrf_token is None else csrf_token.encode()
        self._unary = dict(unary)
        self._streams = dict(streams)
        self._prefix = f"/{service}/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        # Read the request before answering even a refusal: hypercorn's HTTP/2 stream
        # fails on body data that arrives for a stream it has already closed.
        body = await read_body(receive)
        if scope["method"] != "POST":
            await _send_error(send, 405, "unimplemented", "connect calls are POST")
            return
        # An agy of another shape (`reshape`): no token check, answers reshaped.
        denied = None if scope.get(NO_CSRF_SCOPE) else self._check_csrf(headers)
        if denied is not None:
            await denied(send)
            return
        shape: Reshape = scope.get(RESHAPE_SCOPE) or SAME
        path: str = scope["path"]
        method = path.removeprefix(self._prefix) if path.startswith(self._prefix) else None
        if body is None:
            await _send_error(send, 413, "resource_exhausted", "request body too large")
        elif method in self._unary:
            await self._serve_unary(self._unary[method], headers, body, send, shape=shape)
        elif method in self._streams:
            handler = self._streams[method]
            await self._serve_stream(handler, headers, body, receive, send, shape=shape)
        else:
            await _send_error(send, 404, "unimplemented", f"unknown method {path}")

    def _check_csrf(self, headers: dict[bytes, bytes]) -> Callable[[Send], Awaitable[None]] | None:
        if self._csrf_token is None:
            return None
        given = headers.get(CSRF_HEADER)
        if given is None:
            return lambda send: _send_error(send, 401, "unauthenticated", "missing CSRF token")
        if not hmac.compare_digest(given, self._csrf_token):
            # agy answers this one in plain text, without a connect code (docs/wire.md §1).
            return lambda send: send_plain(send, 403, "Invalid CSRF token")
        return None

    async def _serve_unary(
        self,
        handler: UnaryHandler,
        headers: dict[bytes, bytes],
        body: bytes,
        send: Send,
        *,
        shape: Reshape,
    ) -> None:
        if _media_type(headers) != "application/json":
            await _send_error(send, 415, "unknown", "unary calls take application/json")
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            await _send_error(send, 400, "invalid_argument", "request is not valid JSON")
            return
        if not isinstance(request, dict):
            await _send_error(send, 400, "invalid_argument", "request is not a JSON object")
            return
        try:
            result = await handler(request)
        except ConnectHandlerError as exc:
            await _send_error(send, exc.http_status, exc.code, exc.message)
            return
        except Exception:
            logger.exception("unary handler failed")
            await _send_error(send, 500, "internal", "handler failed")
            return
        await _send_json(send, 200, shape(result))

    async def _serve_stream(
        self,
        handler: StreamHandler,
        headers: dict[bytes, bytes],
        body: bytes,
        receive: Receive,
        send: Send,
        *,
        shape: Reshape,
    ) -> None:
        if _media_type(headers) != "application/connect+json":
            await _send_error(send, 415, "unknown", "streams take application/connect+json")
            return
        request = decode_request(body)
        if request is None:
            await _send_error(send, 400, "invalid_argument", "expected one request envelope")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/connect+json")],
            }
        )
        # The producer runs until the handler ends or the client leaves, whichever first.
        async with asyncio.TaskGroup() as group:
            producer = group.create_task(_produce(handler(request), send, shape))
            watcher = group.create_task(_wait_for_disconnect(receive))
            producer.add_done_callback(lambda _: watcher.cancel())
            watcher.add_done_callback(lambda _: producer.cancel())


async def _produce(messages: AsyncIterator[dict[str, Any]], send: Send, shape: Reshape) -> None:
    end: dict[str, Any] = {}
    try:
        async for message in messages:
            body = encode_envelope(shape(message))
            await send({"type": "http.response.body", "body": body, "more_body": True})
    except ConnectHandlerError as exc:
        end = {"error": {"code": exc.code, "message": exc.message}}
    except Exception:
        logger.exception("stream handler failed")
        end = {"error": {"code": "internal", "message": "handler failed"}}
    finally:
        aclose = getattr(messages, "aclose", None)
        if aclose is not None:
            await aclose()
    await send(
        {
            "type": "http.response.body",
            "body": encode_envelope(end, end_stream=True),
            "more_body": False,
        }
    )


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def serve_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {bytes(name).lower(): bytes(value) for name, value in scope["headers"]}


def _media_type(headers: dict[bytes, bytes]) -> str:
    return headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower().decode("latin-1")


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when it exceeds MAX_REQUEST_BYTES."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > MAX_REQUEST_BYTES:
            return None
        if not message.get("more_body", False):
            return bytes(body)


async def _send_json(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    await _send_bytes(send, status, b"application/json", json.dumps(payload).encode())


async def _send_error(send: Send, status: int, code: str, message: str) -> None:
    await _send_json(send, status, {"code": code, "message": message})


async def send_plain(send: Send, status: int, text: str) -> None:
    await _send_bytes(send, status, b"text/plain; charset=utf-8", text.encode())


async def _send_bytes(send: Send, status: int, content_type: bytes, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type)],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
