"""The session core (`AgySession`) without processes: a turn's send, its events and its end,
interrupt, steering, a /clear's rotation, agy or the reader going away, the turn a dead harness
process left, and the gates handed to the bridge (tests/sessionfakes.py plays agy)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Coroutine, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sessionfakes import CASCADE, FakeAgy, FakeBinding, key

from omnigent_agy.agy import keep
from omnigent_agy.errors import Code, ProtocolError, RpcError, SessionError
from omnigent_agy.reading.events import (
    AssistantMessage,
    ErrorReported,
    InteractionRequested,
    InteractionResolved,
    SubAgentEvent,
    SubAgentFinished,
    SubAgentStarted,
    TextDelta,
    ToolCallStarted,
    TurnBoundary,
)
from omnigent_agy.reading.reader import (
    ConversationRotated,
    ReaderFailed,
    ReaderModeChanged,
    TurnEnded,
)
from omnigent_agy.reading.steps import InteractionKind, ModelUsage, RequestedInteraction
from omnigent_agy.session import agy_session as session_module
from omnigent_agy.session.agy_session import STEERING, AgySession
from omnigent_agy.session.binding import SessionSettings
from omnigent_agy.session.held import leftovers, open_gates
from omnigent_agy.session.turn import Turn
from omnigent_agy.session.turn_results import AgyRestarted, TurnResult

HIGH = "MODEL_PLACEHOLDER_M20"


class Prompts:
    """Never asked: the workspace is not seeded, so no trust card."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the session asked the person ({name})")


@pytest.fixture
def session(tmp_path: Path) -> AsyncIterator[AgySession]:
    workspace = tmp_path / "work"
    workspace.mkdir()
    settings = SessionSettings(
        conversation_id="conv-1",
        workspace=workspace,
        command=("agy",),
        state_base=tmp_path / "state",
    )
    made = AgySession(settings, binding=FakeBinding)
    yield made
    asyncio.run(made.close())


def fake(session: AgySession) -> FakeBinding:
    binding = session._binding
    assert isinstance(binding, FakeBinding)
    return binding


def turn(session: AgySession, text: str = "hello", **kw: Any) -> Coroutine[Any, Any, list[object]]:
    async def collect() -> list[object]:
        return [
            event
            async for event in session.run_turn(
                Turn(
                    text,
                    Prompts(),  # type: ignore[arg-type]
                    model=kw.pop("model", "gemini-pro"),
                    effort=kw.pop("effort", None),
                    **kw,
                )
            )
        ]

    return collect()


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def test_a_turn_sends_only_the_text_on_the_chosen_model_and_ends_with_its_result(
    session: AgySession,
) -> None:
    agy = fake(session).fake
    agy.script = lambda agy, text: agy.answer(text)
    events = run(turn(session, "hello", model="gemini-pro"))
    assert agy.sent == [{"cascade": CASCADE, "text": "hello", "model": HIGH, "strategy": None}]
    # The send is never repeated blindly (the turn's last call, agy's context estimate, is).
    assert fake(session).client.resend_safe[-2:] == [False, True]
    assert [type(event).__name__ for event in events] == [
        "TurnBoundary",
        "AssistantMessage",
        "UsageReported",
        "TurnResult",
    ]
    result = events[-1]
    assert isinstance(result, TurnResult)
    assert (result.status, result.text) == ("completed", "answer to hello")
    assert result.usage == ModelUsage(input_tokens=10, output_tokens=5)
    assert result.last_call == ModelUsage(input_tokens=10, output_tokens=5)
    assert session.turn_model_name == "Gemini 3 Pro (High)"
    assert fake(session).clear_checks == 1  # a /clear is looked for before the send


