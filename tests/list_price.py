"""A turn at its models' list prices, worked out from agy's own steps, independently of the
plugin's table (what the tests hold `usage.cost_usd` and the web's cost to)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: USD per million tokens (input, output, cache read) of agy-sim's models a plain turn uses:
#: its answer on Gemini 3 Pro, agy's CHECKPOINT summary on Gemini 3 Flash.
RATES = {"Gemini 3 Pro (High)": (2.0, 12.0, 0.2), "Gemini 3 Flash": (0.5, 3.0, 0.05)}


def list_price(calls: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> float:
    """The sum over `calls` (``modelUsage`` objects) at each call's model's rate; `names`
    maps agy's model enums to display names (from GetAvailableModels)."""
    total = 0.0
    for usage in calls:
        rate_in, rate_out, rate_cache = RATES[names[usage["model"]]]
        total += (
            int(usage.get("inputTokens", 0)) * rate_in
            + int(usage.get("outputTokens", 0)) * rate_out
            + int(usage.get("cacheReadTokens", 0)) * rate_cache
        ) / 1_000_000
    return total


def model_names(models_answer: Mapping[str, Any]) -> dict[str, str]:
    """agy's enum → display name, from a GetAvailableModels answer."""
    return {m["model"]: m["displayName"] for m in models_answer["response"]["models"].values()}
