"""agy-sim as agy 1.5.15+: a sub-agent's own tool calls wait on gates in its own cascade
(docs/wire.md §7), answered there with HandleCascadeUserInteraction; the parent waits for it.
Before 1.5.15 (`subagents_ask` false) the sub-agent only surveys the workspace."""

from __future__ import annotations

from pathlib import Path

from test_sim_engine import Sim, run_sim, workspace  # noqa: F401 - the fixture

from agy_sim.options import parse_options


def _child(sim: Sim, parent: str) -> str:
    return next(c.cascade_id for c in sim.engine.cascades.values() if c.parent_id == parent)


def _has_child(sim: Sim, parent: str) -> bool:
    return any(c.parent_id == parent for c in sim.engine.cascades.values())


def test_a_sub_agent_asks_for_approval_in_its_own_cascade(workspace: Path) -> None:  # noqa: F811
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "use a sub-agent to run: npm test")
        await sim.until(cid, lambda: _has_child(sim, cid))
        child = _child(sim, cid)
        index, step = await sim.waiting(child)
        assert step["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
        assert step["runCommand"]["commandLine"] == "npm test"
        assert step["metadata"]["sourceTrajectoryStepInfo"]["cascadeId"] == child
        assert not sim.engine.cascades[cid].waiting_indices(), "the parent has no gate"
        assert sim.status(cid) == "RUNNING", "the parent waits for its sub-agent"
        first = (await sim.steps(child))[0]
        assert first["userInput"]["items"] == [{"text": "run: npm test"}]
        await sim.answer(child, index, permission={"allow": True})
        steps = await sim.idle(cid)
        invoke = next(s for s in steps if s["type"].endswith("INVOKE_SUBAGENT"))
        assert invoke["invokeSubagent"]["subagents"][0]["role"] == "Researcher"
        child_steps = await sim.steps(child)
        ran = next(s for s in child_steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
        assert ran["status"] == "CORTEX_STEP_STATUS_DONE"
        assert "npm test" in ran["runCommand"]["combinedOutput"]["full"]

    run_sim(workspace, body)


def test_a_sub_agent_asks_a_question_in_its_own_cascade(workspace: Path) -> None:  # noqa: F811
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "have a sub-agent ask me a question")
        await sim.until(cid, lambda: _has_child(sim, cid))
        child = _child(sim, cid)
        index, step = await sim.waiting(child)
        question = step["askQuestion"]["questions"][0]["question"]
        await sim.answer(
            child,
            index,
            askQuestion={"responses": [{"question": question, "selectedOptionIds": ["1"]}]},
        )
        steps = await sim.idle(cid)
        assert steps[-1]["type"] != "CORTEX_STEP_TYPE_ERROR_MESSAGE"
        child_steps = await sim.steps(child)
        asked = next(s for s in child_steps if s["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION")
        assert asked["status"] == "CORTEX_STEP_STATUS_DONE"

    run_sim(workspace, body)


def test_before_1_5_15_the_sub_agent_only_surveys(workspace: Path) -> None:  # noqa: F811
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "use a sub-agent to run: npm test")
        await sim.idle(cid)
        child_steps = await sim.idle(_child(sim, cid))
        kinds = [s["type"] for s in child_steps]
        assert "CORTEX_STEP_TYPE_RUN_COMMAND" not in kinds
        assert "CORTEX_STEP_TYPE_LIST_DIRECTORY" in kinds

    run_sim(workspace, body, sim_version=(1, 5, 14))


def test_the_version_keys_sub_agent_gates() -> None:
    assert parse_options(["--sim-version", "1.5.15"], {}).subagents_ask
    assert not parse_options(["--sim-version", "1.5.14"], {}).subagents_ask
    assert not parse_options(["--sim-version", "1.2.14"], {}).subagents_ask
