"""What the reader published while no turn consumed it: the steps a dead harness process's
turn left, and the gates still open."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from omnigent_agy.reading.events import (
    Event,
    InteractionRequested,
    InteractionResolved,
    TurnBoundary,
)
from omnigent_agy.reading.reader import (
    ConversationRotated,
    ReaderEvent,
    ReaderFailed,
    ReaderModeChanged,
    TurnEnded,
)

__all__ = ["BridgeFailed", "leftovers", "open_gates"]


@dataclass(frozen=True, slots=True)
class BridgeFailed:
    """Answering an interaction failed; the turn ends with this error."""

    error: Exception


# What the reader and the bridge say about themselves, not about agy's steps.
_NOT_STEPS: Final = (
    TurnEnded,
    ConversationRotated,
    ReaderModeChanged,
    ReaderFailed,
    BridgeFailed,
)


def leftovers(events: list[ReaderEvent | BridgeFailed]) -> list[Event]:
    """What agy did for a turn whose harness process died, among the events held since: the
    steps up to the next turn's user input (someone typing in agy's TUI starts one)."""
    left: list[Event] = []
    for event in events:
        if isinstance(event, TurnBoundary):
            break
        if not isinstance(event, _NOT_STEPS):
            left.append(event)
    return left


def open_gates(events: list[ReaderEvent | BridgeFailed]) -> list[InteractionRequested]:
    """The interactions announced in `events` and not resolved later in them."""
    gates: dict[object, InteractionRequested] = {}
    for event in events:
        if isinstance(event, InteractionRequested):
            gates[event.key] = event
        elif isinstance(event, InteractionResolved):
            gates.pop(event.key, None)
    return list(gates.values())
