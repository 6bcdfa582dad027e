"""Windows and prices of agy's models: agy's catalog first, the plugin's table after; a turn
priced whole, each call at its own model's price, or not at all."""

from __future__ import annotations

import pytest

from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.models.model_facts import MODEL_FACTS, facts_for, turn_cost, window_for
from omnigent_agy.reading.steps import ModelUsage

PRO_HIGH, FLASH, OSS, NEW = "MODEL_M20", "MODEL_M50", "MODEL_OSS", "MODEL_M99"


def catalog(*, pro_window: object = None) -> ModelCatalog:
    pro: dict[str, object] = {"model": PRO_HIGH, "displayName": "Gemini 3 Pro (High)"}
    if pro_window is not None:
        pro["maxTokens"] = pro_window
    return ModelCatalog.from_response(
        {
            "response": {
                "models": {
                    "pro-high": pro,
                    "flash": {"model": FLASH, "displayName": "Gemini 3 Flash"},
                    "oss": {"model": OSS, "displayName": "GPT-OSS 120B (Medium)"},
                    "new": {"model": NEW, "displayName": "Gemini 9 Ultra", "maxTokens": "2000000"},
                }
            }
        }
    )


def test_agys_own_window_wins_over_the_table() -> None:
    assert window_for(catalog(pro_window=999_999), PRO_HIGH) == (
        999_999,
        "agy's catalog (maxTokens)",
    )
    # An int64-like string is read too; a model the table does not know keeps agy's word.
    assert window_for(catalog(), NEW) == (2_000_000, "agy's catalog (maxTokens)")


def test_without_agys_word_the_table_gives_the_window_and_says_so() -> None:
    window, source = window_for(catalog(), PRO_HIGH) or (0, "")
    assert window == 1_048_576
    assert source.startswith("omnigent-agy's table")
    assert "ai.google.dev" in source
    assert window_for(catalog(), "MODEL_NOBODY") is None
    assert window_for(None, PRO_HIGH) is None


@pytest.mark.parametrize("bad", ["lots", -5, 0, True, 1.5])
def test_a_window_agy_writes_badly_is_not_believed(bad: object) -> None:
    assert window_for(catalog(pro_window=bad), PRO_HIGH) == (
        1_048_576,
        window_for(catalog(), PRO_HIGH)[1],  # type: ignore[index]
    )


def test_effort_variants_share_their_familys_row() -> None:
    assert facts_for("Gemini 3 Pro (Low)") is facts_for("Gemini 3 Pro (High)") is not None
    assert facts_for("Claude Sonnet 4.5 (Thinking)") is facts_for("Claude Sonnet 4.5")
    assert facts_for("Gemini 9 Ultra") is None
    assert facts_for(None) is None


def test_every_row_names_its_source_and_agy_version() -> None:
    for row in MODEL_FACTS:
        assert row.window > 0
        assert row.source
        assert "agy 1.2" in row.agy_version


def test_each_call_is_priced_at_its_own_models_rate() -> None:
    answer = ModelUsage(
        PRO_HIGH, input_tokens=10_000, output_tokens=1_000, cache_read_tokens=50_000
    )
    summary = ModelUsage(FLASH, input_tokens=2_000, output_tokens=100)
    cost = turn_cost((answer, summary), catalog())
    pro = (10_000 * 2.0 + 1_000 * 12.0 + 50_000 * 0.2) / 1e6
    flash = (2_000 * 0.5 + 100 * 3.0) / 1e6
    assert cost == pytest.approx(pro + flash)


def test_a_call_past_200k_tokens_of_prompt_pays_the_long_context_rate() -> None:
    short = ModelUsage(PRO_HIGH, input_tokens=150_000, cache_read_tokens=50_000, output_tokens=10)
    long = ModelUsage(PRO_HIGH, input_tokens=150_000, cache_read_tokens=50_001, output_tokens=10)
    assert turn_cost((short,), catalog()) == pytest.approx(
        (150_000 * 2.0 + 50_000 * 0.2 + 10 * 12.0) / 1e6
    )
    assert turn_cost((long,), catalog()) == pytest.approx(
        (150_000 * 4.0 + 50_001 * 0.4 + 10 * 18.0) / 1e6
    )


def test_one_call_of_unknown_price_leaves_the_whole_turn_unpriced() -> None:
    known = ModelUsage(PRO_HIGH, input_tokens=100, output_tokens=10)
    assert turn_cost((known, ModelUsage(OSS, input_tokens=5, output_tokens=5)), catalog()) is None
    assert turn_cost((known, ModelUsage(NEW, input_tokens=5)), catalog()) is None
    assert turn_cost((known, ModelUsage(None, input_tokens=5)), catalog()) is None
    assert turn_cost((), catalog()) is None
    assert turn_cost((known,), None) is None
