"""agy's sub-agents reach omnigent as child sessions with their task, tool calls and summary
(docs/in-omnigent.md, "Sub-agents"), checked through omnigent's REST API; the browser test is
tests/e2e/test_browser_subagents.py."""

from __future__ import annotations

import json

import pytest
from stack import Conversation
from waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

ROLE = "Workspace Surveyor"
TASK = "Survey the workspace and report what is there."
SUMMARY = "The workspace is listed; nothing else to report."


def test_a_sub_agent_is_a_child_session_with_its_task_tool_calls_and_summary(
    conversation: Conversation,
) -> None:
    assert conversation.say("Please use a sub-agent.")["type"] == "response.completed"
    client = conversation.client

    def child() -> dict | None:
        rows = client.get(f"/v1/sessions/{conversation.id}/child_sessions?limit=100")["data"]
        return rows[0] if rows else None

    found = wait_until(child, timeout=60, what="the sub-agent's child session")
    assert str(found.get("title")).startswith(f"{ROLE}:{ROLE} · "), found  # "<title>:<key>"

    def items() -> list:
        got = client.items(found["id"])
        texts = str(got)
        return got if TASK in texts and SUMMARY in texts else []

    transcript = wait_until(items, timeout=60, what="the child's task and summary")
    calls = [i for i in transcript if i.get("type") == "function_call"]
    # Under the name and keys of omnigent's own listing, as the parent's calls (tool_rows).
    assert [c.get("name") for c in calls] == ["list"], transcript
    arguments = calls[0].get("arguments")
    shown = json.loads(arguments) if isinstance(arguments, str) else arguments
    assert shown["agy_tool"] == "list_directory", calls
