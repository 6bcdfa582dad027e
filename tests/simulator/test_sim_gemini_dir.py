"""agy-sim reads its --gemini_dir as agy does (docs/wire.md §1b): sign-in, trust, skills, MCP
servers (started with the mcp SDK's client) and the rules file. docs/simulator.md says which
behaviours are facts and which are guesses."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from simproc import FAST, Sim, SimLauncher, plan_model, sim_launcher
from waiting import wait_until

from omnigent_agy.errors import RpcError
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

ECHO = {"command": sys.executable, "args": [str(Path(__file__).parents[1] / "_mcp_echo.py")]}


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def send(sim: Sim, text: str) -> str:
    """Send a turn on a new RPC cascade; the error's message, or "" when it was accepted."""

    async def go(client: RpcClient) -> str:
        cascade = await client.start_cascade()
        await client.send_user_cascade_message(cascade, text, plan_model=await plan_model(client))
        return ""

    try:
        return sim.rpc(go)
    except RpcError as exc:
        return f"{exc.connect_code.value}: {exc}"


def test_without_a_sign_in_turns_are_refused_naming_it(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, signed_in=False)
    assert "signed out" in sim.screen()
    refused = send(sim, "hello")
    assert refused.startswith("unauthenticated")
    assert "sign in" in refused
    assert "signed out: onboarding is not finished" in sim.log_text()


def test_an_untrusted_workspace_blocks_turns_until_the_dialog_is_answered(
    sims: SimLauncher,
) -> None:
    sim = sims.launch(*FAST, trusted=False)
    sim.wait_screen("Do you trust the contents of this project?")
    sim.wait_screen(f"Accessing workspace: {sim.workspace}")
    refused = send(sim, "hello")
    assert refused.startswith("failed_precondition")
    assert "Do you trust the contents of this project?" in refused
    sim.type("hello")  # not a turn: the dialog takes it, and asks again
    wait_until(
        lambda: sim.screen().count("Do you trust the contents of this project?") >= 2,
        timeout=20,
        what="the dialog again",
    )
    assert "> hello" not in sim.screen()
    sim.type("1")
    sim.wait_screen("[trusted]")
    settings = json.loads((sim.gemini_dir / "antigravity-cli" / "settings.json").read_text())
    assert str(sim.workspace) in settings["trustedWorkspaces"]
    assert send(sim, "hello") == ""


def test_skills_and_mcp_servers_are_listed(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, skills=("review",), mcp_servers={"echo": ECHO})
    sim.wait_screen("[skills] review")
    sim.wait_screen("[mcp] echo: 1 tools (shout)")


def test_a_scenario_calls_a_real_mcp_tool_behind_a_gate(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, mcp_servers={"echo": ECHO})
    sim.type('use echo/shout {"text": "hi there"}')
    sim.wait_screen("permission to run: echo/shout")
    sim.type("/allow")
    sim.wait_screen("echo/shout answered: HI THERE")


def test_an_enabled_tool_is_called_without_a_gate(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, mcp_servers={"echo": {**ECHO, "enabledTools": ["shout"]}})
    sim.type('use echo/shout {"text": "go"}')
    sim.wait_screen("echo/shout answered: GO")
    assert "[waiting" not in sim.screen()


def test_the_rules_file_is_read_at_each_turn(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, rules="Answer in haiku.\n")
    sim.type("what do your rules say?")
    sim.wait_screen("Answer in haiku.")
    (sim.gemini_dir / "GEMINI.md").write_text("Answer in limericks.\n")
    sim.type("and your instructions now?")
    sim.wait_screen("Answer in limericks.")