def test_the_clear_check_and_the_step_count_go_to_agy_together(session: AgySession) -> None:
    """Before the message can go, agy is asked whether a /clear happened and where the turn's
    steps will start: two round trips, asked at once, so the send waits for one (the fake's
    /clear look ends only once the cascades were listed: asked one after the other, it never
    does)."""
    binding = fake(session)
    binding.clear_waits_for_listing = True
    binding.fake.script = lambda agy, text: agy.answer(text)
    result = run(turn(session, "hello"))[-1]
    assert isinstance(result, TurnResult)
    assert result.status == "completed"
    assert binding.fake.sent[-1]["text"] == "hello"


def test_an_earlier_turns_end_and_the_readers_mode_are_not_this_turns(
    session: AgySession,
) -> None:
    agy = fake(session).fake

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(
            TurnEnded(CASCADE, key(0), None),  # the end of a turn before ours
            ReaderModeChanged("polling", "stream idle"),
        )
        agy.answer(text)

    agy.script = script
    events = run(turn(session))
    assert [type(event).__name__ for event in events] == [
        "TurnBoundary",
        "AssistantMessage",
        "UsageReported",
        "TurnResult",
    ]


def test_an_error_agy_did_not_recover_from_fails_the_turn(session: AgySession) -> None:
    agy = fake(session).fake

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(
            TurnBoundary(key(3), text),
            ErrorReported(key(4), "model overloaded", retryable=True),
            TurnEnded(CASCADE, key(3), None),
        )

    agy.script = script
    result = run(turn(session))[-1]
    assert isinstance(result, TurnResult)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.message == "model overloaded"


def test_the_steps_since_the_listing_show_whether_a_lost_send_arrived(
    session: AgySession,
) -> None:
    agy = fake(session).fake
    agy.script = lambda agy, text: agy.answer(text)
    agy.send_errors = [RpcError(Code.UNAVAILABLE, "connection dropped")]
    agy.arrives = True
    run(turn(session))
    assert len(agy.sent) == 1  # it arrived: not sent again


def test_a_send_that_did_not_arrive_is_sent_once_more(session: AgySession) -> None:
    agy = fake(session).fake
    agy.script = lambda agy, text: agy.answer(text)
    agy.send_errors = [ProtocolError("garbled answer")]
    agy.arrives = False
    events = run(turn(session))
    assert [sent["text"] for sent in agy.sent] == ["hello", "hello"]
    assert isinstance(events[-1], TurnResult)


def test_a_send_agy_refused_fails_the_turn_unrepeated(session: AgySession) -> None:
    agy = fake(session).fake
    agy.send_errors = [RpcError(Code.INVALID_ARGUMENT, "no such model")]
    with pytest.raises(RpcError, match="no such model"):
        run(turn(session))
    assert len(agy.sent) == 1


def test_a_reader_failure_ends_the_turn_with_its_error(session: AgySession) -> None:
    agy = fake(session).fake
    agy.script = lambda agy, text: agy.publish(ReaderFailed(SessionError("token refused")))
    with pytest.raises(SessionError, match="token refused"):
        run(turn(session))


@pytest.mark.parametrize(("gone", "code"), [("agy", "agy_exited"), ("reader", "agy_unreachable")])
def test_a_quiet_turn_checks_agy_and_the_reader(
    session: AgySession, monkeypatch: pytest.MonkeyPatch, gone: str, code: str
) -> None:
    monkeypatch.setattr(session_module, "_LIVENESS_SECONDS", 0.01)
    binding = fake(session)

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(TurnBoundary(key(3), text))
        if gone == "agy":
            binding.next_process.terminal.alive = False
        else:
            binding.reader_alive = False

    binding.fake.script = script
    with pytest.raises(SessionError) as caught:
        run(turn(session))
    assert caught.value.code == code


