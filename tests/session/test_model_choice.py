"""Which model a turn runs on (session/model_choice.py): omnigent's choice when it changed,
else a switch typed in agy's own screen, else the model the conversation is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnigent_agy.agy.gemini_home import SETTINGS_FILE
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.errors import UnknownModelError
from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.session.model_choice import (
    AppliedModel,
    ModelChooser,
    ModelSource,
    pick_source,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CATALOG = ModelCatalog.from_response(
    json.loads((FIXTURES / "catalog" / "get_available_models.json").read_text())
)
HIGH, LOW_31, FLASH = "MODEL_PLACEHOLDER_M20", "MODEL_PLACEHOLDER_M69", "MODEL_PLACEHOLDER_M50"
APPLIED = AppliedModel("gemini-pro", None, HIGH, "Gemini 3 Pro (High)", 100)


@pytest.mark.parametrize(
    ("applied", "asked", "agy_model", "pid", "source"),
    [
        pytest.param(None, (None, None), None, 100, ModelSource.OMNIGENT, id="first turn"),
        pytest.param(
            APPLIED, ("gemini-flash", None), None, 100, ModelSource.OMNIGENT, id="/model changed"
        ),
        pytest.param(
            APPLIED, ("gemini-pro", "low"), None, 100, ModelSource.OMNIGENT, id="effort changed"
        ),
        pytest.param(
            APPLIED,
            ("gemini-flash", None),
            "Gemini 3.1 Pro (Low)",
            100,
            ModelSource.OMNIGENT,
            id="both changed: omnigent's wins",
        ),
        pytest.param(
            APPLIED,
            ("gemini-pro", None),
            "Gemini 3.1 Pro (Low)",
            100,
            ModelSource.AGY,
            id="switched in agy",
        ),
        pytest.param(
            APPLIED,
            ("gemini-pro", None),
            "Gemini 3 Pro (High)",
            100,
            ModelSource.CONVERSATION,
            id="nothing changed",
        ),
        pytest.param(
            APPLIED,
            ("gemini-pro", None),
            None,
            100,
            ModelSource.CONVERSATION,
            id="agy's settings name none",
        ),
        pytest.param(
            APPLIED,
            ("gemini-pro", None),
            "Gemini 3.1 Pro (Low)",
            200,
            ModelSource.CONVERSATION,
            id="a new agy's fresh settings are no switch",
        ),
    ],
)
def test_whose_choice_a_turn_runs_on(
    applied: AppliedModel | None,
    asked: tuple[str | None, str | None],
    agy_model: str | None,
    pid: int,
    source: ModelSource,
) -> None:
    assert pick_source(applied, asked, agy_model, pid) is source


def tui_switches_to(state: SessionStateDir, name: str) -> None:
    """What agy's `/model` does to its settings (agy-sim's guess, docs/simulator.md)."""
    settings = state.gemini_dir / SETTINGS_FILE
    settings.parent.mkdir(parents=True, exist_ok=True)
    kept = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps({**kept, "model": name}))


def test_turn_after_turn_across_a_harness_restart(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    tui_switches_to(state, "Gemini 3 Pro (High)")  # the person's own default, seeded

    def turn(model: str | None, effort: str | None = None, pid: int = 100) -> str:
        # A new chooser each turn: what was applied lives in the state directory.
        return ModelChooser(state).choose(CATALOG, model, effort, agy_pid=pid).enum

    assert turn(None) == HIGH  # agy's default
    tui_switches_to(state, "Gemini 3.1 Pro (Low)")
    assert turn(None) == LOW_31
    assert turn(None) == LOW_31, "the conversation stays on it"
    assert turn("gemini-flash") == FLASH
    assert turn("gemini-flash") == FLASH
    tui_switches_to(state, "Gemini 3 Pro (High)")
    # agy was stopped and started again meanwhile: its settings were seeded afresh.
    assert turn("gemini-flash", pid=200) == FLASH
    tui_switches_to(state, "Gemini 3.1 Pro (Low)")
    assert turn("gemini-flash", pid=200) == LOW_31


def test_a_model_agy_no_longer_offers_gives_way_to_omnigents_choice(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    chooser = ModelChooser(state)
    assert chooser.choose(CATALOG, "gemini-flash", None, agy_pid=1).enum == FLASH
    tui_switches_to(state, "Gemini 9 Ultra")
    assert chooser.choose(CATALOG, "gemini-flash", None, agy_pid=1).enum == FLASH
    (state.path / "model.json").write_text("{not json")
    assert chooser.choose(CATALOG, "gemini-flash", "low", agy_pid=1).enum == FLASH
    with pytest.raises(UnknownModelError):
        chooser.choose(CATALOG, "no-such-model", None, agy_pid=1)
