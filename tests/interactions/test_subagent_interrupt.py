"""Stop refuses a sub-agent's gate nobody announced yet, in the sub-agent's own cascade.

agy-sim as agy 1.5.16, a separate process: a sub-agent's command waits in its own cascade
(docs/wire.md §7). The conversation's reader never sees that gate; an interrupt that named
only the conversation would leave the sub-agent waiting on it after Stop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from simproc import FAST, Sim, sim_launcher
from test_interactions import Person, TurnOnSim, run
from waiting import await_until

pytestmark = pytest.mark.tmux

RUN = "CORTEX_STEP_TYPE_RUN_COMMAND"


@pytest.fixture(scope="module")
def asking_agy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_launcher(tmp_path_factory.mktemp("bridge-sim-15"), "agy-bridge-15") as launcher:
        yield launcher.launch(*FAST, "--sim-debug-rpc", "--sim-version", "1.5.16")


async def _waiting_child(turn: TurnOnSim) -> str:
    """The sub-agent's cascade, once its gate is WAITING there."""

    async def waiting() -> str:
        listed = (await turn.client.get_all_cascade_trajectories())["trajectorySummaries"]
        return next(
            (
                str(cid)
                for cid, summary in listed.items()
                if summary.get("trajectoryMetadata", {}).get("parentConversationId") == turn.cascade
                and summary.get("waitingSteps")
            ),
            "",
        )

    return await await_until(waiting, timeout=30, what="the sub-agent's gate")


def test_an_interrupt_refuses_an_unannounced_gate_of_a_sub_agent(asking_agy: Sim) -> None:
    async def main() -> tuple[bool, dict[str, Any]]:
        async with TurnOnSim(asking_agy, Person(), auto=False) as turn:
            await turn.send("use a sub-agent to run: echo never shown")
            child = await _waiting_child(turn)
            denied = await turn.bridge.deny_pending([child])
            steps = await turn.client.get_cascade_trajectory_steps(child)
            await turn.client.cancel_cascade_steps(turn.cascade)
            return denied, [s for s in steps if s["type"] == RUN][-1]

    denied, ran = run(main)
    assert denied, "the sub-agent's gate was not refused"
    assert ran["status"] != "CORTEX_STEP_STATUS_WAITING"
    assert ran["runCommand"].get("userRejected") is True
