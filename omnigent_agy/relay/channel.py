"""The harness side of omnigent's tool relay: a private unix socket in the state directory.

agy starts the plugin's MCP server (``mcp_server``) from its ``mcp_config.json``; that server
lives as long as agy, across harness restarts, so it opens a fresh connection to this socket
for every request. The protocol is one JSON line each way per connection::

    {"op": "list"}                                  → {"ok": true, "tools": [...]}
    {"op": "call", "name": N, "arguments": {...}}   → {"ok": true, "result": {...}}
                                                    | {"ok": false, "error": "..."}

A call runs through the turn's ``ToolRunner`` (omnigent's executor tool bridge, so its
TOOL_CALL / TOOL_RESULT policies apply).

omnigent's ``sys_terminal_*`` tools are never relayed. The shipped agent declares a terminal
(agy's own screen in the web's Terminal view, docs/in-omnigent.md), which gives the turn those
tools; relayed, they would let agy type into its own TUI and answer its own permission
gates (docs/decisions.md §11). They are left out of the list agy sees and a call naming one
is refused. Outside a turn a call is refused at once; a call
still running when its turn ends is cancelled and answered with an error; a harness that is
gone refuses the connection: the MCP server never waits on nobody. A call the MCP server
abandons (agy cancelled it) is cancelled here too.

The socket is 0600 in a 0700 directory (docs/decisions.md §9): only this user reaches it. When
the state directory's path is too long for a unix socket (about 100 bytes), the socket goes
to a 0700 folder of this user's under the runtime or temporary directory instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.statedir import write_private_file
from omnigent_agy.agy.workspace import RUNTIME_DIR_ENV, check_private_dir
from omnigent_agy.relay import MAX_LINE, RELAY_SERVER

__all__ = [
    "MAX_LINE",
    "RELAY_SERVER",
    "TERMINAL_TOOL_PREFIX",
    "RelayChannel",
    "ToolRunner",
    "relay_entry",
    "relay_socket_path",
    "relayed",
]

_log = logging.getLogger(__name__)

_SUN_PATH_MAX: Final = 100  # sockaddr_un.sun_path is 104 (macOS) or 108 (Linux) bytes

type ToolRunner = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

NOT_IN_TURN: Final = (
    "omnigent's tools answer only during an omnigent turn of this conversation; none is running now"
)
TURN_ENDED: Final = "the omnigent turn ended before the tool answered"
#: omnigent's tools that drive the session's terminals, agy's own screen among them.
TERMINAL_TOOL_PREFIX: Final = "sys_terminal_"
NOT_RELAYED: Final = (
    "omnigent's terminal tools are not offered to agy: they would type into agy's own screen"
)


def relayed(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tools agy may see: all but omnigent's terminal tools (see the module doc)."""
    return [dict(tool) for tool in tools if not _is_terminal_tool(_tool_name(tool))]


def _is_terminal_tool(name: str | None) -> bool:
    return name is not None and name.startswith(TERMINAL_TOOL_PREFIX)


def relay_socket_path(state_dir: Path) -> Path:
    """``<state dir>/relay.sock``, or a short private path when that one is too long."""
    preferred = state_dir / "relay.sock"
    if len(os.fsencode(preferred)) <= _SUN_PATH_MAX:
        return preferred
    digest = hashlib.sha256(os.fsencode(state_dir.resolve())).hexdigest()[:16]
    for base in (os.environ.get(RUNTIME_DIR_ENV), tempfile.gettempdir(), "/tmp"):  # noqa: S108
        if not base:
            continue
        folder = Path(base) / f"omnigent-agy-{os.getuid()}"
        candidate = folder / f"{digest}.sock"
        if len(os.fsencode(candidate)) <= _SUN_PATH_MAX:
            check_private_dir(folder)
            return candidate
    raise OSError(f"no socket path short enough for {state_dir}")


def relay_entry(socket_path: Path, tools_file: Path, tool_names: Sequence[str]) -> dict[str, Any]:
    """The relay's ``mcpServers`` entry (docs/wire.md §1b shape: command, args, env, enabledTools).

    ``enabledTools`` is agy's auto-approve list: omnigent's own policies judge each call on
    the harness side, so agy's gate would only ask the person a second time.
    """
    return {
        "command": sys.executable,
        # -I: no PYTHON* variables, no user site or cwd on the path: the relay runs the
        # installed plugin, whatever directory agy starts it in.
        "args": [
            "-I",
            "-m",
            "omnigent_agy.relay",
            "--socket",
            str(socket_path),
            "--tools",
            str(tools_file),
        ],
        "env": {},
        "enabledTools": sorted(tool_names),
    }


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of omnigent's tool schemas (flat ``name`` or ``function.name``)."""
    return [name for name in map(_tool_name, tools) if name is not None]


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    function = tool.get("function")
    name = tool.get("name") or (function.get("name") if isinstance(function, Mapping) else None)
    return name if isinstance(name, str) and name else None


