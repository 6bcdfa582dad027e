"""agy-sim's model windows and its running estimate of the context in use (docs/wire.md §3,
§9 "Context in use"; docs/simulator.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_sim_engine import MODEL, Sim, run_sim

from agy_sim.connect_app import ConnectHandlerError
from agy_sim.generator_metadata import SYSTEM_PROMPT_TOKENS


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


def estimates(answer: dict[str, Any]) -> list[int | None]:
    out: list[int | None] = []
    for entry in answer["generatorMetadata"]:
        start = entry["chatModel"].get("chatStartMetadata")
        out.append(start["contextWindowMetadata"]["estimatedTokensUsed"] if start else None)
    return out


def test_the_catalog_says_each_gemini_and_claude_window_and_not_gpt_oss(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        models = (await sim.call("GetAvailableModels", {}))["response"]["models"]
        by_name = {m["displayName"]: m for m in models.values()}
        assert by_name["Gemini 3 Pro (High)"]["maxTokens"] == 1_048_576
        assert by_name["Claude Sonnet 4.5"]["maxTokens"] == 200_000
        assert "maxTokens" not in by_name["GPT-OSS 120B (Medium)"]

    run_sim(workspace, body)


def test_every_model_call_has_an_entry_and_the_estimate_only_grows(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "Say hello")
        steps = await sim.idle(cid)
        first = await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid})
        calls = [i for i, s in enumerate(steps) if "modelUsage" in s["metadata"]]
        assert [e["stepIndices"] for e in first["generatorMetadata"]] == [[i] for i in calls]
        # The answer's call has an estimate; agy's CHECKPOINT summary (another model) has none.
        assert estimates(first)[0] > SYSTEM_PROMPT_TOKENS
        assert None in estimates(first)
        usage = steps[calls[0]]["metadata"]["modelUsage"]
        assert first["generatorMetadata"][0]["chatModel"]["usage"] == usage
        assert first["generatorMetadata"][0]["chatModel"]["model"] == MODEL
        await sim.send(cid, "Say hello again")
        await sim.idle(cid)
        second = await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid})
        known = [e for e in estimates(second) if e is not None]
        assert known == sorted(known)
        assert known[-1] > max(e for e in estimates(first) if e is not None)

    run_sim(workspace, body)


def test_when_agy_compacts_its_context_the_estimate_drops(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        for text in ("Say hello", "list the files here", "Say hello again"):
            await sim.send(cid, text)
            await sim.idle(cid)
        before = await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid})
        largest = max(e for e in estimates(before) if e is not None)
        await sim.send(cid, "Please compact the conversation now")
        steps = await sim.idle(cid)
        compaction = [
            s
            for s in steps
            if s["type"] == "CORTEX_STEP_TYPE_CHECKPOINT" and not s["checkpoint"]["intentOnly"]
        ]
        assert len(compaction) == 1
        assert "Say hello again" in compaction[0]["checkpoint"]["summary"]
        after = await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid})
        newest = [e for e in estimates(after) if e is not None][-1]
        assert SYSTEM_PROMPT_TOKENS < newest < largest
        # And it grows again from there.
        await sim.send(cid, "Say hello once more")
        await sim.idle(cid)
        later = await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid})
        assert newest < [e for e in estimates(later) if e is not None][-1] < largest

    run_sim(workspace, body)


def test_a_conversation_agy_does_not_know_is_not_found(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        with pytest.raises(ConnectHandlerError, match="trajectory not found"):
            await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": "nope"})
        cid = await sim.start()
        assert await sim.call("GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cid}) == {}

    run_sim(workspace, body)
