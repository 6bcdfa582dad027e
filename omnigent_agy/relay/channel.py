"""The harness side of omnigent's tool relay: a private unix socket in the state directory.

agy starts the plugin's MCP server (``mcp_server``) from its ``mcp_config.json``; that server
lives as long as agy, across harness restarts, so it opens a fresh connection to this socket
for every request. The protocol is one JSON line each way per connection::

    {"op": "list"}                                  → {"ok": true, "tools": [...]}
    {"op": "call", "name": N, "arguments": {...}}   → {"ok": true, "result": {...}}
                                                    | {"ok": false, "error": "..."}

A call runs through the turn's ``ToolRunner`` (omnigent's executor tool bridge, so its
TOOL_CALL / TOOL_RESULT policies apply). Outside a turn a call is refused at once; a call
still running when its turn ends is cancelled and answered with an error; a harness that is
gone refuses the connection: the MCP server never waits on nobody.

The socket is 0600 in a 0700 directory (DESIGN-NOTES §9): only this user reaches it. When
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
import stat
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.statedir import write_private_file

__all__ = [
    "MAX_LINE",
    "RELAY_SERVER",
    "RelayChannel",
    "ToolRunner",
    "relay_entry",
    "relay_socket_path",
]

_log = logging.getLogger(__name__)

#: The name of the relay in agy's mcp_config.json; agy's MCP steps show `omnigent/<tool>`.
RELAY_SERVER: Final = "omnigent"
MAX_LINE: Final = 16 * 1024 * 1024  # a tool's arguments or result may be large
_SUN_PATH_MAX: Final = 100  # sockaddr_un.sun_path is 104 (macOS) or 108 (Linux) bytes

type ToolRunner = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

NOT_IN_TURN: Final = (
    "omnigent's tools answer only during an omnigent turn of this conversation; none is running now"
)
TURN_ENDED: Final = "the omnigent turn ended before the tool answered"


def relay_socket_path(state_dir: Path) -> Path:
    """``<state dir>/relay.sock``, or a short private path when that one is too long."""
    preferred = state_dir / "relay.sock"
    if len(os.fsencode(preferred)) <= _SUN_PATH_MAX:
        return preferred
    digest = hashlib.sha256(os.fsencode(state_dir.resolve())).hexdigest()[:16]
    for base in (os.environ.get("XDG_RUNTIME_DIR"), tempfile.gettempdir(), "/tmp"):  # noqa: S108
        if not base:
            continue
        folder = Path(base) / f"omnigent-agy-{os.getuid()}"
        candidate = folder / f"{digest}.sock"
        if len(os.fsencode(candidate)) <= _SUN_PATH_MAX:
            _private_folder(folder)
            return candidate
    raise OSError(f"no socket path short enough for {state_dir}")


def _private_folder(folder: Path) -> None:
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} must be a directory of yours with mode 0700")


def relay_entry(socket_path: Path, tools_file: Path, tool_names: Sequence[str]) -> dict[str, Any]:
    """The relay's ``mcpServers`` entry (WIRE.md §1b shape: command, args, env, enabledTools).

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
    names = []
    for tool in tools:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names


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
        """The tools omnigent passed to this turn; also kept on disk (0600) so the MCP server
        can list them while no harness is running."""
        self._tools = [dict(tool) for tool in tools]
        write_private_file(self.tools_file, json.dumps(self._tools))

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
            reply = await self._answer(line)
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            _log.info("relay connection dropped: %s", type(exc).__name__)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

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
