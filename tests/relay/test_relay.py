"""omnigent's tools over MCP: the harness's private socket and the real MCP stdio server
(`python -m omnigent_agy.relay`, started by the `mcp` SDK's client, as agy starts it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from omnigent_agy.relay.channel import (
    NOT_IN_TURN,
    NOT_RELAYED,
    RELAY_SERVER,
    TURN_ENDED,
    RelayChannel,
    relay_entry,
    relay_socket_path,
    tool_names,
)
from omnigent_agy.relay.harness_client import NO_HARNESS

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


TOOLS = [
    {
        "name": "sys_session_list",
        "description": "List the sessions",
        "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}},
    },
    {"type": "function", "function": {"name": "web_fetch", "description": "Fetch a page"}},
]


@contextlib.asynccontextmanager
async def relay_client(state: Path) -> AsyncIterator[ClientSession]:
    """The MCP server as agy starts it from the entry written into mcp_config.json."""
    entry = relay_entry(relay_socket_path(state), state / "relay-tools.json", ["sys_session_list"])
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    path.mkdir(mode=0o700)
    return path


def channel_for(state: Path) -> RelayChannel:
    return RelayChannel(relay_socket_path(state), state / "relay-tools.json")


def test_the_entry_runs_the_installed_relay_and_auto_approves_omnigents_tools(
    state: Path,
) -> None:
    entry = relay_entry(state / "r.sock", state / "t.json", ["b", "a"])
    assert entry["command"] == sys.executable
    assert entry["args"][:3] == ["-I", "-m", "omnigent_agy.relay"]
    assert entry["enabledTools"] == ["a", "b"]
    assert RELAY_SERVER == "omnigent"


def test_a_long_state_path_gets_a_short_private_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 80) / "conversation"
    deep.mkdir(parents=True)
    path = relay_socket_path(deep)
    assert len(str(path)) <= 100
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert relay_socket_path(deep) == path  # the same conversation finds it again


async def test_a_call_in_a_turn_runs_through_the_tool_bridge(state: Path) -> None:
    channel = channel_for(state)
    await channel.start()
    assert stat.S_IMODE(channel.socket_path.stat().st_mode) == 0o600
    channel.set_tools(TOOLS)
    calls: list[tuple[str, dict[str, Any]]] = []

    async def bridge(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append((name, arguments))
        return {"sessions": [{"id": "s1", "title": "first"}]}

    try:
        async with relay_client(state) as session:
            listed = await session.list_tools()
            assert [t.name for t in listed.tools] == ["sys_session_list", "web_fetch"]
            assert listed.tools[0].inputSchema["properties"] == {"limit": {"type": "integer"}}
            channel.open_turn(bridge)
            result = await session.call_tool("sys_session_list", {"limit": 5})
            assert not result.isError
            assert json.loads(text(result)) == {"sessions": [{"id": "s1", "title": "first"}]}
            assert calls == [("sys_session_list", {"limit": 5})]
    finally:
        await channel.aclose()


# What omnigent 0.19.1 adds to a turn's tools once the agent declares a terminal (the shipped
# one does: agy's own screen in the web's Terminal view).
TERMINAL_TOOLS = [
    {"name": "sys_terminal_launch", "parameters": {"type": "object", "properties": {}}},
    {"type": "function", "function": {"name": "sys_terminal_send", "description": "Type keys"}},
    {"name": "sys_terminal_read", "parameters": {"type": "object", "properties": {}}},
]


async def test_omnigents_terminal_tools_never_reach_agy(state: Path) -> None:
    """agy must not type into its own screen (its TUI, in the web's Terminal view) and so
    answer its own permission gates: the list agy receives has no sys_terminal_* tool, the
    file it falls back to has none, and a call naming one is refused without running it."""
    channel = channel_for(state)
    await channel.start()
    channel.set_tools([*TOOLS, *TERMINAL_TOOLS])
    calls: list[str] = []

    async def bridge(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(name)
        return {"result": "typed"}

    try:
        async with relay_client(state) as session:
            listed = await session.list_tools()
            assert [t.name for t in listed.tools] == ["sys_session_list", "web_fetch"]
            saved = json.loads((state / "relay-tools.json").read_text())
            assert "sys_terminal_" not in json.dumps(saved)
            channel.open_turn(bridge)
            result = await session.call_tool("sys_terminal_send", {"text": "/allow"})
            assert result.isError
            assert text(result) == NOT_RELAYED
            assert calls == []
    finally:
        await channel.aclose()
    assert relay_entry(state / "r.sock", state / "t.json", tool_names(channel.tools))[
        "enabledTools"
    ] == ["sys_session_list", "web_fetch"]


async def test_a_refusal_of_omnigents_reaches_agy_as_an_error(state: Path) -> None:
    channel = channel_for(state)
    await channel.start()
    channel.set_tools(TOOLS)

    async def denied(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"error": "Tool call denied by policy 'no-sessions'"}

    try:
        async with relay_client(state) as session:
            channel.open_turn(denied)
            result = await session.call_tool("sys_session_list", {})
            assert result.isError
            assert "denied by policy" in text(result)
    finally:
        await channel.aclose()


async def test_outside_a_turn_a_call_is_refused_at_once(state: Path) -> None:
    channel = channel_for(state)
    await channel.start()
    channel.set_tools(TOOLS)
    try:
        async with relay_client(state) as session:
            result = await asyncio.wait_for(session.call_tool("sys_session_list", {}), 10)
            assert result.isError
            assert text(result) == NOT_IN_TURN
    finally:
        await channel.aclose()


async def test_a_call_running_when_the_turn_ends_gets_an_answer(state: Path) -> None:
    channel = channel_for(state)
    await channel.start()
    channel.set_tools(TOOLS)
    started = asyncio.Event()

    async def slow(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()  # never answers by itself
        return {}

    try:
        async with relay_client(state) as session:
            channel.open_turn(slow)
            call = asyncio.ensure_future(session.call_tool("sys_session_list", {}))
            await asyncio.wait_for(started.wait(), 10)
            channel.close_turn()
            result = await asyncio.wait_for(call, 10)
            assert result.isError
            assert text(result) == TURN_ENDED
    finally:
        await channel.aclose()


async def test_with_the_harness_gone_calls_fail_clearly_and_the_tools_stay_listed(
    state: Path,
) -> None:
    channel = channel_for(state)
    await channel.start()
    channel.set_tools(TOOLS)
    async with relay_client(state) as session:
        await channel.aclose()  # the harness process ended; agy and its MCP server live on
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["sys_session_list", "web_fetch"]
        result = await asyncio.wait_for(session.call_tool("sys_session_list", {}), 15)
        assert result.isError
        assert text(result) == NO_HARNESS
        # A new harness process listens at the same path: the same MCP server finds it.
        again = channel_for(state)
        await again.start()

        async def bridge(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return {"result": "back"}

        again.open_turn(bridge)
        try:
            result = await session.call_tool("sys_session_list", {})
            assert text(result) == "back"
        finally:
            await again.aclose()
