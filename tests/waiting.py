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

Between tries it sleeps 10 ms, growing to 100 ms, and after 5 s of waiting a twentieth of the
time waited, up to 500 ms: a condition that holds soon is seen soon, and a long wait (a turn of
agy, omnigent's 90 s grace for a runner gone, each try a REST call the server answers too) is
not polled hard on a shared machine. ``interval`` fixes the pause instead (a port taken back
from a race wants a tight loop).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["await_until", "wait_until"]

_FIRST_PAUSE = 0.01
_SHORT_WAIT_PAUSE = 0.1
_SHORT_WAIT = 5.0
_LONGEST_PAUSE = 0.5
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
    started = time.monotonic()
    deadline = started + timeout
    pause = 0.0
    while True:
        value = probe()
        if until(value):
            return value
        now = time.monotonic()
        if now >= deadline:
            raise _timed_out(what, timeout, value)
        pause = interval if interval is not None else _next_pause(pause, now - started)
        time.sleep(min(pause, deadline - now))


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
    started = loop.time()
    deadline = started + timeout
    pause = 0.0
    while True:
        tried = probe()
        value = await tried if inspect.isawaitable(tried) else tried
        if until(value):
            return value
        now = loop.time()
        if now >= deadline:
            raise _timed_out(what, timeout, value)
        pause = interval if interval is not None else _next_pause(pause, now - started)
        await asyncio.sleep(min(pause, deadline - now))


def _next_pause(pause: float, waited: float) -> float:
    """The pause after `pause` (0 before the first), `waited` seconds into the wait."""
    if waited >= _SHORT_WAIT:
        return min(waited / 20, _LONGEST_PAUSE)
    return min(max(pause * 2, _FIRST_PAUSE), _SHORT_WAIT_PAUSE)


def _timed_out(what: str, timeout: float, last: object) -> AssertionError:
    shown = repr(last)
    if len(shown) > _SHOWN:
        shown = f"{shown[:_SHOWN]}… ({len(shown)} characters)"
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}; last seen: {shown}")
