"""A 20,000-step conversation (agy-sim --sim-history) attaches, first time and after a restart.

Its first stream frame holds about 30 MB when agy replays it all (docs/wire.md §4); the reader
asks only for what it needs and still reads a full replay when it must.
"""

from __future__ import annotations

import asyncio
import json
import queue
import time
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import pytest
from simproc import FAST, Sim, plan_model, sim_launcher

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import AssistantMessage, TurnBoundary
from omnigent_agy.reading.reader import (
    CascadeReader,
    ReaderEvent,
    ReaderModeChanged,
    ReaderSettings,
    TurnEnded,
)
from omnigent_agy.reading.sink import QueueSink
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

HISTORY = 20_000
QUICK = ReaderSettings(idle_timeout=5.0, poll_interval=0.1, reconnect_initial=0.05)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_launcher(tmp_path_factory.mktemp("long-sim"), "agy-long") as launcher:
        yield launcher.launch(*FAST, "--sim-history", str(HISTORY))


class RecordingClient(RpcClient):
    """A real client that also notes where each stream and each poll asked agy to start."""

    asked: list[tuple[str, int | None]]

    async def get_cascade_trajectory_steps(
        self, cascade_id: str, *, step_offset: int = 0
    ) -> list[dict[str, Any]]:
        self.asked.append(("poll", step_offset))
        return await super().get_cascade_trajectory_steps(cascade_id, step_offset=step_offset)

    def stream_agent_state_updates(
        self, conversation_id: str, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any]]:
        self.asked.append(("stream", kwargs.get("start_index")))
        return super().stream_agent_state_updates(conversation_id, **kwargs)


def tui_cascade(sim: Sim) -> tuple[str, str]:
    async def go(client: RpcClient) -> tuple[str, str]:
        summaries = (await client.get_all_cascade_trajectories())["trajectorySummaries"]
        (cascade,) = [c for c, s in summaries.items() if s.get("stepCount", 0) >= HISTORY]
        return cascade, await plan_model(client)

    return sim.rpc(go)


def reader_for(
    sim: Sim, cascade: str, asked: list[tuple[str, int | None]], **kwargs: Any
) -> tuple[CascadeReader, QueueSink[ReaderEvent]]:
    def factory(port: int, token: str) -> RpcClient:
        client = RecordingClient(port=port, csrf_token=token)
        client.asked = asked
        return client

    sink: QueueSink[ReaderEvent] = QueueSink()
    reader = CascadeReader(
        port=sim.port,
        csrf_token=sim.token or "",
        cascade_id=cascade,
        sink=sink,
        settings=QUICK,
        client_factory=factory,
        **kwargs,
    )
    reader.start()
    assert reader.wait_ready(60), "the reader never caught up with the long conversation"
    return reader, sink


def events_until_turn_end(sink: QueueSink[ReaderEvent], timeout: float = 60.0) -> list[Any]:
    events: list[Any] = []
    deadline = time.monotonic() + timeout
    while not any(isinstance(e, TurnEnded) for e in events):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no TurnEnded; saw {[type(e).__name__ for e in events]}"
        try:
            events.append(sink.get(timeout=remaining))
        except queue.Empty:
            continue
    return events


def send(sim: Sim, cascade: str, text: str, model: str) -> None:
    async def go(client: RpcClient) -> None:
        await client.send_user_cascade_message(cascade, text, plan_model=model)

    sim.rpc(go)


def test_a_first_attach_skips_the_history_unseen_and_a_restart_goes_on(
    sim: Sim, tmp_path: Path
) -> None:
    cascade, model = tui_cascade(sim)
    store = CursorStore(tmp_path / "state")
    asked: list[tuple[str, int | None]] = []
    reader, sink = reader_for(sim, cascade, asked, skip_existing=True, cursor=store)
    try:
        # The history was counted, not fetched: every poll and the stream asked for the
        # last turn on, never for 20,000 steps.
        assert asked[0] == ("poll", HISTORY - 2)
        assert all(start is not None and start >= HISTORY - 2 for _, start in asked), asked
        send(sim, cascade, "hello once more", model)
        events = events_until_turn_end(sink)
    finally:
        assert reader.stop()
    assert [e.text for e in events if isinstance(e, TurnBoundary)] == ["hello once more"]
    assert len([e for e in events if isinstance(e, AssistantMessage)]) == 1

    asked = []
    second, sink = reader_for(sim, cascade, asked, cursor=store)
    try:
        send(sim, cascade, "and another", model)
        events = events_until_turn_end(sink)
    finally:
        assert second.stop()
    # From the cursor: nothing of the history (nor the first attach's turn) is asked for.
    assert all(start is not None and start > HISTORY for _, start in asked), asked
    assert [e.text for e in events if isinstance(e, TurnBoundary)] == ["and another"]


def test_a_full_replay_of_20000_steps_is_read_not_refused(sim: Sim) -> None:
    cascade, _ = tui_cascade(sim)
    asked: list[tuple[str, int | None]] = []
    reader, sink = reader_for(sim, cascade, asked)
    try:
        assert asked[0] == ("stream", None)  # no cursor, nothing skipped: all of it
        messages = 0
        deadline = time.monotonic() + 60
        while messages < HISTORY // 2:
            assert time.monotonic() < deadline, f"only {messages} answers arrived"
            try:
                event = sink.get(timeout=1.0)
            except queue.Empty:
                continue
            messages += isinstance(event, AssistantMessage)
            # Read from the stream's first frame, not caught up by polling after a refusal.
            assert not isinstance(event, ReaderModeChanged), event
    finally:
        assert reader.stop()


def test_the_long_history_is_what_the_simulator_reports(sim: Sim) -> None:
    cascade, _ = tui_cascade(sim)

    async def go(client: RpcClient) -> list[dict[str, Any]]:
        return await client.get_cascade_trajectory_steps(cascade, step_offset=HISTORY - 2)

    last = asyncio.run(_with_client(sim, go))
    assert [s["type"] for s in last[:2]] == [
        "CORTEX_STEP_TYPE_USER_INPUT",
        "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
    ]
    assert all(s["status"] == "CORTEX_STEP_STATUS_DONE" for s in last[:2])


async def _with_client(sim: Sim, scenario: Any) -> Any:
    async with sim.client() as client:
        return await scenario(client)


def test_the_whole_history_arrives_in_one_unary_answer_past_the_connection_window(
    sim: Sim,
) -> None:
    # All 20,000 steps in one GetCascadeTrajectorySteps answer: tens of MB, past the unary
    # channel's 16 MiB receive window, so it arrives only if the channel hands the window back.
    cascade, _ = tui_cascade(sim)

    async def go(client: RpcClient) -> list[dict[str, Any]]:
        return await client.get_cascade_trajectory_steps(cascade, step_offset=0)

    steps = asyncio.run(_with_client(sim, go))
    assert len(steps) >= HISTORY
    assert len(json.dumps(steps)) > 16 * 1024 * 1024
    assert steps[0]["type"] == "CORTEX_STEP_TYPE_USER_INPUT"
