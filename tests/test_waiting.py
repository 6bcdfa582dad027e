"""tests/waiting.py: the value it returns, how long it waits, what a failure says."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from waiting import _next_pause, await_until, wait_until


def test_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, [], "", "found", "later"])
    assert wait_until(lambda: next(values), timeout=5, what="a value") == "found"


def test_a_predicate_is_tried_until_it_holds() -> None:
    tries = itertools.count(1)
    assert wait_until(lambda: next(tries) >= 3, timeout=5, what="the third try") is True


def test_a_failure_names_what_and_the_last_value_seen() -> None:
    seen = iter(range(1000))
    started = time.monotonic()
    with pytest.raises(AssertionError) as failure:
        wait_until(lambda: [n for n in [next(seen)] if n < 0], timeout=0.3, what="a negative n")
    waited = time.monotonic() - started
    message = str(failure.value)
    assert message.startswith("timed out after 0.3 s waiting for a negative n; last seen: []")
    assert 0.3 <= waited < 5


def test_until_decides_on_what_probe_observed() -> None:
    statuses = iter(["STARTING", "RUNNING", "IDLE"])
    idle = wait_until(lambda: next(statuses), until=lambda s: s == "IDLE", timeout=5, what="idle")
    assert idle == "IDLE"
    with pytest.raises(AssertionError, match=r"waiting for idle; last seen: 'RUNNING'$"):
        wait_until(lambda: "RUNNING", until=lambda s: s == "IDLE", timeout=0.05, what="idle")
    # A falsy value is a value: an exit status of 0.
    status = wait_until(lambda: 0, until=lambda code: code is not None, timeout=5, what="exit")
    assert status == 0


def test_a_long_last_value_is_cut() -> None:
    class Nothing:
        def __bool__(self) -> bool:
            return False

        def __repr__(self) -> str:
            return "n" * 1000

    with pytest.raises(AssertionError, match=r"last seen: n{300}… \(1000 characters\)$"):
        wait_until(Nothing, timeout=0.05, what="something")


def test_an_exception_from_the_probe_ends_the_wait() -> None:
    def broken() -> bool:
        raise LookupError("gone")

    with pytest.raises(LookupError, match="gone"):
        wait_until(broken, timeout=5, what="never")


def test_a_fixed_interval_is_kept() -> None:
    tries: list[float] = []
    with pytest.raises(AssertionError):
        wait_until(lambda: tries.append(time.monotonic()), timeout=1, what="x", interval=0.1)
    gaps = [b - a for a, b in itertools.pairwise(tries)]
    assert len(gaps) >= 3, tries
    # Every pause is the interval, but the last, cut at the deadline.
    assert all(gap >= 0.1 for gap in gaps[:-1]), gaps


def test_pauses_double_to_a_tenth_of_a_second_then_grow_with_a_long_wait() -> None:
    pauses, pause = [], 0.0
    for waited in (0, 0.01, 0.03, 0.07, 0.15, 1, 4.9, 5, 6, 8, 10, 60):
        pause = _next_pause(pause, waited)
        pauses.append(pause)
    assert pauses == [0.01, 0.02, 0.04, 0.08, 0.1, 0.1, 0.1, 0.25, 0.3, 0.4, 0.5, 0.5]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_await_until_takes_a_coroutine_probe_and_lets_the_loop_run() -> None:
    ready = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, ready.set)

    async def probe() -> str | None:
        return "set" if ready.is_set() else None

    assert await await_until(probe, timeout=5, what="the event") == "set"
    assert await await_until(ready.is_set, timeout=5, what="the event") is True


@pytest.mark.anyio
async def test_await_until_fails_like_wait_until() -> None:
    with pytest.raises(AssertionError, match=r"waiting for nothing; last seen: 0$"):
        await await_until(lambda: 0, timeout=0.05, what="nothing")
