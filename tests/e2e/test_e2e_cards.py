"""Cards through the real server, answered as the web UI answers them (the resolve route)."""

from __future__ import annotations

import json

import pytest
from omnigent.community.harness.agy.cards import WRITE_IN
from stack import Conversation

from agy_sim.stack.rest import card_choices, card_questions

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
    assert [json.loads(c["arguments"]).get("command") for c in calls] == ["rm -rf build"]
    assert "simulated output" not in "".join(conversation.outputs())
    # agy carried on after the denial: an answer follows the call.
    assert items[-1]["type"] == "message"
    assert items[-1]["role"] == "assistant"


def test_allow_for_this_conversation_is_not_asked_again(conversation: Conversation) -> None:
    conversation.send("Please run: echo remembered")
    card = conversation.card()
    conversation.answer(card, "Allow “echo remembered” for this conversation")
    conversation.turn_end()
    asked = len(conversation.seen("response.elicitation_request"))
    assert conversation.say("Please run: echo remembered")["type"] == "response.completed"
    assert len(conversation.seen("response.elicitation_request")) == asked, "asked again"
    assert conversation.outputs() == ["remembered\n", "remembered\n"]


def answered(conversation: Conversation, ask: str, *picks: str | list[str]) -> str:
    """Send `ask`, answer the question card with `picks`; agy's reply to the answers."""
    conversation.send(ask)
    card = conversation.card()
    conversation.answer(card, *picks)
    assert conversation.turn_end()["type"] == "response.completed"
    return conversation.assistant_texts()[-1]


def test_a_single_choice_question_is_answered(conversation: Conversation) -> None:
    reply = answered(conversation, "Ask me a question about the colour", "Blue")
    assert "Which color should the button be? → Blue" in reply


def test_a_multi_select_question_is_answered(conversation: Conversation) -> None:
    reply = answered(conversation, "Ask me a multi choice", ["Lint", "Unit tests"])
    assert "Which checks should I run? → Lint, Unit tests" in reply


def test_several_questions_are_answered_together(conversation: Conversation) -> None:
    extras = ["Docs", "CI workflow"]
    reply = answered(conversation, "Let us do a short survey", "Go", "pytest", extras)
    assert "Which language should the tool use? → Go" in reply
    assert "Which test framework? → pytest" in reply
    assert "Which extras do you want? → Docs, CI workflow" in reply


def test_a_write_in_answer_in_a_form_reaches_agy(conversation: Conversation) -> None:
    # The form's "Type something" field: text that is none of the options is the person's own.
    reply = answered(conversation, "Let us do a short survey", "Go", "nose2", ["Docs"])
    assert "Which test framework? → “nose2”" in reply


def test_a_write_in_answer_to_a_single_question_reaches_agy(conversation: Conversation) -> None:
    conversation.send("Ask me a write-in question")
    card = conversation.card()
    # agy's options stay buttons; the last button opens a form with just a text field.
    assert card["params"]["message"] == "What should the new module be called?"
    assert card_choices(card["params"]) == ["utils", "helpers", WRITE_IN]
    conversation.answer(card, WRITE_IN)
    empty = conversation.card()
    assert [q["options"] for q in card_questions(empty["params"])] == [[]]
    conversation.answer(empty, "")
    # An empty answer is refused with a message saying so, and the question is asked again.
    again = conversation.card()
    assert "empty written answer" in again["params"]["message"]
    assert card_choices(again["params"]) == ["utils", "helpers", WRITE_IN]
    conversation.answer(again, WRITE_IN)
    conversation.answer(conversation.card(), "toolbox")
    assert conversation.turn_end()["type"] == "response.completed"
    reply = conversation.assistant_texts()[-1]
    assert "What should the new module be called? → “toolbox”" in reply
