"""The composer's Stop button (an ``interrupt`` event) on the real stack."""

from __future__ import annotations

import pytest
from stack import Conversation, agy_steps
from waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

BUSY = {"CORTEX_STEP_STATUS_RUNNING", "CORTEX_STEP_STATUS_WAITING", "CORTEX_STEP_STATUS_GENERATING"}


def agy_statuses(conversation: Conversation) -> list[str]:
    return [str(s.get("status")) for s in agy_steps(conversation.host, conversation.id)]


def agy_idle(conversation: Conversation) -> bool:
    """True once no step of agy's conversation still runs or waits."""
    return not BUSY & set(agy_statuses(conversation))


def test_stop_during_a_long_answer_stops_agy_and_the_text(conversation: Conversation) -> None:
    conversation.send("Give me a long answer about HTTP/2")
    conversation.until("response.output_text.delta")
    conversation.stop()
    assert conversation.turn_end()["type"] == "session.interrupted"
    wait_until(lambda: agy_idle(conversation), timeout=30, what="agy to stop the answer")
    assert "CORTEX_STEP_STATUS_CANCELED" in agy_statuses(conversation)
    conversation.idle()
    conversation.events.drain()
    # Once the page shows the session idle, no more of the answer arrives.
    seen = conversation.events.seen
    stopped = seen.index(stop_event(seen))
    assert not [e for e in seen[stopped:] if e.get("type") == "response.output_text.delta"]


def stop_event(seen: list[dict[str, object]]) -> dict[str, object]:
    """The first `session.status` idle after the interrupt."""
    interrupted = next(i for i, e in enumerate(seen) if e.get("type") == "session.interrupted")
    return next(
        e
        for e in seen[interrupted:]
        if e.get("type") == "session.status" and e.get("status") == "idle"
    )


def test_stop_while_a_card_waits_drops_the_command_and_the_card(
    conversation: Conversation,
) -> None:
    conversation.send("Please run: echo never")
    conversation.card()
    conversation.stop()
    assert conversation.turn_end()["type"] == "session.interrupted"
    wait_until(lambda: agy_idle(conversation), timeout=30, what="agy to drop the waiting command")
    # Stop refuses the gate first (CancelCascadeSteps is a no-op on a WAITING step, docs/wire.md
    # §3), then cancels: agy either ends the command refused or, when its short reply to
    # the refusal already finished before the cancel landed, has nothing left to cancel.
    steps = agy_steps(conversation.host, conversation.id)
    refused = [s for s in steps if (s.get("runCommand") or {}).get("userRejected")]
    cancelled = [s for s in steps if s.get("status") == "CORTEX_STEP_STATUS_CANCELED"]
    assert refused or cancelled, [s.get("status") for s in steps]
    assert "never\n" not in conversation.outputs()
    # The card goes away: nobody can answer a question agy no longer asks.
    wait_until(
        lambda: conversation.idle()["pending_elicitations"] == [],
        timeout=15,
        what="the card to close",
    )
    # The conversation carries on: the next turn is answered, and the stopped command stays
    # unrun.
    conversation.send("Thanks, that is all")
    # The stopped turn's own response.cancelled may arrive after session.interrupted, so the
    # new turn's end is the first completion or failure.
    ended = conversation.until("response.completed", "response.failed")
    assert ended["type"] == "response.completed"
    assert "never\n" not in conversation.outputs()
    assert conversation.seen("response.elicitation_resolved"), "the card was never withdrawn"
