"""The load-with-faults run's counting (tests/loadmix.py) sees a turn lost or duplicated: the
e2e test and the benchmark report 0 of each only if these checks can say otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from loadmix import Played, check_turn, late_failure

USER = "CORTEX_STEP_TYPE_USER_INPUT"
PLANNER = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
DONE = "CORTEX_STEP_STATUS_DONE"


def user(text: str) -> dict[str, Any]:
    return {"type": USER, "userInput": {"userResponse": text}}


def answer(text: str) -> dict[str, Any]:
    return {"type": PLANNER, "status": DONE, "plannerResponse": {"response": text}}


def played(text: str, *deltas: str, end: str = "response.completed") -> Played:
    events = [{"type": "response.output_text.delta", "delta": d} for d in deltas]
    return Played(text, [*events, {"type": end}])


STEPS = [user("first"), answer("Hello there."), user("second"), answer("Again.")]


def test_a_turn_received_as_committed_passes() -> None:
    check_turn(STEPS, played("first", "Hello ", "there."))
    check_turn(STEPS, played("second", "Again."))


@pytest.mark.parametrize(
    ("turn", "steps", "verdict"),
    [
        (played("first", "Hello ", "Hello ", "there."), STEPS, "duplicated"),
        (played("first", "Hello "), STEPS, "lost"),
        (played("first", "Hello there.", end="response.failed"), STEPS, "failed"),
        (played("first", "Hello there.", end="session.failed"), STEPS, "failed"),
        (played("first", "Hello there.", end="stream.end"), STEPS, "lost"),
        (played("first", "Hello there."), [*STEPS, user("first")], "duplicated"),
        (played("third", "Hello there."), STEPS, "lost"),
    ],
)
def test_a_turn_lost_or_duplicated_is_named(
    turn: Played, steps: list[dict[str, Any]], verdict: str
) -> None:
    with pytest.raises(AssertionError, match=f"^{verdict}"):
        check_turn(steps, turn)


def test_a_card_shown_twice_is_duplicated() -> None:
    steps = [user("run"), {"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "completedInteractions": [{}]}]
    card = {"type": "response.elicitation_request", "elicitation_id": "e1"}
    turn = Played("run", [card, card, {"type": "response.completed"}])
    with pytest.raises(AssertionError, match=r"^duplicated"):
        check_turn(steps, turn)


# omnigent's runner, its harness killed after relaying a turn's response.completed but before
# the harness's stream ended, reports that turn failed too (runner/app.py, proxy_stream).
CUT = (
    "Harness stream connection error: peer closed connection without sending complete message "
    "body (incomplete chunked read)"
)
LATE = {
    "type": "response.failed",
    "source": "harness",
    "response": {"status": "failed", "error": {"code": "connection_error", "message": CUT}},
}
REFUSED = "Harness stream connection error: [Errno 111] Connection refused"


def test_omnigents_late_failure_of_a_completed_turn_is_not_the_next_turns_end() -> None:
    completed = played("first", "Hello there.")
    assert late_failure(LATE, started=False, before=completed)
    # Once the next turn started, a failure is its own; and it is nobody's after a failed turn.
    assert not late_failure(LATE, started=True, before=completed)
    assert not late_failure(LATE, started=False, before=played("first", end="response.failed"))
    assert not late_failure(LATE, started=False, before=None)


@pytest.mark.parametrize(
    "event",
    [
        {**LATE, "response": {**LATE["response"], "id": "resp_1"}},
        {**LATE, "response": {"status": "failed", "error": {"code": "harness_spawn_failed"}}},
        # The next message sent to the killed process's socket: that turn's own failure.
        {
            **LATE,
            "response": {
                "status": "failed",
                "error": {"code": "connection_error", "message": REFUSED},
            },
        },
        {"type": "response.cancelled", "response": {}},
        {"type": "response.completed", "response": {}},
    ],
    ids=["with a response id", "another code", "refused", "cancelled", "completed"],
)
def test_any_other_ending_before_the_turn_started_is_the_turns(event: dict[str, Any]) -> None:
    assert not late_failure(event, started=False, before=played("first", "Hello there."))


def test_a_gate_without_a_card_is_lost_unless_omnigent_answered_it_itself() -> None:
    steps = [user("run"), {"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "completedInteractions": [{}]}]
    turn = Played("run", [{"type": "response.completed"}])
    with pytest.raises(AssertionError, match=r"^agy asked 1 times, 0 cards were shown"):
        check_turn(steps, turn)
    # omnigent's runner denied it itself (its policy call failed): that gate needs no card.
    assert check_turn(steps, turn, decided_by_omnigent=1) == 1
    card = {"type": "response.elicitation_request", "elicitation_id": "e1"}
    assert check_turn(steps, Played("run", [card, turn.events[0]]), decided_by_omnigent=1) == 0
