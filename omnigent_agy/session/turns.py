"""How one turn ends.

`TurnTally` watches a turn's events and decides its `TurnResult` when agy goes idle:
completed, cancelled (interrupted), or failed (agy reported an error it did not recover from).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omnigent_agy.reading.events import (
    AssistantMessage,
    ErrorReported,
    Event,
    InteractionRequested,
    InteractionResolved,
    TurnBoundary,
    UsageReported,
)
from omnigent_agy.reading.reader import ConversationRotated, TurnEnded
from omnigent_agy.reading.steps import ModelUsage


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The last thing a turn yields."""

    status: str  # "completed" | "cancelled" | "failed"
    text: str
    usage: ModelUsage | None
    error: ErrorReported | None = None
    last_call: ModelUsage | None = None
    """The turn's largest model call (prompt + cache): how full the context window got.

    Not simply the last call: agy ends turns with small bookkeeping calls of another model
    (CHECKPOINT steps) whose prompt says nothing about the conversation's window."""
    gave_up_waiting: bool = False
    """The turn failed after agy stopped waiting for an answer to a card (it timed the gate
    out and asked no more, WIRE.md §6): nobody answered in time."""


@dataclass(frozen=True, slots=True)
class AgyRestarted:
    """The conversation's agy had been stopped and was started again on the same
    conversation for this turn (agy's own history; nothing is re-published). A host logs it."""

    cascade_id: str
    reason: str
    """Why the earlier agy ended (e.g. the sweep's "idle 4h02m (limit 4h)")."""


type TurnEvent = Event | TurnResult | ConversationRotated | AgyRestarted


@dataclass(slots=True)
class TurnTally:
    """What a turn said so far, to decide how it ended."""

    boundary_seen: bool = False
    texts: list[str] = field(default_factory=list)
    last_error: ErrorReported | None = None
    text_after_error: bool = False
    last_call: ModelUsage | None = None
    gate_timed_out: bool = False  # the last gate ended in ERROR and agy asked no more

    def note(self, event: Event) -> None:
        if isinstance(event, InteractionResolved):
            self.gate_timed_out = "ERROR" in event.status
        elif isinstance(event, InteractionRequested):
            self.gate_timed_out = False
        if isinstance(event, UsageReported):
            if self.last_call is None or _prompt(event.usage) >= _prompt(self.last_call):
                self.last_call = event.usage
        elif isinstance(event, TurnBoundary):
            self.boundary_seen = True
        elif isinstance(event, AssistantMessage):
            self.texts.append(event.text)
            self.text_after_error = self.last_error is not None
        elif isinstance(event, ErrorReported) and not event.benign:
            self.last_error, self.text_after_error = event, False

    def result(self, ended: TurnEnded, *, interrupted: bool) -> TurnResult:
        text = "\n\n".join(self.texts)
        if interrupted:
            return TurnResult("cancelled", text, ended.usage, last_call=self.last_call)
        if self.last_error is not None and not self.text_after_error:
            # agy gave up on an error it did not recover from: the turn failed.
            return TurnResult(
                "failed",
                text,
                ended.usage,
                self.last_error,
                self.last_call,
                gave_up_waiting=self.gate_timed_out,
            )
        return TurnResult("completed", text, ended.usage, last_call=self.last_call)


def _prompt(usage: ModelUsage) -> int:
    return usage.input_tokens + usage.cache_read_tokens
