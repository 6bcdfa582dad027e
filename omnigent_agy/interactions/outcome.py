"""What the interaction bridge did with one of agy's gates (`InteractionBridge.handle`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.steps import StepKey

__all__ = ["InteractionOutcome", "OutcomeStatus"]


class OutcomeStatus(enum.StrEnum):
    ANSWERED = "answered"  # an answer (a person's or a policy's) reached agy
    DISMISSED = "dismissed"  # the person closed the prompt; agy got a refusal; end the turn
    REFUSED = "refused"  # the host could not ask; agy got a refusal (or nothing, if unknown)
    INTERRUPTED = "interrupted"  # deny_pending() refused it
    GONE = "gone"  # no longer waiting and no retry to answer: nothing to do
    DUPLICATE = "duplicate"  # an earlier handle() of the same gate dealt with it


@dataclass(frozen=True, slots=True)
class InteractionOutcome:
    """What `handle()` did. `decided_by` names the person, the host policy or the rule."""

    status: OutcomeStatus
    request: InteractionRequested
    delivered_to: StepKey | None = None
    payload: Mapping[str, object] | None = field(default=None, compare=False)
    decided_by: str = ""
    detail: str = ""

    @property
    def dismissed(self) -> bool:
        """The person closed the prompt without answering: the executor ends the turn."""
        return self.status is OutcomeStatus.DISMISSED

    @property
    def delivered(self) -> bool:
        return self.delivered_to is not None
