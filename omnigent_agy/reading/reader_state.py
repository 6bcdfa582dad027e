"""What the reader says and knows: its own events, its settings, and the cascade it follows.

The reader publishes the mapper's events plus the few of its own defined here (`TurnEnded`,
`ConversationRotated`, `ReaderModeChanged`, `ReaderFailed`). `Following` is everything it knows
about the cascade it follows; `TurnProgress` (saved with the durable cursor) the turn in
progress, so a restarted reader still reports that turn's end.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Final

from omnigent_agy.errors import AgyError
from omnigent_agy.reading.events import Event
from omnigent_agy.reading.mapper_state import MapperState
from omnigent_agy.reading.steps import ModelUsage, StepKey

_logger = logging.getLogger("omnigent_agy.reading.reader")


# --- what the reader itself publishes, besides the mapper's events ---------------------------


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The cascade went IDLE with every step settled after the user input `boundary`."""

    cascade_id: str
    boundary: StepKey
    usage: ModelUsage | None


@dataclass(frozen=True, slots=True)
class ConversationRotated:
    """agy started a new root cascade (`/clear` in its TUI); the reader now follows it."""

    old_cascade_id: str
    new_cascade_id: str


@dataclass(frozen=True, slots=True)
class ReaderModeChanged:
    """Streaming ↔ polling, with the reason (for logs and diagnostics, not for the user)."""

    mode: str
    reason: str


@dataclass(frozen=True, slots=True)
class ReaderFailed:
    """The reader cannot go on (agy rejects our CSRF token, agy's process is gone); it has
    stopped."""

    error: AgyError


type ReaderEvent = Event | TurnEnded | ConversationRotated | ReaderModeChanged | ReaderFailed


DEFAULT_IDLE_TIMEOUT: Final = 15.0


@dataclass(frozen=True, slots=True)
class ReaderSettings:
    """Timings of the reader; tests shorten them, nothing else needs to."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """Seconds without a frame before the reader polls, checks rotation and re-opens."""
    poll_interval: float = 0.5
    """Seconds between polls while the stream is broken."""
    reconnect_initial: float = 0.2
    reconnect_max: float = 5.0
    rpc_timeout: float = 10.0


@dataclass(slots=True)
class TurnProgress:
    """The turn in progress: its user input and the usage reported since."""

    boundary: StepKey | None = None
    usage: ModelUsage | None = None
    ended: bool = True

    def to_json(self) -> dict[str, Any]:
        if self.boundary is None:
            return {}
        return {
            "trajectory_id": self.boundary.trajectory_id,
            "step_index": self.boundary.step_index,
            "usage": None if self.usage is None else dataclasses.asdict(self.usage),
            "ended": self.ended,
        }

    @classmethod
    def from_json(cls, data: object, cascade_id: str = "") -> TurnProgress:
        """The turn saved in a cursor (a turn in progress when the last reader stopped)."""
        if not isinstance(data, dict) or not data:
            return cls()
        try:
            boundary = StepKey(cascade_id, str(data["trajectory_id"]), int(data["step_index"]))
            usage = data.get("usage")
            return cls(
                boundary=boundary,
                usage=ModelUsage(**usage) if isinstance(usage, dict) else None,
                ended=bool(data.get("ended", True)),
            )
        except (KeyError, TypeError, ValueError):
            _logger.warning("ignoring a malformed turn in the reader's cursor")
            return cls()


@dataclass(slots=True)
class Following:
    """The cascade being followed and everything known about it."""

    state: MapperState
    trajectory_id: str | None = None
    total_length: int = 0
    status: str | None = None
    turn: TurnProgress = field(default_factory=TurnProgress)

    @property
    def cascade_id(self) -> str:
        return self.state.cascade_id

    def first_uncommitted(self) -> int:
        if self.trajectory_id is None:
            return 0
        return self.state.first_uncommitted(self.trajectory_id)
