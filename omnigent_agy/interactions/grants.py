"""What the person allowed "for this conversation", carried to the conversation's sub-agents.

A "for this conversation" answer reaches agy as `scope: PERMISSION_SCOPE_CONVERSATION`
(docs/wire.md §6), which agy remembers for the cascade it was given to; a sub-agent runs in a
cascade of its own (§7), where nothing says whether that answer holds. The person meant the
conversation, sub-agents included, so the session remembers each such answer here and the
bridge allows a sub-agent's request it covers without asking again (the operator's rules and
the host policy still come first). Pure: no I/O; one per conversation. The session keeps
them in the conversation's private state (`as_json` / `from_json`, written at each new
answer), so a harness process started later, after a restart or a kill, holds them too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from omnigent_agy.reading.events import InteractionRequested

__all__ = ["ConversationGrants"]


_logger = logging.getLogger(__name__)


@dataclass(slots=True)
class ConversationGrants:
    """The permissions allowed for this conversation: (action, what agy said it covers)."""

    _granted: set[tuple[str, str]] = field(default_factory=set)
    on_grant: Callable[[ConversationGrants], None] | None = None
    """Called after each new answer (the session saves them)."""

    def grant(self, request: InteractionRequested) -> None:
        """Remember an "Allow … for this conversation" answer to `request`."""
        covered = _covered(request)
        if covered is not None and covered not in self._granted:
            self._granted.add(covered)
            if self.on_grant is not None:
                self.on_grant(self)

    def as_json(self) -> str:
        """The answers as a JSON list of [action, pattern] pairs."""
        return json.dumps(sorted([action, pattern] for action, pattern in self._granted))

    @classmethod
    def from_json(
        cls, text: str, *, on_grant: Callable[[ConversationGrants], None] | None = None
    ) -> ConversationGrants:
        """The answers `as_json` wrote; none from text that is not such a list (logged:
        the person is then asked again, which allows nothing they did not allow)."""
        granted: set[tuple[str, str]] = set()
        try:
            pairs = json.loads(text)
        except ValueError:
            pairs = None
        if not isinstance(pairs, list):
            _logger.warning('the kept "for this conversation" answers are unreadable: none kept')
            pairs = []
        for pair in pairs:
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(part, str) for part in pair)
                and pair[1]
            ):
                granted.add((pair[0], pair[1]))
        return cls(granted, on_grant)

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
