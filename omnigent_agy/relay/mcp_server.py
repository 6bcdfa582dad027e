"""The MCP stdio server agy starts for omnigent's tools (the ``omnigent`` entry of its
``mcp_config.json``, WIRE.md §1b), built on the ``mcp`` SDK.

It holds no state of its own: each ``tools/list`` and ``tools/call`` is one request over the
harness's private socket (``channel``), so a harness restarted meanwhile is simply found
again at the same path. When no harness listens, listing falls back to the tools of the last
turn (kept 0600 beside the socket's state) and a call answers a clear error at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from omnigent_agy.relay.channel import MAX_LINE, RELAY_SERVER

__all__ = ["RelayClient", "build_server", "main"]

CONNECT_TIMEOUT: Final = 5.0
NO_HARNESS: Final = (
    "omnigent's harness for this conversation is not running, so omnigent's tools cannot "
    "answer now; send the next message from omnigent and try again"
)


class RelayError(Exception):
    """The harness refused the request, or could not be reached."""


class RelayClient:
    """One request per connection to the harness's socket."""

    def __init__(self, socket_path: Path, tools_file: Path) -> None:
        self.socket_path = socket_path
        self.tools_file = tools_file

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self.socket_path, limit=MAX_LINE), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as exc:
            raise RelayError(NO_HARNESS) from exc
        try:
            writer.write(json.dumps(payload).encode() + b"\n")
            await writer.drain()
            # No deadline on the answer: a tool may take long (omnigent's own timeouts and
            # the turn's end bound it); a harness that dies closes the socket, ending this.
            line = await reader.readline()
        except (OSError, ValueError) as exc:
            raise RelayError(NO_HARNESS) from exc
        finally:
            writer.close()
        if not line:
            raise RelayError("omnigent's harness closed the call without an answer")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise RelayError(str(reply.get("error") or "the call failed"))
        return dict(reply)

    async def tools(self) -> list[dict[str, Any]]:
        try:
            return list((await self.request({"op": "list"})).get("tools") or [])
        except RelayError:
            try:
                saved = json.loads(self.tools_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return []
            return saved if isinstance(saved, list) else []

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = await self.request({"op": "call", "name": name, "arguments": arguments})
        result = reply.get("result")
        return result if isinstance(result, dict) else {"result": result}


def _as_mcp_tool(schema: dict[str, Any]) -> types.Tool | None:
    nested = schema.get("function")
    function: dict[str, Any] = nested if isinstance(nested, dict) else schema
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    parameters = function.get("parameters") or function.get("input_schema")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        parameters = {"type": "object", "properties": {}}
    return types.Tool(
        name=name, description=str(function.get("description") or ""), inputSchema=parameters
    )


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _content(result: dict[str, Any]) -> list[types.ContentBlock]:
    """omnigent's dispatch result as MCP text (``{"result": text}`` unwraps to the text)."""
    if set(result) == {"result"} and isinstance(result["result"], str):
        text = result["result"]
    else:
        text = json.dumps(result, indent=2, sort_keys=True)
    return _text(text)


def build_server(client: RelayClient) -> Server[Any, Any]:
    server: Server[Any, Any] = Server(RELAY_SERVER)

    @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [tool for tool in map(_as_mcp_tool, await client.tools()) if tool is not None]

    # omnigent validates arguments itself (and its policies see them as sent).
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            result = await client.call(name, arguments)
        except RelayError as exc:
            return types.CallToolResult(content=_text(str(exc)), isError=True)
        error = result.get("error")
        if error is not None and set(result) <= {"error", "code"}:
            # omnigent's bridge reports a refused or failed call as {"error": …}.
            return types.CallToolResult(content=_text(str(error)), isError=True)
        return types.CallToolResult(content=_content(result))

    return server


async def serve(client: RelayClient) -> None:
    server = build_server(client)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnigent_agy.relay")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--tools", type=Path, required=True)
    args = parser.parse_args(argv)
    asyncio.run(serve(RelayClient(args.socket, args.tools)))
    return 0
