"""The model catalog against a GetAvailableModels payload shaped per docs/wire.md §3/§5."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from omnigent_agy.errors import InvalidEffortError, UnknownModelError
from omnigent_agy.models.catalog import ModelCatalog, slug, split_effort

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PAYLOAD = json.loads((FIXTURES / "catalog" / "get_available_models.json").read_text())


@pytest.fixture
def catalog() -> ModelCatalog:
    return ModelCatalog.from_response(PAYLOAD, aliases={"Work": "Gemini 3 Flash", "w2": "work"})


@pytest.mark.parametrize(
    ("display", "base", "effort"),
    [
        ("Gemini 3 Pro (High)", "Gemini 3 Pro", "high"),
        ("Gemini 3 Pro (Low)", "Gemini 3 Pro", "low"),
        ("Gemini 3.1 Pro (Medium)", "Gemini 3.1 Pro", "medium"),
        ("Gemini 3 Flash", "Gemini 3 Flash", None),
        ("Claude Sonnet 4.5 (Thinking)", "Claude Sonnet 4.5", "high"),
        ("Gemini 2.5 Pro (Preview)", "Gemini 2.5 Pro (Preview)", None),
    ],
)
def test_split_effort(display: str, base: str, effort: str | None) -> None:
    assert split_effort(display) == (base, effort)


def test_slug_keeps_version_dots() -> None:
    assert slug("Gemini 3.1 Pro (High)") == "gemini-3.1-pro-high"
    assert slug("GPT-OSS 120B (Medium)") == "gpt-oss-120b-medium"


def test_entries_parsed_and_broken_entry_skipped(
    catalog: ModelCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    assert len(catalog.entries) == 10
    high = next(e for e in catalog.entries if e.enum == "MODEL_PLACEHOLDER_M20")
    assert (high.base_name, high.effort, high.recommended, high.key) == (
        "Gemini 3 Pro",
        "high",
        True,
        "gemini-3-pro-high",
    )
    with caplog.at_level(logging.WARNING, logger="omnigent_agy.models.catalog"):
        ModelCatalog.from_response(PAYLOAD)
    assert "broken-entry" in caplog.text


@pytest.mark.parametrize(
    ("model", "effort", "enum"),
    [
        pytest.param(None, None, "MODEL_PLACEHOLDER_M20", id="default"),
        pytest.param("default", None, "MODEL_PLACEHOLDER_M20", id="default-word"),
        pytest.param(None, "low", "MODEL_PLACEHOLDER_M18", id="default-at-low"),
        pytest.param("Gemini 3 Pro (High)", None, "MODEL_PLACEHOLDER_M20", id="display"),
        pytest.param("gemini 3 pro (low)", None, "MODEL_PLACEHOLDER_M18", id="display-case"),
        pytest.param("gemini-3-pro-high", None, "MODEL_PLACEHOLDER_M20", id="slug"),
        pytest.param("gemini-3.1-pro-low", None, "MODEL_PLACEHOLDER_M69", id="slug-dotted"),
        pytest.param("gemini-3-1-pro-low", None, "MODEL_PLACEHOLDER_M69", id="key"),
        pytest.param("model_placeholder_m50", None, "MODEL_PLACEHOLDER_M50", id="enum-case"),
        pytest.param("gemini-3.1-pro", "medium", "MODEL_PLACEHOLDER_M70", id="base-effort"),
        pytest.param("Gemini 3.1 Pro", None, "MODEL_PLACEHOLDER_M71", id="base-strongest"),
        pytest.param("Gemini 3 Pro (Low)", "high", "MODEL_PLACEHOLDER_M20", id="effort-wins"),
        pytest.param("gemini-3-pro", "medium", "MODEL_PLACEHOLDER_M20", id="tie-goes-high"),
        pytest.param("claude-sonnet-4.5", None, "MODEL_CLAUDE_4_5_SONNET", id="unqualified"),
        pytest.param(
            "claude-sonnet-4-5", "high", "MODEL_CLAUDE_4_5_SONNET_THINKING", id="thinking"
        ),
        pytest.param("claude-sonnet-4.5", "low", "MODEL_CLAUDE_4_5_SONNET", id="plain-low"),
        pytest.param("gemini-3-flash", "high", "MODEL_PLACEHOLDER_M50", id="single-variant"),
        pytest.param("gemini-pro", None, "MODEL_PLACEHOLDER_M20", id="family-recommended"),
        pytest.param("gemini-flash", None, "MODEL_PLACEHOLDER_M50", id="family"),
        pytest.param("GPT-OSS", None, "MODEL_OPENAI_GPT_OSS_120B_MEDIUM", id="family-case"),
        pytest.param("work", None, "MODEL_PLACEHOLDER_M50", id="plugin-alias"),
        pytest.param("W2", None, "MODEL_PLACEHOLDER_M50", id="alias-chain"),
    ],
)
def test_resolve_plan_model(
    catalog: ModelCatalog, model: str | None, effort: str | None, enum: str
) -> None:
    assert catalog.resolve_plan_model(model, effort).enum == enum


def test_resolution_says_how_it_was_understood(catalog: ModelCatalog) -> None:
    resolved = catalog.resolve_plan_model("work", None)
    assert resolved.via == "alias 'work'"
    assert resolved.display_name == "Gemini 3 Flash"
    assert catalog.resolve_plan_model(None, None).via == "default"


def test_unknown_model_lists_valid_names(catalog: ModelCatalog) -> None:
    with pytest.raises(UnknownModelError) as caught:
        catalog.resolve_plan_model("gpt-5", None)
    message = str(caught.value)
    assert "'gpt-5'" in message
    assert "gemini-3-pro-high (Gemini 3 Pro (High))" in message
    assert "gemini-pro" in message
    assert "work" in message
    assert "Claude Opus 4.1" not in message  # disabled models are not offered
    assert caught.value.code == "agy_model_unknown"


def test_disabled_model_is_refused_by_name(catalog: ModelCatalog) -> None:
    with pytest.raises(UnknownModelError, match=r"Claude Opus 4\.1 is disabled"):
        catalog.resolve_plan_model("claude-opus-4.1", None)
    with pytest.raises(UnknownModelError, match="disabled"):
        catalog.resolve_plan_model("claude-opus", None)


@pytest.mark.parametrize("effort", ["ultra", "none", "max"])
def test_invalid_effort(catalog: ModelCatalog, effort: str) -> None:
    with pytest.raises(InvalidEffortError, match="low, medium or high"):
        catalog.resolve_plan_model(None, effort)


def test_display_name(catalog: ModelCatalog) -> None:
    assert catalog.display_name("MODEL_PLACEHOLDER_M71") == "Gemini 3.1 Pro (High)"
    assert catalog.display_name("MODEL_NEW_UNKNOWN") == "MODEL_NEW_UNKNOWN"


def test_default_without_default_id_is_recommended() -> None:
    body = {k: v for k, v in PAYLOAD["response"].items() if k != "defaultAgentModelId"}
    catalog = ModelCatalog.from_response({"response": body})
    assert catalog.default_entry().enum == "MODEL_PLACEHOLDER_M20"


def test_default_id_may_name_the_key() -> None:
    payload = {"response": {**PAYLOAD["response"], "defaultAgentModelId": "gemini-3-flash"}}
    assert ModelCatalog.from_response(payload).default_entry().enum == "MODEL_PLACEHOLDER_M50"


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"models": {"a": {"model": "MODEL_A"}}}, id="no-response-wrapper"),
        pytest.param({"response": {"models": [{"model": "MODEL_A"}]}}, id="list-of-models"),
        pytest.param(
            {"response": {"models": {"a": {"model": "MODEL_A", "future": {"x": 1}}}}},
            id="unknown-fields",
        ),
    ],
)
def test_tolerates_shapes(payload: dict[str, object]) -> None:
    catalog = ModelCatalog.from_response(payload)
    resolved = catalog.resolve_plan_model(None, None)
    assert (resolved.enum, resolved.display_name) == ("MODEL_A", "MODEL_A")


@pytest.mark.parametrize("payload", [{}, {"response": {"models": {}}}, {"response": "junk"}])
def test_no_models_is_a_clear_error(payload: dict[str, object]) -> None:
    with pytest.raises(UnknownModelError, match="agy models"):
        ModelCatalog.from_response(payload).resolve_plan_model(None, None)
