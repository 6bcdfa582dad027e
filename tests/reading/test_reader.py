"""The reader thread against agy-sim running as a separate process in tmux (real TLS HTTP/2)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from simproc import FAST, Sim, plan_model, sim_launcher
from waiting import await_until, wait_until

from omnigent_agy.errors import AgyExitedError
from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import (
    AssistantMessage,
    InteractionRequested,
    SubAgentFinished,
    SubAgentStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnBoundary,
    apply_delta,
)
from omnigent_agy.reading.reader import (
    CascadeReader,
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    ReaderSettings,
    TurnEnded,
)
from omnigent_agy.reading.sink import QueueSink
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.discovery import discover_pin
from omnigent_agy.rpc.endpoint import AgyEndpoint
from omnigent_agy.rpc.whereabouts import Whereabouts

pytestmark = pytest.mark.tmux

QUICK = ReaderSettings(idle_timeout=1.0, poll_interval=0.1, reconnect_initial=0.05)
SLOW_LONG = [*FAST, "--sim-long-token-delay", "0.004"]


@pytest.fixture(scope="module")
def agy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """One agy-sim for the module: each test uses its own cascade; faults reset per test."""
    with sim_launcher(tmp_path_factory.mktemp("reader-sim"), "agy-reader") as launcher:
        yield launcher.launch(*SLOW_LONG)


@pytest.fixture
def sim(agy: Sim) -> Iterator[Sim]:
    agy.clear_faults()
    yield agy
    agy.clear_faults()


def run[T](coro: Any) -> T:
    return asyncio.run(coro)  # type: ignore[no-any-return]


async def _start(sim: Sim) -> tuple[str, str]:
    async with sim.client() as client:
        cascade = await client.start_cascade()
        return cascade, await plan_model(client)


def new_cascade(sim: Sim) -> tuple[str, str]:
    return run(_start(sim))


def send(sim: Sim, cascade: str, text: str, model: str) -> None:
    async def go() -> None:
        async with sim.client() as client:
            await client.send_user_cascade_message(cascade, text, plan_model=model)

    run(go())


class Collected:
    """Events read from a sink, with waits on what a test expects."""

    def __init__(self, sink: QueueSink[ReaderEvent]) -> None:
        self.sink = sink
        self.events: list[ReaderEvent] = []

    def until[E](
        self, kind: type[E], where: Callable[[E], bool] = lambda e: True, timeout: float = 30.0
    ) -> E:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if isinstance(event, kind) and where(event):
                return event
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kinds = [type(e).__name__ for e in self.events]
                raise AssertionError(f"no {kind.__name__} arrived; saw {kinds}")
            try:
                event = self.sink.get(timeout=remaining)
            except queue.Empty:
                continue
            self.events.append(event)
            if isinstance(event, kind) and where(event):
                return event

    def of[E](self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def start_reader(sim: Sim, cascade: str, **kwargs: Any) -> tuple[CascadeReader, Collected]:
    sink: QueueSink[ReaderEvent] = QueueSink()
    reader = CascadeReader(
        port=sim.port,
        csrf_token=sim.token or "",
        cascade_id=cascade,
        sink=sink,
        settings=kwargs.pop("settings", QUICK),
        **kwargs,
    )
    reader.start()
    assert reader.wait_ready(20), "the reader never caught up"
    return reader, Collected(sink)


def assert_exactly_once(collected: Collected) -> str:
    """Deltas of each message rebuild its committed text; each message is committed once."""
    messages = collected.of(AssistantMessage)
    keys = [m.key for m in messages]
    assert len(keys) == len(set(keys)), "a message was committed twice"
    texts: dict[Any, str] = {}
    for delta in collected.of(TextDelta):
        texts[delta.key] = apply_delta(texts.get(delta.key, ""), delta)
    for message in messages:
        assert texts.get(message.key, "") == message.text
    return "".join(m.text for m in messages)


@pytest.fixture
def no_stray_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    wait_until(
        lambda: set(threading.enumerate()) <= before, timeout=5.0, what="reader threads to end"
    )


def our_connections_to(port: int) -> list[Any]:
    return [
        c
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    ]


@pytest.mark.usefixtures("no_stray_threads")
def test_a_long_answer_arrives_as_deltas_that_rebuild_it_exactly_once(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "give me a long answer", model)
        ended = collected.until(TurnEnded)
        text = assert_exactly_once(collected)
        assert len(collected.of(AssistantMessage)) == 1
        assert len(collected.of(TextDelta)) > 10, "the answer should stream in many deltas"
        assert len(text) > 200
        assert ended.usage is not None
        assert ended.usage.output_tokens > 0
        boundary = collected.until(TurnBoundary)
        assert boundary.text == "give me a long answer"
        assert ended.boundary == boundary.key
    finally:
        assert reader.stop()
    assert not our_connections_to(sim.port), "the reader left a connection open"


@pytest.mark.usefixtures("no_stray_threads")
@pytest.mark.parametrize("seed", range(24))
def test_streams_dropped_at_random_points_lose_and_repeat_nothing(sim: Sim, seed: int) -> None:
    rng = random.Random(seed)
    drops = [
        {
            "kind": "drop_stream",
            "method": "StreamAgentStateUpdates",
            "after_frames": rng.randint(1, 40),
            "mode": rng.choice(["eof", "truncate"]),
            "times": rng.randint(1, 3),
            "id": f"seed-{seed}",
        }
    ]
    cascade, model = new_cascade(sim)
    sim.set_faults(*drops, restart=max(0, len(sim.ports_logged()) - 1))
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "a long answer please", model)
        collected.until(TurnEnded)
        text = assert_exactly_once(collected)
        assert len(collected.of(AssistantMessage)) == 1
        expected = run(_committed_text(sim, cascade))
        assert text == expected
        assert len(collected.of(TurnEnded)) == 1
        # The fault really fired: the reader lost its stream and caught up by polling.
        assert any(m.mode == "polling" for m in collected.of(ReaderModeChanged))
    finally:
        assert reader.stop()


async def _committed_text(sim: Sim, cascade: str) -> str:
    async with sim.client() as client:
        steps = await client.get_cascade_trajectory_steps(cascade)
    return "".join(
        s["plannerResponse"]["response"]
        for s in steps
        if s.get("type") == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
        and s.get("plannerResponse", {}).get("response")
    )


@pytest.mark.usefixtures("no_stray_threads")
def test_a_stalled_stream_is_caught_up_by_polling(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    stall = {"kind": "stall_stream", "method": "StreamAgentStateUpdates", "after_frames": 3}
    sim.set_faults(stall, restart=max(0, len(sim.ports_logged()) - 1))
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "a long answer please", model)
        collected.until(TurnEnded)
        assert assert_exactly_once(collected) == run(_committed_text(sim, cascade))
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
@pytest.mark.parametrize("kind", ["http_error", "garbage"])
def test_a_broken_stream_falls_back_to_polling_and_returns(sim: Sim, kind: str) -> None:
    cascade, model = new_cascade(sim)
    fault = {"kind": kind, "method": "StreamAgentStateUpdates", "times": 4, "id": kind}
    sim.set_faults(fault, restart=max(0, len(sim.ports_logged()) - 1))
    reader, collected = start_reader(sim, cascade)
    try:
        collected.until(ReaderModeChanged, lambda e: e.mode == "polling")
        send(sim, cascade, "hello there", model)
        collected.until(TurnEnded)
        assert assert_exactly_once(collected) == run(_committed_text(sim, cascade))
        collected.until(ReaderModeChanged, lambda e: e.mode == "streaming")
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_a_restarted_reader_goes_on_from_its_durable_cursor(sim: Sim, tmp_path: Path) -> None:
    cascade, model = new_cascade(sim)
    store = CursorStore(tmp_path / "state")
    first, seen_first = start_reader(sim, cascade, cursor=store)
    send(sim, cascade, "hello there", model)
    seen_first.until(TurnEnded)
    send(sim, cascade, "now a long answer", model)
    seen_first.until(TextDelta, lambda d: d.offset > 100)
    assert first.stop()
    seen_first.events.extend(seen_first.sink.drain())

    second, seen_second = start_reader(sim, cascade, cursor=store)
    try:
        seen_second.until(TurnEnded)
        # Nothing of the first turn is published again.
        first_turn = seen_first.of(AssistantMessage)[0]
        assert first_turn.key not in {m.key for m in seen_second.of(AssistantMessage)}
        assert len(seen_second.of(TurnBoundary)) <= 1
        # Across both readers, the long answer's deltas rebuild it exactly once.
        both = Collected(QueueSink())
        both.events = [*seen_first.events, *seen_second.events]
        assert assert_exactly_once(both) == run(_committed_text(sim, cascade))
    finally:
        assert second.stop()


READER_PROC = Path(__file__).resolve().parent.parent / "_reader_proc.py"


class ProcessLines:
    """The JSON lines a reader process printed, read on a thread, waited on with deadlines."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.seen: list[dict[str, Any]] = []
        assert process.stdout is not None
        stdout = process.stdout
        self._thread = threading.Thread(
            target=lambda: [self.lines.put(json.loads(x)) for x in stdout]
        )
        self._thread.start()

    def until(self, where: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(where(line) for line in self.seen):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"the reader process never printed it; saw {self.seen}")
            with contextlib.suppress(queue.Empty):
                self.seen.append(self.lines.get(timeout=remaining))

    def drain(self, process: subprocess.Popen[str]) -> list[dict[str, Any]]:
        """Everything printed, once the process has gone and its output is read to the end."""
        process.wait(10)
        self._thread.join(10)
        with contextlib.suppress(queue.Empty):
            while True:
                self.seen.append(self.lines.get_nowait())
        return self.seen


