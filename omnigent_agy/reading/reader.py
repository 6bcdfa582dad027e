"""The reader thread: agy's trajectory → mapper events, live, exactly once.

`CascadeReader` owns a thread with its own event loop and its own `RpcClient` (one connection,
one owner: DESIGN-NOTES §10). It follows one conversation:

- **Streaming** with StreamAgentStateUpdates, asking agy to start at the first step not yet
  committed (`initialStepsPageBounds`) and tolerating a full replay if agy ignores that
  (WIRE.md §4). Frames are cumulative snapshots of the steps that changed; the mapper turns the
  new part of each step into events and drops anything already committed.
- **Silent streams** are normal while a gate is open (no frames arrive while agy waits for a
  person, WIRE.md §4) and are also how a stream hangs after `/clear`. After `idle_timeout`
  without a frame the reader catches up with one poll, checks for a `/clear` rotation and
  opens the stream again.
- **Broken streams** (transport errors, 5xx, garbage) switch to polling GetCascadeTrajectorySteps
  from the first uncommitted step (never the whole trajectory), with jittered exponential
  backoff between attempts to stream again.
- **Turn end** is the cascade IDLE with every step settled after a USER_INPUT (IDLE really means
  the turn is over: agy stays RUNNING while a gate is open, WIRE.md §4): a `TurnEnded` with the
  turn's summed usage is published once per user input.
- **`/clear` rotation**: a new root cascade in agy (never a sub-agent's child, WIRE.md §7) is
  followed deliberately and reported with `ConversationRotated`.
- **Durable cursor**: the mapper's progress is saved after every batch that changed it, so a
  restarted reader goes on without publishing history again.

Everything is published to an `EventSink`; `stop()` is prompt and leaves no thread or socket.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import Event, TurnBoundary, UsageReported
from omnigent_agy.reading.mapper import MapperState, map_step
from omnigent_agy.reading.reader_state import (
    ConversationRotated,
    Following,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    ReaderSettings,
    TurnEnded,
    TurnProgress,
)
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import is_settled, obj, seq, step_key, step_status
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.errors import CsrfError, RpcError, StreamStalled

__all__ = [
    "CascadeReader",
    "ConversationRotated",
    "ReaderEvent",
    "ReaderFailed",
    "ReaderModeChanged",
    "ReaderSettings",
    "TurnEnded",
]

_logger = logging.getLogger(__name__)

IDLE: Final = "CASCADE_RUN_STATUS_IDLE"


ClientFactory = Callable[[int, str], RpcClient]
PortResolver = Callable[[], Awaitable[int]]


def _default_client(port: int, csrf_token: str) -> RpcClient:
    return RpcClient(port=port, csrf_token=csrf_token)


class CascadeReader:
    """Follows one agy conversation on a thread of its own and publishes what happens."""

    def __init__(
        self,
        *,
        port: int,
        csrf_token: str,
        cascade_id: str,
        sink: EventSink[ReaderEvent],
        cursor: CursorStore | None = None,
        settings: ReaderSettings | None = None,
        model_names: Mapping[str, str] | None = None,
        skip_existing: bool = False,
        follow_clear: bool = True,
        resolve_port: PortResolver | None = None,
        client_factory: ClientFactory = _default_client,
    ) -> None:
        """`skip_existing`: without a cursor, count the steps already there as published
        (binding to a conversation whose history omnigent already shows).
        `follow_clear`: the cascade is the one agy's TUI shows, so a new root cascade (a
        `/clear` typed there) is followed; a cascade started over RPC never moves.
        `resolve_port`: called when agy stops answering, to find it again on a new port."""
        self._port = port
        self._token = csrf_token
        self._sink = sink
        self._cursor = cursor
        self._settings = settings or ReaderSettings()
        self._model_names = dict(model_names or {})
        self._skip_existing = skip_existing
        self._follow_clear = follow_clear
        self._resolve_port = resolve_port
        self._client_factory = client_factory
        self._restored = False
        self._follow = self._new_follow(cascade_id)
        self._known_roots: set[str] | None = None
        self.rotation_checks = 0
        """How many times agy's cascades were listed for a `/clear` (diagnostics, tests)."""
        self._mode = "streaming"
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: RpcClient | None = None
        self._thread = threading.Thread(
            target=self._thread_main, name=f"agy-reader-{cascade_id[:8]}", daemon=True
        )

    # --- control, from any thread --------------------------------------------------------

    @property
    def cascade_id(self) -> str:
        """The cascade followed now (changes on a `/clear` rotation)."""
        return self._follow.cascade_id

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def check_clear_now(self) -> concurrent.futures.Future[None]:
        """Look for a `/clear` now, on the reader's own loop and connection (from any thread).

        A turn about to be sent asks this first: the reader notices a `/clear` on its own only
        when its stream falls silent, and a message must not go to the cascade left behind.
        Afterwards `cascade_id` names the cascade to talk to.
        """
        loop, client = self._loop, self._client
        if loop is None or client is None or loop.is_closed() or not self._follow_clear:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return asyncio.run_coroutine_threadsafe(self._check_rotation(client), loop)

    def wait_ready(self, timeout: float) -> bool:
        """Until the reader has caught up with what agy had when it started (its first frame
        or poll). Send a turn only after this: with `skip_existing`, a step that settles
        before the catch-up counts as history."""
        return self._ready.wait(timeout)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop promptly: cancel the loop's work, close the connection, save the cursor.

        Returns whether the thread ended within `timeout`.
        """
        self._stop.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(task.cancel)
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- the thread -----------------------------------------------------------------------

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._run())
            if self._stop.is_set():
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(self._task)
        except Exception:
            _logger.exception("the agy reader crashed")
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _run(self) -> None:
        client = self._client = self._client_factory(self._port, self._token)
        backoff = self._settings.reconnect_initial
        failures = 0
        try:
            if self._skip_existing and not self._restored:
                await self._skip_history(client)
            await self._check_rotation(client)
            while not self._stop.is_set():
                try:
                    await self._stream_once(client)
                    backoff = self._settings.reconnect_initial
                    failures = 0
                except CsrfError:
                    raise
                except RpcError as exc:
                    failures += 1
                    self._set_mode("polling", f"{exc.code}: {exc.message}")
                    client, failures = await self._maybe_new_port(client, failures)
                    self._client = client
                    await self._poll_for(client, backoff)
                    backoff = min(backoff * 2, self._settings.reconnect_max)
        except CsrfError as exc:
            # Not transient: this port belongs to another agy, or agy restarted with another
            # token. Retrying would only hammer it; the executor re-discovers or reports.
            self._sink.publish(ReaderFailed(exc))
        finally:
            self._save_cursor()
            await client.aclose()

    async def _skip_history(self, client: RpcClient) -> None:
        """Count the settled steps already there as published (omnigent shows that history).

        Steps still open (a gate waiting, an answer generating) are left to be published.
        """
        steps = await client.get_cascade_trajectory_steps(self._follow.cascade_id)
        state = self._follow.state
        for index, step in enumerate(steps):
            if self._follow.trajectory_id is None:
                self._follow.trajectory_id = step_key(step).trajectory_id or None
            if is_settled(step_status(step)):
                map_step(state, step, absolute_index=index)  # its events are history: dropped
        self._save_cursor()

    async def _maybe_new_port(self, client: RpcClient, failures: int) -> tuple[RpcClient, int]:
        """After repeated failures, ask where agy listens now (it may have restarted)."""
        if self._resolve_port is None or failures < 3:
            return client, failures
        try:
            port = await self._resolve_port()
        except Exception as exc:  # noqa: BLE001 - a failed lookup is retried on the next round
            _logger.info("agy not found again yet: %s", exc)
            return client, failures
        if port == self._port:
            return client, failures
        _logger.info("agy answers on a new port now")
        await client.aclose()
        self._port = port
        return self._client_factory(port, self._token), 0

    async def _poll_for(self, client: RpcClient, seconds: float) -> None:
        """Poll until `seconds` (jittered) have passed, then let the caller try to stream."""
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not crypto
        while True:
            await self._poll_once(client)
            remaining = until - loop.time()
            if remaining <= 0 or self._stop.is_set():
                return
            await asyncio.sleep(min(self._settings.poll_interval, remaining))

    async def _stream_once(self, client: RpcClient) -> None:
        follow = self._follow
        updates = client.stream_agent_state_updates(
            follow.cascade_id,
            start_index=follow.first_uncommitted() or None,
            idle_timeout=self._settings.idle_timeout,
        )
        async with contextlib.aclosing(updates):
            try:
                async for message in updates:
                    self._set_mode("streaming", "frames arrive")
                    rotated_hint = self._handle_update(message)
                    self._ready.set()
                    if rotated_hint:
                        break
            except StreamStalled:
                # Normal while a gate is open; also how a stream hangs after /clear (§4).
                pass
        # The stream ended, stalled or named another conversation: catch up and look around.
        await self._poll_once(client)
        await self._check_rotation(client)

    # --- applying what agy says -------------------------------------------------------------

    def _handle_update(self, message: Mapping[str, Any]) -> bool:
        """Apply one stream frame; True when it names another conversation than ours."""
        update = obj(message.get("update")) or message
        follow = self._follow
        conversation = update.get("conversationId")
        if isinstance(conversation, str) and conversation and conversation != follow.cascade_id:
            return True
        main = obj(update.get("mainTrajectoryUpdate"))
        steps_update = obj(main.get("stepsUpdate"))
        indices = seq(steps_update.get("indices"))
        steps = seq(steps_update.get("steps"))
        positioned = [
            (index if isinstance(index, int) else None, step)
            for index, step in zip(indices, steps, strict=False)
        ]
        if len(indices) != len(steps):
            _logger.warning("a frame with %d indices for %d steps", len(indices), len(steps))
            positioned = [(None, step) for step in steps]
        total = steps_update.get("totalLength")
        if isinstance(total, int):
            follow.total_length = max(follow.total_length, total)
        status = update.get("status")
        if isinstance(status, str):
            follow.status = status
        self._apply_steps(positioned)
        return False

    async def _poll_once(self, client: RpcClient) -> None:
        """Catch up from the first uncommitted step; also refresh the cascade's status."""
        follow = self._follow
        offset = follow.first_uncommitted()
        try:
            steps = await client.get_cascade_trajectory_steps(follow.cascade_id, step_offset=offset)
            summaries = await client.get_all_cascade_trajectories()
        except CsrfError:
            raise
        except RpcError as exc:
            _logger.debug("poll failed: %s", exc)
            return
        if follow is not self._follow:
            return
        summary = obj(obj(summaries.get("trajectorySummaries")).get(follow.cascade_id))
        status = summary.get("status")
        if isinstance(status, str):
            follow.status = status
        follow.total_length = max(follow.total_length, offset + len(steps))
        self._apply_steps([(offset + i, step) for i, step in enumerate(steps)])
        self._ready.set()

    def _apply_steps(self, positioned: Sequence[tuple[int | None, object]]) -> None:
        follow = self._follow
        changed = False
        for index, step in positioned:
            if follow.trajectory_id is None and isinstance(step, Mapping):
                follow.trajectory_id = step_key(step).trajectory_id or None
            events = map_step(follow.state, step, absolute_index=index)
            for event in events:
                self._track_turn(event)
                self._sink.publish(event)
            changed = changed or bool(events)
        if changed:
            self._save_cursor()
        self._maybe_end_turn()

    def _track_turn(self, event: Event) -> None:
        turn = self._follow.turn
        if isinstance(event, TurnBoundary):
            self._follow.turn = TurnProgress(boundary=event.key, usage=None, ended=False)
        elif isinstance(event, UsageReported) and not turn.ended:
            turn.usage = event.usage if turn.usage is None else turn.usage + event.usage

    def _maybe_end_turn(self) -> None:
        follow = self._follow
        turn = follow.turn
        if turn.ended or turn.boundary is None or follow.status != IDLE:
            return
        if follow.state.open_count or follow.first_uncommitted() < follow.total_length:
            return  # IDLE but a step is not settled yet: the next frame or poll settles it
        turn.ended = True
        self._sink.publish(TurnEnded(follow.cascade_id, turn.boundary, turn.usage))

    # --- /clear rotation ----------------------------------------------------------------------

    async def _check_rotation(self, client: RpcClient) -> None:
        """Follow a new root cascade if agy started one (`/clear`, WIRE.md §7)."""
        if not self._follow_clear:
            return
        try:
            summaries = obj(
                (await client.get_all_cascade_trajectories()).get("trajectorySummaries")
            )
        except CsrfError:
            raise
        except RpcError as exc:
            _logger.debug("listing cascades failed: %s", exc)
            return
        self.rotation_checks += 1
        roots = {
            cascade_id: obj(summary)
            for cascade_id, summary in summaries.items()
            if not obj(obj(summary).get("trajectoryMetadata")).get("parentConversationId")
        }
        known = self._known_roots
        self._known_roots = set(roots) | {self._follow.cascade_id}
        if known is None:
            return  # the first look: whatever exists now is not a rotation
        fresh = [cascade_id for cascade_id in roots if cascade_id not in known]
        if not fresh:
            return
        newest = max(fresh, key=lambda c: _activity(roots[c]))
        old = self._follow.cascade_id
        self._save_cursor()
        self._follow = self._new_follow(newest)
        self._sink.publish(ConversationRotated(old, newest))

    # --- helpers ------------------------------------------------------------------------------

    def _new_follow(self, cascade_id: str) -> Following:
        state = MapperState(cascade_id=cascade_id, model_names=self._model_names)
        extra = self._cursor.load_into(state) if self._cursor is not None else None
        self._restored = extra is not None
        follow = Following(
            state=state,
            turn=TurnProgress.from_json(extra.get("turn") if extra else None, cascade_id),
        )
        trajectories = list(state.export_progress()["committed"]) if self._restored else []
        if len(trajectories) == 1:
            follow.trajectory_id = trajectories[0]  # so the first stream starts at the cursor
        return follow

    def _save_cursor(self) -> None:
        if self._cursor is None:
            return
        try:
            self._cursor.save(self._follow.state, {"turn": self._follow.turn.to_json()})
        except OSError as exc:
            _logger.warning("could not save the reader's cursor: %s", exc)

    def _set_mode(self, mode: str, reason: str) -> None:
        if mode != self._mode:
            self._mode = mode
            self._sink.publish(ReaderModeChanged(mode, reason))


def _activity(summary: Mapping[str, Any]) -> str:
    """RFC 3339 timestamps in one zone sort as text; the latest activity wins (WIRE.md §7)."""
    for name in ("lastUserInputTime", "lastModifiedTime", "createdTime"):
        value = summary.get(name)
        if isinstance(value, str) and value:
            return value
    return ""
