"""The model catalog: GetAvailableModels → names a person can type → agy's plan-model enum.

agy's model enums are opaque (``MODEL_PLACEHOLDER_M20``) and change between versions,
and the effort is part of the model: "Gemini 3 Pro (High)" and "Gemini 3 Pro (Low)" are
two enums (docs/wire.md §5). So nothing here is hard-coded: every turn's model is resolved
against the catalog agy reports, by enum, display name, a slug of the display name
(``gemini-3-pro-high``; omnigent's ``/model`` accepts no spaces or parentheses), a base
name plus ``reasoning_effort``, or an alias. An unknown name is an error that lists the
valid ones, never a silent fallback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from omnigent_agy.errors import InvalidEffortError, UnknownModelError

_logger = logging.getLogger(__name__)

EFFORTS = ("low", "medium", "high")
# An unqualified model is agy's standard variant: closest to "medium" when choosing.
_EFFORT_RANK = {"low": 0, "medium": 1, "high": 2, None: 1}
# Qualifiers in display names that encode an effort; "(Thinking)" is Claude's.
_QUALIFIER_EFFORT = {"low": "low", "medium": "medium", "high": "high", "thinking": "high"}
_QUALIFIED = re.compile(r"^(?P<base>.*?)\s*\((?P<qualifier>[^()]*)\)\s*$")

# Built-in aliases name a family, not a version: the words every slug token of the
# chosen base model must contain. The newest (recommended first) family member wins.
FAMILY_ALIASES: dict[str, tuple[str, ...]] = {
    "gemini-pro": ("gemini", "pro"),
    "gemini-flash": ("gemini", "flash"),
    "claude-sonnet": ("claude", "sonnet"),
    "claude-opus": ("claude", "opus"),
    "gpt-oss": ("gpt", "oss"),
}
_ALIAS_DEPTH = 8


def slug(name: str) -> str:
    """``"Gemini 3 Pro (High)"`` → ``"gemini-3-pro-high"``; dots survive (``4.5``)."""
    return "-".join(re.findall(r"[a-z0-9.]+", name.lower())).strip(".-")


def _slugs(name: str) -> tuple[str, str]:
    """Both spellings people type: ``gemini-3.1-pro`` and ``gemini-3-1-pro``."""
    dotted = slug(name)
    return dotted, dotted.replace(".", "-")


def split_effort(display_name: str) -> tuple[str, str | None]:
    """``"Gemini 3 Pro (High)"`` → ``("Gemini 3 Pro", "high")``; other qualifiers stay."""
    match = _QUALIFIED.match(display_name)
    if match is not None:
        effort = _QUALIFIER_EFFORT.get(match["qualifier"].strip().lower())
        if effort is not None:
            return match["base"].strip(), effort
    return display_name.strip(), None


@dataclass(frozen=True, slots=True)
class ModelEntry:
    enum: str
    display_name: str
    base_name: str
    effort: str | None
    key: str = ""
    recommended: bool = False
    supports_thinking: bool = False
    disabled: bool = False
    max_tokens: int | None = None
    """The context window, when agy's catalog says (``maxTokens``, docs/wire.md §3)."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """The plan model for one turn; ``via`` says how the request was understood."""

    enum: str
    display_name: str
    effort: str | None
    via: str


def _entries(payload: Mapping[str, object]) -> tuple[list[ModelEntry], str | None]:
    body = payload.get("response", payload)
    if not isinstance(body, Mapping):
        return [], None
    models = body.get("models")
    items: Iterable[tuple[str, object]] = (
        models.items()
        if isinstance(models, Mapping)
        else ((str(i), m) for i, m in enumerate(models))
        if isinstance(models, list)
        else ()
    )
    entries: list[ModelEntry] = []
    for key, raw in items:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("model"), str):
            _logger.warning("GetAvailableModels entry %r has no model enum; skipped", key)
            continue
        enum = str(raw["model"])
        display = raw.get("displayName")
        display = display.strip() if isinstance(display, str) and display.strip() else enum
        base, effort = split_effort(display)
        entries.append(
            ModelEntry(
                enum=enum,
                display_name=display,
                base_name=base,
                effort=effort,
                key=str(key),
                recommended=raw.get("recommended") is True,
                supports_thinking=raw.get("supportsThinking") is True,
                disabled=raw.get("disabled") is True,
                max_tokens=_positive(raw.get("maxTokens")),
            )
        )
    default = body.get("defaultAgentModelId")
    return entries, default if isinstance(default, str) and default else None


