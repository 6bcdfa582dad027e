"""A person's own MCP server for the tests: one tool (`shout`), built on the `mcp` SDK.

Over stdio by default; ``--http PORT`` serves it over MCP's streamable HTTP on 127.0.0.1
instead (at ``/mcp``), as a remote server a ``serverUrl`` entry names."""

import sys

from mcp.server.fastmcp import FastMCP

HTTP = "--http"
port = int(sys.argv[sys.argv.index(HTTP) + 1]) if HTTP in sys.argv else 0
server = FastMCP("echo", host="127.0.0.1", port=port or 8000, log_level="WARNING")


@server.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run("streamable-http" if port else "stdio")
