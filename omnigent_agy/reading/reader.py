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

What a frame or a poll brought is applied by `follower.Follower` (events, the turn's end, the
durable cursor). Everything is published to an `EventSink`; `stop()` is prompt and leaves no
thread or socket.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from omnigent_agy.errors import AgyError, AgyExitedError, CsrfError, RpcError, StreamStalled
from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.follower import Follower
from omnigent_agy.reading.reader_state import (
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    ReaderSettings,
    TurnEnded,
)
from omnigent_agy.reading.rotation import RotationWatch
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.endpoint import AgyEndpoint, never_sent
from omnigent_agy.rpc.whereabouts import Whereabouts

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
