"""What the harness says about a turn's conversation itself, beside agy's steps: agy started
again on it (logged: the transcript is unchanged), or a new agy conversation begun in its
place (said on the turn, where the person reads it)."""

from __future__ import annotations

import logging

from omnigent.debug_logging import debug_event
from omnigent.inner.executor import TextChunk

from omnigent_agy import AgyRestarted, ConversationLost

__all__ = ["log_restart", "lost_note"]

_logger = logging.getLogger(__name__)


def log_restart(event: AgyRestarted, session_id: str) -> None:
    """agy had stopped and started again on the same conversation: its history is agy's own,
    so nothing changes in the transcript; the session's log says why."""
    _logger.info(
        "agy was restarted on conversation %s (the earlier agy ended: %s)",
        event.cascade_id,
        event.reason,
        extra=debug_event(
            "agy_restarted", session_id=session_id, cascade_id=event.cascade_id, reason=event.reason
        ),
    )


def lost_note(event: ConversationLost) -> TextChunk:
    """The turn's first text: this message did not go on from the agy conversation the person
    was told it would (`omnigent-agy conversations open`, a stopped agy), and what agy has
    instead. A paragraph of its own before agy's answer."""
    carried = (
        f"omnigent carried this session's {event.carried} earlier "
        f"message{'s' if event.carried != 1 else ''} to it; agy's own earlier steps are not "
        "in it."
        if event.carried
        else "Nothing of the earlier conversation is in it: this session holds no earlier "
        "messages to carry, so agy starts from this message alone."
    )
    _logger.warning(
        "agy would not go on with conversation %s (%s); now on %s, %d messages carried",
        event.lost_cascade_id,
        event.why,
        event.cascade_id,
        event.carried,
    )
    return TextChunk(
        text=f"> **A new agy conversation began.** Antigravity CLI could not go on from its "
        f"conversation {event.lost_cascade_id} ({event.why}), so this message started a new "
        f"one. {carried}\n\n"
    )