@pytest.mark.usefixtures("no_stray_threads")
def test_a_reader_killed_mid_answer_re_streams_only_that_step(sim: Sim, tmp_path: Path) -> None:
    cascade, model = new_cascade(sim)
    state = tmp_path / "state"
    with subprocess.Popen(
        [sys.executable, str(READER_PROC), str(sim.port), cascade, str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGY_TOKEN": sim.token or ""},
    ) as process:
        lines = ProcessLines(process)
        try:
            lines.until(lambda line: line["type"] == "ready")
            send(sim, cascade, "hello there", model)
            lines.until(lambda line: line["type"] == "TurnEnded")
            send(sim, cascade, "now a long answer", model)
            lines.until(lambda line: line["type"] == "TextDelta" and line["offset"] > 100)
        finally:
            process.kill()  # no clean stop: no final cursor save
        shown = lines.drain(process)
    unfinished = [line["key"] for line in shown if line["type"] == "TextDelta"][-1]
    committed = [line["key"] for line in shown if line["type"] == "AssistantMessage"]
    assert unfinished not in committed, "the reader was killed after the answer committed"

    second, seen_second = start_reader(sim, cascade, cursor=CursorStore(state))
    try:
        seen_second.until(TurnEnded)
    finally:
        assert second.stop()
    shown_keys = {tuple(line["key"]) for line in shown if "key" in line}
    again = {_key(e) for e in seen_second.events} - {None}
    # Only the one step that was generating is published again, nothing committed before.
    assert again & shown_keys == {tuple(unfinished)}
    assert not seen_second.of(TurnBoundary)
    # What a consumer splices from both processes' deltas is the committed answer.
    text = ""
    for line in shown:
        if line["type"] == "TextDelta" and line["key"] == unfinished:
            text = text[: line["offset"]] + line["text"]
    for delta in seen_second.of(TextDelta):
        text = apply_delta(text, delta)
    (message,) = [m for m in seen_second.of(AssistantMessage) if _key(m) == tuple(unfinished)]
    assert text == message.text


def _key(event: object) -> tuple[str, int] | None:
    key = getattr(event, "key", None)
    return None if key is None else (key.trajectory_id, key.step_index)


@pytest.mark.usefixtures("no_stray_threads")
def test_skip_existing_publishes_no_history(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    send(sim, cascade, "hello there", model)
    run(_wait_idle(sim, cascade))
    reader, collected = start_reader(sim, cascade, skip_existing=True)
    try:
        send(sim, cascade, "and again", model)
        collected.until(TurnEnded)
        boundaries = collected.of(TurnBoundary)
        assert [b.text for b in boundaries] == ["and again"]
        assert len(collected.of(AssistantMessage)) == 1
    finally:
        assert reader.stop()


async def _wait_idle(sim: Sim, cascade: str) -> None:
    async with sim.client() as client:

        async def summary() -> dict[str, Any]:
            summaries = (await client.get_all_cascade_trajectories())["trajectorySummaries"]
            return dict(summaries[cascade])

        await await_until(
            summary,
            until=lambda s: s["status"] == "CASCADE_RUN_STATUS_IDLE" and s.get("stepCount"),
            timeout=20,
            what="the cascade to go idle with its steps",
        )


@pytest.mark.usefixtures("no_stray_threads")
def test_tool_calls_appear_although_the_stream_strips_tool_call(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "list the files here", model)
        collected.until(TurnEnded)
        started = collected.of(ToolCallStarted)
        finished = collected.of(ToolCallFinished)
        assert started
        assert finished
        assert {s.call_id for s in started} == {f.call_id for f in finished}
        assert any(s.step_type.endswith("LIST_DIRECTORY") for s in started)
        assert any("README.md" in f.output for f in finished)
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_an_approval_gate_is_announced_once_and_the_command_output_follows(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "run: echo hello", model)
        gate = collected.until(InteractionRequested)
        assert gate.kind == "permission"
        assert gate.command_line
        assert "echo hello" in gate.command_line

        async def allow() -> None:
            async with sim.client() as client:
                await client.handle_cascade_user_interaction(
                    cascade,
                    trajectory_id=gate.key.trajectory_id,
                    step_index=gate.key.step_index,
                    permission={"allow": True},
                )

        run(allow())
        collected.until(TurnEnded)
        assert len(collected.of(InteractionRequested)) == 1
        done = [f for f in collected.of(ToolCallFinished) if f.call_id == gate.call_id]
        assert len(done) == 1
        assert done[0].exit_code == 0
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_clear_in_the_tui_rotates_to_the_new_conversation(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    # As the session starts it: on the conversation's whereabouts, which the reader rotates.
    endpoint = AgyEndpoint(port=sim.port, csrf_token=sim.token or "")
    where = Whereabouts(endpoint, cascade_id=cascade, follows_tui=True)
    told: list[tuple[str, bool]] = []
    where.on_bind(lambda bound, tui: told.append((bound, tui)))
    reader, collected = start_reader(sim, cascade, whereabouts=where)
    try:
        send(sim, cascade, "hello there", model)
        collected.until(TurnEnded)
        sim.type("/clear")
        rotated = collected.until(ConversationRotated)
        assert rotated.old_cascade_id == cascade
        assert rotated.new_cascade_id != cascade
        # Rotated in the whereabouts (the record's callback told) before it was published.
        assert where.cascade_id == rotated.new_cascade_id
        assert told == [(rotated.new_cascade_id, True)]
        wait_until(
            lambda: reader.cascade_id == rotated.new_cascade_id,
            timeout=20,
            what="the reader to re-bind",
        )
        send(sim, rotated.new_cascade_id, "after the clear", model)
        boundary = collected.until(TurnBoundary, lambda b: b.text == "after the clear")
        assert boundary.key.cascade_id == rotated.new_cascade_id
        collected.until(TurnEnded, lambda e: e.cascade_id == rotated.new_cascade_id)
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_a_rejected_token_stops_the_reader_with_a_failure(sim: Sim) -> None:
    cascade, _ = new_cascade(sim)
    sink: QueueSink[ReaderEvent] = QueueSink()
    reader = CascadeReader(
        port=sim.port, csrf_token="not-the-token", cascade_id=cascade, sink=sink, settings=QUICK
    )
    reader.start()
    try:
        failed = Collected(sink).until(ReaderFailed)
        assert failed.error.http_status == 403
        wait_until(lambda: not reader.is_alive(), timeout=20, what="the reader to stop by itself")
    finally:
        reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_agy_restarting_on_a_new_port_is_found_again(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    old_port = sim.port

    async def where_now() -> int:
        return sim.port

    reader, collected = start_reader(sim, cascade, resolve_port=where_now)
    try:
        send(sim, cascade, "hello there", model)
        collected.until(TurnEnded)
        sim.set_faults(restart=len(sim.ports_logged()))
        wait_until(
            lambda: sim.port != old_port, timeout=20, what="agy-sim to restart on a new port"
        )
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", old_port)) != 0, "the old port still answers"
        send(sim, cascade, "still there?", model)
        collected.until(TurnBoundary, lambda b: b.text == "still there?")
        collected.until(TurnEnded, lambda e: e.boundary.step_index > 0)
        assert len(collected.of(TurnEnded)) == 2
    finally:
        assert reader.stop()


@pytest.mark.usefixtures("no_stray_threads")
def test_agy_gone_from_its_port_before_the_reader_starts_is_found_and_its_history_skipped(
    sim: Sim,
) -> None:
    """agy moved between the session's lookup and the reader's first call (a port move under
    load): the reader follows it and counts what is there as history, as on its own port.
    It used to end on the first call's error, and the turn failed as agy_unreachable."""
    cascade, model = new_cascade(sim)
    send(sim, cascade, "hello there", model)
    run(_wait_idle(sim, cascade))
    with socket.socket() as closed:  # a loopback port nothing listens on once closed
        closed.bind(("127.0.0.1", 0))
        left = closed.getsockname()[1]

    async def where_now() -> int:
        return sim.port

    sink: QueueSink[ReaderEvent] = QueueSink()
    reader = CascadeReader(
        port=left,
        csrf_token=sim.token or "",
        cascade_id=cascade,
        sink=sink,
        settings=QUICK,
        resolve_port=where_now,
        skip_existing=True,
    )
    reader.start()
    try:
        assert reader.wait_ready(20), "the reader never caught up"
        collected = Collected(sink)
        send(sim, cascade, "and again", model)
        collected.until(TurnEnded)
        assert [b.text for b in collected.of(TurnBoundary)] == ["and again"]
        assert len(collected.of(AssistantMessage)) == 1
        assert not collected.of(ReaderFailed)
    finally:
        assert reader.stop()


def test_stop_before_start_and_twice_is_harmless(sim: Sim) -> None:
    reader = CascadeReader(
        port=sim.port, csrf_token=sim.token or "", cascade_id="x", sink=QueueSink()
    )
    assert reader.stop()
    assert reader.stop()


def test_client_factory_is_used_for_every_connection(sim: Sim) -> None:
    made: list[int] = []

    def factory(port: int, token: str) -> RpcClient:
        made.append(port)
        return RpcClient(port=port, csrf_token=token)

    cascade, _ = new_cascade(sim)
    reader, _ = start_reader(sim, cascade, client_factory=factory)
    try:
        wait_until(lambda: made, timeout=20, what="the reader to connect")
    finally:
        assert reader.stop()
    assert made == [sim.port]


@pytest.mark.usefixtures("no_stray_threads")
def test_a_sub_agent_is_reported_and_never_mistaken_for_a_clear(sim: Sim) -> None:
    cascade, model = new_cascade(sim)
    reader, collected = start_reader(sim, cascade)
    try:
        send(sim, cascade, "start a sub-agent to survey things", model)
        collected.until(TurnEnded)
        checks = reader.rotation_checks
        # Let the reader look at agy's cascades again now that the child exists.
        wait_until(
            lambda: reader.rotation_checks > checks, timeout=10.0, what="another look for a /clear"
        )
        started = collected.of(SubAgentStarted)
        finished = collected.of(SubAgentFinished)
        assert len(started) == 1
        assert started[0].child_cascade_id != cascade
        assert [f.child_cascade_id for f in finished] == [started[0].child_cascade_id]
        assert finished[0].ok
        assert not collected.of(ConversationRotated)
        assert reader.cascade_id == cascade
        # agy really made a child cascade, parented to ours.
        summaries = run(_summaries(sim))
        child = summaries[started[0].child_cascade_id]
        assert child["trajectoryMetadata"]["parentConversationId"] == cascade
    finally:
        assert reader.stop()


async def _summaries(sim: Sim) -> dict[str, Any]:
    async with sim.client() as client:
        reply = await client.get_all_cascade_trajectories()
    return dict(reply["trajectorySummaries"])


@pytest.mark.usefixtures("no_stray_threads")
def test_the_reader_stops_once_agys_process_is_gone(tmp_path: Path) -> None:
    """A stopped agy (a sweep, a crash) has nothing left to follow: polling its dead port
    until the harness process ends would only spin; the session restarts agy next turn."""
    with sim_launcher(tmp_path, "agy-reader-gone") as launcher:
        doomed = launcher.launch(*FAST)
        cascade, _ = new_cascade(doomed)
        pid, log_file = doomed.pid, doomed.log

        async def locate() -> int:
            found = await discover_pin(
                pid=pid, log_file=log_file, csrf_token=doomed.token or "", deadline=2.0
            )
            return found.port

        reader, collected = start_reader(doomed, cascade, resolve_port=locate)
        try:
            doomed.stop()
            failed = collected.until(ReaderFailed)
            assert isinstance(failed.error, AgyExitedError)
            wait_until(
                lambda: not reader.is_alive(), timeout=20, what="the reader to stop by itself"
            )
        finally:
            assert reader.stop()
