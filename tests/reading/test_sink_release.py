"""`release`: a batch of events a consumer is done with is dropped, a large one hands memory back.

The memory itself is measured by benchmarks/bench_attach.py ("RSS kept", events held between
turns); here, what `release` does with the list and when it asks glibc for the hand-back.
"""

from __future__ import annotations

import pytest

from omnigent_agy.reading import sink
from omnigent_agy.reading.sink import RELEASE_TRIM_AT, release


@pytest.fixture
def hand_backs(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    calls: list[None] = []
    monkeypatch.setattr(sink, "return_freed_memory", lambda: calls.append(None))
    return calls


def test_a_released_batch_is_emptied_in_place(hand_backs: list[None]) -> None:
    events: list[object] = [object() for _ in range(3)]
    same = events
    release(events)
    assert same == []


def test_a_large_batch_hands_freed_memory_back_once_it_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events = [{"step": index} for index in range(RELEASE_TRIM_AT)]
    hand_backs: list[int] = []  # how many events were still held at each hand-back
    monkeypatch.setattr(sink, "return_freed_memory", lambda: hand_backs.append(len(events)))
    release(events)
    assert hand_backs == [0]  # once, and only after the events are gone


def test_a_small_batch_costs_no_hand_back(hand_backs: list[None]) -> None:
    release([{"step": index} for index in range(RELEASE_TRIM_AT - 1)])
    assert hand_backs == []
