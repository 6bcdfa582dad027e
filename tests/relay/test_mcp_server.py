"""The relay's MCP stdio server (standard library only) held to the protocol: by the `mcp`
SDK's own client for what a client of tools does, and by raw JSON-RPC lines for what that
client never sends (older protocol versions, cancellation, batches, bad lines).

The server runs as agy starts it: ``python -I -m omnigent_agy.relay`` from the entry written
into agy's mcp_config.json, its harness a real ``RelayChannel`` on the private socket."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from waiting import await_until

from omnigent_agy import __version__
from omnigent_agy.relay import RELAY_SERVER
from omnigent_agy.relay.channel import RelayChannel, relay_entry, relay_socket_path
from omnigent_agy.relay.mcp_server import PROTOCOL_VERSIONS, McpServer

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "name": "sys_session_list",
        "description": "List the sessions",
        "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}},
    },
    {"name": "slow", "parameters": {"type": "object", "properties": {}}},
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    path.mkdir(mode=0o700)
    return path


def _command(state: Path) -> list[str]:
    entry = relay_entry(relay_socket_path(state), state / "relay-tools.json", [])
    return [entry["command"], *entry["args"]]


@contextlib.asynccontextmanager
async def sdk_client(state: Path) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    command = _command(state)
    params = StdioServerParameters(command=command[0], args=command[1:], env={})
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, await session.initialize()


@contextlib.asynccontextmanager
async def harness(state: Path) -> AsyncIterator[tuple[RelayChannel, list[str]]]:
    """A harness listening on the conversation's socket, in a turn whose ``slow`` tool waits
    until cancelled; the names it was asked to run, and ``cancelled`` once one was."""
    channel = RelayChannel(relay_socket_path(state), state / "relay-tools.json")
    await channel.start()
    channel.set_tools(TOOLS)
    seen: list[str] = []

    async def bridge(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        seen.append(name)
        if name == "slow":
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
        return {"result": f"{name} ran with {json.dumps(arguments, sort_keys=True)}"}

    channel.open_turn(bridge)
    try:
        yield channel, seen
    finally:
        await channel.aclose()


async def test_the_sdk_client_initializes_lists_pings_and_calls(state: Path) -> None:
    async with harness(state), sdk_client(state) as (session, init):
        assert init.protocolVersion == types.LATEST_PROTOCOL_VERSION
        assert init.serverInfo.name == RELAY_SERVER
        assert init.serverInfo.version == __version__
        assert init.capabilities.tools is not None
        assert init.capabilities.resources is None
        assert init.capabilities.prompts is None
        await session.send_ping()
        listed = await session.list_tools()
        assert [tool.name for tool in listed.tools] == ["sys_session_list", "slow"]
        assert listed.tools[0].description == "List the sessions"
        result = await session.call_tool("sys_session_list", {"limit": 2})
        assert not result.isError
        assert result.content == [
            types.TextContent(type="text", text='sys_session_list ran with {"limit": 2}')
        ]
        with pytest.raises(Exception, match="Method not found"):
            await session.list_resources()


async def test_a_long_call_holds_up_nothing_else(state: Path) -> None:
    """The SDK's client sends the next requests while a tool runs; they are answered."""
    async with harness(state) as (_, seen), sdk_client(state) as (session, _init):
        slow = asyncio.ensure_future(session.call_tool("slow", {}))
        await await_until(lambda: "slow" in seen, timeout=20, what="the slow tool to start")
        await asyncio.wait_for(session.send_ping(), 10)
        fast = await asyncio.wait_for(session.call_tool("sys_session_list", {}), 10)
        assert not fast.isError
        assert not slow.done()
        slow.cancel()


def test_the_protocol_versions_are_the_sdks() -> None:
    """A version the SDK's client speaks is one this server answers in (and no other)."""
    assert set(PROTOCOL_VERSIONS) == set(SUPPORTED_PROTOCOL_VERSIONS)
    assert PROTOCOL_VERSIONS[-1] == types.LATEST_PROTOCOL_VERSION


