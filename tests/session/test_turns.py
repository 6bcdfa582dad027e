"""How a turn ends, decided from its events (pure)."""

from __future__ import annotations

from omnigent_agy.reading.events import AssistantMessage, ErrorReported, TurnBoundary, UsageReported
from omnigent_agy.reading.reader import TurnEnded
from omnigent_agy.reading.steps import ModelUsage, StepKey
from omnigent_agy.session.turn_results import TurnTally

KEY = StepKey("c", "t", 0)
END = TurnEnded("c", KEY, ModelUsage(input_tokens=30, output_tokens=7))


def key(index: int) -> StepKey:
    return StepKey("c", "t", index)


def error(index: int, *, benign: bool = False) -> ErrorReported:
    return ErrorReported(key=key(index), message="model unavailable", detail=None, benign=benign)


def tally(*events: object) -> TurnTally:
    result = TurnTally()
    result.note(TurnBoundary(key=KEY, text="hi", execution_id=None, source=None))
    for event in events:
        result.note(event)  # type: ignore[arg-type]
    return result


def test_a_plain_turn_completes_with_every_message_in_order() -> None:
    done = tally(
        AssistantMessage(key(1), "first", "CORTEX_STEP_STATUS_DONE", None),
        AssistantMessage(key(3), "second", "CORTEX_STEP_STATUS_DONE", None),
    ).result(END, interrupted=False)
    assert done.status == "completed"
    assert done.text == "first\n\nsecond"
    assert done.usage == END.usage


def test_an_interrupted_turn_is_cancelled_even_after_an_error() -> None:
    assert tally(error(1)).result(END, interrupted=True).status == "cancelled"


def test_an_error_agy_did_not_recover_from_fails_the_turn() -> None:
    failed = tally(AssistantMessage(key(1), "trying", "DONE", None), error(2))
    result = failed.result(END, interrupted=False)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.message == "model unavailable"


def test_an_error_followed_by_an_answer_or_a_benign_one_does_not() -> None:
    recovered = tally(error(1), AssistantMessage(key(2), "done anyway", "DONE", None))
    assert recovered.result(END, interrupted=False).status == "completed"
    assert tally(error(1, benign=True)).result(END, interrupted=False).status == "completed"


def test_the_context_fill_is_the_largest_prompt_not_the_last() -> None:
    big = ModelUsage(model="M20", input_tokens=900, cache_read_tokens=16000)
    small = ModelUsage(model="M50", input_tokens=35)
    result = tally(UsageReported(key(1), big), UsageReported(key(2), small)).result(
        END, interrupted=False
    )
    assert result.last_call == big