def _positive(value: object) -> int | None:
    """A count agy may write as a number or, being int64-like, a decimal string (§3)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def _version(base_name: str) -> tuple[float, ...]:
    return tuple(float(number) for number in re.findall(r"\d+(?:\.\d+)?", base_name))


@dataclass(frozen=True, slots=True)
class ModelCatalog:
    """The models one agy offers; ``aliases`` maps lower-case alias → target name."""

    entries: tuple[ModelEntry, ...]
    default_id: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_response(
        cls, payload: Mapping[str, object], *, aliases: Mapping[str, str] | None = None
    ) -> ModelCatalog:
        """Build from a GetAvailableModels response (docs/wire.md §3); tolerant of gaps."""
        entries, default_id = _entries(payload)
        lowered = {alias.lower(): target for alias, target in (aliases or {}).items()}
        return cls(tuple(entries), default_id, lowered)

    def display_name(self, enum: str) -> str:
        entry = self.entry(enum)
        return entry.display_name if entry is not None else enum

    def entry(self, enum: str) -> ModelEntry | None:
        """The catalog's entry for a model enum, if agy offers it."""
        return next((e for e in self.entries if e.enum == enum), None)

    def default_entry(self) -> ModelEntry:
        usable = [entry for entry in self.entries if not entry.disabled]
        wanted = (self.default_id or "").lower()
        for entry in usable:
            if wanted in (entry.enum.lower(), entry.key.lower()):
                return entry
        chosen = next((e for e in usable if e.recommended), usable[0] if usable else None)
        if chosen is None:
            raise UnknownModelError(
                "agy reported no usable models; run `agy models` to check the sign-in"
            )
        return chosen

    def valid_names(self) -> tuple[str, ...]:
        names = [
            f"{slug(e.display_name)} ({e.display_name})" for e in self.entries if not e.disabled
        ]
        names.extend(sorted(set(FAMILY_ALIASES) | set(self.aliases)))
        return tuple(names)

    def resolve_plan_model(
        self, model: str | None, reasoning_effort: str | None = None
    ) -> ResolvedModel:
        """The enum to send as ``planModel`` for ``model`` at ``reasoning_effort``."""
        effort = _check_effort(reasoning_effort)
        name, via = _clean(model), "default"
        for _ in range(_ALIAS_DEPTH):
            if name is None or name.lower() not in self.aliases:
                break
            via, name = f"alias {name!r}", _clean(self.aliases[name.lower()])
        if name is None:
            return self._pick(self._variants(self.default_entry().base_name), effort, via)
        exact = self._exact(name)
        if exact is not None:
            if effort is None:
                return self._result(exact, via if via != "default" else f"name {name!r}")
            return self._pick(self._variants(exact.base_name), effort, via)
        variants = self._variants_named(name)
        if variants:
            return self._pick(variants, effort, via if via != "default" else f"name {name!r}")
        raise UnknownModelError(
            f"agy has no model {model!r}; valid names: {', '.join(self.valid_names())}",
            valid_names=self.valid_names(),
        )

    def _exact(self, name: str) -> ModelEntry | None:
        wanted = name.lower()
        for entry in self.entries:
            if wanted in (entry.enum.lower(), entry.key.lower(), entry.display_name.lower()):
                return entry
            if wanted in _slugs(entry.display_name):
                return entry
        return None

    def _variants(self, base_name: str) -> list[ModelEntry]:
        return [e for e in self.entries if e.base_name == base_name]

    def _variants_named(self, name: str) -> list[ModelEntry]:
        wanted = name.lower()
        bases = [e.base_name for e in self.entries]
        for base in bases:
            if wanted == base.lower() or wanted in _slugs(base):
                return self._variants(base)
        words = FAMILY_ALIASES.get(wanted)
        if words is None:
            return []
        family = [b for b in dict.fromkeys(bases) if all(w in slug(b).split("-") for w in words)]
        if not family:
            return []
        recommended = {e.base_name for e in self.entries if e.recommended and not e.disabled}
        best = max(family, key=lambda base: (base in recommended, _version(base), base))
        return self._variants(best)

    def _pick(self, variants: list[ModelEntry], effort: str | None, via: str) -> ResolvedModel:
        usable = [v for v in variants if not v.disabled]
        if not usable:
            shown = variants[0].display_name if variants else "that model"
            raise UnknownModelError(
                f"{shown} is disabled in agy for this account; valid names: "
                f"{', '.join(self.valid_names())}",
                valid_names=self.valid_names(),
            )
        if effort is None:
            # agy's recommended variant, else the unqualified one, else the strongest.
            chosen = next((v for v in usable if v.recommended), None) or max(
                usable, key=lambda v: (v.effort is None, _EFFORT_RANK[v.effort])
            )
        else:
            # Nearest effort; on a tie the higher one (agy's own default leans high).
            target = _EFFORT_RANK[effort]
            chosen = min(
                usable,
                key=lambda v: (abs(_EFFORT_RANK[v.effort] - target), -_EFFORT_RANK[v.effort]),
            )
        return self._result(chosen, via)

    def _result(self, entry: ModelEntry, via: str) -> ResolvedModel:
        if entry.disabled:
            return self._pick([entry], None, via)
        return ResolvedModel(entry.enum, entry.display_name, entry.effort, via)


def _clean(name: str | None) -> str | None:
    stripped = (name or "").strip()
    return None if not stripped or stripped.lower() == "default" else stripped


def _check_effort(effort: str | None) -> str | None:
    if effort is None or not effort.strip():
        return None
    lowered = effort.strip().lower()
    if lowered not in EFFORTS:
        raise InvalidEffortError(
            f"reasoning effort {effort!r} is not one agy models offer; use low, medium or high"
        )
    return lowered
