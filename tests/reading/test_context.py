"""agy's estimate of its context in use, read from GetCascadeTrajectoryGeneratorMetadata's
answer (docs/wire.md §3, §9)."""

from __future__ import annotations

from typing import Any

from omnigent_agy.reading.context import estimated_context


def call(estimate: object = None, **chat: Any) -> dict[str, Any]:
    model: dict[str, Any] = {"model": "MODEL_M20", **chat}
    if estimate is not None:
        model["chatStartMetadata"] = {"contextWindowMetadata": {"estimatedTokensUsed": estimate}}
    return {"stepIndices": [3], "chatModel": model}


def test_the_newest_estimate_is_the_largest_number_or_int64_string() -> None:
    answer = {"generatorMetadata": [call(4_000), call(), call("9100"), call(8_000)]}
    assert estimated_context(answer) == 9_100


def test_no_estimate_anywhere_is_none() -> None:
    assert estimated_context({}) is None
    assert estimated_context({"generatorMetadata": [call(), call(0), call("x"), call(-3)]}) is None
    assert estimated_context({"generatorMetadata": "garbage"}) is None
    assert estimated_context({"generatorMetadata": [None, 5, {"chatModel": "x"}]}) is None
