"""What ``agy models`` printed: the models of the signed-in account (docs/wire.md §9).

agy has printed three forms, and the plugin reads all of them:

- **table** (from August 2026): a ``Fetching available models...`` line, then one model a line,
  ``<id>\\t<Display Name>[ · description]``;
- **ids** (older builds): one bare id a line;
- **json**: ``agy --output-format json models`` (the flag before the sub-command). Its shape is
  not described anywhere the plugin could read, so any list of objects (or of ids), under a
  ``models`` key or at the top, is accepted, with the id and display name under their usual
  names.

:func:`parse_models_output` never raises: what it cannot read is kept in
:attr:`ModelsListing.unread`, so a caller can say that agy printed something new instead of
silently counting it as a model. Callers never show the lines themselves (a line could carry
anything agy chose to print); they count and name the models.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = ["ListedModel", "ModelsForm", "ModelsListing", "parse_models_output"]

# "Fetching available models..." and any other progress line of that kind: words ending in an
# ellipsis, no tab. An id never has a space, so this cannot swallow one.
_PROGRESS = re.compile(r"[A-Za-z][^\t]*(?:\.\.\.|…)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_ID = re.compile(r"[\w.:/@+-]+")
_DESCRIPTION_SEP: Final = " · "
_ID_KEYS: Final = ("id", "modelId", "model_id", "name", "model")
_NAME_KEYS: Final = ("displayName", "display_name", "label", "title")
_DESCRIPTION_KEYS: Final = ("description", "desc")


class ModelsForm(StrEnum):
    """Which of agy's forms the output was in."""

    TABLE = "table"
    IDS = "ids"
    JSON = "json"
    EMPTY = "empty"


@dataclass(frozen=True, slots=True)
class ListedModel:
    """One model ``agy models`` listed; ``--model`` takes the id or the display name."""

    id: str
    display_name: str | None = None
    description: str | None = None

    @property
    def shown_name(self) -> str:
        """The name a person knows the model by."""
        return self.display_name or self.id


@dataclass(frozen=True, slots=True)
class ModelsListing:
    """The models read from ``agy models`` and the lines that could not be read."""

    form: ModelsForm
    models: tuple[ListedModel, ...]
    unread: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        """The ids, in agy's order."""
        return tuple(model.id for model in self.models)


def parse_models_output(text: str) -> ModelsListing:
    """The models in ``agy models`` output of any form (module docstring); never raises."""
    text = _ANSI.sub("", text)
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    body = [line for line in lines if not (_PROGRESS.fullmatch(line) and "\t" not in line)]
    if body and body[0][:1] in "[{":
        listing = _parse_json("\n".join(body))
        if listing is not None:
            return listing
    if not body:
        return ModelsListing(ModelsForm.EMPTY, ())
    models: list[ListedModel] = []
    unread: list[str] = []
    tabbed = False
    for line in body:
        if "\t" in line:
            tabbed = True
            ident, _, rest = line.partition("\t")
            name, _, description = rest.partition(_DESCRIPTION_SEP)
            model = _model(ident.strip(), name.strip(), description.strip())
        else:
            model = _model(line, "", "")
        if model is None:
            unread.append(line)
        else:
            models.append(model)
    form = ModelsForm.TABLE if tabbed else ModelsForm.IDS
    return ModelsListing(form, tuple(models), tuple(unread))


def _model(ident: str, name: str, description: str) -> ListedModel | None:
    if not _ID.fullmatch(ident):
        return None
    return ListedModel(ident, name or None, description or None)


def _parse_json(text: str) -> ModelsListing | None:
    try:
        data: object = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        inner = data.get("models")
        if isinstance(inner, (list, dict)):
            data = inner
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        # Keyed by id: {"gemini-3-flash": {"displayName": …}, …}
        data = [{"id": key, **value} for key, value in data.items()]
    if not isinstance(data, list):
        return ModelsListing(ModelsForm.JSON, (), (_clip(text),))
    models: list[ListedModel] = []
    unread: list[str] = []
    for entry in data:
        model = _json_model(entry)
        if model is None:
            unread.append(_clip(json.dumps(entry, ensure_ascii=False)))
        else:
            models.append(model)
    return ModelsListing(ModelsForm.JSON, tuple(models), tuple(unread))


def _json_model(entry: object) -> ListedModel | None:
    if isinstance(entry, str):
        return _model(entry.strip(), "", "")
    if not isinstance(entry, dict):
        return None
    ident = _first_text(entry, _ID_KEYS)
    name = _first_text(entry, _NAME_KEYS)
    if ident is None:
        return None
    return _model(ident, name or "", _first_text(entry, _DESCRIPTION_KEYS) or "")


def _first_text(entry: dict[str, object], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