class Raw:
    """The server over raw JSON-RPC lines (what agy's own client may send)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        assert process.stdin is not None
        assert process.stdout is not None
        self.stdin: IO[bytes] = process.stdin
        self.stdout: IO[bytes] = process.stdout

    def send(self, message: object) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.stdin.write(data + b"\n")
        self.stdin.flush()

    def receive(self) -> dict[str, Any]:
        line = self.stdout.readline()
        assert line.endswith(b"\n"), f"the server ended: {self.process.wait(5)}"
        message: dict[str, Any] = json.loads(line)
        assert message["jsonrpc"] == "2.0"
        return message

    def request(self, request_id: object, method: str, **params: Any) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.receive()


@pytest.fixture
def raw(state: Path) -> Iterator[Raw]:
    process = subprocess.Popen(_command(state), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        yield Raw(process)
    finally:
        process.kill()
        process.wait(10)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()


def test_each_supported_version_is_agreed_and_an_unknown_one_gets_the_newest(raw: Raw) -> None:
    for number, version in enumerate(PROTOCOL_VERSIONS):
        answer = raw.request(number, "initialize", protocolVersion=version, capabilities={})
        assert answer["id"] == number
        assert answer["result"]["protocolVersion"] == version
    answer = raw.request("x", "initialize", protocolVersion="2099-01-01", capabilities={})
    assert answer["result"]["protocolVersion"] == PROTOCOL_VERSIONS[-1]


def test_bad_lines_get_json_rpc_errors_and_the_server_goes_on(raw: Raw) -> None:
    raw.send(b"this is not json")
    assert raw.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    raw.send(42)
    assert raw.receive()["error"]["code"] == -32600
    assert raw.request(1, "resources/list")["error"]["code"] == -32601
    assert raw.request(2, "tools/call")["error"]["code"] == -32602
    assert raw.request(3, "tools/call", name="x", arguments=[1])["error"]["code"] == -32602
    # Notifications and responses are not answered: the next line read is the ping's.
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    raw.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    assert raw.request("p", "ping") == {"jsonrpc": "2.0", "id": "p", "result": {}}


def test_a_batch_is_answered_message_by_message(raw: Raw) -> None:
    raw.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "nope"},
        ]
    )
    answers = {raw.receive()["id"], raw.receive()["id"]}
    assert answers == {1, 2}


async def test_a_cancelled_call_is_abandoned_and_not_answered(state: Path) -> None:
    async with harness(state) as (_, seen):
        process = await asyncio.create_subprocess_exec(
            *_command(state), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert process.stdin is not None
        assert process.stdout is not None
        try:

            async def send(message: dict[str, Any]) -> None:
                assert process.stdin is not None
                process.stdin.write(json.dumps(message).encode() + b"\n")
                await process.stdin.drain()

            await send(
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}}
            )
            await await_until(lambda: "slow" in seen, timeout=20, what="the slow tool to start")
            await send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 7, "reason": "the person pressed Stop"},
                }
            )
            await send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
            answer = json.loads(await asyncio.wait_for(process.stdout.readline(), 20))
            assert answer == {"jsonrpc": "2.0", "id": 8, "result": {}}
            # The call's connection is gone, so the harness cancels the tool.
            await await_until(lambda: "cancelled" in seen, timeout=20, what="the tool cancelled")
        finally:
            process.kill()
            await process.wait()


def test_the_server_imports_the_standard_library_only(state: Path) -> None:
    """What each agy's copy costs: no mcp SDK, pydantic, anyio or asyncio is loaded."""
    probe = (
        "import sys; import omnigent_agy.relay.__main__; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert loaded.isdisjoint({"mcp", "pydantic", "anyio", "asyncio", "starlette", "httpx"})


def test_stdin_closed_ends_the_server(raw: Raw) -> None:
    raw.stdin.close()
    assert raw.process.wait(20) == 0


class _SlowTools:
    """A harness client whose tool list comes only when the test lets it."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.go = threading.Event()

    def tools(self) -> list[dict[str, Any]]:
        self.asked.set()
        self.go.wait(20)
        return []


def test_nothing_is_written_once_stdin_closed_ended_the_server() -> None:
    """agy closing the relay's stdin while a list or a call is in flight: the answer is
    abandoned, not written while Python shuts down (a daemon thread writing to stdout then can
    abort the interpreter: SIGABRT, which CI saw under valgrind in bench_relay)."""
    client = _SlowTools()
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    outgoing = io.BytesIO()
    server = McpServer(client, io.BytesIO(json.dumps(request).encode() + b"\n"), outgoing)  # type: ignore[arg-type]
    server.serve()  # stdin ends after the one request
    assert client.asked.wait(20), "the list was never asked for"
    client.go.set()
    lingering = [t for t in threading.enumerate() if t.name.startswith("mcp ")]
    for thread in lingering:
        thread.join(20)
    assert outgoing.getvalue() == b"", "an answer was written after the server ended"
