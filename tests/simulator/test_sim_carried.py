"""agy-sim reads a carried block of earlier messages as a model would (agy_sim/carried.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sim_engine import Sim, run_sim

from agy_sim.carried import split_carried

CARRIED = (
    "[a note]\n<earlier-conversation>\n### User\nMy name is Ada.\n\n### Assistant\n"
    "Hello Ada, use a sub-agent?\n\n### User\nLine one\nline two\n</earlier-conversation>\n\n"
    "What did I say before?"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


def test_the_blocks_user_sections_and_the_text_after_it() -> None:
    assert split_carried(CARRIED) == (
        ["My name is Ada.", "Line one\nline two"],
        "What did I say before?",
    )
    assert split_carried("plain") == ([], "plain")


def test_recall_lists_the_carried_messages_once_and_the_block_picks_no_scenario(
    workspace: Path,
) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, CARRIED)  # "sub-agent" inside the block must not start one
        steps = await sim.idle(cid)
        answer = [s for s in steps if s["type"].endswith("PLANNER_RESPONSE")][-1]
        said = answer["plannerResponse"]["response"]
        assert said == "Earlier you said:\n- My name is Ada.\n- Line one\nline two"
        await sim.send(cid, "what did I say?")
        steps = await sim.idle(cid)
        answer = [s for s in steps if s["type"].endswith("PLANNER_RESPONSE")][-1]
        assert answer["plannerResponse"]["response"].count("My name is Ada.") == 1
        assert "- What did I say before?" in answer["plannerResponse"]["response"]

    run_sim(workspace, body)
