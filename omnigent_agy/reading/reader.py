"""The reader thread: agy's trajectory → mapper events, live, exactly once.

`CascadeReader` owns a thread with its own event loop and its own `RpcClient` (one connection,
one owner: docs/decisions.md §10). It follows one conversation:

- **Streaming** with StreamAgentStateUpdates, asking agy to start at the first step not yet
  committed (`initialStepsPageBounds`) and tolerating a full replay if agy ignores that
  (docs/wire.md §4). Frames are cumulative snapshots of the steps that changed; the mapper turns the
  new part of each step into events and drops anything already committed.
- **Silent streams** are normal while a gate is open (no frames arrive while agy waits for a
  person, docs/wire.md §4) and are also how a stream hangs after `/clear`. After `idle_timeout`
  without a frame the reader catches up with one poll, checks for a `/clear` rotation and
  opens the stream again.
- **Broken streams** (transport errors, 5xx, garbage) switch to polling GetCascadeTrajectorySteps
  from the first uncommitted step (never the whole trajectory), with jittered exponential
  backoff between attempts to stream again. The reader's first calls (skipping the history, a
  first look for a `/clear`) are retried the same way, without polling before the history is
  skipped: agy may have moved between the session's lookup and the reader's start.
- **`/clear` rotation**: a new root cascade in agy (`rotation.RotationWatch`, docs/wire.md §7) is
  followed deliberately, rotated in the session's `Whereabouts` (the one owner of where the
  conversation is, which the rest of the session asks) and reported with `ConversationRotated`.

What a frame or a poll brought is applied by its `Follower` (below: events, the turn's end, the
durable cursor). Everything is published to an `EventSink`; `stop()` is prompt and leaves no
thread or socket.

Applying what agy says about the followed cascade: steps → events, the turn's end, the cursor.

`Follower` owns the `Following` of one cascade at a time and everything that happens to it
once agy's answer is in hand, whether a stream frame or a poll brought it: the mapper turns
the new part of each step into events (dropping anything already committed), the turn's usage
is summed, `TurnEnded` is published once the cascade is IDLE with every step settled after a
USER_INPUT (IDLE really means the turn is over: agy stays RUNNING while a gate is open,
docs/wire.md §4), and the durable cursor is saved once per batch, only when something durable
changed (a step committed, a gate opened or closed, a tool started, the turn ended). It does no
I/O with agy: `reader` fetches, this applies.

What the reader says and knows: its own events, its settings, and the cascade it follows.

The reader publishes the mapper's events plus the few of its own defined here (`TurnEnded`,
`ConversationRotated`, `ReaderModeChanged`, `ReaderFailed`). `Following` is everything it knows
about the cascade it follows; `TurnProgress` (saved with the durable cursor) the turn in
progress, so a restarted reader still reports that turn's end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from omnigent_agy.errors import AgyError, AgyExitedError, CsrfError, RpcError, StreamStalled
from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.events import (
    Event,
    ReasoningDelta,
    SubAgentEvent,
    TextDelta,
    TurnBoundary,
    UsageReported,
)
from omnigent_agy.reading.mapper import MapperState, map_step
from omnigent_agy.reading.rotation import RotationWatch
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import ModelUsage, StepKey, is_settled, obj, step_key, step_status
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.endpoint import AgyEndpoint, never_sent
from omnigent_agy.rpc.lazyjson import LazyArray
from omnigent_agy.rpc.whereabouts import Whereabouts

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "IDLE",
    "CascadeReader",
    "ConversationRotated",
    "Follower",
    "Following",
    "ReaderEvent",
    "ReaderFailed",
    "ReaderModeChanged",
    "ReaderSettings",
    "TurnEnded",
    "TurnProgress",
]


_logger = logging.getLogger("omnigent_agy.reading.reader")


# --- what the reader itself publishes, besides the mapper's events ---------------------------


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The cascade went IDLE with every step settled after the user input `boundary`."""

    cascade_id: str
    boundary: StepKey
    usage: ModelUsage | None