class RelayChannel:
    """The socket server in the harness process; one per conversation's session."""

    def __init__(self, socket_path: Path, tools_file: Path) -> None:
        self.socket_path = socket_path
        self.tools_file = tools_file
        self._tools: list[dict[str, Any]] = []
        self._runner: ToolRunner | None = None
        self._calls: set[asyncio.Task[dict[str, Any]]] = set()
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self._tools)

    async def start(self) -> None:
        """Listen on the running loop (again, if an earlier turn ran on another loop)."""
        loop = asyncio.get_running_loop()
        if self._server is not None and self._loop is loop:
            return
        if self._server is not None:
            self._server.close()  # its loop is gone with it
        # A socket left by a harness that died: nobody answers it, ours replaces it.
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        old_mask = os.umask(0o177)  # created 0600 from the first moment
        try:
            self._server = await asyncio.start_unix_server(
                self._serve, path=self.socket_path, limit=MAX_LINE
            )
        finally:
            os.umask(old_mask)
        os.chmod(self.socket_path, 0o600)
        self._loop = loop
        _log.info("omnigent tool relay listening on %s", self.socket_path)

    def set_tools(self, tools: Sequence[Mapping[str, Any]]) -> None:
        """The tools omnigent passed to this turn, but its terminal tools (``relayed``); also
        kept on disk (0600) so the MCP server can list them while no harness is running."""
        self._tools = relayed(tools)
        # Written again every turn, so not flushed to disk: no agy outlives a power cut.
        write_private_file(self.tools_file, json.dumps(self._tools), durable=False)

    def open_turn(self, runner: ToolRunner) -> None:
        self._runner = runner

    def close_turn(self) -> None:
        """No turn any more: refuse new calls, cancel running ones (each is answered)."""
        self._runner = None
        for task in list(self._calls):
            task.cancel()

    async def aclose(self) -> None:
        self.close_turn()
        server, self._server = self._server, None
        if server is not None and self._loop is asyncio.get_running_loop():
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        elif server is not None:
            server.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            reply = await self._answer_unless_dropped(line, reader)
            if reply is None:
                return
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            _log.info("relay connection dropped: %s", type(exc).__name__)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer_unless_dropped(
        self, line: bytes, reader: asyncio.StreamReader
    ) -> dict[str, Any] | None:
        """The answer; None when the MCP server hung up first (agy cancelled the call, or
        ended): the tool is cancelled, as at the turn's end."""
        answer = asyncio.ensure_future(self._answer(line))
        dropped = asyncio.ensure_future(reader.read(1))  # nothing more comes but the end
        try:
            await asyncio.wait({answer, dropped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dropped.cancel()
        if answer.done():
            return answer.result()
        answer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await answer
        _log.info("relay call abandoned by the MCP server")
        return None

    async def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
        except ValueError:
            return {"ok": False, "error": "the relay request is not JSON"}
        op = request.get("op") if isinstance(request, dict) else None
        if op == "list":
            return {"ok": True, "tools": self._tools}
        if op != "call":
            return {"ok": False, "error": f"unknown relay request {op!r}"}
        name, arguments = request.get("name"), request.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return {"ok": False, "error": "a call needs a tool name and an arguments object"}
        runner = self._runner
        if runner is None:
            return {"ok": False, "error": NOT_IN_TURN}
        return await self._call(runner, name, arguments)

    async def _call(
        self, runner: ToolRunner, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        if _is_terminal_tool(name):
            _log.warning("agy asked for omnigent's terminal tool %s: refused", name)
            return {"ok": False, "error": NOT_RELAYED}
        task = asyncio.ensure_future(runner(name, arguments))
        self._calls.add(task)
        try:
            result = await task
        except asyncio.CancelledError:
            if task.cancelled():
                return {"ok": False, "error": TURN_ENDED}
            raise
        except Exception as exc:  # noqa: BLE001 - the tool's failure is the call's answer
            _log.warning("omnigent tool %s failed: %s", name, type(exc).__name__)
            return {"ok": False, "error": f"{name} failed: {type(exc).__name__}: {exc}"}
        finally:
            self._calls.discard(task)
        return {"ok": True, "result": result}
