"""agy-sim's own connect envelopes, checked against bytes written from the protocol.

Not against the plugin's codec: agy-sim frames with code of its own so that a mistake in
either shows (docs/simulator.md, "Where it lives, and what it shares with the plugin"). A
stream request agy-sim cannot read is refused by the connect app with 400 invalid_argument.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agy_sim.connect_app import ConnectApp, code_for_http_status
from agy_sim.envelopes import decode_request, encode_envelope

STREAM_PATH = "/exa.language_server_pb.LanguageServerService/StreamAgentStateUpdates"


def prefix(flags: int, length: int) -> bytes:
    return bytes([flags]) + length.to_bytes(4, "big")


REQUEST = b'{"conversationId":"c-1"}'


@pytest.mark.parametrize(
    ("message", "end_stream", "expected"),
    [
        pytest.param({"a": 1}, False, prefix(0, 7) + b'{"a":1}', id="data"),
        pytest.param({}, True, prefix(2, 2) + b"{}", id="clean-end"),
        pytest.param(
            {"error": {"code": "internal", "message": "x"}},
            True,
            prefix(2, 43) + b'{"error":{"code":"internal","message":"x"}}',
            id="end-with-error",
        ),
        pytest.param(
            {"t": "é"}, False, prefix(0, 10) + '{"t":"é"}'.encode(), id="utf8-not-escaped"
        ),
    ],
)
def test_encode_writes_the_protocols_bytes(
    message: dict[str, Any], end_stream: bool, expected: bytes
) -> None:
    assert encode_envelope(message, end_stream=end_stream) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(prefix(0, len(REQUEST)) + REQUEST, {"conversationId": "c-1"}, id="one"),
        pytest.param(prefix(0, 2) + b"{}", {}, id="empty-object"),
        pytest.param(b"", None, id="nothing"),
        pytest.param(prefix(0, 2)[:4], None, id="prefix-cut"),
        pytest.param(prefix(0, len(REQUEST)) + REQUEST[:-1], None, id="payload-cut"),
        pytest.param(prefix(0, len(REQUEST)) + REQUEST + prefix(2, 2) + b"{}", None, id="two"),
        pytest.param(prefix(1, 2) + b"{}", None, id="compressed"),
        pytest.param(prefix(2, 2) + b"{}", None, id="end-of-stream"),
        pytest.param(prefix(0x80, 2) + b"{}", None, id="unknown-flag"),
        pytest.param(prefix(0, 3) + b"{x}", None, id="not-json"),
        pytest.param(prefix(0, 2) + b"[]", None, id="not-an-object"),
        pytest.param(prefix(0, 2) + b"\xff{", None, id="not-utf8"),
        pytest.param(prefix(0, 0), None, id="empty-payload"),
    ],
)
def test_decode_request_takes_exactly_one_data_envelope(
    body: bytes, expected: dict[str, Any] | None
) -> None:
    assert decode_request(body) == expected


CONNECT_TABLE = [
    (400, "internal"),
    (401, "unauthenticated"),
    (403, "permission_denied"),
    (404, "unimplemented"),
    (429, "unavailable"),
    (503, "unavailable"),
    (418, "unknown"),
]


@pytest.mark.parametrize(("status", "code"), CONNECT_TABLE)
def test_code_for_http_status_is_connects_table(status: int, code: str) -> None:
    assert code_for_http_status(status) == code


def test_a_stream_request_it_cannot_read_is_refused() -> None:
    async def never_called(request: dict[str, Any]) -> Any:
        raise AssertionError(request)
        yield  # pragma: no cover - makes this an async generator

    app = ConnectApp(csrf_token=None, unary={}, streams={"StreamAgentStateUpdates": never_called})
    scope = {
        "type": "http",
        "method": "POST",
        "path": STREAM_PATH,
        "headers": [(b"content-type", b"application/connect+json")],
    }
    incoming = [{"type": "http.request", "body": prefix(1, 2) + b"{}", "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"]) == {
        "code": "invalid_argument",
        "message": "expected one request envelope",
    }
