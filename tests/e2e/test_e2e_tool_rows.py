"""agy's tool calls as omnigent sees them, on the real stack: its policies and its rows.

omnigent's built-in shell policies meet agy's commands (docs/decisions.md §14): the CEL policy
omnigent's docs give as their example, ``block_shell``, refuses agy's command before any card.
"""

from __future__ import annotations

import pytest
from stack import Conversation

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

#: omnigent's own example policy (policies/builtins/cel.py's docstring), as the session
#: policy API takes it.
BLOCK_SHELL = {
    "name": "block_shell",
    "type": "python",
    "handler": "omnigent.policies.builtins.cel.cel_policy",
    "factory_params": {
        "expression": (
            'event.type == "tool_call" && event.data.name == "sys_os_shell"'
            ' ? {"result": "DENY", "reason": "Shell access is blocked."}'
            ' : {"result": "ALLOW"}'
        )
    },
}


def test_omnigents_shell_policy_refuses_agys_command_without_a_card(
    conversation: Conversation,
) -> None:
    conversation.client.post(f"/v1/sessions/{conversation.id}/policies", BLOCK_SHELL)
    conversation.send("Please run: echo not with this policy")
    ended = conversation.until(
        "response.elicitation_request", "response.completed", "response.failed", timeout=120
    )
    assert ended["type"] == "response.completed", f"the policy did not decide: {ended['type']}"
    assert "not with this policy" not in "".join(conversation.outputs())
    # agy was told no and carried on: its answer follows the refused call.
    items = conversation.items()
    assert items[-1]["type"] == "message"
    assert items[-1]["role"] == "assistant"