def test_a_clear_in_agys_screen_rebinds_the_conversation(session: AgySession) -> None:
    binding = fake(session)
    binding.next_process.recorded_follows_tui = True

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(TurnBoundary(key(3), text))
        agy.clear("cascade-2")
        agy.publish(TurnEnded("cascade-2", key(3), None))

    binding.fake.script = script
    events = run(turn(session))
    assert ConversationRotated(CASCADE, "cascade-2") in events
    assert binding.next_process.bound == [("cascade-2", True)]
    assert session.cascade_id == "cascade-2"
    # The next turn goes to the new conversation.
    binding.fake.script = lambda agy, text: agy.publish(
        TurnBoundary(key(5, "cascade-2"), text), TurnEnded("cascade-2", key(5, "cascade-2"), None)
    )
    run(turn(session, "again"))
    assert binding.fake.sent[-1]["cascade"] == "cascade-2"


def test_a_restarted_agy_is_said_first_and_once(session: AgySession) -> None:
    binding = fake(session)
    binding.next_process.resumed_after = "idle 4h02m (limit 4h)"
    binding.fake.script = lambda agy, text: agy.answer(text)
    events = run(turn(session))
    assert events[0] == AgyRestarted(CASCADE, "idle 4h02m (limit 4h)")
    again = run(turn(session))
    assert not any(isinstance(event, AgyRestarted) for event in again)


def test_events_between_turns_are_dropped_unless_a_dead_process_left_its_turn(
    session: AgySession, tmp_path: Path
) -> None:
    binding = fake(session)
    binding.fake.script = lambda agy, text: agy.answer(text, start=10)
    typed_in_tui = [TurnBoundary(key(5), "typed in agy"), AssistantMessage(key(6), "hi", "DONE")]
    binding.fake.publish(*typed_in_tui)
    events = run(turn(session))
    assert [event for event in events if event in typed_in_tui] == []

    # A harness process died during its turn: the lease it held says so to the next one.
    lease = {"pid": 999_999_999, "pid_create_time": 1.0, "turn_running": True, "last_active": 1}
    (binding.state.path / keep._LEASE_FILE).write_text(json.dumps(lease))
    left = AssistantMessage(key(7), "the rest of the answer", "DONE")
    binding.fake.publish(left, TurnBoundary(key(8), "someone typed"))
    events = run(turn(session))
    assert events[0] == left
    result = events[-1]
    assert isinstance(result, TurnResult)
    assert result.text.startswith("the rest of the answer")


def gate(index: int) -> InteractionRequested:
    wanted = RequestedInteraction(InteractionKind.PERMISSION, {}, action="command", target="ls")
    return InteractionRequested(key(index), f"call-{index}", "CORTEX_STEP_TYPE_RUN_COMMAND", wanted)


def test_leftovers_stop_at_the_next_user_input_and_skip_the_readers_own_news() -> None:
    left = AssistantMessage(key(1), "a", "DONE")
    events = [
        ReaderModeChanged("poll", "x"),
        left,
        TurnEnded(CASCADE, key(0), None),
        TurnBoundary(key(2), "next"),
        AssistantMessage(key(3), "b", "DONE"),
    ]
    assert leftovers(events) == [left]


def test_open_gates_are_those_announced_and_not_resolved() -> None:
    first, second = gate(1), gate(2)
    resolved = InteractionResolved(first.key, first.call_id, "DONE")
    assert open_gates([first, second, resolved]) == [second]


class FakeBridge:
    """The interaction bridge, as the session drives it."""

    made: ClassVar[list[FakeBridge]] = []

    def __init__(self, **kw: Any) -> None:
        self.where = kw["cascade_id"]
        self.requests: list[InteractionRequested] = []
        self.denied = 0
        FakeBridge.made.append(self)

    async def handle(self, request: InteractionRequested) -> object:
        self.requests.append(request)
        await asyncio.sleep(3600)  # the person never answers
        return None

    async def deny_pending(self, also: Sequence[str] = ()) -> None:
        self.denied += 1
        self.also = list(also)

    @property
    def cascade_id(self) -> str:
        return self.where if isinstance(self.where, str) else self.where.cascade_id


@pytest.fixture
def bridges(monkeypatch: pytest.MonkeyPatch) -> list[FakeBridge]:
    FakeBridge.made = []
    monkeypatch.setattr(session_module, "InteractionBridge", FakeBridge)
    return FakeBridge.made


