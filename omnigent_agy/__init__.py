"""omnigent-agy: Google's Antigravity CLI (agy) as an omnigent harness.

This package is the host-agnostic core. It speaks agy's local connect-RPC language
server (wire codec, client, discovery), turns agy's trajectory into events (mapper,
reader), bridges agy's approvals and questions (interactions, policy) and drives agy in
tmux (terminal, executor core). The thin omnigent adapter is shipped separately as
``omnigent.community.harness.agy``. See docs/architecture.md.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

# Each defined here once; every layer may read them.
HARNESS_ID = "agy-cli"
"""omnigent's name for the harness (``harness.agy-cli`` in its config, the web's picker)."""
HARNESS_ALIASES = ("antigravity-cli",)
HARNESS_LABEL = "Antigravity CLI"
TMUX_SOCKET = "omnigent-agy"
"""The tmux server (``tmux -L``) agy runs in, unless ``harness.agy-cli.tmux_socket`` names one."""
TMUX_SOCKET_ENV = "OMNIGENT_AGY_TMUX_SOCKET"
"""Names the tmux server instead (wins over ``harness.agy-cli.tmux_socket``)."""
TMUX_TMPDIR_ENV = "TMUX_TMPDIR"
"""tmux's variable for the folder of its servers' sockets (else /tmp)."""
