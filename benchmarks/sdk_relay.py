"""The baseline of bench_relay.py: an MCP stdio server on the ``mcp`` SDK (its low-level
``Server`` and stdio transport) listing the tools of a file, as the relay was built until it
moved to the standard library. Run as ``python -I sdk_relay.py --tools PATH``."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def _tools(path: Path) -> list[types.Tool]:
    tools = []
    for schema in json.loads(path.read_text(encoding="utf-8")):
        parameters = schema.get("parameters") or {"type": "object", "properties": {}}
        tools.append(
            types.Tool(
                name=schema["name"],
                description=str(schema.get("description") or ""),
                inputSchema=parameters,
            )
        )
    return tools


async def serve(tools_file: Path) -> None:
    server: Server[Any, Any] = Server("omnigent")

    @server.list_tools()  # type: ignore[no-untyped-call,untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return _tools(tools_file)

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=Path, required=True)
    asyncio.run(serve(parser.parse_args().tools))