@dataclass(frozen=True, slots=True)
class ConversationRotated:
    """agy started a new root cascade (`/clear` in its TUI); the reader now follows it."""

    old_cascade_id: str
    new_cascade_id: str


@dataclass(frozen=True, slots=True)
class ReaderModeChanged:
    """Streaming ↔ polling, with the reason (for logs and diagnostics, not for the user)."""

    mode: str
    reason: str


@dataclass(frozen=True, slots=True)
class ReaderFailed:
    """The reader cannot go on (agy rejects our CSRF token, agy's process is gone); it has
    stopped."""

    error: AgyError


type ReaderEvent = Event | TurnEnded | ConversationRotated | ReaderModeChanged | ReaderFailed


DEFAULT_IDLE_TIMEOUT: Final = 15.0


@dataclass(frozen=True, slots=True)
class ReaderSettings:
    """Timings of the reader; tests shorten them, nothing else needs to."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """Seconds without a frame before the reader polls, checks rotation and re-opens."""
    poll_interval: float = 0.5
    """Seconds between polls while the stream is broken."""
    reconnect_initial: float = 0.2
    reconnect_max: float = 5.0
    rpc_timeout: float = 10.0


@dataclass(slots=True)
class TurnProgress:
    """The turn in progress: its user input and the usage reported since."""

    boundary: StepKey | None = None
    usage: ModelUsage | None = None
    ended: bool = True

    def to_json(self) -> dict[str, Any]:
        if self.boundary is None:
            return {}
        return {
            "trajectory_id": self.boundary.trajectory_id,
            "step_index": self.boundary.step_index,
            "usage": None if self.usage is None else dataclasses.asdict(self.usage),
            "ended": self.ended,
        }

    @classmethod
    def from_json(cls, data: object, cascade_id: str = "") -> TurnProgress:
        """The turn saved in a cursor (a turn in progress when the last reader stopped)."""
        if not isinstance(data, dict) or not data:
            return cls()
        try:
            boundary = StepKey(cascade_id, str(data["trajectory_id"]), int(data["step_index"]))
            usage = data.get("usage")
            return cls(
                boundary=boundary,
                usage=ModelUsage(**usage) if isinstance(usage, dict) else None,
                ended=bool(data.get("ended", True)),
            )
        except (KeyError, TypeError, ValueError):
            _logger.warning("ignoring a malformed turn in the reader's cursor")
            return cls()


@dataclass(slots=True)
class Following:
    """The cascade being followed and everything known about it."""

    state: MapperState
    trajectory_id: str | None = None
    total_length: int = 0
    status: str | None = None
    turn: TurnProgress = field(default_factory=TurnProgress)

    @property
    def cascade_id(self) -> str:
        return self.state.cascade_id

    def first_uncommitted(self) -> int:
        if self.trajectory_id is None:
            return 0
        return self.state.first_uncommitted(self.trajectory_id)


IDLE: Final = "CASCADE_RUN_STATUS_IDLE"


class Follower:
    """The cascade followed now, and what agy's frames and polls do to it."""

    def __init__(
        self,
        *,
        cascade_id: str,
        sink: EventSink[ReaderEvent],
        cursor: CursorStore | None,
        model_names: Mapping[str, str],
    ) -> None:
        self._sink = sink
        self._cursor = cursor
        self._model_names = dict(model_names)
        self.restored = False
        """Whether the cascade followed now was restored from a durable cursor."""
        self.follow = self._new_follow(cascade_id)

    def switch_to(self, cascade_id: str) -> None:
        """Save the cascade left behind and follow `cascade_id` (from its cursor, if any)."""
        self.save_cursor()
        self.follow = self._new_follow(cascade_id)

    # --- what agy says ------------------------------------------------------------------------

    def apply_frame(self, message: Mapping[str, Any]) -> bool:
        """Apply one stream frame; True when it names another conversation than ours."""
        # Every frame of a streamed answer comes here: the JSON shapes are tested with
        # `type(x) is dict` / `list` first, which costs no call (docs/performance.md).
        update = message.get("update")
        if type(update) is not dict:
            update = obj(update) or message
        follow = self.follow
        conversation = update.get("conversationId")
        if (
            conversation != follow.state.cascade_id
            and conversation
            and isinstance(conversation, str)
        ):
            return True
        steps_update = update.get("mainTrajectoryUpdate")
        if type(steps_update) is not dict:
            steps_update = obj(steps_update)
        steps_update = steps_update.get("stepsUpdate")
        if type(steps_update) is not dict:
            steps_update = obj(steps_update)
        indices = steps_update.get("indices")
        if type(indices) is not list:
            indices = []
        raw = steps_update.get("steps")
        # A large frame's steps are a LazyArray (rpc.lazyjson): each is decoded as it is
        # read, so they are walked once, never gathered, and the snapshot is never one tree.
        steps = raw if type(raw) is list or isinstance(raw, LazyArray) else []
        positioned: Iterable[tuple[object, object]]
        if len(indices) == len(steps):
            positioned = zip(indices, steps, strict=True)  # an index no int: taken as absent
        else:
            _logger.warning("a frame with %d indices for %d steps", len(indices), len(steps))
            positioned = ((None, step) for step in steps)
        total = steps_update.get("totalLength")
        if isinstance(total, int) and total > follow.total_length:
            follow.total_length = total
        status = update.get("status")
        if isinstance(status, str):
            follow.status = status
        self.apply_steps(positioned)
        return False

    def apply_poll(self, offset: int, steps: Sequence[object], status: object) -> None:
        """Apply the steps a poll from `offset` returned and the cascade's listed status."""
        follow = self.follow
        if isinstance(status, str):
            follow.status = status
        follow.total_length = max(follow.total_length, offset + len(steps))
        self.apply_steps([(offset + i, step) for i, step in enumerate(steps)])

    def skip_history(
        self, offset: int, steps: Sequence[Mapping[str, Any]], trajectory_id: str | None
    ) -> None:
        """Count the conversation as it is now as published (omnigent shows that history):
        every step below `offset` unseen, and the settled ones of `steps` (from `offset` on).

        Steps still open (a gate waiting, an answer generating) are left to be published.
        """
        follow = self.follow
        if follow.trajectory_id is None:
            follow.trajectory_id = trajectory_id or (
                step_key(steps[0]).trajectory_id if steps else None
            )
        if offset and follow.trajectory_id is not None:
            follow.state.commit_below(follow.trajectory_id, offset)
        for index, step in enumerate(steps, offset):
            if is_settled(step_status(step)):
                map_step(follow.state, step, absolute_index=index)  # its events are history
        follow.total_length = max(follow.total_length, offset + len(steps))
        self.save_cursor()

    def apply_steps(self, positioned: Iterable[tuple[object, object]]) -> None:
        """Map and publish a batch (one frame or one poll); save the cursor once, and only
        when something durable changed in it.

        A growth frame (more text of a step still generating) changes nothing durable: a
        crash loses at most the text streamed since the step opened, and a restarted reader
        re-streams that one step from its start (its deltas carry offsets, so a consumer
        splices them over what it showed). Writing on every growth frame would cost more than
        the frame itself, and the cursor would grow with the answer.
        """
        follow = self.follow
        state = follow.state
        durable = False
        for index, step in positioned:
            if follow.trajectory_id is None and isinstance(step, Mapping):
                follow.trajectory_id = step_key(step).trajectory_id or None
            absolute = index if type(index) is int else None  # bool is no index either
            for event in map_step(state, step, absolute_index=absolute):
                # A delta is not durable and never ends a turn (the type test first: a frame
                # of a growing answer is nothing but one delta).
                if type(event) not in _DELTAS and not _is_growth(event):
                    durable = True
                    self._track_turn(event)
                self._sink.publish(event)
        # A step that commits without an event (a quiet step without usage) is not worth a
        # write: a restart maps it again to nothing.
        if (follow.status == IDLE and self._maybe_end_turn()) or durable:
            self.save_cursor()

    # --- the turn -----------------------------------------------------------------------------

    def _track_turn(self, event: Event) -> None:
        turn = self.follow.turn
        if isinstance(event, TurnBoundary):
            self.follow.turn = TurnProgress(boundary=event.key, usage=None, ended=False)
        elif isinstance(event, UsageReported) and not turn.ended:
            turn.usage = event.usage if turn.usage is None else turn.usage + event.usage

    def _maybe_end_turn(self) -> bool:
        """Publish the turn's end if it has come; whether it did."""
        follow = self.follow
        turn = follow.turn
        if turn.ended or turn.boundary is None or follow.status != IDLE:
            return False
        if follow.state.open_count or follow.first_uncommitted() < follow.total_length:
            return False  # IDLE but a step is not settled yet: the next frame or poll settles it
        turn.ended = True
        self._sink.publish(TurnEnded(follow.cascade_id, turn.boundary, turn.usage))
        return True

    # --- the durable cursor -------------------------------------------------------------------

    def _new_follow(self, cascade_id: str) -> Following:
        state = MapperState(cascade_id=cascade_id, model_names=self._model_names)
        extra = self._cursor.load_into(state) if self._cursor is not None else None
        self.restored = extra is not None
        follow = Following(
            state=state,
            turn=TurnProgress.from_json(extra.get("turn") if extra else None, cascade_id),
        )
        trajectories = list(state.export_progress()["committed"]) if self.restored else []
        if len(trajectories) == 1:
            follow.trajectory_id = trajectories[0]  # so the first stream starts at the cursor
        return follow

    def save_cursor(self) -> None:
        if self._cursor is None:
            return
        try:
            self._cursor.save(self.follow.state, {"turn": self.follow.turn.to_json()})
        except OSError as exc:
            _logger.warning("could not save the reader's cursor: %s", exc)


