"""What the person allowed "for this conversation", carried to the conversation's sub-agents.

A "for this conversation" answer reaches agy as `scope: PERMISSION_SCOPE_CONVERSATION`
(docs/wire.md §6), which agy remembers for the cascade it was given to; a sub-agent runs in a
cascade of its own (§7), where nothing says whether that answer holds. The person meant the
conversation, sub-agents included, so the session remembers each such answer here and the
bridge allows a sub-agent's request it covers without asking again (the operator's rules and
the host policy still come first). Pure: no I/O; one per conversation, in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from omnigent_agy.reading.events import InteractionRequested

__all__ = ["ConversationGrants"]


@dataclass(slots=True)
class ConversationGrants:
    """The permissions allowed for this conversation: (action, what agy said it covers)."""

    _granted: set[tuple[str, str]] = field(default_factory=set)

    def grant(self, request: InteractionRequested) -> None:
        """Remember an "Allow … for this conversation" answer to `request`."""
        covered = _covered(request)
        if covered is not None:
            self._granted.add(covered)

    def covers(self, request: InteractionRequested) -> bool:
        """Whether an earlier answer already allows `request` (same kind of action, and its
        target within what agy suggested that answer covers: a pattern with `*`, or equal)."""
        wanted = request.wanted
        target = wanted.target or request.command_line
        if not target:
            return False
        action = wanted.action or ""
        return any(
            granted_action == action and (target == pattern or fnmatchcase(target, pattern))
            for granted_action, pattern in self._granted
        )


def _covered(request: InteractionRequested) -> tuple[str, str] | None:
    wanted = request.wanted
    pattern = wanted.suggested_persist_pattern or wanted.target or request.command_line
    if not pattern:
        return None
    return (wanted.action or "", pattern)
