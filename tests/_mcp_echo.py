"""A person's own MCP server for the tests: stdio, one tool (`shout`), built on the `mcp` SDK."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("echo")


@server.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run()
