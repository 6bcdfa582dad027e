"""The omnigent executor (`AgyExecutor`) without processes: what it asks of the session for a
turn, and how the session's events become omnigent's (chunks, tool rows, the turn's end, coded
errors); interrupt, steering and close reach the session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import pytest
from omnigent.community.harness.agy import executor as executor_module
from omnigent.community.harness.agy.executor import AgyExecutor, _float_env
from omnigent.inner.executor import (
    ExecutorConfig,
    ExecutorError,
    ReasoningChunk,
    SubAgentCompleted,
    SubAgentStarted,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    ToolCallStatus,
    TurnCancelled,
    TurnComplete,
)

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.errors import AGY_EXITED, AGY_MODEL_UNKNOWN, AGY_NOT_INSTALLED, SessionError
from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.plugins import new_plugin_manager
from omnigent_agy.reading import events as ev
from omnigent_agy.reading.steps import ModelUsage, StepKey
from omnigent_agy.session.agy_session import PreflightError
from omnigent_agy.session.turn import Turn
from omnigent_agy.session.turn_results import AgyRestarted, TurnResult


def key(index: int) -> StepKey:
    return StepKey("cascade-1", "traj-1", index)


class FakeSession:
    """What the executor asks of an `AgySession`."""

    def __init__(self, tmp: Path, events: list[object]) -> None:
        self.events = events
        self.asked: list[dict[str, Any]] = []
        self.attachments_dir = (
            SessionStateDir.open("conv-1", base=tmp / "state").path / "attachments"
        )
        self.shown = None
        self.cascade_id: str | None = None  # no conversation bound: no title to give
        self.turn_model_name: str | None = "Gemini 3 Pro (High)"
        models = {"h": {"model": "M20", "displayName": "Gemini 3 Pro (High)"}}
        self.model_catalog = ModelCatalog.from_response({"response": {"models": models}})
        self.turn_model: str | None = "M20"
        self.agy = None
        self.interrupted = 0
        self.steered: list[str] = []
        self.closed = 0
        self.raises: BaseException | None = None

    async def run_turn(self, turn: Turn) -> AsyncIterator[object]:
        self.asked.append(turn)
        if self.raises is not None:
            raise self.raises
        for event in self.events:
            yield event

    async def interrupt(self) -> bool:
        self.interrupted += 1
        return True

    async def steer(self, text: str) -> bool:
        self.steered.append(text)
        return True

    async def close(self) -> None:
        self.closed += 1


def executor(tmp_path: Path, events: list[object], env: dict[str, str] | None = None) -> Any:
    made = AgyExecutor(
        conversation_id=lambda: "conv-1",
        env=env or {},
        plugin_manager=new_plugin_manager(load_entry_points=False),
    )
    made._session = FakeSession(tmp_path, events)
    return made


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def turn(made: Any, text: str = "hello", config: ExecutorConfig | None = None) -> list[object]:
    async def collect() -> list[object]:
        messages = [{"role": "user", "content": text, "session_id": "s1"}]
        return [
            event async for event in made.run_turn(messages, [{"name": "t"}], "be kind", config)
        ]

    return run(collect())


def completed(text: str = "done", **kw: Any) -> TurnResult:
    usage = ModelUsage(input_tokens=100, output_tokens=20, cache_read_tokens=30)
    return TurnResult("completed", text, usage, last_call=ModelUsage(input_tokens=40), **kw)


def test_the_turn_asks_the_session_for_the_newest_message_model_effort_prompt_and_tools(
    tmp_path: Path,
) -> None:
    made = executor(tmp_path, [completed()])
    turn(made, "hi", ExecutorConfig(model="gemini-pro", extra={"reasoning_effort": "low"}))
    asked = made._session.asked[0]
    assert (asked.text, asked.model, asked.effort) == ("hi", "gemini-pro", "low")
    assert asked.instructions == "be kind"
    assert asked.tools == [{"name": "t"}]
    assert asked.tool_runner == made._run_omnigent_tool


def test_model_and_effort_fall_back_to_the_agents_environment(tmp_path: Path) -> None:
    env = {executor_module.MODEL_ENV: "gemini-flash", executor_module.EFFORT_ENV: "high"}
    made = executor(tmp_path, [completed()], env=env)
    turn(made)
    asked = made._session.asked[0]
    assert (asked.model, asked.effort) == ("gemini-flash", "high")


def test_splices_become_append_only_chunks_and_a_new_message_a_new_paragraph(
    tmp_path: Path,
) -> None:
    events: list[object] = [
        ev.TextDelta(key(1), 0, "Hel"),
        ev.TextDelta(key(1), 0, "Hello"),  # agy re-sent the start: only the new part
        ev.TextDelta(key(1), 2, "l"),  # nothing new
        ev.ReasoningDelta(key(2), 0, "thinking"),
        ev.TextDelta(key(3), 0, "Second"),
        completed("Hello\n\nSecond"),
    ]
    out = turn(executor(tmp_path, events))
    assert out[:4] == [
        TextChunk(text="Hel"),
        TextChunk(text="lo"),
        ReasoningChunk(delta="thinking", event_type="reasoning_text"),
        TextChunk(text="\n\nSecond"),
    ]


def test_the_end_of_a_turn_carries_its_text_and_usage(tmp_path: Path) -> None:
    out = turn(executor(tmp_path, [completed("all done")]))
    assert out == [
        TurnComplete(
            response="all done",
            usage={
                "input_tokens": 100,
                "output_tokens": 20,
                "total_tokens": 120,
                "cache_read_input_tokens": 30,
                "context_tokens": 40,
                # The id omnigent's model catalog knows agy's model by (models/model_facts).
                "model": "gemini-3-pro-preview",
            },
        )
    ]


def test_tool_rows_and_sub_agents(tmp_path: Path) -> None:
    started = ev.ToolCallStarted("c1", key(4), "run_command", {"CommandLine": "ls"}, "RUN")
    finished = ev.ToolCallFinished("c1", key(4), "run_command", "success", "a\nb", exit_code=2)
    relay = ev.ToolCallStarted("c2", key(5), "omnigent/search", {}, "MCP")
    events: list[object] = [
        started,
        finished,
        relay,  # omnigent's own tool: its bridge shows it already
        ev.SubAgentStarted("c3", "child-1", "reviewer", "", {}),
        ev.SubAgentFinished("c3", "child-1", True, {}),
        completed(),
    ]
    out = turn(executor(tmp_path, events))
    assert out[0] == ToolCallRequest(
        name="run_command",
        args={"CommandLine": "ls"},
        metadata={"call_id": "c1", "internally_executed": True},
    )
    assert isinstance(out[1], ToolCallComplete)
    assert out[1].status == ToolCallStatus.SUCCESS
    assert out[1].result == "a\nb\n[exit code 2]"
    # One key from start to end: the one its start named (the role, then the cascade's id).
    assert out[2] == SubAgentStarted(child_key="reviewer · child-1", title="reviewer")
    assert out[3] == SubAgentCompleted(child_key="reviewer · child-1", ok=True)
    assert isinstance(out[4], TurnComplete)


def test_a_sub_agents_end_is_said_after_the_answer_closed(tmp_path: Path) -> None:
    """omnigent's web splits the turn where the "Completed" mark lands and shows text open
    there twice (translate.Stream.closing): the end waits for the turn's end, and a reasoning
    start closes the answer ahead of it."""
    events: list[object] = [
        ev.SubAgentStarted("c3", "child-1", "reviewer", "", {}),
        ev.SubAgentFinished("c3", "child-1", True, {}, summary="all good"),
        ev.TextDelta(key(6), 0, "The reviewer says all good."),
        completed("The reviewer says all good."),
    ]
    out = turn(executor(tmp_path, events))
    assert [type(event) for event in out] == [
        SubAgentStarted,
        TextChunk,
        ReasoningChunk,
        SubAgentCompleted,
        TurnComplete,
    ]
    assert out[2] == ReasoningChunk(delta="", event_type="reasoning_started")
    assert out[3] == SubAgentCompleted(child_key="reviewer · child-1", ok=True, summary="all good")


def test_a_failed_turn_still_ends_its_sub_agents(tmp_path: Path) -> None:
    made = executor(
        tmp_path,
        [
            ev.SubAgentStarted("c3", "child-1", "reviewer", "", {}),
            ev.SubAgentFinished("c3", "child-1", True, {}),
        ],
    )

    async def broken(turn: Turn) -> AsyncIterator[object]:
        for event in made._session.events:
            yield event
        raise SessionError("agy exited during the turn", code="agy_exited")

    made._session.run_turn = broken
    out = turn(made)
    assert [type(event) for event in out] == [SubAgentStarted, SubAgentCompleted, ExecutorError]


def test_no_close_where_no_answer_is_open(tmp_path: Path) -> None:
    events: list[object] = [
        ev.SubAgentStarted("c3", "child-1", "reviewer", "", {}),
        ev.TextDelta(key(5), 0, "Asking the reviewer."),
        ev.ToolCallStarted("c4", key(6), "run_command", {"CommandLine": "ls"}, "RUN"),
        ev.SubAgentFinished("c3", "child-1", True, {}),
        completed(),
    ]
    out = turn(executor(tmp_path, events))
    assert [type(event) for event in out] == [
        SubAgentStarted,
        TextChunk,
        ToolCallRequest,
        SubAgentCompleted,
        TurnComplete,
    ]


def test_a_turn_without_sub_agents_gets_no_close(tmp_path: Path) -> None:
    out = turn(executor(tmp_path, [ev.TextDelta(key(5), 0, "Hi."), completed("Hi.")]))
    assert [type(event) for event in out] == [TextChunk, TurnComplete]


def test_a_call_finished_without_its_start_is_told_started_first(tmp_path: Path) -> None:
    finished = ev.ToolCallFinished(
        "c9", key(4), "run_command", "denied", "", arguments={"CommandLine": "rm"}
    )
    out = turn(executor(tmp_path, [finished, completed()]))
    assert out[0] == ToolCallRequest(
        name="run_command",
        args={"CommandLine": "rm"},
        metadata={"call_id": "c9", "internally_executed": True},
    )
    assert isinstance(out[1], ToolCallComplete)
    assert out[1].status == ToolCallStatus.BLOCKED


def test_a_restart_is_logged_not_shown(tmp_path: Path) -> None:
    out = turn(executor(tmp_path, [AgyRestarted("cascade-1", "idle"), completed()]))
    assert len(out) == 1
    assert isinstance(out[0], TurnComplete)


def test_a_cancelled_turn(tmp_path: Path) -> None:
    out = turn(executor(tmp_path, [TurnResult("cancelled", "", None)]))
    assert out == [TurnCancelled()]


@pytest.mark.parametrize(
    ("gave_up", "code", "retryable"),
    [(False, "agy_model_error", True), (True, "agy_interaction_timed_out", True)],
)
def test_a_failed_turn_is_a_coded_error_that_keeps_the_session(
    tmp_path: Path, gave_up: bool, code: str, retryable: bool
) -> None:
    error = ev.ErrorReported(key(5), "overloaded", retryable=True)
    result = TurnResult("failed", "", None, error, gave_up_waiting=gave_up)
    (out,) = turn(executor(tmp_path, [result]))
    assert isinstance(out, ExecutorError)
    assert (out.code, out.preserve_session) == (code, True)
    assert out.retryable is retryable
    assert "overloaded" in out.message


def test_a_failure_the_session_explained_wins(tmp_path: Path) -> None:
    error = ev.ErrorReported(key(5), "RESOURCE_EXHAUSTED")
    explained = AGY_MODEL_UNKNOWN.failure("explained by the session")
    result = TurnResult("failed", "", None, error, failure=explained)
    (out,) = turn(executor(tmp_path, [result]))
    assert isinstance(out, ExecutorError)
    assert (out.code, out.message) == (AGY_MODEL_UNKNOWN.code, "explained by the session")


def test_errors_of_the_session_reach_the_person_with_a_code(tmp_path: Path) -> None:
    made = executor(tmp_path, [])
    made._session.raises = SessionError("agy exited during the turn", kind=AGY_EXITED)
    (out,) = turn(made)
    assert isinstance(out, ExecutorError)
    assert out.code == "agy_exited"


def test_a_message_without_text_is_a_coded_error(tmp_path: Path) -> None:
    made = executor(tmp_path, [])

    async def collect() -> list[object]:
        messages = [{"role": "assistant", "content": "no user here"}]
        return [event async for event in made.run_turn(messages, [], "", None)]

    (out,) = run(collect())
    assert isinstance(out, ExecutorError)
    assert made._session.asked == []


def test_interrupt_steer_and_close_reach_the_session(tmp_path: Path) -> None:
    made = executor(tmp_path, [])
    session = made._session
    assert run(made.interrupt_session("s1")) is True
    assert session.interrupted == 1
    assert run(made.enqueue_session_message("s1", "and this")) is True
    assert session.steered == ["and this"]
    assert run(made.enqueue_session_message("s1", 42)) is False  # not a message
    run(made.close_session("s1"))
    assert session.closed == 1
    assert run(made.interrupt_session("s1")) is False  # no session any more


def test_tool_output_notes_say_what_was_cut(tmp_path: Path) -> None:
    cut = ev.ToolCallFinished("c1", key(1), "run_command", "success", "x", full_bytes=9_000_000)
    by_agy = ev.ToolCallFinished("c2", key(2), "run_command", "success", "y", truncated=True)
    out = turn(executor(tmp_path, [cut, by_agy, completed()]))
    assert "[output truncated: 1 of 9,000,000 bytes shown" in out[1].result
    assert out[3].result == "y\n[output truncated by agy]"


@pytest.mark.parametrize(
    ("value", "expected"), [("", 60.0), ("2.5", 2.5), ("-1", 60.0), ("nan", 60.0), ("x", 60.0)]
)
def test_seconds_from_the_environment(value: str, expected: float) -> None:
    assert _float_env({"X": value}, "X", 60.0) == expected


def test_a_preflight_failure_is_its_catalogued_error(tmp_path: Path) -> None:
    made = executor(tmp_path, [])
    made._session.raises = PreflightError(AGY_NOT_INSTALLED.failure("agy is not on PATH"))
    (out,) = turn(made)
    assert isinstance(out, ExecutorError)
    assert out.code == AGY_NOT_INSTALLED.code


def test_omnigents_wake_for_agys_finished_sub_agent_spends_no_agy_turn(tmp_path: Path) -> None:
    started = ev.SubAgentStarted("c3", "child-1", "reviewer", "", {"prompt": "Review."})
    made = executor(tmp_path, [started, completed()])
    turn(made, "please use a sub-agent")
    wake = (
        "[System: sub-agent reviewer/reviewer finished (completed) \u2014 1 result waiting in "
        "inbox. Call sys_read_inbox to collect.]"
    )
    assert turn(made, wake) == [TurnComplete(response=None)]
    assert len(made._session.asked) == 1  # agy was asked once: the person's message


def test_omnigent_going_on_after_its_own_tools_output_spends_no_agy_turn(tmp_path: Path) -> None:
    """A forked session bound to a runner, its history ending in the rename that titled it:
    omnigent asks for a turn with the history as it is (tool items dropped), whose newest user
    message agy has answered already."""
    made = executor(tmp_path, [completed()])
    history = [
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello, Ada."},
    ]

    async def collect() -> list[object]:
        return [event async for event in made.run_turn(history, [], "be kind", None)]

    assert run(collect()) == [TurnComplete(response=None)]
    assert made._session.asked == []
    # The person's next message is a turn of agy's.
    history.append({"role": "user", "content": "And now?"})
    assert isinstance(run(collect())[-1], TurnComplete)
    assert len(made._session.asked) == 1
