"""The harness process SIGKILLed while a card waits, on the real stack: what omnigent does, and
that the next turn brings the card back and the rest of the killed turn (docs/reliability.md)."""

from __future__ import annotations

import json
import signal

import psutil
import pytest
from stack import TURN_ENDS, Conversation, agy_steps
from waiting import wait_until

from agy_sim.stack.rest import Json
from omnigent_agy.agy.keep import read_activity
from omnigent_agy.agy.statedir import SessionStateDir

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def harness_process(conversation: Conversation) -> psutil.Process | None:
    """The harness process running the conversation's turn: the holder of its activity lease
    (omnigent may fork it from a zygote, so its command line need not name the runner)."""
    state = SessionStateDir.open(conversation.id, base=conversation.host.state_dir)
    activity = read_activity(state)
    if not activity.turn_running or activity.holder_pid is None:
        return None
    return psutil.Process(activity.holder_pid)


def next_card(conversation: Conversation, text: str) -> Json:
    """The card `text`'s turn shows again. A message sent the moment after the kill may reach
    the killed process's socket before omnigent's runner has noticed the death: the runner
    fails that turn `connection_error` itself (docs/reliability.md, "The harness process
    killed mid-turn"), and a person sends again. Once: the next message finds the new one."""
    conversation.send(text)
    event = conversation.until("response.elicitation_request", *TURN_ENDS)
    if event["type"] == "response.failed" and "connection" in json.dumps(event).lower():
        conversation.send(text)
        event = conversation.until("response.elicitation_request", *TURN_ENDS)
    assert event["type"] == "response.elicitation_request", f"the card did not come back: {event}"
    return event


def test_a_harness_killed_at_a_card_fails_the_turn_and_the_next_brings_it_back(
    conversation: Conversation,
) -> None:
    conversation.send("Please run: echo after the kill")
    conversation.card()
    first = wait_until(
        lambda: harness_process(conversation), timeout=10, what="the harness process"
    )
    first.send_signal(signal.SIGKILL)
    ended = conversation.turn_end()
    # omnigent's runner fails a turn whose harness stream breaks (its decision, not ours).
    assert ended["type"] == "response.failed", ended
    assert "connection" in json.dumps(ended).lower(), ended
    waiting = [
        s for s in agy_steps(conversation.host, conversation.id) if s["status"].endswith("WAITING")
    ]
    assert waiting, "agy no longer waits for the answer"
    card = next_card(conversation, "are you still there?")
    second = harness_process(conversation)
    assert second is not None
    assert second.pid != first.pid, "omnigent did not start a new harness process"
    conversation.answer(card, "Allow once")
    assert conversation.turn_end()["type"] == "response.completed"
    assert conversation.outputs() == ["after the kill\n"], "the command's output is not shown once"
    calls = [
        i
        for i in conversation.items()
        if i["type"] == "function_call" and i.get("status") == "completed"
    ]
    assert len(calls) == 1, calls
    cards = conversation.seen("response.elicitation_request")
    assert len(cards) == 2, "the card was not shown again exactly once"
    assert any("after the kill" in text for text in conversation.assistant_texts())