def test_a_gate_goes_to_the_bridge_and_interrupt_denies_it_and_cancels(
    session: AgySession, bridges: list[FakeBridge]
) -> None:
    binding = fake(session)

    async def scenario() -> list[object]:
        def script(agy: FakeAgy, text: str) -> None:
            agy.publish(TurnBoundary(key(3), text), gate(4))

        binding.fake.script = script
        events: list[object] = []
        async for event in session.run_turn(Turn("hello", Prompts())):  # type: ignore[arg-type]
            events.append(event)
            if isinstance(event, InteractionRequested):
                await asyncio.sleep(0)
                assert await session.interrupt()
                binding.fake.publish(TurnEnded(CASCADE, key(3), None))
        return events

    events = run(scenario())
    assert bridges[0].requests == [gate(4)]
    assert bridges[0].denied == 1
    assert binding.fake.cancelled == [CASCADE]
    result = events[-1]
    assert isinstance(result, TurnResult)
    assert result.status == "cancelled"


def test_the_harness_shutting_down_mid_turn_ends_the_turn_there(
    session: AgySession, bridges: list[FakeBridge]
) -> None:
    """However a turn ends it ends in one place: closed under a gate nobody answers, the
    session lets go of all the turn held — the gate's task, the lease — at once, not when
    the abandoned turn is finally collected."""
    binding = fake(session)
    lease_file = binding.state.path / keep._LEASE_FILE

    async def scenario() -> tuple[bool, bool, list[asyncio.Task[Any]]]:
        binding.fake.script = lambda agy, text: agy.publish(TurnBoundary(key(3), text), gate(4))
        asking = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        async for event in session.run_turn(Turn("hello", Prompts())):  # type: ignore[arg-type]
            if isinstance(event, InteractionRequested):
                await asyncio.sleep(0)
                others = asyncio.all_tasks() - {asyncio.current_task(), *asking}
                running = json.loads(lease_file.read_text())["turn_running"]
                await session.close()
                await asyncio.sleep(0)
                after = json.loads(lease_file.read_text())["turn_running"]
                return running, after, list(others)
        raise AssertionError("the gate never came")

    running, after, answering = run(scenario())
    assert bridges[0].requests == [gate(4)]
    assert running is True
    assert after is False
    assert answering
    assert all(task.cancelled() for task in answering)


def test_a_bridge_that_fails_interrupts_and_ends_the_turn_with_its_error(
    session: AgySession, bridges: list[FakeBridge], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: FakeBridge, request: InteractionRequested) -> object:
        raise ValueError("cannot ask")

    monkeypatch.setattr(FakeBridge, "handle", broken)
    binding = fake(session)
    binding.fake.script = lambda agy, text: agy.publish(TurnBoundary(key(3), text), gate(4))
    with pytest.raises(ValueError, match="cannot ask"):
        run(turn(session))
    assert binding.fake.cancelled == [CASCADE]


def test_a_gate_still_open_from_between_turns_is_asked_again(
    session: AgySession, bridges: list[FakeBridge]
) -> None:
    binding = fake(session)
    binding.fake.publish(gate(2))
    binding.fake.script = lambda agy, text: agy.answer(text)
    run(turn(session))
    assert bridges[0].requests == [gate(2)]


def test_a_rotation_gives_the_bridge_the_new_conversation(
    session: AgySession, bridges: list[FakeBridge]
) -> None:
    fake(session).next_process.recorded_follows_tui = True
    seen: list[str] = []

    def script(agy: FakeAgy, text: str) -> None:
        seen.append(bridges[0].cascade_id)
        agy.publish(TurnBoundary(key(3), text))
        agy.clear("cascade-2")
        agy.publish(TurnEnded("cascade-2", key(3), None))

    fake(session).fake.script = script
    run(turn(session))
    # One bridge, which asks the whereabouts: the conversation after the /clear.
    assert len(bridges) == 1
    assert [*seen, bridges[0].cascade_id] == [CASCADE, "cascade-2"]


