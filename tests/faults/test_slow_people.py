"""Slow people: cards answered late, after agy timed the gate out and asked again (docs/wire.md §6).

agy-sim times a WAITING step out after AGY_SIM_WAITING_TIMEOUT seconds (the step goes ERROR and
a fresh WAITING step with the same request appears at the next index); after three retries it
gives up and ends the turn. The real harness app runs on it, and the person answers the card
they were shown first, however late.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultmix import HarnessConversation, answer, conversation_on_sim
from waiting import wait_until

pytestmark = pytest.mark.tmux

TIMEOUT = 1.5  # agy-sim's WAITING timeout here
ERROR = "CORTEX_STEP_STATUS_ERROR"
DONE = "CORTEX_STEP_STATUS_DONE"


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[HarnessConversation]:
    with conversation_on_sim(tmp_path, AGY_SIM_WAITING_TIMEOUT=str(TIMEOUT)) as talk:
        yield talk


def _of_type(talk: HarnessConversation, step_type: str) -> list[dict[str, Any]]:
    return [s for s in talk.steps() if s.get("type") == step_type]


def _wait_retries(talk: HarnessConversation, step_type: str, count: int) -> None:
    wait_until(
        lambda: sum(s["status"] == ERROR for s in _of_type(talk, step_type)) >= count,
        timeout=TIMEOUT * (count + 2) + 10,
        what=f"{count} timeouts of agy's gate",
    )


@pytest.mark.parametrize("retries", [1, 2, 3])
@pytest.mark.parametrize(
    ("text", "step_type"),
    [
        ("run: echo late", "CORTEX_STEP_TYPE_RUN_COMMAND"),
        ("ask me a question", "CORTEX_STEP_TYPE_ASK_QUESTION"),
    ],
    ids=["approval", "question"],
)
def test_a_late_answer_lands_on_the_live_retry(
    slow: HarnessConversation, retries: int, text: str, step_type: str
) -> None:
    harness = slow.harness
    assert harness is not None
    turn = harness.turn(text)
    card = turn.until("response.elicitation_request")
    _wait_retries(slow, step_type, retries)
    answer(harness, card)
    turn.until("response.completed", timeout=60)
    assert turn.kinds().count("response.elicitation_request") == 1, "the retry was shown again"
    steps = _of_type(slow, step_type)
    assert [s["status"] for s in steps] == [ERROR] * retries + [DONE]
    assert steps[-1].get("completedInteractions"), "the answer did not land on the live step"


def test_an_answer_after_agy_gave_up_is_refused_clearly(slow: HarnessConversation) -> None:
    harness = slow.harness
    assert harness is not None
    turn = harness.turn("run: echo too late")
    card = turn.until("response.elicitation_request")
    failed = turn.until("response.failed", timeout=TIMEOUT * 6 + 20)  # agy gave up
    error = failed["response"]["error"]
    assert error["code"] == "agy_interaction_timed_out", error
    assert "answer the card while it is shown" in error["remediation"]
    with pytest.raises(RuntimeError) as refused:
        answer(harness, card)  # the person comes back and presses Allow
    assert "refused" in str(refused.value)
    assert "no outstanding elicitation" in str(refused.value)
    steps = _of_type(slow, "CORTEX_STEP_TYPE_RUN_COMMAND")
    assert steps, "agy never asked"
    assert all(s["status"] == ERROR for s in steps), "a late answer reached agy"
    # Nothing is stuck: the next turn runs.
    after = harness.turn("hello after giving up")
    after.until("response.completed", timeout=30)


def test_an_unanswered_card_blocks_neither_stop_nor_the_next_turn(
    slow: HarnessConversation,
) -> None:
    harness = slow.harness
    assert harness is not None
    turn = harness.turn("run: echo never answered")
    turn.until("response.elicitation_request")
    assert harness.post({"type": "interrupt"}).status_code == 204
    turn.until("response.cancelled", timeout=20)
    after = harness.turn("hello after stop")
    after.until("response.completed", timeout=30)
    assert "response.elicitation_request" not in after.kinds()


def test_an_unanswered_card_does_not_hold_up_shutdown(slow: HarnessConversation) -> None:
    harness = slow.harness
    assert harness is not None
    turn = harness.turn("run: echo waiting at shutdown")
    turn.until("response.elicitation_request")
    thread = harness._thread  # uvicorn's serving thread
    slow.close()
    assert not thread.is_alive(), "the harness did not shut down with a card waiting"
    # A new harness serves the conversation at once (answering the card if it is asked again).
    second = slow.open()
    again = second.turn("are you there?")
    while (event := again.next(60)) is not None:
        if event.get("type") == "response.elicitation_request":
            answer(second, event)
    assert again.kinds()[-1] in ("response.completed", "response.failed"), again.kinds()
    assert _of_type(slow, "CORTEX_STEP_TYPE_USER_INPUT")[-1]["userInput"]["userResponse"] == (
        "are you there?"
    )
