"""A sub-agent's card waiting when the harness process is SIGKILLed comes back (docs/in-omnigent.md,
"Sub-agents").

agy-sim runs as agy 1.5.16, whose sub-agents' own calls wait on approvals in the sub-agent's
cascade (docs/wire.md §7), in a tmux server of its own that outlives the harness. The harness
is a real OS process started by omnigent's runner entry point (`runnerproc.HarnessProcess`):
killed with SIGKILL while the sub-agent's card is on screen (no shutdown hook runs), then
started again on the same socket as the runner's next request starts it. The person's next
message shows the same card again, once; answering it lands in the sub-agent's cascade, the
command runs there, and the parent's turn ends with its answer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runnerproc import HarnessProcess
from simproc import harness_env

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

RUN = "CORTEX_STEP_TYPE_RUN_COMMAND"
DONE = "CORTEX_STEP_STATUS_DONE"
WAITING = "CORTEX_STEP_STATUS_WAITING"
COMMAND = "echo left by a killed harness"


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[HarnessProcess]:
    socket_name = f"agy-subkill-{uuid.uuid4().hex[:10]}"
    env = {**harness_env(tmp_path, socket_name), "AGY_SIM_VERSION": "1.5.16"}
    logs = tmp_path / "logs"
    logs.mkdir()
    process = HarnessProcess(f"conv_{uuid.uuid4().hex[:12]}", env, logs)
    try:
        yield process.start()
    finally:
        process.stop()
        TerminalHost(socket_name=socket_name).kill_server()


def agy_call(env: dict[str, str], conversation: str, method: str, body: dict[str, Any]) -> Any:
    """Ask the conversation's agy directly (the simulator side of a check)."""
    state = SessionStateDir.open(conversation, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    record = state.read_record()
    assert record is not None, "no agy record: agy was never started"

    async def go() -> Any:
        async with RpcClient(port=record.port, csrf_token=record.csrf_token) as client:
            return await client.call(method, body)

    return asyncio.run(go())


def sub_agent_runs(env: dict[str, str], conversation: str) -> list[dict[str, Any]]:
    """The command steps of the conversation's sub-agents, as agy holds them."""
    state = SessionStateDir.open(conversation, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    record = state.read_record()
    assert record is not None
    parent = record.cascade_id
    listed = agy_call(env, conversation, "GetAllCascadeTrajectories", {})["trajectorySummaries"]
    children = [
        cid
        for cid, summary in listed.items()
        if summary.get("trajectoryMetadata", {}).get("parentConversationId") == parent
    ]
    return [
        step
        for child in children
        for step in agy_call(
            env, conversation, "GetCascadeTrajectorySteps", {"cascadeId": child}
        ).get("steps", [])
        if step["type"] == RUN
    ]


def test_a_sub_agents_card_comes_back_after_the_harness_is_killed(
    harness: HarnessProcess,
) -> None:
    first = harness.turn(f"use a sub-agent to run: {COMMAND}")
    card = first.until("response.elicitation_request")
    assert f"sub-agent “Researcher” wants to run “{COMMAND}”" in card["params"]["message"]
    killed = harness.pid
    harness.kill()  # the card is on screen; agy and the sub-agent wait on
    [waiting] = sub_agent_runs(harness.env, harness.conversation_id)
    assert waiting["status"] == WAITING

    harness.start()
    assert harness.pid != killed
    turn = harness.turn("are you still there?")
    again = turn.until("response.elicitation_request", timeout=60)
    assert f"sub-agent “Researcher” wants to run “{COMMAND}”" in again["params"]["message"]
    harness.press(again, "allow once")
    turn.until("response.completed", timeout=120)
    cards = [e for e in turn.events if e.get("type") == "response.elicitation_request"]
    assert len(cards) == 1, "the sub-agent's card was shown more than once"
    [ran] = sub_agent_runs(harness.env, harness.conversation_id)
    assert ran["status"] == DONE
    assert ran["runCommand"].get("userRejected") is not True
