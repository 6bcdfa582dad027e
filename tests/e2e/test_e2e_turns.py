"""Turns through the real server as the web UI sends them: streamed text, tools, usage, models."""

from __future__ import annotations

import json

import pytest
from stack import Conversation

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_the_server_lists_the_harness_under_its_label(stack: LocalStack) -> None:
    ours = [h for h in stack.client.harnesses() if h.get("id") == "agy-cli"]
    assert ours, "agy-cli is not in GET /v1/harnesses"
    assert ours[0]["label"] == "Antigravity CLI"


def test_a_streamed_answer_is_one_assistant_item_with_the_streamed_text(
    conversation: Conversation,
) -> None:
    ended = conversation.say("Say hello in one short sentence.")
    assert ended["type"] == "response.completed"
    deltas = conversation.seen("response.output_text.delta")
    assert len(deltas) > 1, "the answer was not streamed"
    streamed = "".join(str(d["delta"]) for d in deltas)
    assert conversation.assistant_texts() == [streamed]
    assert "Hello from the agy simulator" in streamed


def test_a_tool_call_shows_with_its_output(conversation: Conversation) -> None:
    conversation.say("List the files here")
    items = conversation.items()
    calls = [i for i in items if i["type"] == "function_call"]
    # A listing, as omnigent's web sums up listings; agy's own name is kept (tool_rows).
    assert [c["name"] for c in calls] == ["list"]
    assert json.loads(calls[0]["arguments"])["agy_tool"] == "list_directory"
    outputs = conversation.outputs()
    assert len(outputs) == 1
    assert "README.md" in outputs[0]
    assert items[-1]["role"] == "assistant"


def test_the_turn_reports_its_usage(conversation: Conversation) -> None:
    ended = conversation.say("hello")
    usage = ended["response"]["usage"]
    assert usage["input_tokens"] > 0
    assert usage["output_tokens"] > 0
    state = conversation.state()
    assert state["last_total_tokens"], "the context ring got no token count"
    assert sum(m["output_tokens"] for m in state["usage_by_model"].values()) > 0
