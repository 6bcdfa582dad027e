"""The unary channel (h2 on asyncio) against a raw TLS HTTP/2 server that misbehaves.

The well-behaved paths (every method, CSRF, retries, timeouts, HTTP/2 asserted) run against
agy-sim's server core in test_client.py; here are the connection-level faults only a raw
server produces on demand (tests/_raw_h2.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import h2.errors
import pytest
from _raw_h2 import RawCall, RawH2Server
from waiting import await_until

from omnigent_agy.errors import Code, ProtocolError, RpcError
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.endpoint import never_sent

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


TOKEN = "channel-test-token-5f1c"


def client_of(server: RawH2Server, **kwargs: object) -> RpcClient:
    return RpcClient(port=server.port, csrf_token=TOKEN, retry=RetryPolicy(attempts=1), **kwargs)  # type: ignore[arg-type]


def echo(call: RawCall) -> None:
    call.answer(body=json.dumps({"n": len(call.body), "conn": call.connection}).encode())


async def test_concurrent_calls_share_one_connection() -> None:
    calls = 8
    arrived: list[RawCall] = []

    def answer_when_all_arrived(call: RawCall) -> None:
        arrived.append(call)
        if len(arrived) == calls:  # all in flight at once, or this never answers
            for each in arrived:
                echo(each)

    async with RawH2Server(answer_when_all_arrived) as server, client_of(server) as client:
        async with asyncio.timeout(10):
            answers = await asyncio.gather(*(client.call("Heartbeat", {}) for _ in range(calls)))
        assert [a["conn"] for a in answers] == [0] * calls
        assert client.http_version == "HTTP/2"
    assert len(server.links) == 1
    headers = arrived[0].headers
    assert headers[b"x-codeium-csrf-token"] == TOKEN.encode()
    assert headers[b"connect-protocol-version"] == b"1"
    assert headers[b"content-type"] == b"application/json"


async def test_a_request_larger_than_the_window_is_sent_whole() -> None:
    text = "x" * 300_000  # several 64 KB windows (the HTTP/2 default) and 16 KB frames
    async with RawH2Server(echo) as server, client_of(server) as client:
        answer = await client.call("SendUserCascadeMessage", {"t": text})
    assert answer["n"] == len(json.dumps({"t": text}, separators=(",", ":")))


async def test_a_call_past_a_goaway_is_sent_again_on_a_new_connection() -> None:
    # agy closing a connection that had taken none of the calls (RFC 9113 §6.8): the call was
    # never processed, so even a write (not idempotent) is safe to send again.
    def goaway_first(call: RawCall) -> None:
        if call.connection == 0:
            call.goaway(last_stream_id=0)
        else:
            echo(call)

    async with RawH2Server(goaway_first) as server, client_of(server) as client:
        answer = await client.call("StartCascade", {})
    assert answer["conn"] == 1
    assert len(server.calls) == 2


async def test_a_refused_stream_is_sent_again() -> None:
    def refuse_first(call: RawCall) -> None:
        if len(server.calls) == 1:
            call.reset(h2.errors.ErrorCodes.REFUSED_STREAM)
        else:
            echo(call)

    async with RawH2Server(refuse_first) as server, client_of(server) as client:
        await client.call("StartCascade", {})
    assert len(server.calls) == 2


@pytest.mark.parametrize(
    "fail",
    [
        pytest.param(lambda c: c.reset(h2.errors.ErrorCodes.INTERNAL_ERROR), id="reset"),
        pytest.param(lambda c: c.answer_in_part(b'{"half'), id="cut-mid-answer"),
        pytest.param(lambda c: c.goaway(last_stream_id=c.stream_id), id="goaway-after-taking-it"),
    ],
)
async def test_a_call_agy_may_have_acted_on_fails_unavailable(
    fail: Callable[[RawCall], None],
) -> None:
    async with RawH2Server(fail) as server, client_of(server) as client:
        with pytest.raises(RpcError) as caught:
            await client.call("StartCascade", {})
        assert caught.value.connect_code is Code.UNAVAILABLE
        assert not never_sent(caught.value)  # agy took the call: the caller must not resend it
        assert len(server.calls) == 1
        server.handler = echo
        assert (await client.call("Heartbeat", {}))["n"] == 2  # the next call still works


async def test_a_port_without_http2_is_a_protocol_error() -> None:
    async with RawH2Server(echo, alpn=("http/1.1",)) as server, client_of(server) as client:
        with pytest.raises(ProtocolError, match="did not agree to HTTP/2"):
            await client.call("Heartbeat", {})
    assert server.calls == []


async def test_an_answer_over_the_limit_is_refused() -> None:
    def big(call: RawCall) -> None:
        call.answer(body=b'{"pad":"' + b"x" * 5000 + b'"}')

    async with RawH2Server(big) as server, client_of(server, max_frame_bytes=1000) as client:
        with pytest.raises(ProtocolError) as caught:
            await client.call("Heartbeat", {})
        assert caught.value.connect_code is Code.RESOURCE_EXHAUSTED
        server.handler = echo
        assert (await client.call("Heartbeat", {}))["conn"] == 0  # the connection is kept


async def test_a_call_that_times_out_is_reset_on_the_server() -> None:
    async with (
        RawH2Server(lambda call: None) as server,  # never answers
        client_of(server, timeout=0.3) as client,
    ):
        with pytest.raises(RpcError) as caught:
            await client.call("Heartbeat", {})
        assert caught.value.connect_code is Code.DEADLINE_EXCEEDED
        await await_until(
            lambda: server.resets == [server.calls[0].stream_id],
            timeout=5,
            what="the server to see the reset",
        )
        server.handler = echo
        assert (await client.call("Heartbeat", {}))["conn"] == 0


async def test_a_closed_idle_connection_is_replaced() -> None:
    def close_after_answering(call: RawCall) -> None:
        echo(call)
        call.goaway(last_stream_id=call.stream_id)  # as a server's idle timeout does

    async with RawH2Server(close_after_answering) as server, client_of(server) as client:
        assert (await client.call("Heartbeat", {}))["conn"] == 0
        await await_until(
            server.links[0].transport.is_closing, timeout=5, what="the connection to close"
        )
        assert (await client.call("Heartbeat", {}))["conn"] == 1