def test_steering_needs_a_running_turn_and_is_delivered_for_the_next_model_call(
    session: AgySession,
) -> None:
    binding = fake(session)
    assert run(session.steer("too early")) is False  # no agy yet

    async def scenario() -> bool:
        steered = False

        def script(agy: FakeAgy, text: str) -> None:
            agy.publish(TurnBoundary(key(3), text), TextDelta(key(4), 0, "wor"))

        binding.fake.script = script
        turn = Turn("hello", Prompts(), model="gemini-pro")  # type: ignore[arg-type]
        async for event in session.run_turn(turn):
            if isinstance(event, TextDelta):
                steered = await session.steer("also this")
                binding.fake.publish(TurnEnded(CASCADE, key(3), None))
        return steered

    assert run(scenario()) is True
    assert binding.fake.sent[-1] == {
        "cascade": CASCADE,
        "text": "also this",
        "model": HIGH,
        "strategy": STEERING,
    }
    assert run(session.steer("after the turn")) is False


def test_interrupt_without_an_agy_says_it_did_nothing(session: AgySession) -> None:
    assert run(session.interrupt()) is False


def test_tool_rows_pass_through_and_close_keeps_agy_unless_asked(session: AgySession) -> None:
    binding = fake(session)
    started = ToolCallStarted("call-5", key(5), "run_command", {"CommandLine": "ls"}, "RUN")

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(TurnBoundary(key(3), text), started, TurnEnded(CASCADE, key(3), None))

    binding.fake.script = script
    assert started in run(turn(session))
    run(session.close())
    assert binding.closed == [None]


def test_the_turns_result_carries_agys_estimate_of_its_context_in_use(
    session: AgySession,
) -> None:
    agy = fake(session).fake
    agy.script = lambda agy, text: agy.answer(text)
    result = run(turn(session))[-1]
    assert isinstance(result, TurnResult)
    assert result.context_used is None  # an agy without the method: nothing, and no failure
    assert result.calls == (ModelUsage(input_tokens=10, output_tokens=5),)
    agy.context_estimate = 91_234
    result = run(turn(session, "again"))[-1]
    assert isinstance(result, TurnResult)
    assert result.context_used == 91_234


def test_a_finished_sub_agents_tool_calls_come_before_its_end(session: AgySession) -> None:
    agy = fake(session).fake
    child = "child-cascade"
    listing = {
        "type": "CORTEX_STEP_TYPE_LIST_DIRECTORY",
        "status": "CORTEX_STEP_STATUS_DONE",
        "metadata": {
            "sourceTrajectoryStepInfo": {"trajectoryId": "child-traj", "cascadeId": child},
            "toolSummary": "Listing the workspace",
        },
        "listDirectory": {"directoryPathUri": "file:///w"},
    }
    agy.children[child] = [{"type": "CORTEX_STEP_TYPE_USER_INPUT", "status": "DONE"}, listing]
    spec = {"role": "Surveyor", "prompt": "Survey."}

    def script(agy: FakeAgy, text: str) -> None:
        agy.publish(
            TurnBoundary(key(3), text),
            SubAgentStarted("call-4", child, "Surveyor", "general", spec),
            SubAgentFinished("call-4", child, True, {"summary": "done"}),
        )
        agy.answer(text, start=5)

    agy.script = script
    events = run(turn(session))
    kinds = [type(e).__name__ for e in events]
    assert kinds[:4] == ["TurnBoundary", "SubAgentStarted", "SubAgentEvent", "SubAgentFinished"]
    wrapped = events[2]
    assert isinstance(wrapped, SubAgentEvent)
    assert (wrapped.parent_call_id, wrapped.child_cascade_id) == ("call-4", child)
    assert isinstance(wrapped.event, ToolCallStarted)
    assert wrapped.event.title == "Listing the workspace"
