"""The pure step mapper: every recorded step through it, scenarios, snapshots, fuzz and cost."""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opcount import count_package_lines
from syrupy.assertion import SnapshotAssertion

from omnigent_agy.reading.events import (
    AssistantMessage,
    ErrorReported,
    Event,
    InteractionRequested,
    InteractionResolved,
    ModelChanged,
    ReasoningDelta,
    SubAgentEvent,
    SubAgentFinished,
    SubAgentStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolOutcome,
    TurnBoundary,
    UnknownStep,
    UsageReported,
    apply_delta,
    turn_usage,
)
from omnigent_agy.reading.mapper import MapperState, map_step
from omnigent_agy.reading.steps import InteractionKind, ModelUsage, StepKey

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "fixtures" / "recorded_steps"
# Names only, for parametrizing; the tests read the files through the `shared_recorded` fixture.
_SHARED = REPO.parent / "shared" / "agy-wire" / "recorded"
SHARED_FILES = sorted(p.relative_to(_SHARED).as_posix() for p in _SHARED.rglob("*.json"))
OWN_FILES = sorted(p.relative_to(OWN).as_posix() for p in OWN.rglob("*.json"))

CASCADE = "763d3fb4-86a5-47ee-af66-9459a09968e2"
TRAJ = "465ec109-8beb-4b34-8b0a-dd02a7aa0845"

Steps = list[tuple[int | None, dict[str, Any]]]


# --- loading every shape a recorded file comes in --------------------------------------------


def steps_in(document: object) -> Steps:
    """(absolute index or None, step) pairs from a step, a list, a wrapper or a stream frame."""
    if isinstance(document, list):
        return [pair for item in document for pair in steps_in(item)]
    if not isinstance(document, dict):
        return []
    if "type" in document:
        return [(None, document)]
    if isinstance(document.get("step"), dict):
        index = document.get("idx")
        return [(index if isinstance(index, int) else None, document["step"])]
    update = document.get("update")
    if isinstance(update, dict):
        steps_update = update.get("mainTrajectoryUpdate", {}).get("stepsUpdate", {})
        return list(
            zip(steps_update.get("indices", []), steps_update.get("steps", []), strict=True)
        )
    if isinstance(document.get("steps"), list):
        return steps_in(document["steps"])
    return []


def load(path: Path) -> Steps:
    return steps_in(json.loads(path.read_text(encoding="utf-8")))


def own(name: str) -> dict[str, Any]:
    ((_, step),) = load(OWN / name)
    return step


def run(steps: Steps, state: MapperState | None = None) -> list[Event]:
    state = state or MapperState(cascade_id="fallback")
    return [event for index, step in steps for event in map_step(state, step, absolute_index=index)]


def of[E](kind: type[E], events: list[Event]) -> list[E]:
    return [event for event in events if isinstance(event, kind)]


def check_invariants(events: list[Event]) -> None:
    """What must hold for every event stream, whatever the steps."""
    texts: dict[StepKey, str] = {}
    committed: set[StepKey] = set()
    started: set[str] = set()
    finished: set[str] = set()
    for event in events:
        if isinstance(event, TextDelta):
            assert event.key not in committed
            assert 0 <= event.offset <= len(texts.get(event.key, ""))
            texts[event.key] = apply_delta(texts.get(event.key, ""), event)
        elif isinstance(event, AssistantMessage):
            assert event.key not in committed, "one committed message per step"
            committed.add(event.key)
            assert texts.get(event.key) == event.text, "deltas must rebuild the committed text"
        elif isinstance(event, ToolCallStarted):
            assert event.call_id not in started
            assert event.call_id == event.key.item_id
            started.add(event.call_id)
        elif isinstance(event, ToolCallFinished):
            assert event.call_id in started
            assert event.call_id not in finished
            finished.add(event.call_id)


# --- every recorded step through the mapper --------------------------------------------------


def _usage(events: list[Event]) -> ModelUsage:
    (usage,) = of(UsageReported, events)
    return usage.usage


def _finished(events: list[Event]) -> ToolCallFinished:
    (done,) = of(ToolCallFinished, events)
    return done


def _asked(events: list[Event]) -> InteractionRequested:
    (asked,) = of(InteractionRequested, events)
    return asked


def _expect_user_input(events: list[Event]) -> None:
    (turn,) = of(TurnBoundary, events)
    assert turn.text == "Summarise the project layout."
    assert turn.key == StepKey(CASCADE, TRAJ, 0)
    assert of(ModelChanged, events)[0].model == "MODEL_PLACEHOLDER_M20"
    assert not of(AssistantMessage, events)  # a user turn is never re-emitted as a message


def _expect_requested_model(events: list[Event]) -> None:
    assert of(TurnBoundary, events)[0].text == "Now run the tests."
    assert [e.model for e in of(ModelChanged, events)] == ["MODEL_PLACEHOLDER_M71"]


def _expect_thinking_only(events: list[Event]) -> None:
    (reasoning,) = of(ReasoningDelta, events)
    assert reasoning.offset == 0
    assert reasoning.text.startswith("**Planning")
    assert not of(TextDelta, events)
    assert not of(AssistantMessage, events)


def _expect_partial(events: list[Event]) -> None:
    (delta,) = of(TextDelta, events)
    assert delta.text.startswith("The project has two top-level folders")
    assert not of(AssistantMessage, events)
    assert not of(UsageReported, events)  # usage only on committed steps


