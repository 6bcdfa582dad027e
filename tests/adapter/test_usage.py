"""A turn's usage in omnigent's keys (omnigent_harness_agy/usage.py)."""

from __future__ import annotations

import pytest
from omnigent.community.harness.agy.usage import usage_dict

from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.reading.steps import ModelUsage
from omnigent_agy.session.turn_results import TurnResult

CATALOG = ModelCatalog.from_response(
    {
        "response": {
            "models": {
                "a": {"model": "M20", "displayName": "Gemini 3 Pro (High)"},
                "b": {"model": "OSS", "displayName": "GPT-OSS 120B (Medium)"},
            }
        }
    }
)
FIRST = ModelUsage("M20", input_tokens=1_000, output_tokens=100, cache_read_tokens=4_000)
SECOND = ModelUsage("M20", input_tokens=3_000, output_tokens=50)


def result(*calls: ModelUsage, context_used: int | None = None) -> TurnResult:
    total = calls[0]
    for call in calls[1:]:
        total = total + call
    return TurnResult(
        "completed", "hi", total, last_call=FIRST, calls=calls, context_used=context_used
    )


def test_agys_estimate_fills_the_meter_and_the_turn_is_priced() -> None:
    usage = usage_dict(result(FIRST, SECOND, context_used=7_777), catalog=CATALOG, model="M20")
    assert usage is not None
    assert usage["context_tokens"] == 7_777
    assert usage["model"] == "gemini-3-pro-preview"
    assert usage["cost_usd"] == pytest.approx((4_000 * 2 + 150 * 12 + 4_000 * 0.2) / 1e6)
    assert usage["input_tokens"] == 4_000
    assert usage["cache_read_input_tokens"] == 4_000


def test_without_agys_estimate_the_largest_prompt_fills_the_meter() -> None:
    usage = usage_dict(result(FIRST, SECOND), catalog=CATALOG, model="M20")
    assert usage is not None
    assert usage["context_tokens"] == 5_000


def test_a_model_without_an_omnigent_id_or_price_is_named_and_left_unpriced() -> None:
    oss = ModelUsage("OSS", input_tokens=10, output_tokens=10)
    usage = usage_dict(result(oss), catalog=CATALOG, model="OSS")
    assert usage is not None
    assert usage["model"] == "GPT-OSS 120B (Medium)"
    assert "cost_usd" not in usage  # unknown, never 0.0


def test_a_turn_this_process_saw_only_part_of_is_not_priced() -> None:
    # A harness process that took over mid-turn saw SECOND only; agy's total counts both.
    partial = TurnResult("completed", "hi", FIRST + SECOND, calls=(SECOND,))
    usage = usage_dict(partial, catalog=CATALOG, model="M20")
    assert usage is not None
    assert "cost_usd" not in usage


def test_no_catalog_no_model_no_cost() -> None:
    usage = usage_dict(result(FIRST), catalog=None, model=None)
    assert usage is not None
    assert "model" not in usage
    assert "cost_usd" not in usage
    assert usage_dict(TurnResult("completed", "", None)) is None
