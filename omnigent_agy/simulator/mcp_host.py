"""agy-sim's MCP client side: the stdio servers of ``config/mcp_config.json`` (WIRE.md §1b),
started with the ``mcp`` SDK's client, their tools listed, and called when a scenario says so.

Each server lives in a task of its own (the SDK's stdio client and session are context
managers whose scopes must close in the task that opened them), started once the process
is up and stopped with it. A server that fails to start is reported and left out; the others
still work. ``enabledTools`` (agy's auto-approve list) decides whether a call is gated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

_log = logging.getLogger(__name__)

START_TIMEOUT: Final = 30.0


@dataclass(slots=True)
class McpServer:
    """One configured server: its tools once started, or why it did not start."""

    name: str
    enabled_tools: frozenset[str]
    tools: dict[str, types.Tool] = field(default_factory=dict)
    failed: str = ""
    session: ClientSession | None = None


class McpHost:
    """Every stdio MCP server of the gemini dir's config, for one agy-sim process."""

    def __init__(self, config: Mapping[str, Mapping[str, Any]], *, cwd: Path) -> None:
        self._config = dict(config)
        self._cwd = cwd
        self.servers: dict[str, McpServer] = {}
        self._stop = asyncio.Event()
        self._started = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> list[str]:
        """Start them all; one line per server for the TUI and the log."""
        waits = []
        for name, spec in self._config.items():
            enabled = spec.get("enabledTools") if isinstance(spec, Mapping) else None
            server = McpServer(name, frozenset(e for e in enabled or () if isinstance(e, str)))
            self.servers[name] = server
            ready = asyncio.get_running_loop().create_future()
            self._tasks.append(asyncio.create_task(self._run(server, spec, ready)))
            waits.append(ready)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), START_TIMEOUT)
        finally:
            self._started.set()
        return [self.describe(server) for server in self.servers.values()]

    async def ready(self) -> None:
        """Until every server started or gave up (a turn that calls a tool waits for it)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._started.wait(), START_TIMEOUT)

    @staticmethod
    def describe(server: McpServer) -> str:
        if server.failed or server.session is None:
            return f"[mcp] {server.name}: not started ({server.failed or 'timed out'})"
        names = ", ".join(sorted(server.tools))
        return f"[mcp] {server.name}: {len(server.tools)} tools ({names})"

    async def _run(self, server: McpServer, spec: object, ready: asyncio.Future[None]) -> None:
        try:
            params = _parameters(spec, self._cwd)
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                server.tools = {tool.name: tool for tool in listed.tools}
                server.session = session
                ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - one broken server must not stop agy
            server.failed = f"{type(exc).__name__}: {exc}"[:200]
            _log.warning("MCP server %s failed: %s", server.name, server.failed)
        finally:
            server.session = None
            if not ready.done():
                ready.set_result(None)

    def find(self, server: str, tool: str) -> tuple[McpServer, types.Tool] | None:
        found = self.servers.get(server)
        if found is None or found.session is None or tool not in found.tools:
            return None
        return found, found.tools[tool]

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """The tool's text result and whether it is an error."""
        found = self.servers.get(server)
        if found is None or found.session is None:
            return f"MCP server {server!r} is not running", True
        result = await found.session.call_tool(tool, arguments)
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        return text, bool(result.isError)

    async def aclose(self) -> None:
        self._stop.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _parameters(spec: object, cwd: Path) -> StdioServerParameters:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("command"), str):
        raise TypeError("not a stdio server (no command)")
    args = spec.get("args") or []
    env = spec.get("env") or {}
    return StdioServerParameters(
        command=spec["command"],
        args=[str(arg) for arg in args],
        env={**os.environ, **{str(k): str(v) for k, v in env.items()}},
        cwd=str(cwd),
    )
