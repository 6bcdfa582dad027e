"""The models the simulator serves through GetAvailableModels (docs/wire.md §3, §5).

Real agy encodes the reasoning effort in the model enum itself: "Gemini 3 Pro (Low)",
"(Medium)" and "(High)" are three different enums, and Claude's "Thinking" variant is its
own enum. Clients must resolve display names through GetAvailableModels and never
hard-code an enum, so the simulator deliberately serves opaque ``MODEL_PLACEHOLDER_M<n>``
names (as real agy does for its newest models) next to descriptive ones, and keys the
``models`` map by a slug that is *not* the enum, so a client that confuses the two fails
here as it would against agy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

GEMINI_PROVIDER: Final = "API_PROVIDER_GOOGLE_GEMINI"
# No recorded Claude step exists; the provider name is a guess and nothing should key on it.
ANTHROPIC_PROVIDER: Final = "API_PROVIDER_ANTHROPIC_VERTEX"
# The windows public reports of Antigravity's model catalog show (``maxTokens``); GPT-OSS is
# served without one, so a client's fallback for a model agy says nothing about is exercised.
GEMINI_WINDOW: Final = 1_048_576


@dataclass(frozen=True, slots=True)
class CatalogModel:
    """One entry of GetAvailableModels' ``response.models`` map."""

    key: str
    model: str
    display_name: str
    recommended: bool = False
    supports_thinking: bool = False
    thinking_budget: int = 0
    disabled: bool = False
    api_provider: str = GEMINI_PROVIDER
    description: str = ""
    """What `agy models` prints after the display name (docs/wire.md §9); not on the wire."""
    max_tokens: int = 0
    """The model's context window, ``maxTokens`` on the wire (docs/wire.md §3: reported of
    Antigravity's model catalog, a **guess** that agy's GetAvailableModels passes it on)."""
    max_output_tokens: int = 0

    def to_wire(self) -> dict[str, Any]:
        """Protojson of the entry: zero values are omitted, as agy does (docs/wire.md §3)."""
        entry: dict[str, Any] = {"model": self.model, "displayName": self.display_name}
        if self.recommended:
            entry["recommended"] = True
        if self.supports_thinking:
            entry["supportsThinking"] = True
        if self.thinking_budget:
            entry["thinkingBudget"] = self.thinking_budget
        if self.disabled:
            entry["disabled"] = True
        if self.max_tokens:
            entry["maxTokens"] = self.max_tokens
        if self.max_output_tokens:
            entry["maxOutputTokens"] = self.max_output_tokens
        return entry


DEFAULT_MODELS: Final[tuple[CatalogModel, ...]] = (
    CatalogModel(
        "gemini-3-pro-low",
        "MODEL_PLACEHOLDER_M18",
        "Gemini 3 Pro (Low)",
        supports_thinking=True,
        thinking_budget=1024,
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-pro-medium",
        "MODEL_PLACEHOLDER_M19",
        "Gemini 3 Pro (Medium)",
        supports_thinking=True,
        thinking_budget=8192,
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-pro-high",
        "MODEL_PLACEHOLDER_M20",
        "Gemini 3 Pro (High)",
        recommended=True,
        supports_thinking=True,
        thinking_budget=32768,
        description="Advanced reasoning",
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-1-pro-low",
        "MODEL_PLACEHOLDER_M69",
        "Gemini 3.1 Pro (Low)",
        supports_thinking=True,
        thinking_budget=1024,
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-1-pro-medium",
        "MODEL_PLACEHOLDER_M70",
        "Gemini 3.1 Pro (Medium)",
        supports_thinking=True,
        thinking_budget=8192,
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-1-pro-high",
        "MODEL_PLACEHOLDER_M71",
        "Gemini 3.1 Pro (High)",
        supports_thinking=True,
        thinking_budget=32768,
        description="Advanced reasoning",
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "gemini-3-flash",
        "MODEL_PLACEHOLDER_M50",
        "Gemini 3 Flash",
        supports_thinking=True,
        description="Fast and efficient",
        max_tokens=GEMINI_WINDOW,
        max_output_tokens=65_536,
    ),
    CatalogModel(
        "claude-sonnet-4-5",
        "MODEL_CLAUDE_4_5_SONNET",
        "Claude Sonnet 4.5",
        api_provider=ANTHROPIC_PROVIDER,
        max_tokens=200_000,
        max_output_tokens=64_000,
    ),
    CatalogModel(
        "claude-sonnet-4-5-thinking",
        "MODEL_CLAUDE_4_5_SONNET_THINKING",
        "Claude Sonnet 4.5 (Thinking)",
        supports_thinking=True,
        api_provider=ANTHROPIC_PROVIDER,
        max_tokens=200_000,
        max_output_tokens=64_000,
    ),
    CatalogModel(
        "gpt-oss-120b-medium",
        "MODEL_OPENAI_GPT_OSS_120B_MEDIUM",
        "GPT-OSS 120B (Medium)",
        supports_thinking=True,
    ),
)

DEFAULT_MODEL_ENUM: Final = "MODEL_PLACEHOLDER_M20"
# The model real agy used for its CHECKPOINT summaries (recorded/agy-live/checkpoint.json):
# a different model from the plan model, so its usage must not be mistaken for the turn's.
CHECKPOINT_MODEL_ENUM: Final = "MODEL_PLACEHOLDER_M50"


class ModelCatalog:
    """Lookup over the served models; the order is the order GetAvailableModels lists."""

    __slots__ = ("_by_enum", "_default", "_models")

    def __init__(
        self, models: Iterable[CatalogModel] = DEFAULT_MODELS, *, default_model: str | None = None
    ) -> None:
        self._models = tuple(models)
        if not self._models:
            raise ValueError("a model catalog needs at least one model")
        self._by_enum: Mapping[str, CatalogModel] = {m.model: m for m in self._models}
        if default_model is None:
            recommended = [m for m in self._models if m.recommended]
            default_model = (recommended or list(self._models))[0].model
        if default_model not in self._by_enum:
            raise ValueError(f"default model {default_model!r} is not in the catalog")
        self._default = self._by_enum[default_model]

    @property
    def models(self) -> tuple[CatalogModel, ...]:
        return self._models

    @property
    def default(self) -> CatalogModel:
        return self._default

    def by_enum(self, model: str) -> CatalogModel | None:
        return self._by_enum.get(model)

    def resolve(self, name: str) -> CatalogModel | None:
        """A model by enum, key or display name (case-insensitive); for ``--model``."""
        wanted = name.strip().casefold()
        for entry in self._models:
            if wanted in {entry.model.casefold(), entry.key, entry.display_name.casefold()}:
                return entry
        return None

    def to_wire(self) -> dict[str, Any]:
        """The GetAvailableModels response body (docs/wire.md §3)."""
        return {
            "response": {
                "models": {m.key: m.to_wire() for m in self._models},
                "defaultAgentModelId": self._default.key,
            }
        }
