"""Cards through the real server, answered as the web UI answers them (the resolve route)."""

from __future__ import annotations

import json

import pytest
from omnigent.community.harness.agy.rest import card_choices
from stack import Conversation

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_an_approval_allowed_runs_the_command(conversation: Conversation) -> None:
    conversation.send("Please run: echo hi from the stack")
    card = conversation.card()
    assert "Deny" in card_choices(card["params"])
    conversation.answer(card, "Allow once")
    assert conversation.turn_end()["type"] == "response.completed"
    assert conversation.outputs() == ["hi from the stack\n"]


def test_a_denied_command_does_not_run_and_the_turn_carries_on(
    conversation: Conversation,
) -> None:
    conversation.send("Please run: rm -rf build")
    conversation.answer(conversation.card(), "Deny")
    assert conversation.turn_end()["type"] == "response.completed"
    items = conversation.items()
    calls = [i for i in items if i["type"] == "function_call"]
    assert [json.loads(c["arguments"]).get("command_line") for c in calls] == ["rm -rf build"]
    assert "simulated output" not in "".join(conversation.outputs())
    # agy carried on after the denial: an answer follows the call.
    assert items[-1]["type"] == "message"
    assert items[-1]["role"] == "assistant"
