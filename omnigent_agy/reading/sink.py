"""Where the reader thread publishes: thread-safe sinks for sync and asyncio consumers.

The reader runs on its own thread and event loop (one connection, one owner: docs/decisions.md §10);
nothing crosses from it to the consumer but the events it publishes through one of these.
"""

from __future__ import annotations

import asyncio
import collections
import queue
import threading
from typing import Final, Protocol

from omnigent_agy.rpc.heap import return_freed_memory

#: A batch of at least this many events, once dropped, hands freed memory back (`release`).
RELEASE_TRIM_AT: Final = 1_000


def release[T](events: list[T]) -> None:
    """Drop a batch of events their consumer is done with (the list is emptied in place).

    A large batch (the events a full replay of a long conversation published while no turn
    consumed them, held until the next turn) leaves its freed memory in glibc's heap, which
    the stream's own hand-backs ran before the batch was dropped: handing it back here keeps
    RSS at what the process still uses (docs/performance.md, "RSS kept"). The caller must
    hold no other reference to the events for the memory to be free.
    """
    count = len(events)
    events.clear()
    if count >= RELEASE_TRIM_AT:
        return_freed_memory()


class EventSink[T](Protocol):
    """Receives events from another thread; `publish` never blocks and never raises."""

    def publish(self, event: T) -> None: ...


class QueueSink[T]:
    """A plain thread-safe queue, for synchronous consumers and tests."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[T] = queue.SimpleQueue()

    def publish(self, event: T) -> None:
        self._queue.put(event)

    def get(self, timeout: float | None = None) -> T:
        """The next event; raises `queue.Empty` after `timeout` seconds without one."""
        return self._queue.get(timeout=timeout)

    def drain(self) -> list[T]:
        """Every event published so far and not yet taken."""
        events: list[T] = []
        while True:
            try:
                events.append(self._queue.get_nowait())
            except queue.Empty:
                return events


class HandoffSink[T]:
    """Delivers to whichever event loop consumes now; holds events while none does.

    The reader outlives a turn, and a harness may run successive turns on different event
    loops (a test client without a lifespan does), so the consumer binds its loop at the start
    of each turn and unbinds at the end; events published in between wait in a buffer.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[T] | None = None
        self._held: collections.deque[T] = collections.deque()

    def publish(self, event: T) -> None:
        with self._lock:
            loop, target = self._loop, self._queue
            if loop is None or target is None:
                self._held.append(event)
                return
            try:
                loop.call_soon_threadsafe(self._deliver, target, event)
            except RuntimeError:  # the consumer's loop closed without unbinding
                self._loop = self._queue = None
                self._held.append(event)

    def _deliver(self, target: asyncio.Queue[T], event: T) -> None:
        # Runs on the consumer's loop; if it unbound since, the event is held, not lost.
        with self._lock:
            if target is self._queue:
                target.put_nowait(event)
            else:
                self._held.append(event)

    def bind(self) -> None:
        """Make the running loop the consumer; events held so far come first."""
        loop = asyncio.get_running_loop()
        queue_: asyncio.Queue[T] = asyncio.Queue()
        with self._lock:
            while self._held:
                queue_.put_nowait(self._held.popleft())
            self._loop, self._queue = loop, queue_

    def unbind(self) -> None:
        """Stop delivering to the current loop; what it has not taken is held again."""
        with self._lock:
            target = self._queue
            self._loop = self._queue = None
            if target is not None:
                while not target.empty():
                    self._held.append(target.get_nowait())

    async def get(self, timeout: float | None = None) -> T:
        """The next event (on the bound loop); raises TimeoutError after `timeout` seconds."""
        target = self._queue
        if target is None:
            raise RuntimeError("HandoffSink.get() before bind()")
        return await asyncio.wait_for(target.get(), timeout)

    def take_held(self) -> list[T]:
        """Events published while nobody consumed (or not yet taken), removed from the sink."""
        with self._lock:
            held = list(self._held)
            self._held.clear()
            if self._queue is not None:
                while not self._queue.empty():
                    held.append(self._queue.get_nowait())
            return held
