"""RpcConnection: agy's connect-RPC transport over TLS HTTP/2 on loopback (docs/wire.md §1-§2).

One persistent HTTP/2 connection carries every unary call (`channel.UnaryChannel`, h2 on
asyncio: a quarter to a third of httpx's CPU per call, docs/performance.md), so calls reuse one
connection (docs/decisions.md §6). The connection is owned by ONE event loop: an HTTP/2
connection driven from several threads resets itself (docs/decisions.md §10). Give each loop
(the reader thread, the harness loop) its own client.

agy's certificate is self-signed: a client given the one discovery found on its port
(``certificate``, `pinning`) trusts only that one; without it nothing is verified. Either way
the constructor refuses any host but loopback (`loopback`).

Each server stream (StreamAgentStateUpdates) gets a connection of its own, closed when
the stream ends, through httpx, speaking HTTP/1.1 unless agy refuses it (see
`RpcConnection.stream`). Over
HTTP/2, httpcore never resets a stream its reader abandons: the server would keep producing
for nobody and the unacknowledged data would drain the shared connection's flow-control
window until every call on it stalls. Closing the stream's own connection tells the server
at once. (An injected httpx ``transport`` carries every call and stream: the tests of
malformed servers use one.)

Failures surface as :class:`~omnigent_agy.errors.RpcError` (see its module for the tree);
httpx/h2/ssl/socket errors are translated in one place, `translate.translate_errors`. Only the
idempotent reads are retried, on transient codes, with jittered backoff (`retry`).
The typed methods of docs/wire.md §3 are `client.RpcClient`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import Any, Final, Self

import httpx

from omnigent_agy.errors import AgyError, ProtocolError, RpcError, StreamStalled
from omnigent_agy.rpc.error_boundary import (
    CONNECT_JSON,
    JSON,
    error_from_answer,
    expect_media_type,
    translate_errors,
)
from omnigent_agy.rpc.heap import LARGE_FRAME_BYTES, return_freed_memory
from omnigent_agy.rpc.loopback import ensure_loopback
from omnigent_agy.rpc.pinning import client_context
from omnigent_agy.rpc.retry import DEFAULT_RETRY, RetryPolicy
from omnigent_agy.rpc.stream_transport import stream_transport
from omnigent_agy.rpc.unary_channel import UnaryChannel
from omnigent_agy.rpc.unary_connection import Answer
from omnigent_agy.rpc.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    LAZY_FRAME_BYTES,
    EndStream,
    EnvelopeDecoder,
    encode_envelope,
)

__all__ = ["CSRF_HEADER", "SERVICE", "RpcConnection"]

logger = logging.getLogger(__name__)
# hpack logs every header it encodes or decodes at DEBUG, values included: ours carry the
# CSRF token (docs/wire.md §1), which no log may show (docs/decisions.md §9), so a host's DEBUG
# level stops short of it unless someone asked for hpack's debug output by name.
if logging.getLogger("hpack").level == logging.NOTSET:
    logging.getLogger("hpack").setLevel(logging.INFO)

SERVICE: Final = "exa.language_server_pb.LanguageServerService"
CSRF_HEADER: Final = "x-codeium-csrf-token"


def _dumps(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _media_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "")).split(";", 1)[0].strip().lower()


def _answer(response: httpx.Response) -> Answer:
    """An httpx response (read whole) as the channel's `Answer`."""
    return Answer(
        response.status_code, _media_type(response), response.content, response.http_version
    )


