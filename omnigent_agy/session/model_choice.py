"""Which model a turn runs on: omnigent's choice when it changed, else agy's own.

A person switches agy's model in two places: omnigent's ``/model`` (and the composer's effort),
which reaches the harness with every turn, and agy's own ``/model`` typed on its screen (the
Terminal view's ``agy`` terminal, docs/in-omnigent.md). agy wants a model on every message sent
over RPC (docs/wire.md §3), so the plugin always names one; naming omnigent's every time
would undo a switch typed in agy. So, for each turn:

1. **omnigent's choice** (the agent's model or the ``/model`` override, at the turn's effort)
   applies on a conversation's first turn and whenever it changed since it was last applied;
2. else **agy's own switch**: when the model agy's settings name (``model`` in
   ``antigravity-cli/settings.json``, docs/wire.md §9) changed since the last turn of the same
   agy process, the person typed ``/model`` in agy, and that model applies;
3. else **the conversation's model**: the one the last turn ran on.

What was applied is kept in the conversation's state directory (``model.json``), so a
harness process started again later knows it too. An agy started again (after a sweep) has
its settings seeded afresh, which says nothing about a switch, so 2 waits for its next turn.
That ``/model`` writes the settings' ``model`` is a guess (agy-sim does; docs/simulator.md); with
an agy that does not, rule 2 never fires and a switch typed in agy lasts until omnigent's
choice changes, which is what people got before.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from omnigent_agy.agy.gemini_home import SETTINGS_FILE
from omnigent_agy.agy.statedir import SessionStateDir, write_private_file
from omnigent_agy.errors import UnknownModelError
from omnigent_agy.models.catalog import ModelCatalog, ResolvedModel

__all__ = ["AppliedModel", "ModelChooser", "ModelSource", "pick_source", "settings_model"]

_logger = logging.getLogger(__name__)

_FILE: Final = "model.json"
_MODEL_KEY: Final = "model"

type Asked = tuple[str | None, str | None]
"""omnigent's model and effort for a turn, as asked."""


class ModelSource(StrEnum):
    """Whose choice a turn's model is."""

    OMNIGENT = "omnigent's choice"
    AGY = "switched in agy's own screen"
    CONVERSATION = "the model the conversation is on"


@dataclass(frozen=True, slots=True)
class AppliedModel:
    """The model the conversation's last turn was sent on, and what it came from."""

    model: str | None
    effort: str | None
    enum: str
    agy_model: str | None
    """What agy's settings named then (its TUI's model)."""
    agy_pid: int

    @property
    def asked(self) -> Asked:
        return self.model, self.effort


def pick_source(
    applied: AppliedModel | None, asked: Asked, agy_model: str | None, agy_pid: int
) -> ModelSource:
    """The rule of the module doc, on what is known now."""
    if applied is None or applied.asked != asked:
        return ModelSource.OMNIGENT
    if applied.agy_pid == agy_pid and agy_model is not None and agy_model != applied.agy_model:
        return ModelSource.AGY
    return ModelSource.CONVERSATION


def settings_model(gemini_dir: Path) -> str | None:
    """The model agy's settings name (its TUI's), if any."""
    try:
        settings = json.loads((gemini_dir / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = settings.get(_MODEL_KEY) if isinstance(settings, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


class ModelChooser:
    """One conversation's choice of model, turn after turn."""

    def __init__(self, state: SessionStateDir) -> None:
        self._file = state.path / _FILE
        self._gemini_dir = state.gemini_dir

    def choose(
        self, catalog: ModelCatalog, model: str | None, effort: str | None, *, agy_pid: int
    ) -> ResolvedModel:
        """The model of this turn (raises UnknownModelError for an omnigent choice agy does
        not have, as before); remembered as applied."""
        applied = self._read()
        agy_model = settings_model(self._gemini_dir)
        source = pick_source(applied, (model, effort), agy_model, agy_pid)
        resolved: ResolvedModel | None = None
        if source is ModelSource.AGY and agy_model is not None:
            resolved = _known(catalog, agy_model)
        elif source is ModelSource.CONVERSATION and applied is not None:
            resolved = _known(catalog, applied.enum)
        if resolved is None:
            source, resolved = ModelSource.OMNIGENT, catalog.resolve_plan_model(model, effort)
        if applied is None or resolved.enum != applied.enum:
            _logger.info("this turn's model: %s (%s)", resolved.display_name, source.value)
        self._write(AppliedModel(model, effort, resolved.enum, agy_model, agy_pid))
        return resolved

    def _read(self) -> AppliedModel | None:
        try:
            data = json.loads(self._file.read_text(encoding="utf-8"))
            return AppliedModel(
                model=_optional_text(data["model"]),
                effort=_optional_text(data["effort"]),
                enum=str(data["enum"]),
                agy_model=_optional_text(data["agy_model"]),
                agy_pid=int(data["agy_pid"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # none yet, or unreadable: omnigent's choice applies

    def _write(self, applied: AppliedModel) -> None:
        write_private_file(self._file, json.dumps(asdict(applied)), durable=False)


def _known(catalog: ModelCatalog, name: str) -> ResolvedModel | None:
    try:
        return catalog.resolve_plan_model(name)
    except UnknownModelError:
        _logger.info("agy no longer offers %r; omnigent's choice applies", name)
        return None


def _optional_text(value: object) -> str | None:
    return value if isinstance(value, str) else None
