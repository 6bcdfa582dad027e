"""agy-sim's screen in tmux, driven by omnigent's built-in Antigravity harness's own code.

``omnigent.harnesses.antigravity_native.bridge`` types a turn into agy's composer (paste,
render check, Enter, submit check) and types a verdict into agy's menu; these tests hand it
a pane running agy-sim and check what agy-sim's conversation engine got, over RPC.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest
from omnigent.harnesses.antigravity_native import bridge as builtin
from omnigent.server.routes._antigravity_elicitation import to_tui_selection_keys
from omnigent.server.schemas import ElicitationResult
from simproc import FAST, Sim, SimLauncher, sim_launcher
from test_sim_process import wait_idle, wait_steps, waiting
from waiting import wait_until

from omnigent_agy.rpc.client import RpcClient

AGY_1_5 = ("--sim-version", "1.5.16")


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def socket_path(sims: SimLauncher) -> Path:
    name = sims.tmux.socket_name
    assert name is not None
    return Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}" / name


def bridge_to(sims: SimLauncher, sim: Sim, tmp_path: Path) -> Path:
    """A bridge folder of the built-in's, pointing at ``sim``'s pane."""
    bridge = tmp_path / "bridge"
    bridge.mkdir(mode=0o700)
    target = sim.pane.pane_id
    assert target is not None
    builtin.write_tmux_target(bridge, socket_path=socket_path(sims), tmux_target=target)
    return bridge


def tui_cascade(sim: Sim) -> str:
    match = re.search(r"\[ready\] conversation (\S+)", sim.screen())
    assert match is not None
    return match.group(1)


def user_inputs(steps: list[dict[str, Any]]) -> list[str]:
    return [s["userInput"]["userResponse"] for s in steps if "userInput" in s]


@pytest.mark.tmux
def test_the_built_in_types_a_turn_into_the_composer(sims: SimLauncher, tmp_path: Path) -> None:
    sim = sims.launch(*FAST, *AGY_1_5)
    cascade_id = tui_cascade(sim)
    bridge = bridge_to(sims, sim, tmp_path)
    sim.wait_screen(builtin._AGY_IDLE_MARKER)  # what the built-in's input_ready_probe waits for
    builtin.inject_user_message_via_tui(bridge, content="hello from the built-in", timeout_s=20)
    long = "\n".join(f"line {i} of a long task" for i in range(20))
    builtin.inject_user_message_via_tui(bridge, content=long, timeout_s=20)

    async def inputs(client: RpcClient) -> list[str]:
        await wait_steps(client, cascade_id, lambda steps: len(user_inputs(steps)) == 2)
        await wait_idle(client, cascade_id)
        return user_inputs(await client.get_cascade_trajectory_steps(cascade_id))

    assert sim.rpc(inputs) == ["hello from the built-in", long]


@pytest.mark.tmux
def test_the_built_in_s_keys_answer_agy_s_menu(sims: SimLauncher, tmp_path: Path) -> None:
    sim = sims.launch(*FAST, *AGY_1_5)
    cascade_id = tui_cascade(sim)
    bridge = bridge_to(sims, sim, tmp_path)
    # As the built-in's input_ready_probe does: a message typed before agy draws its composer
    # loses keys (seen on a loaded machine: the command never reached agy).
    sim.wait_screen(builtin._AGY_IDLE_MARKER)
    builtin.inject_user_message_via_tui(bridge, content="please run: ls", timeout_s=20)

    async def gate(client: RpcClient) -> dict[str, Any]:
        steps = await wait_steps(client, cascade_id, waiting("permission"))
        return next(s for s in steps if s["status"] == "CORTEX_STEP_STATUS_WAITING")

    step = sim.rpc(gate)
    spec = step["requestedInteraction"]["permission"]
    pane = sim.wait_screen("Run this command?")
    assert builtin._AGY_ACTIVE_MARKER in pane
    # "Allow for this session" on omnigent's card: the built-in types it into agy's menu only.
    verdict = ElicitationResult(action="accept", _meta={"persist": "session"})
    keys = to_tui_selection_keys("permission", verdict, spec)
    assert keys == ["2", "Enter"]
    builtin.send_interaction_keys_via_tui(bridge, *keys)

    async def answered(client: RpcClient) -> list[dict[str, Any]]:
        await wait_idle(client, cascade_id)
        return await client.get_cascade_trajectory_steps(cascade_id)

    steps = sim.rpc(answered)
    command = next(s for s in steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
    response = command["completedInteractions"][-1]["response"]["permission"]
    assert response == {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}
    assert user_inputs(steps) == ["please run: ls"]  # the Enter after the digit sent nothing
    # tmux shows what agy-sim wrote a moment later: wait for the idle footer.
    pane = sim.wait_screen(builtin._AGY_IDLE_MARKER)
    assert "Run this command?" not in pane.split("[answered]")[-1]


@pytest.mark.tmux
def test_osc_7501_reports_leave_the_pane_clean(sims: SimLauncher, tmp_path: Path) -> None:
    sim = sims.launch(*FAST, *AGY_1_5)
    raw = tmp_path / "raw.bin"
    sim.pane.cmd("pipe-pane", f"cat > {raw}")
    # A terminal attached to agy's tmux, as omnigent's Terminal view is: what reaches it.
    viewer = libtmux.Server(socket_name=f"{sims.tmux.socket_name}-viewer")
    try:
        seen = tmp_path / "viewer.bin"
        session = sim.pane.session.session_name
        attach = f"TMUX= tmux -S {socket_path(sims)} attach -t {session}"
        view = viewer.new_session(session_name="view", window_command=attach, x=220, y=60)
        viewer_pane = view.active_pane
        assert viewer_pane is not None
        viewer_pane.cmd("pipe-pane", f"cat > {seen}")
        sim.type("ask me a question")
        sim.wait_screen("Question 1/1:")
        wait_until(
            lambda: "Question 1/1:" in "\n".join(viewer_pane.capture_pane()),
            timeout=20,
            what="the question in the attached terminal",
        )
        # The sequence, not the number: the workspace's path on screen names this test.
        assert b"\x1b]7501;" not in seen.read_bytes()
    finally:
        viewer.kill()
        (socket_path(sims).parent / f"{sims.tmux.socket_name}-viewer").unlink(missing_ok=True)
    sim.pane.send_keys("Escape", enter=False)
    sim.wait_screen("[idle]")
    reports = re.findall(rb"\x1b\]7501;([^\x1b]*)\x1b\\", raw.read_bytes())
    assert b"state=blocked:kind=question:app=antigravity" in b"\n".join(reports)
    assert reports[-1] == b"state=idle:app=antigravity"
    for lines in (sim.pane.capture_pane(start=-3000), sim.pane.capture_pane(escape_sequences=True)):
        shown = [line for line in lines if "7501;" in line or "\x1b]" in line]
        assert not shown
