"""omnigent-agy: Google's Antigravity CLI (agy) as an omnigent harness.

This package is the host-agnostic core. It speaks agy's local connect-RPC language
server (wire codec, client, discovery), turns agy's trajectory into events (mapper,
reader), bridges agy's approvals and questions (interactions, policy) and drives agy in
tmux (terminal, executor core). The thin omnigent adapter is shipped separately as
``omnigent.community.harness.agy``. See docs/architecture.md.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

HARNESS_ID = "agy-cli"
HARNESS_ALIASES = ("antigravity-cli",)
HARNESS_LABEL = "Antigravity CLI"
