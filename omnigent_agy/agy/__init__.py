"""agy's process: one agy in a runner-owned tmux server.

Owns the per-conversation private state directory (``statedir``), the tmux server (``terminal``),
launching or re-attaching to agy with a fresh CSRF token (``launcher``) and the list of agys kept
running (``running``). May import ``rpc`` only.
"""