ANSWER_START = "The project has two top-level folders:\n\n- `src/`"


def _expect_planner_done(events: list[Event]) -> None:
    (message,) = of(AssistantMessage, events)
    assert message.text.startswith(ANSWER_START)
    assert message.text.endswith("✅")
    assert _usage(events) == ModelUsage("MODEL_PLACEHOLDER_M20", 12000, 105, 44, 61, 9000)


def _expect_planner_error(events: list[Event]) -> None:
    (message,) = of(AssistantMessage, events)
    assert (message.text, message.status) == ("Let me look at", "CORTEX_STEP_STATUS_ERROR")
    (error,) = of(ErrorReported, events)
    assert error.message == "The model is overloaded. Please try again later."


def _expect_planner_tool_call(events: list[Event]) -> None:
    assert not of(AssistantMessage, events)
    assert not of(ToolCallStarted, events)  # the call comes from the tool's own step
    assert _usage(events).input_tokens == 3100


def _expect_run_waiting(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert call.arguments == {"command_line": "pytest -q", "cwd": "/home/user/project"}
    assert call.title == "Run tests"
    asked = _asked(events)
    assert asked.kind is InteractionKind.PERMISSION
    assert (asked.command_line, asked.cwd) == ("pytest -q", "/home/user/project")
    assert asked.wanted.suggested_persist_pattern == "pytest"
    assert asked.wanted.action_description == "Running the test suite"
    assert (asked.key.trajectory_id, asked.key.step_index) == (TRAJ, 3)
    assert asked.call_id == call.call_id == f"agy:{TRAJ}:3"
    assert not of(ToolCallFinished, events)


def _expect_run_running(events: list[Event]) -> None:
    assert len(of(ToolCallStarted, events)) == 1
    assert not of(ToolCallFinished, events)
    assert not of(InteractionRequested, events)


def _expect_run_done(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert call.agy_call_id == "q7x2m9ab"  # poll shape: for logs only
    done = _finished(events)
    assert (done.outcome, done.exit_code) == (ToolOutcome.SUCCESS, 0)
    assert done.output == "........\n8 passed in 0.41s\n"
    assert done.call_id == call.call_id


def _expect_run_nonzero(events: list[Event]) -> None:
    done = _finished(events)
    assert (done.outcome, done.exit_code) == (ToolOutcome.SUCCESS, 1)
    assert "1 failed, 1 passed" in done.output


def _expect_run_truncated(events: list[Event]) -> None:
    done = _finished(events)
    assert done.truncated
    assert done.output.endswith("build finished\n")


def _expect_run_canceled(events: list[Event]) -> None:
    done = _finished(events)
    assert (done.outcome, done.output) == (ToolOutcome.CANCELED, "waiting\n")
    assert done.error == "context canceled by user"


def _expect_run_error(events: list[Event]) -> None:
    done = _finished(events)
    assert done.outcome is ToolOutcome.ERROR
    assert done.error == "Timed out waiting for the user to approve the command."
    assert not of(InteractionRequested, events)  # no longer waiting


def _expect_run_denied(events: list[Event]) -> None:
    done = _finished(events)
    assert (done.outcome, done.error) == (ToolOutcome.DENIED, "denied by the user")


def _expect_view_file(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert call.arguments == {"path": "/home/user/project/README.md", "end_line": 2}
    assert _finished(events).output == "# project\n\nA small example.\n"


def _expect_view_file_stream(events: list[Event]) -> None:
    assert _finished(events).output == "read 41 lines (1022 bytes)"


def _expect_list_directory(events: list[Event]) -> None:
    assert _finished(events).output == ".git/\nREADME.md\nsrc/\ntests/"


def _expect_code_action(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert call.arguments["path"] == "/home/user/project/src/app.py"
    assert _finished(events).output == " def main():\n-    print('helo')\n+    print('hello')"


def _expect_grep(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert (call.name, call.arguments) == (
        "grep_search",
        {"query": "TODO", "path": "/home/user/project"},
    )
    assert "# TODO: config" in _finished(events).output


def _expect_find(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert call.arguments == {"pattern": "test_*.py", "path": "/home/user/project/tests"}
    assert "tests/test_cli.py" in _finished(events).output


def _expect_mcp(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert (call.name, call.arguments) == ("tracker/list_issues", {"state": "open", "limit": 2})
    assert "Crash on start" in _finished(events).output


def _expect_elicitation(events: list[Event]) -> None:
    asked = _asked(events)
    assert asked.kind is InteractionKind.ELICITATION
    assert asked.wanted.elicitation_server == "tracker"
    assert asked.wanted.elicitation_message == "Which label should the issue get?"
    assert asked.wanted.requested_schema_json is not None


def _expect_generic(events: list[Event]) -> None:
    (call,) = of(ToolCallStarted, events)
    assert (call.name, call.arguments) == ("manage_subagents", {"Action": "list"})
    assert _finished(events).output == "You have 1 active subagent(s): Test Runner"


def _expect_question(count: int, multi: bool) -> Callable[[list[Event]], None]:
    def check(events: list[Event]) -> None:
        asked = _asked(events)
        assert asked.kind is InteractionKind.ASK_QUESTION
        assert len(asked.wanted.questions) == count
        for question in asked.wanted.questions:
            ids = [option.id for option in question.options]
            assert ids == [str(n) for n in range(1, len(ids) + 1)]
        assert asked.wanted.questions[0].multi_select is multi

    return check


def _expect_question_done(events: list[Event]) -> None:
    assert not of(InteractionRequested, events)
    assert _finished(events).output == (
        "Which test runner should I use?: pytest\nWhere should the config live?: pyproject.toml"
    )


def _expect_hook_error(events: list[Event]) -> None:
    (error,) = of(ErrorReported, events)
    assert error.message.startswith("No policy rule matched tool")
    assert error.benign
    assert not error.retryable


def _expect_network_error(events: list[Event]) -> None:
    (error,) = of(ErrorReported, events)
    assert error.retryable
    assert error.detail is not None
    assert "connection refused" in error.detail


def _expect_checkpoint(events: list[Event]) -> None:
    assert [type(e) for e in events] == [UsageReported]
    assert _usage(events).model == "MODEL_PLACEHOLDER_M50"


def _expect_nothing(events: list[Event]) -> None:
    assert events == []


def _expect_subagent_running(events: list[Event]) -> None:
    (child,) = of(SubAgentStarted, events)
    assert (child.role, child.agent_type) == ("Test Runner", "general")
    assert not of(ToolCallFinished, events)


def _expect_subagent_done(events: list[Event]) -> None:
    assert len(of(SubAgentStarted, events)) == 2
    assert [e.ok for e in of(SubAgentFinished, events)] == [True, True]
    assert _finished(events).outcome is ToolOutcome.SUCCESS


def _expect_unknown(events: list[Event]) -> None:
    (unknown,) = of(UnknownStep, events)
    assert unknown.step_type == "CORTEX_STEP_TYPE_HOLOGRAM_RENDER"
    (call,) = of(ToolCallStarted, events)
    assert (call.name, call.title) == ("hologram_render", "Render hologram")
    assert "teapot" in _finished(events).output


OWN_EXPECTATIONS: dict[str, Callable[[list[Event]], None]] = {
    "user_input.json": _expect_user_input,
    "user_input_requested_model.json": _expect_requested_model,
    "planner_generating_thinking.json": _expect_thinking_only,
    "planner_generating_partial.json": _expect_partial,
    "planner_done_text.json": _expect_planner_done,
    "planner_error.json": _expect_planner_error,
    "planner_tool_call_poll.json": _expect_planner_tool_call,
    "planner_tool_call_stream.json": _expect_planner_tool_call,
    "run_command_waiting.json": _expect_run_waiting,
    "run_command_running.json": _expect_run_running,
    "run_command_done.json": _expect_run_done,
    "run_command_done_nonzero.json": _expect_run_nonzero,
    "run_command_truncated.json": _expect_run_truncated,
    "run_command_canceled.json": _expect_run_canceled,
    "run_command_error.json": _expect_run_error,
    "run_command_denied.json": _expect_run_denied,
    "view_file_done.json": _expect_view_file,
    "view_file_stream.json": _expect_view_file_stream,
    "list_directory_done.json": _expect_list_directory,
    "code_action_done.json": _expect_code_action,
    "grep_search_done.json": _expect_grep,
    "find_done.json": _expect_find,
    "mcp_tool_done.json": _expect_mcp,
    "mcp_elicitation_waiting.json": _expect_elicitation,
    "generic_done.json": _expect_generic,
    "ask_question_waiting_single.json": _expect_question(1, multi=False),
    "ask_question_waiting_multi.json": _expect_question(1, multi=True),
    "ask_question_waiting_several.json": _expect_question(2, multi=False),
    "ask_question_done.json": _expect_question_done,
    "error_message.json": _expect_hook_error,
    "model_network_error.json": _expect_network_error,
    "checkpoint.json": _expect_checkpoint,
    "conversation_history.json": _expect_nothing,
    "invoke_subagent_running.json": _expect_subagent_running,
    "invoke_subagent_done.json": _expect_subagent_done,
    "unknown_future_step.json": _expect_unknown,
}


def test_every_hand_written_fixture_has_an_expectation() -> None:
    hand_written = {name for name in OWN_FILES if "/" not in name}
    assert hand_written == set(OWN_EXPECTATIONS)


@pytest.mark.parametrize("name", OWN_FILES)
def test_own_fixture_through_the_mapper(name: str) -> None:
    steps = load(OWN / name)
    assert steps, f"{name} holds no step"
    state = MapperState(cascade_id="fallback", model_names={})
    events: list[Event] = []
    for index, step in steps:
        events += map_step(state, step, absolute_index=index)
        # The same frame again adds nothing: the stream re-sends whole steps (docs/wire.md §4).
        assert map_step(state, step, absolute_index=index) == []
    check_invariants(events)
    expect = OWN_EXPECTATIONS.get(name)
    if expect is not None:
        expect(events)


def _live_text(events: list[Event]) -> None:
    (message,) = of(AssistantMessage, events)
    assert message.text == (
        "Hello! I am Antigravity, your AI coding assistant, ready to help you with your tasks."
    )
    assert _usage(events) == ModelUsage("MODEL_PLACEHOLDER_M20", 17161, 65, 44, 21, 0)


def _live_run_done(events: list[Event]) -> None:
    done = _finished(events)
    assert (done.outcome, done.exit_code) == (ToolOutcome.SUCCESS, 0)
    assert done.output == "/Users/bryanli/.gemini/antigravity-cli/scratch\n"
    assert not of(InteractionRequested, events)  # requestedInteraction stays after DONE (§6)


def _live_run_waiting(events: list[Event]) -> None:
    asked = _asked(events)
    assert (asked.kind, asked.command_line, asked.wanted.suggested_persist_pattern) == (
        InteractionKind.PERMISSION,
        "pwd",
        "pwd",
    )
    assert asked.key.step_index == 6


def _live_question_waiting(events: list[Event]) -> None:
    (question,) = _asked(events).wanted.questions
    assert [o.id for o in question.options] == ["1", "2", "3", "4"]


def _live_question_done(events: list[Event]) -> None:
    assert _finished(events).output.endswith(
        ": Analyze and refactor the files in the current scratch directory."
    )


def _live_user_input(events: list[Event]) -> None:
    assert [type(e) for e in events] == [TurnBoundary, ModelChanged]
    assert of(TurnBoundary, events)[0].key.step_index == 0


def _live_stream_tool(name: str) -> Callable[[list[Event]], None]:
    def check(events: list[Event]) -> None:
        (call,) = of(ToolCallStarted, events)
        assert call.name == name
        assert call.agy_call_id is None or name == "manage_subagents"
        assert _finished(events).outcome is ToolOutcome.SUCCESS

    return check


def _expect_usage_only(events: list[Event]) -> None:
    assert [type(e) for e in events] == [UsageReported]


def _expect_planner_tool_call_only(events: list[Event]) -> None:
    assert not of(ToolCallStarted, events)
    assert not of(AssistantMessage, events)
    assert _usage(events).output_tokens == 418


def _engine_canceled(events: list[Event]) -> None:
    done = _finished(events)
    assert (done.outcome, done.output, done.error) == (
        ToolOutcome.CANCELED,
        "start\n",
        "context canceled by user",
    )


def _engine_running(events: list[Event]) -> None:
    assert len(of(ToolCallStarted, events)) == 1
    assert not of(ToolCallFinished, events)


def _engine_network(events: list[Event]) -> None:
    errors = of(ErrorReported, events)
    assert len(errors) == 3
    assert all(error.retryable for error in errors)


def _engine_error_step(events: list[Event]) -> None:
    (error,) = of(ErrorReported, events)
    assert error.benign
    assert of(AssistantMessage, events)[-1].text == "Thanks, finished."


def _engine_tools(events: list[Event]) -> None:
    names = [call.name for call in of(ToolCallStarted, events)]
    assert names == ["run_command", "view_file", "code_action", "list_directory", "code_action"]
    outputs = [done.output for done in of(ToolCallFinished, events)]
    assert outputs[0] == "hello-from-fake\nreadme.txt\n"
    assert outputs[1] == "hello file content\n"
    assert [m.text for m in of(AssistantMessage, events)] == [
        "I'll run a command first.",
        "All done: ran a command, viewed, wrote and listed.",
    ]
    assert turn_usage(events).input_tokens == 60  # six model calls of 10 input tokens


def _engine_question(waiting: bool) -> Callable[[list[Event]], None]:
    def check(events: list[Event]) -> None:
        asked = of(InteractionRequested, events)
        assert len(asked) == (1 if waiting else 0)
        if waiting:
            assert [o.text for o in asked[0].wanted.questions[0].options] == ["Red", "Blue"]
        else:
            assert _finished(events).output == "Which color?: Blue"

    return check


SHARED_EXPECTATIONS: dict[str, Callable[[list[Event]], None]] = {
    "agy-live/planner_response_text.json": _live_text,
    "agy-live/run_command_done.json": _live_run_done,
    "agy-live/run_command_waiting.json": _live_run_waiting,
    "agy-live/ask_question_waiting.json": _live_question_waiting,
    "agy-live/ask_question_done.json": _live_question_done,
    "agy-live/user_input.json": _live_user_input,
    "agy-live/checkpoint.json": _expect_usage_only,
    "agy-live/conversation_history.json": _expect_nothing,
    "agy-live/planner_response_tool_call_run_command.json": _expect_planner_tool_call_only,
    "agy-live/stream_run_command_done.json": _live_stream_tool("run_command"),
    "agy-live/stream_view_file_done.json": _live_stream_tool("view_file"),
    "agy-live/stream_list_directory_done.json": _live_stream_tool("list_directory"),
    "agy-live/stream_generic_done.json": _live_stream_tool("manage_subagents"),
    "engine/run_command_CANCELED.json": _engine_canceled,
    "engine/run_command_RUNNING.json": _engine_running,
    "engine/model_network_error_steps.json": _engine_network,
    "engine/error_message_step.json": _engine_error_step,
    "engine/tools_run_view_write_list_edit.json": _engine_tools,
    "engine/ask_question_WAITING.json": _engine_question(waiting=True),
    "engine/ask_question_DONE_completedInteractions.json": _engine_question(waiting=False),
}


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_FILES)
def test_shared_recorded_step_through_the_mapper(name: str, shared_recorded: Path) -> None:
    steps = load(shared_recorded / name)
    assert steps, f"{name} holds no step"
    state = MapperState(cascade_id="fallback")
    events: list[Event] = []
    for index, step in steps:
        events += map_step(state, step, absolute_index=index)
        assert map_step(state, step, absolute_index=index) == []
    check_invariants(events)
    expect = SHARED_EXPECTATIONS.get(name)
    if expect is not None:
        expect(events)


# --- scenarios -------------------------------------------------------------------------------


def _generating(text: str | None, *, thinking: str | None = None) -> dict[str, Any]:
    """The planner step of planner_done_text.json as a GENERATING frame with `text` so far."""
    step = copy.deepcopy(own("planner_done_text.json"))
    step["status"] = "CORTEX_STEP_STATUS_GENERATING"
    del step["metadata"]["modelUsage"]
    response = step["plannerResponse"]
    del response["response"]  # absent until the DONE commit (docs/wire.md §4)
    if text is None:
        del response["modifiedResponse"]
    else:
        response["modifiedResponse"] = text
    if thinking is None:
        del response["thinking"]
    else:
        response["thinking"] = thinking
    return step


def _rebuild(events: list[Event], kind: type[TextDelta | ReasoningDelta]) -> str:
    built = ""
    for event in events:
        if isinstance(event, kind):
            built = apply_delta(built, event)
    return built


def test_growing_response_streams_deltas_that_rebuild_the_committed_text() -> None:
    done = own("planner_done_text.json")
    answer = done["plannerResponse"]["modifiedResponse"]
    state = MapperState(cascade_id=CASCADE)
    events: list[Event] = []
    for end in range(0, len(answer), 9):
        frame = _generating(answer[:end] or None)
        events += map_step(state, frame, absolute_index=1)
        events += map_step(state, frame, absolute_index=1)  # a re-sent frame adds nothing
    events += map_step(state, done, absolute_index=1)
    deltas = of(TextDelta, events)
    assert len(deltas) == len(range(9, len(answer), 9)) + 1
    position = 0
    for delta in deltas:  # append-only: each delta starts where the last one ended
        assert delta.offset == position
        position += len(delta.text)
    assert "".join(delta.text for delta in deltas) == answer
    (message,) = of(AssistantMessage, events)
    assert message.text == answer == _rebuild(events, TextDelta)
    assert _rebuild(events, ReasoningDelta) == done["plannerResponse"]["thinking"]
    assert map_step(state, done, absolute_index=1) == []  # a replay of the committed step
    assert state.open_count == 0


def test_a_step_first_seen_at_done_loses_no_text() -> None:
    done = own("planner_done_text.json")
    events = map_step(MapperState(cascade_id=CASCADE), done, absolute_index=None)
    (delta,) = of(TextDelta, events)
    (message,) = of(AssistantMessage, events)
    assert delta.offset == 0
    assert delta.text == message.text == done["plannerResponse"]["modifiedResponse"]
    assert [type(e) for e in events] == [
        ModelChanged,
        ReasoningDelta,
        TextDelta,
        AssistantMessage,
        UsageReported,
    ]


def test_reconnect_that_skipped_frames_emits_only_the_missing_suffix() -> None:
    done = own("planner_done_text.json")
    answer = done["plannerResponse"]["modifiedResponse"]
    state = MapperState(cascade_id=CASCADE)
    before = map_step(state, _generating(answer[:20]), absolute_index=1)
    after = map_step(state, done, absolute_index=1)  # frames 21.. lost in a stream drop
    deltas = of(TextDelta, before + after)
    assert [d.offset for d in deltas] == [0, 20]
    assert deltas[1].text == answer[20:]
    assert of(AssistantMessage, after)[0].text == answer


def test_rewritten_text_is_spliced_so_deltas_still_rebuild_the_commit() -> None:
    state = MapperState(cascade_id=CASCADE)
    events = map_step(state, _generating("Hello wrld, and"), absolute_index=1)
    events += map_step(state, _generating("Hello world, and more"), absolute_index=1)
    done = copy.deepcopy(own("planner_done_text.json"))
    done["plannerResponse"]["response"] = done["plannerResponse"]["modifiedResponse"] = "Hello"
    events += map_step(state, done, absolute_index=1)
    assert [(d.offset, d.text) for d in of(TextDelta, events)] == [
        (0, "Hello wrld, and"),
        (7, "orld, and more"),
        (5, ""),  # agy cut the text back at commit
    ]
    assert of(AssistantMessage, events)[0].text == "Hello" == _rebuild(events, TextDelta)


def test_a_frame_without_text_keeps_what_was_streamed() -> None:
    state = MapperState(cascade_id=CASCADE)
    map_step(state, _generating("Partial"), absolute_index=1)
    assert map_step(state, _generating(None, thinking="more thought"), absolute_index=1) == [
        ReasoningDelta(StepKey(CASCADE, TRAJ, 1), 0, "more thought")
    ]


def test_stream_and_poll_copies_of_a_tool_step_are_the_same_call() -> None:
    poll = own("run_command_done.json")
    stream = copy.deepcopy(poll)
    del stream["metadata"]["toolCall"]  # what the stream strips (docs/wire.md §4)
    from_poll = map_step(MapperState(cascade_id=CASCADE), poll, absolute_index=3)
    from_stream = map_step(MapperState(cascade_id=CASCADE), stream, absolute_index=3)
    assert [dataclasses.replace(e, agy_call_id=None) for e in of(ToolCallStarted, from_poll)] == (
        of(ToolCallStarted, from_stream)
    )
    assert of(ToolCallFinished, from_poll) == of(ToolCallFinished, from_stream)
    poll_plan = map_step(
        MapperState(cascade_id=CASCADE), own("planner_tool_call_poll.json"), absolute_index=2
    )
    stream_plan = map_step(
        MapperState(cascade_id=CASCADE), own("planner_tool_call_stream.json"), absolute_index=2
    )
    assert poll_plan == stream_plan


def test_permission_gate_is_announced_once_and_the_result_follows() -> None:
    state = MapperState(cascade_id=CASCADE)
    waiting = own("run_command_waiting.json")
    first = map_step(state, waiting, absolute_index=3)
    assert [type(e) for e in first] == [ModelChanged, ToolCallStarted, InteractionRequested]
    assert map_step(state, waiting, absolute_index=3) == []
    running = map_step(state, own("run_command_running.json"), absolute_index=3)
    (resolved,) = running
    assert isinstance(resolved, InteractionResolved)
    assert resolved.response is not None
    assert resolved.response["permission"] == {"allow": True}
    done = map_step(state, own("run_command_done.json"), absolute_index=3)
    assert [type(e) for e in done] == [ToolCallFinished]
    assert state.open_count == 0


def test_a_changed_gate_on_the_same_waiting_step_is_announced_again() -> None:
    state = MapperState(cascade_id=CASCADE)
    waiting = own("run_command_waiting.json")
    map_step(state, waiting, absolute_index=3)
    chained = copy.deepcopy(waiting)  # `a && b`: a second gate after the first answer (§6)
    chained["requestedInteraction"]["permission"]["resource"]["target"] = "rm -rf build"
    (again,) = map_step(state, chained, absolute_index=3)
    assert isinstance(again, InteractionRequested)
    assert again.wanted.target == "rm -rf build"


def timed_out_gate(state: MapperState, index: int = 3) -> tuple[dict[str, Any], list[Event]]:
    """A RUN_COMMAND step WAITING at `index`, then timed out (ERROR, docs/wire.md §6): the waiting
    step (to retry with) and the events of both."""
    waiting = own("run_command_waiting.json")
    events = map_step(state, waiting, absolute_index=index)
    timed_out = copy.deepcopy(waiting)
    timed_out["status"] = "CORTEX_STEP_STATUS_ERROR"
    return waiting, events + map_step(state, timed_out, absolute_index=index)


def test_a_gate_retried_after_a_timeout_is_one_call() -> None:
    """agy retries a timed-out gate at a higher index (docs/wire.md §6): still the one command the
    person is asked about, not a second call, and the timed-out attempt is no finished run."""
    state = MapperState(cascade_id=CASCADE)
    waiting, events = timed_out_gate(state)
    (started,) = of(ToolCallStarted, events)
    assert len(of(InteractionRequested, events)) == 1
    # The card goes, the call stays open.
    assert of(ToolCallFinished, events) == []
    assert len(of(InteractionResolved, events)) == 1
    retry = map_step(state, waiting, absolute_index=4)
    assert of(ToolCallStarted, retry) == []
    assert len(of(InteractionRequested, retry)) == 1  # asked again, on the fresh step
    done = copy.deepcopy(waiting)
    done["status"] = "CORTEX_STEP_STATUS_DONE"
    done["runCommand"].update(exitCode=0, combinedOutput={"full": "ok\n"})
    (finished,) = of(ToolCallFinished, map_step(state, done, absolute_index=4))
    assert (finished.call_id, finished.output) == (started.call_id, "ok\n")
    assert state.open_count == 0


def test_a_timed_out_gate_agy_gives_up_on_ends_as_timed_out() -> None:
    state = MapperState(cascade_id=CASCADE)
    _, events = timed_out_gate(state)
    (started,) = of(ToolCallStarted, events)
    (finished,) = of(ToolCallFinished, map_step(state, own("error_message.json"), absolute_index=4))
    assert finished.call_id == started.call_id
    assert finished.outcome is ToolOutcome.ERROR
    assert finished.error is not None
    assert "timed out" in finished.error
    assert state.open_count == 0


def test_a_different_command_after_a_timeout_is_a_new_call() -> None:
    state = MapperState(cascade_id=CASCADE)
    waiting, _ = timed_out_gate(state)
    other = copy.deepcopy(waiting)
    other["runCommand"]["commandLine"] = other["runCommand"]["proposedCommandLine"] = "ls -la"
    assert [e.call_id for e in of(ToolCallStarted, map_step(state, other, absolute_index=4))] == [
        f"agy:{TRAJ}:4"
    ]


def test_a_parked_call_survives_a_reader_restart() -> None:
    state = MapperState(cascade_id=CASCADE)
    waiting, events = timed_out_gate(state)
    (started,) = of(ToolCallStarted, events)
    restored = MapperState(cascade_id=CASCADE)
    restored.restore_progress(json.loads(json.dumps(state.export_progress())))
    assert of(ToolCallStarted, map_step(restored, waiting, absolute_index=4)) == []
    done = copy.deepcopy(waiting)
    done["status"] = "CORTEX_STEP_STATUS_DONE"
    (finished,) = of(ToolCallFinished, map_step(restored, done, absolute_index=4))
    assert finished.call_id == started.call_id


def test_user_input_marks_the_turn_and_names_the_model() -> None:
    names = {"MODEL_PLACEHOLDER_M20": "Gemini 3 Pro (High)"}
    state = MapperState(cascade_id=CASCADE, model_names=names)
    events = map_step(state, own("user_input.json"), absolute_index=0)
    events += map_step(state, own("planner_done_text.json"), absolute_index=1)
    (changed,) = of(ModelChanged, events)  # the planner's generatorModel is the same one
    assert (changed.display_name, changed.source) == ("Gemini 3 Pro (High)", "user_input")
    assert state.model == "MODEL_PLACEHOLDER_M20"
    later = map_step(state, own("user_input_requested_model.json"), absolute_index=4)
    assert [(e.model, e.display_name) for e in of(ModelChanged, later)] == [
        ("MODEL_PLACEHOLDER_M71", None)
    ]


def test_user_input_keys_follow_the_absolute_index() -> None:
    state = MapperState(cascade_id=CASCADE)
    step = own("user_input.json")
    first = of(TurnBoundary, map_step(state, step, absolute_index=0))
    second = of(TurnBoundary, map_step(state, step, absolute_index=8))
    assert [t.key.step_index for t in first + second] == [0, 8]


def test_usage_is_reported_once_per_committed_step_and_sums_per_turn() -> None:
    state = MapperState(cascade_id=CASCADE)
    steps: Steps = [
        (0, own("user_input.json")),
        (1, _generating("The")),
        (1, own("planner_done_text.json")),
        (2, own("planner_tool_call_stream.json")),
        (2, own("planner_tool_call_poll.json")),
        (45, own("checkpoint.json")),
    ]
    events = run(steps, state)
    assert len(of(UsageReported, events)) == 3
    total = turn_usage(events)
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens) == (
        12000 + 3100 + 35,
        105 + 138 + 3,
        9000 + 12000,
    )
    assert total.model is None  # the checkpoint ran on another model
    assert turn_usage([]) == ModelUsage()


def test_tool_output_is_capped_and_marked_truncated() -> None:
    step = copy.deepcopy(own("run_command_done_nonzero.json"))
    step["runCommand"]["combinedOutput"] = {"full": "é" * 100_000}
    (done,) = of(
        ToolCallFinished, map_step(MapperState(cascade_id=CASCADE), step, absolute_index=5)
    )
    assert done.truncated
    assert len(done.output.encode()) <= 64 * 1024
    small = MapperState(cascade_id=CASCADE, output_cap=10)
    (short,) = of(ToolCallFinished, map_step(small, step, absolute_index=5))
    assert short.output == "é" * 5


def test_subagents_start_as_children_appear_and_finish_with_the_step() -> None:
    state = MapperState(cascade_id=CASCADE)
    running = map_step(state, own("invoke_subagent_running.json"), absolute_index=49)
    assert map_step(state, own("invoke_subagent_running.json"), absolute_index=49) == []
    done = map_step(state, own("invoke_subagent_done.json"), absolute_index=49)
    started = of(SubAgentStarted, running + done)
    assert [s.child_cascade_id for s in started] == [
        "af72d1ba-5358-423d-9175-5c4644c4045a",
        "1e33e563-20a5-4663-840f-a1fc484afb76",
    ]
    assert {s.call_id for s in started} == {f"agy:{TRAJ}:49"}
    assert [f.result["summary"] for f in of(SubAgentFinished, done)] == [
        "8 passed.",
        "README is current.",
    ]


def test_a_child_cascade_state_wraps_its_events() -> None:
    child = MapperState(
        cascade_id="af72d1ba-5358-423d-9175-5c4644c4045a", parent_call_id="agy:p:49"
    )
    events = map_step(child, own("run_command_done_nonzero.json"), absolute_index=5)
    assert events
    assert all(isinstance(e, SubAgentEvent) for e in events)
    wrapped = [e.event for e in events if isinstance(e, SubAgentEvent)]
    assert {type(e) for e in wrapped} == {ModelChanged, ToolCallStarted, ToolCallFinished}
    assert {e.parent_call_id for e in events if isinstance(e, SubAgentEvent)} == {"agy:p:49"}


def test_unknown_types_are_reported_once_per_type_and_still_rendered() -> None:
    state = MapperState(cascade_id=CASCADE)
    step = own("unknown_future_step.json")
    first = map_step(state, step, absolute_index=51)
    second = map_step(state, step, absolute_index=52)
    assert len(of(UnknownStep, first)) == 1
    assert not of(UnknownStep, second)
    assert len(of(ToolCallStarted, second)) == 1
    assert len(of(ToolCallFinished, second)) == 1


def test_a_tool_step_still_generating_its_arguments_is_not_started_yet() -> None:
    state = MapperState(cascade_id=CASCADE)
    step = copy.deepcopy(own("run_command_waiting.json"))
    step["status"] = "CORTEX_STEP_STATUS_GENERATING"
    assert not of(ToolCallStarted, map_step(state, step, absolute_index=3))
    assert of(ToolCallStarted, map_step(state, own("run_command_waiting.json"), absolute_index=3))


def test_a_reader_seeds_committed_steps_from_its_cursor() -> None:
    state = MapperState(cascade_id=CASCADE)
    state.mark_committed(StepKey(CASCADE, TRAJ, 1))
    assert state.is_committed(StepKey("other cascade", TRAJ, 1))  # keyed by trajectory
    assert map_step(state, own("planner_done_text.json"), absolute_index=1) == []
    assert state.committed_count == 1


def test_non_object_steps_map_to_nothing() -> None:
    state = MapperState(cascade_id=CASCADE)
    for garbage in (None, 3, "step", [own("user_input.json")], b"{}"):
        assert map_step(state, garbage, absolute_index=0) == []


# --- snapshots of the event streams (regenerate only with --snapshot-update) ------------------


def plain(value: object) -> object:
    """Events as plain data, so snapshots read well and do not depend on reprs."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"event": type(value).__name__, **fields}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


SCENARIOS: dict[str, list[tuple[int | None, str]]] = {
    "text_turn": [
        (0, "user_input.json"),
        (1, "planner_generating_thinking.json"),
        (1, "planner_generating_partial.json"),
        (1, "planner_generating_partial.json"),
        (1, "planner_done_text.json"),
    ],
    "command_approval_via_stream_then_poll_catch_up": [
        (4, "user_input_requested_model.json"),
        (2, "planner_tool_call_stream.json"),
        (3, "run_command_waiting.json"),
        (3, "run_command_waiting.json"),
        (3, "run_command_running.json"),
        (3, "run_command_done.json"),
        (2, "planner_tool_call_poll.json"),
    ],
    "questions_answered": [
        (39, "ask_question_waiting_several.json"),
        (39, "ask_question_done.json"),
    ],
    "subagents": [
        (49, "invoke_subagent_running.json"),
        (49, "invoke_subagent_done.json"),
    ],
}


@pytest.mark.parametrize("name", OWN_FILES)
def test_snapshot_of_each_fixture(name: str, snapshot: SnapshotAssertion) -> None:
    assert plain(run(load(OWN / name))) == snapshot


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_snapshot_of_each_scenario(scenario: str, snapshot: SnapshotAssertion) -> None:
    state = MapperState(cascade_id=CASCADE, model_names={"MODEL_PLACEHOLDER_M20": "Model M20"})
    steps: Steps = [(index, own(name)) for index, name in SCENARIOS[scenario]]
    events = run(steps, state)
    check_invariants(events)
    assert plain(events) == snapshot


# --- never trust the wire: seeded fuzzing ----------------------------------------------------

_GARBAGE: list[object] = [
    None, True, 0, -1, 2**63, 1.5, "", "x", "CORTEX_STEP_STATUS_DONE", "CORTEX_STEP_STATUS_WAITING",
    "CORTEX_STEP_TYPE_RUN_COMMAND", "-7", "9" * 30, [], [None], {}, {"id": 3}, ["1", {"text": 5}],
]  # fmt: skip


def _mutate(value: object, rng: random.Random, depth: int = 0) -> object:
    """Replace, drop or rewrite parts of a JSON value at random."""
    if rng.random() < 0.08 or depth > 8:
        return rng.choice(_GARBAGE)
    if isinstance(value, dict):
        mutated = {}
        for key, item in value.items():
            if rng.random() < 0.1:
                continue  # drop a field
            mutated[key] = _mutate(item, rng, depth + 1)
        if rng.random() < 0.1:
            mutated[rng.choice(["runCommand", "requestedInteraction", "status", "type"])] = (
                rng.choice(_GARBAGE)
            )
        return mutated
    if isinstance(value, list):
        return [_mutate(item, rng, depth + 1) for item in value if rng.random() > 0.1]
    if isinstance(value, str) and rng.random() < 0.2:
        return value[: rng.randrange(len(value) + 1)]
    return value


def _all_step_templates() -> list[dict[str, Any]]:
    return [step for name in OWN_FILES for _, step in load(OWN / name)]


@pytest.mark.parametrize("seed", range(40))
def test_mapper_never_raises_on_mangled_steps(seed: int) -> None:
    rng = random.Random(seed)
    state = MapperState(cascade_id="fuzz")
    templates = _all_step_templates()
    for _ in range(150):
        step = _mutate(rng.choice(templates), rng)
        index = rng.choice([None, 0, 3, rng.randrange(1000)])
        events = map_step(state, step, absolute_index=index)
        assert isinstance(events, list)
        plain(events)  # and every event is well-formed data


# --- cost: per-frame work does not grow with the conversation --------------------------------


def _history(state: MapperState, prior_steps: int) -> None:
    """`prior_steps` committed steps: a planner answer and a command, alternating."""
    planner = own("planner_done_text.json")
    command = own("run_command_done.json")
    for index in range(prior_steps):
        map_step(state, planner if index % 2 else command, absolute_index=index)


def _cost_of_one_delta(prior_steps: int) -> tuple[int, MapperState]:
    state = MapperState(cascade_id=CASCADE)
    _history(state, prior_steps)
    assert state.committed_count == prior_steps
    assert state.open_count == 0  # nothing but one int per committed step is kept
    answer = own("planner_done_text.json")["plannerResponse"]["modifiedResponse"]
    map_step(state, _generating(answer[:30]), absolute_index=prior_steps)
    frame = _generating(answer[:60])
    return count_package_lines(lambda: map_step(state, frame, absolute_index=prior_steps)), state


def test_work_per_new_delta_does_not_grow_with_the_conversation() -> None:
    small, _ = _cost_of_one_delta(100)
    large, state = _cost_of_one_delta(10_000)
    assert small == large
    assert small > 10  # the counter really saw the mapper run
    assert state.open_count == 1  # only the step being generated