_DELTAS: Final = frozenset({TextDelta, ReasoningDelta})


def _is_growth(event: Event) -> bool:
    """A delta of a step still open: nothing a restarted reader could not stream again."""
    if isinstance(event, SubAgentEvent):
        event = event.event
    return isinstance(event, TextDelta | ReasoningDelta)


_FAILURES_BEFORE_LOOKING = 3  # one broken stream is no reason to run discovery


ClientFactory = Callable[[int, str], RpcClient]
PortResolver = Callable[[], Awaitable[int]]


class CascadeReader:
    """Follows one agy conversation on a thread of its own and publishes what happens."""

    def __init__(
        self,
        *,
        sink: EventSink[ReaderEvent],
        whereabouts: Whereabouts | None = None,
        port: int = 0,
        csrf_token: str = "",
        cascade_id: str | None = None,
        cursor: CursorStore | None = None,
        settings: ReaderSettings | None = None,
        model_names: Mapping[str, str] | None = None,
        skip_existing: bool = False,
        follow_clear: bool = True,
        resolve_port: PortResolver | None = None,
        endpoint: AgyEndpoint | None = None,
        client_factory: ClientFactory | None = None,
    ) -> None:
        """`whereabouts`: where the conversation is, shared with the rest of the session: its
        endpoint, its bound cascade, and whether that follows agy's TUI (then a `/clear` is
        rotated there). Without it, the reader follows `cascade_id` on an endpoint of its own.
        `skip_existing`: without a cursor, count the steps already there as published
        (binding to a conversation whose history omnigent already shows).
        `follow_clear`: the cascade is the one agy's TUI shows, so a new root cascade (a
        `/clear` typed there) is followed; a cascade started over RPC never moves.
        `endpoint`: the owner of agy's port shared with the rest of the session (else one of
        the reader's own, from `port`, `csrf_token` and `resolve_port`): when agy stops
        answering the reader follows it to where the endpoint says it is now, and asks it to
        look again (`resolve_port`) after repeated failures."""
        self._whereabouts = whereabouts
        if whereabouts is not None:
            endpoint, cascade_id = whereabouts.endpoint, whereabouts.cascade_id
        if cascade_id is None:
            raise ValueError("the reader needs a cascade to follow")
        self._endpoint = endpoint or AgyEndpoint(
            port=port, csrf_token=csrf_token, locate=resolve_port
        )
        self._port = self._endpoint.port
        self._token = self._endpoint.csrf_token
        self._sink = sink
        self._settings = settings or ReaderSettings()
        self._skip_existing = skip_existing
        self._follow_clear = follow_clear
        self._client_factory = client_factory or (
            lambda port, _token: self._endpoint.new_client(port)
        )
        self._follower = Follower(
            cascade_id=cascade_id, sink=sink, cursor=cursor, model_names=model_names or {}
        )
        self._init_run(cascade_id)

    def _init_run(self, cascade_id: str) -> None:
        """What the running reader keeps: its mode, its loop, task and clients, its thread."""
        self._rotation = RotationWatch()
        self._mode = "streaming"
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: RpcClient | None = None
        # Clients of ports agy left: closed when the reader ends, not when it moves on, since
        # a `check_clear_now` from the session may be running on one at that moment.
        self._retired: list[RpcClient] = []
        self._thread = threading.Thread(
            target=self._thread_main, name=f"agy-reader-{cascade_id[:8]}", daemon=True
        )

    # --- control, from any thread --------------------------------------------------------

    @property
    def cascade_id(self) -> str:
        """The cascade followed now (changes on a `/clear` rotation)."""
        return self._follower.follow.cascade_id

    @property
    def rotation_checks(self) -> int:
        """How many times agy's cascades were listed for a `/clear` (diagnostics, tests)."""
        return self._rotation.checks

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
        if loop is None or client is None or loop.is_closed() or not self._follows_clear():
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
        started = False
        try:
            while not self._stop.is_set():
                try:
                    if not started:  # agy may have moved already: its errors are handled below
                        await self._start(client)
                        started = True
                    await self._stream_once(client)
                    backoff = self._settings.reconnect_initial
                    failures = 0
                except CsrfError:
                    raise
                except RpcError as exc:
                    failures += 1
                    self._set_mode("polling", f"{exc.connect_code}: {exc.message}")
                    client, failures = await self._maybe_new_port(client, failures, exc)
                    self._client = client
                    if started:
                        await self._poll_for(client, backoff)
                    else:  # a poll now would publish the history as new
                        await asyncio.sleep(backoff * random.uniform(0.5, 1.0))  # noqa: S311
                    backoff = min(backoff * 2, self._settings.reconnect_max)
        except CsrfError as exc:
            # Not transient: this port belongs to another agy, or agy restarted with another
            # token. Retrying would only hammer it; the executor re-discovers or reports.
            self._sink.publish(ReaderFailed(exc))
        except AgyExitedError as exc:
            # agy's process is gone (a sweep stopped it, it crashed): there is nothing left to
            # follow, and polling a dead port would go on until the process ends. The session
            # starts agy again (on the same conversation) at its next turn.
            _logger.info("agy exited; the reader stops: %s", exc.args[0])
            self._sink.publish(ReaderFailed(exc))
        finally:
            self._follower.save_cursor()
            for old in [*self._retired, client]:
                await old.aclose()

    async def _start(self, client: RpcClient) -> None:
        """What the reader does once before it streams: skip the history (`skip_existing`,
        without a cursor) and look for a `/clear` made while nobody followed."""
        if self._skip_existing and not self._follower.restored:
            await self._skip_history(client)
        await self._check_rotation(client)

    async def _skip_history(self, client: RpcClient) -> None:
        """Count what the conversation holds now as history, fetching only its last turn.

        Every turn before the last user input has ended, so its steps are settled: they are
        counted without being fetched, and the stream then starts at the last turn
        (`initialStepsPageBounds`). Attaching to a 20,000-step conversation costs what
        attaching to a short one does. Without the summary's trajectory id (needed to count
        unseen steps) the whole trajectory is read, as a fallback.
        """
        cascade = self.cascade_id
        listing = await client.get_all_cascade_trajectories()
        summary = obj(obj(listing.get("trajectorySummaries")).get(cascade))
        trajectory = summary.get("trajectoryId")
        trajectory = trajectory if isinstance(trajectory, str) and trajectory else None
        offset = _last_turn_start(summary) if trajectory is not None else 0
        steps = await client.get_cascade_trajectory_steps(cascade, step_offset=offset)
        self._follower.skip_history(offset, steps, trajectory)

    async def _maybe_new_port(
        self, client: RpcClient, failures: int, error: RpcError
    ) -> tuple[RpcClient, int]:
        """Follow agy to a new port: at once when another part of the session found it there,
        else ask the endpoint to look again (it may have restarted) when nothing listens on
        the port any more, or after repeated failures of other kinds."""
        port = self._endpoint.port
        look = failures >= _FAILURES_BEFORE_LOOKING or never_sent(error)
        if port == self._port and look:
            try:
                port = await self._endpoint.relocate(self._port)
            except AgyExitedError:
                raise  # gone for good, not slow: see _run
            except Exception as exc:  # noqa: BLE001 - a failed lookup is retried next round
                _logger.info("agy not found again yet: %s", exc)
                return client, failures
        if port == self._port:
            return client, failures
        _logger.info("agy answers on a new port now")
        self._retired.append(client)
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
        follow = self._follower.follow
        updates = client.stream_agent_state_updates(
            follow.cascade_id,
            start_index=follow.first_uncommitted() or None,
            idle_timeout=self._settings.idle_timeout,
        )
        async with contextlib.aclosing(updates):
            try:
                async for message in updates:
                    self._set_mode("streaming", "frames arrive")
                    rotated_hint = self._follower.apply_frame(message)
                    if not self._ready.is_set():  # set() takes a lock: ~2 µs on every frame
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

    async def _poll_once(self, client: RpcClient) -> None:
        """Catch up from the first uncommitted step; also refresh the cascade's status."""
        follow = self._follower.follow
        offset = follow.first_uncommitted()
        try:
            steps = await client.get_cascade_trajectory_steps(follow.cascade_id, step_offset=offset)
            summaries = await client.get_all_cascade_trajectories()
        except CsrfError:
            raise
        except RpcError as exc:
            _logger.debug("poll failed: %s", exc)
            return
        if follow is not self._follower.follow:
            return  # a /clear rotation moved on meanwhile
        summary = obj(obj(summaries.get("trajectorySummaries")).get(follow.cascade_id))
        self._follower.apply_poll(offset, steps, summary.get("status"))
        self._ready.set()

    # --- /clear rotation ----------------------------------------------------------------------

    async def _check_rotation(self, client: RpcClient) -> None:
        """Follow a new root cascade if agy started one (`/clear`, docs/wire.md §7)."""
        if not self._follows_clear():
            return
        old = self.cascade_id
        newest = await self._rotation.look(client, old)
        if newest is None:
            return
        self._follower.switch_to(newest)
        if self._whereabouts is not None:
            try:
                self._whereabouts.rotate(old, newest)
            except AgyError as exc:  # the record could not follow; the conversation does
                _logger.warning("the agy record did not follow the /clear: %s", exc)
        self._sink.publish(ConversationRotated(old, newest))

    # --- helpers ------------------------------------------------------------------------------

    def _follows_clear(self) -> bool:
        """Whether a new root cascade is followed: the cascade is the one agy's TUI shows."""
        where = self._whereabouts
        return self._follow_clear if where is None else where.follows_tui

    def _set_mode(self, mode: str, reason: str) -> None:
        if mode != self._mode:
            self._mode = mode
            self._sink.publish(ReaderModeChanged(mode, reason))


def _last_turn_start(summary: Mapping[str, Any]) -> int:
    """Where the conversation's last turn starts: its last USER_INPUT's index (protojson
    omits zero, and int64 fields may come as strings, docs/wire.md §3), never past its length."""
    numbers = []
    for name in ("lastUserInputStepIndex", "stepCount"):
        value = summary.get(name, 0)
        try:
            numbers.append(max(0, int(value)))
        except (TypeError, ValueError):
            numbers.append(0)
    return min(numbers)
