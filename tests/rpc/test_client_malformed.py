"""What the client makes of a server that breaks the protocol (httpx.MockTransport).

Only these cases use a mock: a real server core does not misbehave on request. With an
injected transport the unary calls go through it instead of the unary channel and meet the
same checks of the answer (status, media type, JSON); the channel's own connection-level
faults are test_channel.py's, against a raw HTTP/2 server.
"""

from __future__ import annotations

import ssl
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import h2.exceptions
import httpx
import pytest

from omnigent_agy.errors import Code, CsrfError, ProtocolError, RpcError
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.wire import encode_envelope

pytestmark = pytest.mark.anyio

CONNECT_JSON = {"content-type": "application/connect+json"}
JSON = {"content-type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Chunks(httpx.AsyncByteStream):
    """A response body arriving in the given chunks; ``then`` runs if more is asked for."""

    def __init__(self, *chunks: bytes, then: Callable[[], None] | None = None) -> None:
        self.chunks = chunks
        self.then = then

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.then is not None:
            self.then()


def must_not_read_on() -> None:
    raise AssertionError("the client read past an envelope prefix it should have refused")


def client_for(answer: Callable[[httpx.Request], httpx.Response]) -> RpcClient:
    return RpcClient(
        port=1,
        csrf_token="t",
        retry=RetryPolicy(attempts=1),
        transport=httpx.MockTransport(answer),
    )


def unary(status: int, body: bytes, headers: dict[str, str]) -> Any:
    return lambda request: httpx.Response(status, content=body, headers=headers)


def stream(*chunks: bytes, status: int = 200, headers: dict[str, str] = CONNECT_JSON) -> Any:
    return lambda request: httpx.Response(status, stream=Chunks(*chunks), headers=headers)


def prefix(flags: int, length: int) -> bytes:
    return struct.pack(">BI", flags, length)


UNARY_CASES = [
    pytest.param(
        unary(200, b"<html/>", {"content-type": "text/html"}),
        ProtocolError,
        Code.INTERNAL,
        200,
        id="wrong-content-type",
    ),
    pytest.param(unary(200, b"{}", {}), ProtocolError, Code.INTERNAL, 200, id="no-content-type"),
    pytest.param(unary(200, b'{"cut', JSON), ProtocolError, Code.INTERNAL, 200, id="bad-json"),
    pytest.param(
        unary(200, b"[1, 2]", JSON), ProtocolError, Code.INTERNAL, None, id="json-not-an-object"
    ),
    pytest.param(
        unary(500, b"upstream exploded", {"content-type": "text/plain"}),
        RpcError,
        Code.UNKNOWN,
        500,
        id="500-non-json-body",
    ),
    pytest.param(
        unary(503, b"<h1>busy</h1>", {"content-type": "text/html"}),
        RpcError,
        Code.UNAVAILABLE,
        503,
        id="503-non-json-body",
    ),
    pytest.param(unary(502, b"", {}), RpcError, Code.UNAVAILABLE, 502, id="502-empty-body"),
    pytest.param(
        unary(500, b"{not json", JSON), RpcError, Code.UNKNOWN, 500, id="500-broken-json-body"
    ),
    pytest.param(
        unary(500, b'{"code":"not_found","message":"gone"}', JSON),
        RpcError,
        Code.NOT_FOUND,
        500,
        id="500-connect-error",
    ),
    pytest.param(
        unary(503, b'{"message":"later"}', JSON),
        RpcError,
        Code.UNAVAILABLE,
        503,
        id="error-without-code",
    ),
    pytest.param(
        unary(401, b'{"code":"unauthenticated","message":"missing CSRF token"}', JSON),
        CsrfError,
        Code.UNAUTHENTICATED,
        401,
        id="401-csrf",
    ),
    pytest.param(
        unary(403, b"Invalid CSRF token", {"content-type": "text/plain"}),
        CsrfError,
        Code.PERMISSION_DENIED,
        403,
        id="403-csrf-plain",
    ),
]


@pytest.mark.parametrize(("answer", "error_type", "code", "status"), UNARY_CASES)
async def test_a_malformed_unary_answer_is_a_typed_error(
    answer: Any, error_type: type[RpcError], code: Code, status: int | None
) -> None:
    async with client_for(answer) as client:
        with pytest.raises(RpcError) as caught:
            await client.heartbeat()
    error = caught.value
    assert type(error) is error_type
    assert (error.connect_code, error.method) == (code, "Heartbeat")
    if status is not None:
        assert error.http_status == status


GOOD = encode_envelope({"update": {"n": 1}})
END = encode_envelope({}, end_stream=True)

STREAM_CASES = [
    pytest.param(
        stream(GOOD + END, headers=JSON), ProtocolError, Code.INTERNAL, id="wrong-content-type"
    ),
    pytest.param(stream(GOOD, GOOD[:3]), ProtocolError, Code.INTERNAL, id="truncated-prefix"),
    pytest.param(stream(GOOD, GOOD[:-2]), ProtocolError, Code.INTERNAL, id="truncated-payload"),
    pytest.param(stream(GOOD, GOOD), ProtocolError, Code.INTERNAL, id="no-end-of-stream"),
    pytest.param(
        stream(GOOD, prefix(0, 4) + b"{no}" + END), ProtocolError, Code.INTERNAL, id="bad-json"
    ),
    pytest.param(
        stream(GOOD, prefix(1, 2) + b"{}" + END), ProtocolError, Code.INTERNAL, id="compressed-flag"
    ),
    pytest.param(stream(GOOD, END + GOOD), ProtocolError, Code.INTERNAL, id="data-after-end"),
    pytest.param(
        stream(GOOD, encode_envelope({"error": {"code": "nope", "message": "?"}}, end_stream=True)),
        RpcError,
        Code.UNKNOWN,
        id="trailer-unknown-code",
    ),
    pytest.param(
        stream(b"busy", status=503, headers={"content-type": "text/plain"}),
        RpcError,
        Code.UNAVAILABLE,
        id="503-non-json-body",
    ),
    pytest.param(
        stream(b'{"code":"aborted","message":"x"}', status=409, headers=JSON),
        RpcError,
        Code.ABORTED,
        id="409-connect-error",
    ),
    pytest.param(
        stream(b"Invalid CSRF token", status=403, headers={}),
        CsrfError,
        Code.PERMISSION_DENIED,
        id="403-csrf",
    ),
]


@pytest.mark.parametrize(("answer", "error_type", "code"), STREAM_CASES)
async def test_a_malformed_stream_is_a_typed_error(
    answer: Any, error_type: type[RpcError], code: Code
) -> None:
    async with client_for(answer) as client:
        with pytest.raises(RpcError) as caught:
            async for _ in client.stream_agent_state_updates("c"):
                pass
    assert type(caught.value) is error_type
    assert (caught.value.connect_code, caught.value.method) == (code, "StreamAgentStateUpdates")


async def test_an_oversized_frame_is_refused_before_its_payload_is_read() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        body = Chunks(GOOD, prefix(0, 1 << 30), then=must_not_read_on)
        return httpx.Response(200, stream=body, headers=CONNECT_JSON)

    received: list[dict[str, Any]] = []
    async with client_for(answer) as client:
        updates = client.stream_agent_state_updates("c")
        received.append(await anext(updates))
        with pytest.raises(ProtocolError) as caught:
            await anext(updates)
    assert received == [{"update": {"n": 1}}]
    assert caught.value.connect_code is Code.RESOURCE_EXHAUSTED


def raising(exc: BaseException) -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        raise exc

    return answer


FOREIGN = [
    pytest.param(httpx.ConnectError("refused"), Code.UNAVAILABLE, id="connect-error"),
    pytest.param(httpx.ReadError("reset"), Code.UNAVAILABLE, id="read-error"),
    pytest.param(httpx.RemoteProtocolError("goaway"), Code.UNAVAILABLE, id="remote-protocol-error"),
    pytest.param(httpx.ReadTimeout("slow"), Code.DEADLINE_EXCEEDED, id="read-timeout"),
    pytest.param(httpx.ConnectTimeout("slow"), Code.DEADLINE_EXCEEDED, id="connect-timeout"),
    pytest.param(h2.exceptions.StreamClosedError(1), Code.UNAVAILABLE, id="h2-error"),
    pytest.param(ssl.SSLError("handshake"), Code.UNAVAILABLE, id="ssl-error"),
    pytest.param(ConnectionResetError("reset"), Code.UNAVAILABLE, id="os-error"),
    pytest.param(TimeoutError("slow"), Code.DEADLINE_EXCEEDED, id="builtin-timeout"),
]


@pytest.mark.parametrize(("exc", "code"), FOREIGN)
async def test_foreign_errors_become_rpc_errors_at_one_boundary(
    exc: BaseException, code: Code
) -> None:
    async with client_for(raising(exc)) as client:
        with pytest.raises(RpcError) as unary_error:
            await client.heartbeat()
        with pytest.raises(RpcError) as stream_error:
            async for _ in client.stream_agent_state_updates("c"):
                pass
    for caught in (unary_error, stream_error):
        assert type(caught.value) is RpcError
        assert caught.value.connect_code is code
        assert caught.value.http_status is None
        assert caught.value.__cause__ is exc


async def test_start_cascade_without_an_id_is_a_protocol_error() -> None:
    async with client_for(unary(200, b"{}", JSON)) as client:
        with pytest.raises(ProtocolError, match="without a cascadeId"):
            await client.start_cascade()


async def test_steps_that_are_not_a_list_are_a_protocol_error() -> None:
    async with client_for(unary(200, b'{"steps": {"0": {}}}', JSON)) as client:
        with pytest.raises(ProtocolError, match="not a list"):
            await client.get_cascade_trajectory_steps("c")


async def test_missing_steps_are_an_empty_list() -> None:
    # Zero values are omitted on the wire (docs/wire.md §3): no steps is no field.
    async with client_for(unary(200, b"{}", JSON)) as client:
        assert await client.get_cascade_trajectory_steps("c", step_offset=9) == []
