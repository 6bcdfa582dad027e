"""agy's process: one agy in a runner-owned tmux server.

Owns the per-conversation private state directory (``statedir``), the tmux server (``terminal``)
and the trampoline its panes start agy through (``trampoline``), launching or re-attaching to
agy with a fresh CSRF token (``launcher``), the list of agys kept running (``running``) and the
private gemini dir seeded from the person's (``gemini_home``, reading it through
``gemini_source``; ``mcp_selection``). May import ``rpc`` only.
"""
