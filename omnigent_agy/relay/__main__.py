"""``python -m omnigent_agy.relay --socket PATH --tools PATH``: the MCP server agy starts."""

from __future__ import annotations

import sys

from omnigent_agy.relay.mcp_server import main

if __name__ == "__main__":
    sys.exit(main())
