"""What a turn yields and how its end is decided from its events.

`TurnResult` is the last thing a turn yields: completed, cancelled (interrupted), or failed
(agy reported an error it did not recover from), as the `TurnTally` of its events decides;
`AgyRestarted` and `ConversationLost` are what a host is told ahead of agy's answer. The turn
itself, what it holds and where it ends, is `Turn` (session/turn.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omnigent_agy.errors import Failure
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
    out and asked no more, docs/wire.md §6): nobody answered in time."""
    failure: Failure | None = None
    """The catalogue's failure for it when the session knows better than agy's error text (a
    quota used up, with when it resets: session/quota_turn.py)."""
    calls: tuple[ModelUsage, ...] = ()
    """Each model call's usage as this process saw it, in order (each priced at its own
    model: models/model_facts.py)."""
    context_used: int | None = None
    """agy's own estimate of the tokens in its context window after the turn (docs/wire.md
    §9, "Context in use"; session/context_meter.py); None where agy gave none."""


@dataclass(frozen=True, slots=True)
class AgyRestarted:
    """The conversation's agy had been stopped and was started again on the same
    conversation for this turn (agy's own history; nothing is re-published). A host logs it."""

    cascade_id: str
    reason: str
    """Why the earlier agy ended (e.g. the sweep's "idle 4h02m (limit 4h)")."""


@dataclass(frozen=True, slots=True)
class ConversationLost:
    """agy would not go on with the conversation recorded for this one (its `--conversation`
    resume refused, or an id it did not know) and a new agy conversation began for this turn.
    A host says so on the turn: the person was told their next message goes on from it."""

    lost_cascade_id: str
    cascade_id: str
    """The new conversation agy is on now."""
    why: str
    carried: int
    """How many of the conversation's earlier messages were carried to the new one (0: none,
    agy starts from this message alone)."""


type TurnEvent = Event | TurnResult | ConversationRotated | AgyRestarted | ConversationLost


@dataclass(slots=True)
class TurnTally:
    """What a turn said so far, to decide how it ended."""

    boundary_seen: bool = False
    texts: list[str] = field(default_factory=list)
    last_error: ErrorReported | None = None
    text_after_error: bool = False
    last_call: ModelUsage | None = None
    calls: list[ModelUsage] = field(default_factory=list)
    gate_timed_out: bool = False  # the last gate ended in ERROR and agy asked no more

    def note(self, event: Event) -> None:
        if isinstance(event, InteractionResolved):
            self.gate_timed_out = "ERROR" in event.status
        elif isinstance(event, InteractionRequested):
            self.gate_timed_out = False
        if isinstance(event, UsageReported):
            self.calls.append(event.usage)
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
        calls = tuple(self.calls)
        if interrupted:
            return TurnResult("cancelled", text, ended.usage, last_call=self.last_call, calls=calls)
        if self.last_error is not None and not self.text_after_error:
            # agy gave up on an error it did not recover from: the turn failed.
            return TurnResult(
                "failed",
                text,
                ended.usage,
                self.last_error,
                self.last_call,
                gave_up_waiting=self.gate_timed_out,
                calls=calls,
            )
        return TurnResult("completed", text, ended.usage, last_call=self.last_call, calls=calls)


def _prompt(usage: ModelUsage) -> int:
    return usage.input_tokens + usage.cache_read_tokens
