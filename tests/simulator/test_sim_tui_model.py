"""``/model`` typed in agy-sim's TUI (agy_sim/model_switch.py): the model of the turns typed
there from then on, remembered in the settings' ``model`` key. The key is from public reports
(docs/wire.md §9); that ``/model`` writes it and agy starts on it are agy-sim's guesses
(docs/simulator.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simproc import FAST, SimLauncher, sim_launcher
from waiting import await_until

from agy_sim.catalog import ModelCatalog
from agy_sim.gemini import SETTINGS
from agy_sim.model_switch import remembered_model
from omnigent_agy.rpc.client import RpcClient


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


@pytest.mark.tmux
def test_model_typed_in_the_tui_switches_the_turns_typed_there_and_is_remembered(
    sims: SimLauncher,
) -> None:
    sim = sims.launch(*FAST)
    cascade = re.search(r"\[ready\] conversation (\S+)", sim.screen())
    assert cascade is not None
    sim.type("/model")
    sim.wait_screen("[model] Gemini 3 Pro (High); switch with /model <id>: gemini-3-pro-low")
    sim.type("/model no-such-model")
    sim.wait_screen("[error] no model 'no-such-model'; choose one of: gemini-3-pro-low")
    sim.type("/model gemini-3-1-pro-low")
    sim.wait_screen("[model] Gemini 3.1 Pro (Low)")
    settings = json.loads((sim.gemini_dir / SETTINGS).read_text())
    assert settings["model"] == "Gemini 3.1 Pro (Low)"
    assert settings["showFeedbackSurvey"] is False, "the other settings are kept"
    sim.type("hello on the new model")
    sim.wait_screen("Hello from the agy simulator (Gemini 3.1 Pro (Low))")

    async def plan_models(client: RpcClient) -> list[Any]:
        def typed(steps: list[dict[str, Any]]) -> list[Any]:
            return [s for s in steps if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"]

        steps = await await_until(
            lambda: client.get_cascade_trajectory_steps(cascade.group(1)),
            until=typed,
            timeout=20,
            what="the typed turn",
        )
        return [s["userInput"]["userConfig"]["plannerConfig"]["planModel"] for s in typed(steps)]

    low = ModelCatalog().resolve("Gemini 3.1 Pro (Low)")
    assert low is not None
    assert sim.rpc(plan_models) == [low.model]


def test_a_tui_starts_on_the_model_its_settings_remember(tmp_path: Path) -> None:
    catalog = ModelCatalog()
    assert remembered_model(tmp_path, catalog) is None
    (tmp_path / SETTINGS).parent.mkdir(parents=True)
    (tmp_path / SETTINGS).write_text(json.dumps({"model": "Gemini 3 Flash"}))
    remembered = remembered_model(tmp_path, catalog)
    assert remembered is not None
    assert remembered.key == "gemini-3-flash"
    (tmp_path / SETTINGS).write_text(json.dumps({"model": "Gemini 9 Ultra"}))
    assert remembered_model(tmp_path, catalog) is None, "an unknown name is no model"
