"""agy-sim's JSON-RPC 2.0 line protocol (acp_wire) against malformed and unexpected input.

The well-formed conversation is held to ACP by an independent client in test_sim_acp.py; here
the peer is fed lines directly, so every refusal a client could provoke is a table row.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agy_sim.acp_wire import JsonRpcPeer, PeerClosedError, RpcError

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def echo(params: dict[str, Any]) -> dict[str, Any]:
    return {"echo": params}


async def refuse(params: dict[str, Any]) -> dict[str, Any]:
    raise RpcError(-32602, "no", {"why": "refused"})


async def broken(params: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("a bug")


async def run(*lines: bytes) -> list[dict[str, Any]]:
    """Feed `lines` to a peer until EOF; the messages it wrote."""
    reader = asyncio.StreamReader()
    written: list[dict[str, Any]] = []

    async def write(data: bytes) -> None:
        assert data.endswith(b"\n")
        assert data.count(b"\n") == 1  # one message, one line
        written.append(json.loads(data))

    peer = JsonRpcPeer(
        reader,
        write,
        requests={"echo": echo, "refuse": refuse, "broken": broken},
        notifications={},
    )
    for line in lines:
        reader.feed_data(line)
    reader.feed_eof()
    await peer.serve()
    await peer.drain(5)
    return written


CASES = [
    pytest.param(b"not json\n", None, -32700, id="not-json"),
    pytest.param(b'{"id":1,"method":"echo"}\n', 1, -32600, id="no-jsonrpc-version"),
    pytest.param(b"[1,2]\n", None, -32600, id="not-an-object"),
    pytest.param(b'{"jsonrpc":"2.0","id":2,"method":"nope"}\n', 2, -32601, id="unknown-method"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":3,"method":"echo","params":[1]}\n', 3, -32602, id="params-list"
    ),
    pytest.param(b'{"jsonrpc":"2.0","id":4,"method":"refuse"}\n', 4, -32602, id="refused"),
    pytest.param(b'{"jsonrpc":"2.0","id":"x","method":"broken"}\n', "x", -32603, id="a-bug"),
]


@pytest.mark.parametrize(("line", "ident", "code"), CASES)
async def test_a_bad_message_is_answered_with_its_error(
    line: bytes, ident: object, code: int
) -> None:
    (answer,) = await run(line)
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == ident
    assert answer["error"]["code"] == code
    assert "result" not in answer


async def test_requests_are_answered_and_blank_lines_and_stray_replies_ignored() -> None:
    answers = await run(
        b"\n",
        b'{"jsonrpc":"2.0","id":99,"result":{}}\n',  # a reply to nothing the agent asked
        b'{"jsonrpc":"2.0","method":"unknown/notification","params":{}}\n',
        b'{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":"\xc3\xa9"}}\n',
    )
    assert answers == [{"jsonrpc": "2.0", "id": 7, "result": {"echo": {"a": "é"}}}]


async def test_an_agent_request_gets_the_clients_result_or_error() -> None:
    reader = asyncio.StreamReader()
    sent: list[dict[str, Any]] = []

    async def write(data: bytes) -> None:
        sent.append(json.loads(data))

    peer = JsonRpcPeer(reader, write, requests={}, notifications={})
    serving = asyncio.ensure_future(peer.serve())
    asking = asyncio.ensure_future(peer.request("session/request_permission", {"x": 1}))
    failing = asyncio.ensure_future(peer.request("session/request_permission", {"x": 2}))
    await asyncio.sleep(0)
    first, second = sent
    reader.feed_data(
        json.dumps({"jsonrpc": "2.0", "id": first["id"], "result": {"ok": 1}}).encode()
    )
    reader.feed_data(b"\n")
    error = {"code": -32603, "message": "client broke"}
    reader.feed_data(json.dumps({"jsonrpc": "2.0", "id": second["id"], "error": error}).encode())
    reader.feed_data(b"\n")
    assert await asking == {"ok": 1}
    with pytest.raises(RpcError, match="client broke"):
        await failing
    pending = asyncio.ensure_future(peer.request("session/request_permission", {"x": 3}))
    await asyncio.sleep(0)
    reader.feed_eof()
    await serving
    with pytest.raises(PeerClosedError):
        await pending
