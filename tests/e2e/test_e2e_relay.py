"""omnigent's own tools reaching agy over MCP, on the real stack: agy calls `sys_session_list`
through the plugin's relay, omnigent's server runs it (with its policies), and the transcript
shows the call once with its result; a DENY policy on the tool refuses it. Also: the person's
sign-in reaches agy's private gemini dir and nowhere else (docs/wire.md §1b)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from stack import Conversation

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

CALL = "use omnigent/sys_session_list {}"
DENY_SESSION_LIST = {
    "name": "no_session_list",
    "type": "python",
    "handler": "omnigent.policies.builtins.cel.cel_policy",
    "factory_params": {
        "expression": (
            'event.type == "tool_call" && event.data.name == "sys_session_list"'
            ' ? {"result": "DENY", "reason": "listing sessions is not allowed here"}'
            ' : {"result": "ALLOW"}'
        )
    },
}


def calls_and_outputs(conversation: Conversation) -> tuple[list[str], list[str]]:
    items = conversation.items()
    calls = [str(i["name"]) for i in items if i["type"] == "function_call"]
    return calls, conversation.outputs()


def test_agy_calls_sys_session_list_through_the_relay(conversation: Conversation) -> None:
    ended = conversation.say(CALL, timeout=120)
    assert ended["type"] == "response.completed", ended
    calls, outputs = calls_and_outputs(conversation)
    assert calls == ["sys_session_list"]  # once: not again as agy's own MCP step
    assert len(outputs) == 1
    assert conversation.id in outputs[0]  # omnigent's answer lists this very session
    reply = conversation.assistant_texts()[-1]
    assert reply.startswith("omnigent/sys_session_list answered:")
    assert conversation.id in reply  # agy got the result over MCP


def test_a_deny_policy_on_the_tool_refuses_it(conversation: Conversation) -> None:
    conversation.client.post(f"/v1/sessions/{conversation.id}/policies", DENY_SESSION_LIST)
    ended = conversation.say(CALL, timeout=120)
    assert ended["type"] == "response.completed", ended
    calls, outputs = calls_and_outputs(conversation)
    assert calls == ["sys_session_list"]
    assert len(outputs) == 1
    assert conversation.id not in outputs[0]
    assert "not allowed" in outputs[0].lower() or "denied" in outputs[0].lower()
    reply = conversation.assistant_texts()[-1]
    assert reply.startswith("omnigent/sys_session_list failed:")
    assert conversation.id not in reply


def test_the_persons_sign_in_is_only_in_the_private_gemini_dir(
    stack: LocalStack, conversation: Conversation
) -> None:
    assert conversation.say("hello")["type"] == "response.completed"
    person = Path(stack.main.env["HOME"]) / ".gemini"
    token_file = person / "antigravity-cli" / "antigravity-oauth-token"
    token = json.loads(token_file.read_text())["token"]["access_token"]
    # The harness's state dir (wherever the runner's environment put it): one per conversation.
    ours = next(stack.root.rglob(f"omnigent-agy/{conversation.id}"))
    seeded = ours / "gemini" / "antigravity-cli" / "antigravity-oauth-token"
    assert token in seeded.read_text()
    assert stat.S_IMODE(seeded.stat().st_mode) == 0o600
    holders = [
        path
        for path in stack.root.rglob("*")
        if path.is_file() and not path.is_symlink() and token in path.read_text(errors="replace")
    ]
    assert seeded in holders
    # omnigent's own built-in agy harness (which the comparison tests run on this stack) keeps
    # a copy of the sign-in in its own folder: omnigent's doing, not the plugin's.
    builtin = Path(stack.main.env["OMNIGENT_CONFIG_HOME"]) / "antigravity-native"
    for path in holders:  # every log of the stack, server, host, harness and agy included
        if path.is_relative_to(person) or path.is_relative_to(builtin):
            continue
        parts = path.parts
        assert "omnigent-agy" in parts, f"the sign-in token leaked into {path}"
        conversation_dir = Path(*parts[: parts.index("omnigent-agy") + 2])
        assert path.relative_to(conversation_dir).parts[0] == "gemini", path
        assert stat.S_IMODE(os.stat(conversation_dir).st_mode) == 0o700
