"""What the plugin knows about agy's models beyond agy's catalog: windows, prices, names.

agy's catalog names its models by display name ("Gemini 3 Pro (High)") and opaque enums
(docs/wire.md §5); a context window is in it only where agy says (``maxTokens``, §3), and no
price ever is. omnigent looks a model's window and price up in its own model catalog, by
the provider's model id (``gemini-3-pro-preview``), which agy never names. So this table
holds, per model family as agy lists it (effort variants share a window and a price):

- ``window``: the context window in tokens, used when agy's catalog gives none;
- ``omnigent_id``: the id omnigent's model catalog knows the model by, reported as the
  turn's model so omnigent's context meter and pricing can find it (docs/in-omnigent.md,
  "Context meter and cost");
- ``price``: USD per million tokens (input, output, cache read; a second tier above a prompt
  size), only where the provider publishes one for this very model. A model without one is
  unpriced: its cost is unknown, never $0.00.

Each row names its source and the agy version whose model list the name was read from.
Figures change: a row is a fact of its date, and agy's own ``maxTokens`` wins over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from omnigent_agy.models.catalog import ModelCatalog, split_effort
from omnigent_agy.reading.steps import ModelUsage

__all__ = ["MODEL_FACTS", "ModelFacts", "Price", "facts_for", "turn_cost", "window_for"]

_MILLION: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens; ``long_*`` apply to a call whose prompt exceeds ``tier_above``."""

    input: float
    output: float
    cache_read: float
    tier_above: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cache_read: float | None = None

    def of_call(self, usage: ModelUsage) -> float:
        """One model call's cost. agy's ``inputTokens`` is taken as the uncached part of the
        prompt, ``cacheReadTokens`` as the cached part (docs/wire.md §5: not confirmed)."""
        prompt = usage.input_tokens + usage.cache_read_tokens
        long = self.tier_above is not None and prompt > self.tier_above
        rate_in = self.long_input if long and self.long_input is not None else self.input
        rate_out = self.long_output if long and self.long_output is not None else self.output
        rate_cache = (
            self.long_cache_read if long and self.long_cache_read is not None else self.cache_read
        )
        return (
            usage.input_tokens * rate_in
            + usage.output_tokens * rate_out
            + usage.cache_read_tokens * rate_cache
        ) / _MILLION


@dataclass(frozen=True, slots=True)
class ModelFacts:
    family: str
    """agy's display name without its effort qualifier ("Gemini 3 Pro")."""
    window: int
    omnigent_id: str | None
    price: Price | None
    source: str
    agy_version: str


_GOOGLE: Final = (
    "Google AI for Developers, 'Gemini models' and 'Gemini Developer API pricing' "
    "(ai.google.dev/gemini-api/docs/models, /pricing), paid tier, standard (not batch)"
)
_GEMINI_PRO_PRICE: Final = Price(
    input=2.00,
    output=12.00,
    cache_read=0.20,
    tier_above=200_000,
    long_input=4.00,
    long_output=18.00,
    long_cache_read=0.40,
)
_AGY_1_2: Final = "agy 1.2.x model list (`agy models`, public reports, docs/wire.md §9)"

MODEL_FACTS: Final[tuple[ModelFacts, ...]] = (
    ModelFacts(
        "Gemini 3 Pro",
        1_048_576,
        "gemini-3-pro-preview",
        _GEMINI_PRO_PRICE,
        f"{_GOOGLE}; Gemini 3 Pro Preview, November 2025",
        _AGY_1_2,
    ),
    ModelFacts(
        "Gemini 3.1 Pro",
        1_048_576,
        "gemini-3.1-pro-preview",
        _GEMINI_PRO_PRICE,
        f"{_GOOGLE}; Gemini 3.1 Pro Preview, listed at the 3 Pro rates (October 2026)",
        _AGY_1_2,
    ),
    ModelFacts(
        "Gemini 3 Flash",
        1_048_576,
        "gemini-3-flash-preview",
        Price(input=0.50, output=3.00, cache_read=0.05),
        f"{_GOOGLE}; Gemini 3 Flash Preview, December 2025",
        _AGY_1_2,
    ),
    ModelFacts(
        "Claude Sonnet 4.5",
        200_000,
        "claude-sonnet-4-5",
        # Anthropic's list price, which Vertex AI (where agy's Claude runs) matches.
        Price(input=3.00, output=15.00, cache_read=0.30),
        "Anthropic, 'Models overview' and 'Pricing' (docs.claude.com), Claude Sonnet 4.5, "
        "September 2025; the 1M-token window is a beta agy does not use",
        _AGY_1_2,
    ),
    ModelFacts(
        "GPT-OSS 120B",
        131_072,
        None,  # each host names it its own way; agy does not say whose it runs
        None,  # open weights served by whichever host agy's backend uses: no price of its own
        "OpenAI, gpt-oss model card (openai.com/index/gpt-oss-model-card), August 2025",
        _AGY_1_2,
    ),
)


def facts_for(display_name: str | None) -> ModelFacts | None:
    """The row for a model agy names by its display name, any effort variant of it."""
    if not display_name:
        return None
    family, _ = split_effort(display_name)
    wanted = family.casefold()
    return next((row for row in MODEL_FACTS if row.family.casefold() == wanted), None)


def window_for(catalog: ModelCatalog | None, enum: str | None) -> tuple[int, str] | None:
    """A model's context window and where it came from: agy's catalog when it says, else
    this table; None when neither knows the model."""
    entry = catalog.entry(enum) if catalog is not None and enum else None
    if entry is not None and entry.max_tokens:
        return entry.max_tokens, "agy's catalog (maxTokens)"
    row = facts_for(entry.display_name if entry is not None else None)
    if row is None:
        return None
    return row.window, f"omnigent-agy's table ({row.source})"


def turn_cost(calls: Sequence[ModelUsage], catalog: ModelCatalog | None) -> float | None:
    """The turn's cost at its models' list prices, each call at its own model's price (agy's
    CHECKPOINT summaries run on another model, docs/wire.md §5); None when any call's price
    is unknown: a turn is priced whole or not at all."""
    if not calls or catalog is None:
        return None
    total = 0.0
    for call in calls:
        entry = catalog.entry(call.model) if call.model else None
        row = facts_for(entry.display_name if entry is not None else None)
        if row is None or row.price is None:
            return None
        total += row.price.of_call(call)
    return total
