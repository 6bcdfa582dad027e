"""omnigent's own generic ACP executor driving `agy-sim acp`, in-process.

`omnigent.inner.acp_executor.AcpExecutor` is what omnigent's `acp` harness runs for an agent
listed in `~/.omnigent/config.yaml` (`acp: {agents: [...]}`). Here it spawns agy-sim as it
would spawn `agy acp`, so what omnigent sends (its instructions folded into the first prompt,
its permission bridge, its model switch, `session/cancel`) meets the simulator directly;
the real stack's turn through the same executor is tests/e2e/test_e2e_acp.py.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from gemini_home import make_person_gemini
from omnigent.inner.acp_executor import AcpAgentConfig, AcpExecutor
from omnigent.inner.executor import (
    ExecutorConfig,
    ExecutorEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    ToolCallStatus,
    TurnComplete,
)

AGY_SIM = Path(sys.executable).with_name("agy-sim")
#: What omnigent's server gives a configured ACP agent as its prompt (omnigent/server/app.py):
#: words in it ("read", "run commands") must not pick the simulator's scenario.
INSTRUCTIONS = (
    "You are a coding agent running inside Omnigent through the Agent Client Protocol. Help "
    "the user: read and edit files, run commands, investigate, and implement changes."
)

pytestmark = [pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Person:
    """omnigent's choice-card bridge, answered as a person would: by label."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.cards: list[tuple[str, dict[str, Any], list[str]]] = []

    async def __call__(
        self, tool_name: str, tool_input: dict[str, Any], labels: Sequence[str]
    ) -> str | None:
        self.cards.append((tool_name, tool_input, list(labels)))
        return self.answers.pop(0)


@asynccontextmanager
async def executor(tmp_path: Path, person: Person | None = None) -> AsyncIterator[AcpExecutor]:
    gemini = make_person_gemini(tmp_path / "gemini").path
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    command = f"{AGY_SIM} acp --gemini_dir {gemini} --sim-token-delay 0.002"
    config = AcpAgentConfig(command=command, name="Antigravity", omnigent_mcp=False)
    acp = AcpExecutor(config, cwd=str(workspace))
    if person is not None:
        acp._elicitation_choice_handler = person  # the adapter's own hook
    try:
        yield acp
    finally:
        await acp.close()


async def turn(acp: AcpExecutor, text: str, *, model: str | None = None) -> list[ExecutorEvent]:
    messages: list[Any] = [{"role": "user", "content": text}]
    config = ExecutorConfig(model=model) if model else None
    return [event async for event in acp.run_turn(messages, [], INSTRUCTIONS, config)]


def text_of(events: list[ExecutorEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_a_turn_streams_reasoning_and_answer_with_usage(tmp_path: Path) -> None:
    async with executor(tmp_path) as acp:
        events = await turn(acp, "hello")
        assert any(isinstance(e, ReasoningChunk) for e in events)
        assert text_of(events).startswith("Hello from the agy simulator (Gemini 3 Pro (High))")
        assert not any(isinstance(e, ToolCallRequest) for e in events)  # "run" was theirs
        done = events[-1]
        assert isinstance(done, TurnComplete)
        assert done.usage is not None
        assert done.usage["model"] == "gemini-3-pro"
        assert done.usage["total_tokens"] > 0
        assert acp.max_context_tokens() == 1_048_576


async def test_deny_is_delivered_and_the_turn_goes_on(tmp_path: Path) -> None:
    person = Person("Deny")
    async with executor(tmp_path, person) as acp:
        events = await turn(acp, "run: touch denied-file")
        ((tool, tool_input, labels),) = person.cards
        assert tool == "Running touch denied-file"
        assert tool_input["CommandLine"] == "touch denied-file"
        assert labels == ["Allow once", "Allow for this conversation", "Deny", "Always deny"]
        (done,) = [e for e in events if isinstance(e, ToolCallComplete)]
        assert done.status == ToolCallStatus.ERROR
        assert "I did not run `touch denied-file`" in text_of(events)
        assert not (tmp_path / "workspace" / "denied-file").exists()


async def test_allow_for_this_conversation_is_asked_once(tmp_path: Path) -> None:
    person = Person("Allow for this conversation")
    async with executor(tmp_path, person) as acp:
        await turn(acp, "hi")
        first = await turn(acp, "run: echo once")
        assert "finished with exit code 0" in text_of(first)
        second = await turn(acp, "run: echo once")
        assert len(person.cards) == 1
        (done,) = [e for e in second if isinstance(e, ToolCallComplete)]
        assert done.status == ToolCallStatus.SUCCESS


async def test_a_model_pick_switches_the_live_session(tmp_path: Path) -> None:
    async with executor(tmp_path) as acp:
        await turn(acp, "hello")
        events = await turn(acp, "hello again", model="gemini-3-flash")
        assert "(Gemini 3 Flash)" in text_of(events)
        done = events[-1]
        assert isinstance(done, TurnComplete)
        assert done.usage is not None
        assert done.usage["model"] == "gemini-3-flash"


async def test_interrupt_mid_answer(tmp_path: Path) -> None:
    async with executor(tmp_path) as acp:
        events: list[ExecutorEvent] = []
        stopped = False

        async def collect() -> None:
            nonlocal stopped
            async for event in acp.run_turn(
                [{"role": "user", "content": "a long answer"}], [], INSTRUCTIONS, None
            ):
                events.append(event)
                if not stopped and "Part 3 " in text_of(events):
                    stopped = await acp.interrupt_session("any")

        async with asyncio.timeout(60):
            await collect()
        assert stopped
        # omnigent reads no stopReason: a cancelled prompt ends as a completed turn.
        assert isinstance(events[-1], TurnComplete)
        assert "Part 120 " not in text_of(events)
