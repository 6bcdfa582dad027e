"""Waiting for a condition, with a deadline: the tests' one way to wait (never a bare sleep).

`wait_until(probe, timeout=…, what=…)` calls ``probe`` until it returns something truthy and
returns that value. At the deadline it fails the test with an AssertionError that says what
was awaited, for how long, and the last value ``probe`` returned, so a failure shows how far
things got. `await_until` is the same inside an event loop: ``probe`` may be a plain function
or a coroutine function, and the loop runs between tries.

``probe`` is a predicate (``lambda: not reader.is_alive()``) or a lookup that returns None
until it finds what it looks for (``lambda: harness_process(conversation)``). With ``until``,
``probe`` observes and ``until(value)`` decides, so a failure shows what was last observed
(``until=lambda s: s == IDLE`` on a probe of the cascade's status shows the status it was
stuck in), and a valid value may be falsy (``until=lambda code: code is not None`` for an
exit status). An exception from ``probe`` ends the wait at once (a probe catches what may
pass).

Between tries it sleeps 10 ms, growing to 100 ms: a condition that holds soon is seen soon,
and a long wait (a turn of agy, omnigent's REST API) is not polled hard on a shared machine.
``interval`` fixes the pause instead (a port taken back from a race wants a tight loop).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator

__all__ = ["await_until", "wait_until"]

_FIRST_PAUSE = 0.01
_LONGEST_PAUSE = 0.1
_SHOWN = 300  # characters of the last value a failure shows


def wait_until[T](
    probe: Callable[[], T],
    *,
    timeout: float,
    what: str,
    until: Callable[[T], object] = bool,
    interval: float | None = None,
) -> T:
    """``probe()``'s first value that ``until`` accepts (truthy, by default); an AssertionError
    naming ``what`` and the last value after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pauses = _pauses(interval)
    while True:
        value = probe()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, value)
        time.sleep(min(next(pauses), max(0.0, deadline - time.monotonic())))


async def await_until[T](
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float,
    what: str,
    until: Callable[[T], object] = bool,
    interval: float | None = None,
) -> T:
    """`wait_until` inside an event loop: ``probe`` may be a coroutine function."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pauses = _pauses(interval)
    while True:
        tried = probe()
        value = await tried if inspect.isawaitable(tried) else tried
        if until(value):
            return value
        if loop.time() >= deadline:
            raise _timed_out(what, timeout, value)
        await asyncio.sleep(min(next(pauses), max(0.0, deadline - loop.time())))


def _pauses(interval: float | None) -> Iterator[float]:
    pause = _FIRST_PAUSE if interval is None else interval
    while True:
        yield pause
        if interval is None:
            pause = min(pause * 2, _LONGEST_PAUSE)


def _timed_out(what: str, timeout: float, last: object) -> AssertionError:
    shown = repr(last)
    if len(shown) > _SHOWN:
        shown = f"{shown[:_SHOWN]}… ({len(shown)} characters)"
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}; last seen: {shown}")
