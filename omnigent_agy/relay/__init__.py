"""omnigent's own tools, reaching agy over MCP (docs/wire.md §1b: MCP servers come only from
``<gemini_dir>/config/mcp_config.json``).

Owns the private channel between the harness process and the MCP server agy starts
(``channel``: a 0600 unix socket, one request per connection), that MCP stdio server of the
plugin's own (``mcp_server``, run as ``python -m omnigent_agy.relay``; standard library only,
so each agy's copy starts fast and small), its side of the socket (``harness_client``) and its
entry in agy's MCP config (``channel.relay_entry``). May import ``rpc`` and ``agy``.

Nothing here imports more than the standard library: the MCP server imports this package.
"""

from __future__ import annotations

from typing import Final

#: The name of the relay in agy's mcp_config.json; agy's MCP steps show `omnigent/<tool>`.
RELAY_SERVER: Final = "omnigent"
#: The longest line either end of the socket reads: a tool's arguments or result may be large.
MAX_LINE: Final = 16 * 1024 * 1024
