"""omnigent's own tools, reaching agy over MCP (WIRE.md §1b: MCP servers come only from
``<gemini_dir>/config/mcp_config.json``).

Owns the private channel between the harness process and the MCP server agy starts
(``channel``: a 0600 unix socket, one request per connection), that MCP stdio server of the
plugin's own (``mcp_server``, run as ``python -m omnigent_agy.relay``) and its entry in
agy's MCP config (``channel.relay_entry``). May import ``rpc`` and ``agy``.
"""
