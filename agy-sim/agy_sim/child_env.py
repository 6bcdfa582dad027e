"""The environment agy gives the commands it runs and the MCP servers it starts.

Users of agy 1.1-1.2.14 report six variables (docs/wire.md §9): ``ANTIGRAVITY_CSRF_TOKEN`` (the
token agy was started with), ``ANTIGRAVITY_LS_ADDRESS``, ``ANTIGRAVITY_AGENT``,
``ANTIGRAVITY_CONVERSATION_ID``, ``ANTIGRAVITY_TRAJECTORY_ID`` and
``ANTIGRAVITY_SOURCE_METADATA``. The names are the report's; the values beyond the token are
**guesses** (docs/simulator.md): the TLS port's address, ``1``, the conversation and its
trajectory (for an MCP server started with agy, the conversation its terminal opened), and a
JSON object naming the source. agy-sim runs no real commands (its tools' outputs are
scripted), so only its MCP servers get them.
"""

from __future__ import annotations

import json
from typing import Final

__all__ = ["AGENT_ENV_NAMES", "agent_env"]

AGENT_ENV_NAMES: Final = (
    "ANTIGRAVITY_CSRF_TOKEN",
    "ANTIGRAVITY_LS_ADDRESS",
    "ANTIGRAVITY_AGENT",
    "ANTIGRAVITY_CONVERSATION_ID",
    "ANTIGRAVITY_TRAJECTORY_ID",
    "ANTIGRAVITY_SOURCE_METADATA",
)


def agent_env(
    *, csrf_token: str | None, port: int, conversation_id: str, trajectory_id: str
) -> dict[str, str]:
    """The variables for one child of the agy (the token only when agy has one)."""
    env = {
        "ANTIGRAVITY_LS_ADDRESS": f"127.0.0.1:{port}",
        "ANTIGRAVITY_AGENT": "1",
        "ANTIGRAVITY_CONVERSATION_ID": conversation_id,
        "ANTIGRAVITY_TRAJECTORY_ID": trajectory_id,
        "ANTIGRAVITY_SOURCE_METADATA": json.dumps({"source": "CORTEX_TRAJECTORY_SOURCE_CLI"}),
    }
    if csrf_token:
        env["ANTIGRAVITY_CSRF_TOKEN"] = csrf_token
    return env
