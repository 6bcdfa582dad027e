"""A session's configuration options on ACP: the model and ``thought_level``.

What is reported of ``agy acp``: a config option ``thought_level`` and no ``mode``. Which
model an ACP session runs is chosen, as the ACP specification has it now, with a config option
of category ``model`` set through ``session/set_config_option`` (a **guess** for agy: nothing
recorded says how it offers its models there). agy's catalog encodes the effort in the model
itself ("Gemini 3 Pro (Low)", "(High)", docs/wire.md §5); here the ``model`` option lists the
families and ``thought_level`` picks the variant, so the two options together name one model
of the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from agy_sim.acp_wire import INVALID_PARAMS, RpcError
from agy_sim.catalog import CatalogModel, ModelCatalog

MODEL_OPTION: Final = "model"
THOUGHT_OPTION: Final = "thought_level"
LEVELS: Final = ("low", "medium", "high")
_VARIANT = re.compile(r"\s*\((Low|Medium|High)\)$")


def family_of(model: CatalogModel) -> str:
    """The display name without its effort: "Gemini 3 Pro (Low)" → "Gemini 3 Pro"."""
    return _VARIANT.sub("", model.display_name)


def level_of(model: CatalogModel) -> str | None:
    match = _VARIANT.search(model.display_name)
    return match.group(1).lower() if match else None


def family_id(family: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", family.lower()).strip("-")


@dataclass(slots=True)
class SessionConfig:
    """The model family and thought level one ACP session runs with."""

    catalog: ModelCatalog
    family: str
    level: str

    @classmethod
    def starting_on(cls, catalog: ModelCatalog, model: CatalogModel) -> SessionConfig:
        return cls(catalog, family_id(family_of(model)), level_of(model) or "high")

    def families(self) -> dict[str, list[CatalogModel]]:
        grouped: dict[str, list[CatalogModel]] = {}
        for model in self.catalog.models:
            if not model.disabled:
                grouped.setdefault(family_id(family_of(model)), []).append(model)
        return grouped

    @property
    def model(self) -> CatalogModel:
        """The catalog's model for the family at the level; a family without that level
        runs its nearest variant (GPT-OSS 120B has only Medium)."""
        variants = self.families()[self.family]
        by_level = {level_of(m): m for m in variants}
        if self.level in by_level:
            return by_level[self.level]
        if None in by_level:
            return by_level[None]
        order = sorted(by_level, key=lambda lv: abs(LEVELS.index(lv or "high") - self._rank()))
        return by_level[order[0]]

    def _rank(self) -> int:
        return LEVELS.index(self.level)

    def set(self, config_id: Any, value: Any) -> None:
        """``session/set_config_option``: a known option and one of its values, else an
        invalid-params error naming what is offered."""
        if config_id == MODEL_OPTION:
            families = self.families()
            if value not in families:
                raise RpcError(
                    INVALID_PARAMS, f"unknown model {value!r}; offered: {', '.join(families)}"
                )
            self.family = str(value)
        elif config_id == THOUGHT_OPTION:
            if value not in LEVELS:
                raise RpcError(
                    INVALID_PARAMS, f"unknown thought_level {value!r}; offered: {', '.join(LEVELS)}"
                )
            self.level = str(value)
        else:
            raise RpcError(
                INVALID_PARAMS,
                f"unknown config option {config_id!r}; offered: {MODEL_OPTION}, {THOUGHT_OPTION}",
            )

    def to_wire(self) -> list[dict[str, Any]]:
        """``configOptions`` as ``session/new`` and ``session/set_config_option`` answer."""
        models = [
            {"value": key, "name": family_of(variants[0])}
            | ({"description": d} if (d := variants[-1].description) else {})
            for key, variants in self.families().items()
        ]
        return [
            {
                "id": MODEL_OPTION,
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": self.family,
                "options": models,
            },
            {
                "id": THOUGHT_OPTION,
                "name": "Thinking",
                "category": "thought_level",
                "type": "select",
                "currentValue": self.level,
                "options": [{"value": level, "name": level.title()} for level in LEVELS],
            },
        ]
