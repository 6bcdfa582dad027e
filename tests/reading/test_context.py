"""agy's estimate of its context in use, read from GetCascadeTrajectoryGeneratorMetadata's
answer (docs/wire.md §3, §9)."""

from __future__ import annotations

from typing import Any

from omnigent_agy.reading.context import estimated_context


def call(estimate: object = None, steps: object = (3,), **chat: Any) -> dict[str, Any]:
    model: dict[str, Any] = {"model": "MODEL_M20", **chat}
    if estimate is not None:
        model["chatStartMetadata"] = {"contextWindowMetadata": {"estimatedTokensUsed": estimate}}
    return {"stepIndices": list(steps) if isinstance(steps, tuple) else steps, "chatModel": model}


def test_the_newest_estimate_is_the_latest_calls_number_or_int64_string() -> None:
    answer = {"generatorMetadata": [call(4_000, (1,)), call(None, (2,)), call("9100", (5,))]}
    assert estimated_context(answer) == 9_100


def test_after_agy_compacts_its_context_the_estimate_drops() -> None:
    # A summary (agy's CHECKPOINT, no estimate of its own) stands in for the conversation:
    # the call after it starts from far less, and that is how full the window is now.
    answer = {
        "generatorMetadata": [
            call(40_000, (3,)),
            call(90_000, (9,)),
            call(None, (10,)),
            call("12000", (12,)),
        ]
    }
    assert estimated_context(answer) == 12_000


def test_entries_out_of_order_are_put_back_in_order_by_their_steps() -> None:
    answer = {"generatorMetadata": [call(12_000, ("14",)), call(90_000, (9, 11)), call(500, ())]}
    assert estimated_context(answer) == 12_000
    # Without steps, the later entry is the newer.
    assert estimated_context({"generatorMetadata": [call(9, None), call(7, "x")]}) == 7


def test_no_estimate_anywhere_is_none() -> None:
    assert estimated_context({}) is None
    assert estimated_context({"generatorMetadata": [call(), call(0), call("x"), call(-3)]}) is None
    assert estimated_context({"generatorMetadata": "garbage"}) is None
    assert estimated_context({"generatorMetadata": [None, 5, {"chatModel": "x"}]}) is None