class RpcConnection:
    """The transport to one agy's language server. Use ``async with`` or ``aclose()``."""

    def __init__(
        self,
        *,
        port: int,
        csrf_token: str,
        host: str = "127.0.0.1",
        timeout: float = 10.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        transport: httpx.AsyncBaseTransport | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        certificate: bytes | None = None,
    ) -> None:
        host = ensure_loopback(host)
        if not 0 < port < 65536:
            raise AgyError(f"port {port} is not a TCP port")
        netloc = f"[{host}]" if ":" in host else host
        self.base_url: Final = f"https://{netloc}:{port}"
        self.port: Final = port
        self._timeout = timeout
        self._retry = retry
        self._max_frame_bytes = max_frame_bytes
        self._headers = {"Connect-Protocol-Version": "1"}
        self._secret = csrf_token
        if csrf_token:  # an empty token sends none (agy before 1.2.2 checks none, docs/wire.md §1)
            self._headers[CSRF_HEADER] = csrf_token
        self._shared_transport = transport is not None
        self.certificate: Final = certificate
        # Built once per client. With `certificate` (agy's, pinned by discovery: `pinning`)
        # only that one is trusted, so a stream's new connection to a port agy left is
        # refused in the handshake; without it nothing is verified (loopback only).
        self._ssl = client_context(certificate)
        self._http = self._new_http(transport)
        self._channel = (
            None
            if transport is not None
            else UnaryChannel(
                host=host,
                port=port,
                headers=self._headers,
                max_answer_bytes=max_frame_bytes,
                certificate=certificate,
            )
        )
        self._stream_clients: set[httpx.AsyncClient] = set()
        self._stream_http2 = False  # until agy refuses HTTP/1.1 (see `stream`)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.http_version: str | None = None
        """HTTP version of the last unary answer ("HTTP/2" against agy)."""
        self.stream_http_version: str | None = None
        """HTTP version of the last stream ("HTTP/1.1" unless agy refuses it)."""

    def __repr__(self) -> str:  # never shows the token
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def _new_http(
        self, transport: httpx.AsyncBaseTransport | None, *, http2: bool = True
    ) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=transport or stream_transport(verify=self._ssl, http1=not http2, http2=http2),
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection and any stream still open."""
        for stream_http in list(self._stream_clients):
            await stream_http.aclose()
        self._stream_clients.clear()
        if self._channel is not None:
            await self._channel.aclose()
        await self._http.aclose()

    def _check_owner(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            raise AgyError(
                "RpcClient is owned by one event loop; create one client per loop "
                "(an HTTP/2 connection shared across loops resets itself)"
            )

    # -- generic calls -----------------------------------------------------------------

    async def call(
        self, method: str, body: Mapping[str, Any], *, idempotent: bool = False
    ) -> dict[str, Any]:
        """One unary call; retried on transient codes only when ``idempotent``.

        The first attempt runs without tenacity (its controller costs about 90 µs a call on
        the benchmark machine, docs/performance.md); a failed read goes to the retry policy
        with that failure as its first attempt, so attempts and deadline count as before.
        """
        self._check_owner()
        if not idempotent:
            return await self._call_once(method, body)
        started = time.monotonic()
        try:
            return await self._call_once(method, body)
        except RpcError as exc:
            first = exc  # the policy decides whether it is worth another try
        # The deadline counts from the first attempt, not from here.
        policy = dataclasses.replace(
            self._retry, deadline=max(0.0, self._retry.deadline - (time.monotonic() - started))
        )
        failed: RpcError | None = first
        async for attempt in policy.retrying():
            with attempt:
                if failed is not None:
                    again, failed = failed, None
                    raise again
                return await self._call_once(method, body)
        raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover

    async def _call_once(self, method: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with translate_errors(method, self._secret):
            answer = await self._post(f"/{SERVICE}/{method}", _dumps(body))
            self.http_version = answer.http_version
            if answer.status != 200:
                raise error_from_answer(answer)
            expect_media_type(answer.media_type, JSON, status=answer.status)
            try:
                result = json.loads(answer.body)
            except ValueError as exc:
                raise ProtocolError(f"response is not valid JSON: {exc}", http_status=200) from exc
            if not isinstance(result, dict):
                raise ProtocolError(f"response is JSON {type(result).__name__}, not an object")
            return result

    async def _post(self, path: str, content: bytes) -> Answer:
        if self._channel is None:  # an injected httpx transport
            response = await self._http.post(path, content=content, headers={"Content-Type": JSON})
            return _answer(response)
        try:
            async with asyncio.timeout(self._timeout):
                return await self._channel.post(path, content)
        except TimeoutError as exc:
            raise TimeoutError(f"agy did not answer within {self._timeout:g} s") from exc

    async def stream(
        self,
        method: str,
        body: Mapping[str, Any],
        *,
        idle_timeout: float = 30.0,
        lazy_array: Sequence[str] = (),
    ) -> AsyncGenerator[dict[str, Any]]:
        """A server stream: yields each data message; raises the end-of-stream error.

        StreamStalled when neither the answer nor a frame arrives within ``idle_timeout``
        seconds (time the consumer spends between frames does not count). ``lazy_array``:
        the path of an array a large message holds as a `lazyjson.LazyArray`
        (`wire.EnvelopeDecoder`).

        The stream speaks HTTP/1.1 on its own connection where agy offers it: a long answer
        is hundreds of growing frames, and HTTP/2 costs about twice the CPU per frame (its
        16 KB DATA frames and a WINDOW_UPDATE written back for each; docs/performance.md).
        Some agy builds answer 501 to HTTP/1.1 (docs/wire.md §1): then the stream is asked again
        over HTTP/2, and every later stream of this client speaks HTTP/2 at once.
        """
        self._check_owner()
        streamed = False
        try:
            while True:
                once = self._stream_once(
                    method, body, idle_timeout, lazy_array, http2=self._stream_http2
                )
                try:
                    async with contextlib.aclosing(once) as messages:
                        async for message in messages:
                            streamed = True
                            yield message
                            # Not kept while the next frame is awaited: `_stream_once` hands
                            # memory back then, and a snapshot's frame must be garbage by then.
                            del message
                except _RefusedHttp1:
                    self._stream_http2 = True
                    logger.info("agy refuses HTTP/1.1 (501): streams use HTTP/2 from now on")
                else:
                    return
        finally:
            if streamed:
                # Here the stream's connection and buffers are garbage too: hand back what
                # they and the last frames left (a stream ends rarely: a reconnect, a stall).
                return_freed_memory()

    async def _stream_once(
        self,
        method: str,
        body: Mapping[str, Any],
        idle_timeout: float,
        lazy_array: Sequence[str],
        *,
        http2: bool,
    ) -> AsyncGenerator[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        decoder = EnvelopeDecoder(self._max_frame_bytes, lazy_array=lazy_array)
        decoded = 0  # payload bytes since freed memory was last handed back
        http = self._http if self._shared_transport else self._new_http(None, http2=http2)
        if http is not self._http:
            self._stream_clients.add(http)
        try:
            with translate_errors(method, self._secret):
                async with contextlib.AsyncExitStack() as stack:
                    deadline = loop.time() + idle_timeout
                    response = await self._open_stream(
                        stack, http, method, body, deadline=deadline, idle_timeout=idle_timeout
                    )
                    chunks = response.aiter_raw()
                    while (
                        chunk := await _before(anext(chunks, b""), deadline, idle_timeout)
                    ) != b"":
                        frames = decoder.feed(chunk)
                        while frames:
                            frame = frames.pop(0)
                            if isinstance(frame, EndStream):
                                if frame.error is not None:
                                    raise frame.error
                                return
                            size = frame.size
                            decoded += size
                            message = frame.message
                            del frame
                            yield message
                            del message  # the consumer is done with it: garbage now
                            if decoded >= LARGE_FRAME_BYTES or size >= LAZY_FRAME_BYTES:
                                decoded = 0
                                return_freed_memory()
                            deadline = loop.time() + idle_timeout
                    decoder.close()
                    raise ProtocolError("the stream ended without an end-of-stream envelope")
        finally:
            if http is not self._http:
                self._stream_clients.discard(http)
                await http.aclose()

    async def _open_stream(
        self,
        stack: contextlib.AsyncExitStack,
        http: httpx.AsyncClient,
        method: str,
        body: Mapping[str, Any],
        *,
        deadline: float,
        idle_timeout: float,
    ) -> httpx.Response:
        """The stream's request sent and its answer's head read (on `stack`, before
        `deadline`): a connect stream of JSON frames, else the error it says."""
        request = http.stream(
            "POST",
            f"/{SERVICE}/{method}",
            content=encode_envelope(body),
            headers={"Content-Type": CONNECT_JSON},
            # Liveness is the idle deadline's job: no read timeout on a stream.
            timeout=httpx.Timeout(self._timeout, read=None),
        )
        response = await _before(stack.enter_async_context(request), deadline, idle_timeout)
        self.stream_http_version = response.http_version
        if response.status_code == 501 and response.http_version == "HTTP/1.1":
            raise _RefusedHttp1
        if response.status_code != 200:
            await response.aread()
            raise error_from_answer(_answer(response))
        expect_media_type(_media_type(response), CONNECT_JSON, status=response.status_code)
        return response


class _RefusedHttp1(Exception):  # noqa: N818 - a signal inside stream(), never raised out
    """agy answered 501 to a stream asked over HTTP/1.1."""


async def _before[T](awaitable: Awaitable[T], deadline: float, idle_timeout: float) -> T:
    """``await awaitable`` unless the stream's idle deadline passes first (StreamStalled)."""
    timeout = asyncio.timeout_at(deadline)
    try:
        async with timeout:
            return await awaitable
    except TimeoutError as exc:
        if timeout.expired():
            raise StreamStalled(idle_timeout) from exc
        raise
