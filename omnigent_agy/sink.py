"""Where the reader thread publishes: thread-safe sinks for sync and asyncio consumers.

The reader runs on its own thread and event loop (one connection, one owner: DESIGN-NOTES §10);
nothing crosses from it to the consumer but the events it publishes through one of these.
"""

from __future__ import annotations

import asyncio
import logging
import queue
from typing import Protocol

_logger = logging.getLogger(__name__)


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


class LoopSink[T]:
    """Delivers into an `asyncio.Queue` owned by the consumer's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[T] = asyncio.Queue()

    def publish(self, event: T) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:
            # The consumer's loop is closed: the harness is shutting down and nobody is left
            # to show the event. The durable cursor does not count it as lost work: it only
            # records what the mapper produced, and a restarted reader re-announces open state.
            _logger.debug("dropping %s: the consumer's event loop is closed", type(event).__name__)

    async def get(self) -> T:
        """The next event (call on the consumer's loop)."""
        return await self._queue.get()

    def get_nowait(self) -> T:
        """The next event already delivered; raises `asyncio.QueueEmpty` when there is none."""
        return self._queue.get_nowait()
