"""agy-sim's MCP client side: the servers of ``config/mcp_config.json`` (docs/wire.md §1b)
and of a trusted workspace's ``.agents/mcp_config.json`` (§9), started with the ``mcp`` SDK's
client, their tools listed, and called when a scenario says so.

A stdio server (``command``, ``args``, ``env``) is started in the folder agy works in; a
remote one (``serverUrl``) is reached over MCP's streamable HTTP, on loopback only (agy-sim
connects nowhere else; a real agy would). Each server lives in a task of its own (the SDK's
clients and sessions are context managers whose scopes must close in the task that opened
them), started once the process is up (a workspace's once it is trusted) and stopped with it.
A server that fails to start is reported and left out; the others still work. A workspace's
server named like one of the person's is not started: the person's wins (**guess**).
``enabledTools`` (agy's auto-approve list) decides whether a call is gated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    # The SDK is imported where a server starts (half a second of agy-sim's start otherwise,
    # paid by every agy-sim that never meets an MCP server).
    from mcp import ClientSession, StdioServerParameters, types

_log = logging.getLogger(__name__)

START_TIMEOUT: Final = 30.0
_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(slots=True)
class McpServer:
    """One configured server: its tools once started, or why it did not start."""

    name: str
    enabled_tools: frozenset[str]
    tools: dict[str, types.Tool] = field(default_factory=dict)
    failed: str = ""
    session: ClientSession | None = None


class McpHost:
    """Every MCP server of the gemini dir's config (and of a trusted workspace's), for one
    agy-sim process."""

    def __init__(self, config: Mapping[str, Mapping[str, Any]], *, cwd: Path) -> None:
        self._config = dict(config)
        self._cwd = cwd
        self.agent_env: dict[str, str] = {}
        """What agy adds to each server's environment (child_env.py); set before start."""
        self.servers: dict[str, McpServer] = {}
        self._stop = asyncio.Event()
        self._started = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> list[str]:
        """Start the configured servers; one line per server for the TUI and the log."""
        try:
            return await self.add(self._config, cwd=self._cwd)
        finally:
            self._started.set()

    async def add(self, config: Mapping[str, Mapping[str, Any]], *, cwd: Path) -> list[str]:
        """Start these servers too (a trusted workspace's, in ``cwd``); one line each."""
        waits, started, lines = [], [], []
        for name, spec in config.items():
            if name in self.servers:
                lines.append(f"[mcp] {name}: not started (a server of that name runs already)")
                continue
            enabled = spec.get("enabledTools") if isinstance(spec, Mapping) else None
            server = McpServer(name, frozenset(e for e in enabled or () if isinstance(e, str)))
            self.servers[name] = server
            ready = asyncio.get_running_loop().create_future()
            self._tasks.append(asyncio.create_task(self._run(server, spec, ready, cwd)))
            waits.append(ready)
            started.append(server)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), START_TIMEOUT)
        return lines + [self.describe(server) for server in started]

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

    async def _run(
        self, server: McpServer, spec: object, ready: asyncio.Future[None], cwd: Path
    ) -> None:
        from mcp import ClientSession  # noqa: PLC0415 - lazy (TYPE_CHECKING above)

        try:
            async with (
                _connect(spec, cwd, self.agent_env) as (read, write),
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
        from mcp import types  # noqa: PLC0415 - lazy (TYPE_CHECKING above)

        result = await found.session.call_tool(tool, arguments)
        text = "\n".join(
            block.text for block in result.content if isinstance(block, types.TextContent)
        )
        return text, bool(result.isError)

    async def aclose(self) -> None:
        self._stop.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def _connect(
    spec: object, cwd: Path, agent_env: Mapping[str, str]
) -> AsyncIterator[tuple[Any, Any]]:
    """The server's read and write streams: stdio for a ``command``, streamable HTTP for a
    ``serverUrl`` on loopback."""
    url = spec.get("serverUrl") if isinstance(spec, Mapping) else None
    if isinstance(url, str):
        if urlsplit(url).hostname not in _LOOPBACK:
            raise ValueError("agy-sim connects only to MCP servers on loopback")
        from mcp.client.streamable_http import streamablehttp_client  # noqa: PLC0415 - lazy (TYPE_CHECKING above)

        async with streamablehttp_client(url) as (read, write, _session_id):
            yield read, write
        return
    from mcp.client.stdio import stdio_client  # noqa: PLC0415 - lazy (TYPE_CHECKING above)

    async with stdio_client(_parameters(spec, cwd, agent_env)) as (read, write):
        yield read, write


def _parameters(spec: object, cwd: Path, agent_env: Mapping[str, str]) -> StdioServerParameters:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("command"), str):
        raise TypeError("neither a stdio server (no command) nor a remote one (no serverUrl)")
    args = spec.get("args") or []
    env = spec.get("env") or {}
    from mcp import StdioServerParameters  # noqa: PLC0415 - lazy (TYPE_CHECKING above)

    return StdioServerParameters(
        command=spec["command"],
        args=[str(arg) for arg in args],
        # agy's own variables last: they describe this agy, whatever the parent or config had.
        env={**os.environ, **{str(k): str(v) for k, v in env.items()}, **agent_env},
        cwd=str(cwd),
    )
