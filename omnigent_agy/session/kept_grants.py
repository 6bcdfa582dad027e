"""The person's "for this conversation" answers, kept in the conversation's private state.

agy remembers such an answer for the cascade it was given to, which a harness restart does
not touch; the session's own record of them (`interactions/grants.py`), which carries them to
the conversation's sub-agents, lived in the harness process's memory, so a process started
after a restart or a kill asked the person again. They are now read from ``grants.json`` in
the conversation's state folder when the session starts and written there at each new answer
(private, atomically replaced: a kill mid-write leaves the previous answers).
"""

from __future__ import annotations

import logging
from typing import Final

from omnigent_agy.agy.statedir import SessionStateDir, write_private_file
from omnigent_agy.interactions.grants import ConversationGrants

__all__ = ["GRANTS_FILE", "kept_grants"]

_logger = logging.getLogger(__name__)

GRANTS_FILE: Final = "grants.json"


def kept_grants(state: SessionStateDir) -> ConversationGrants:
    """The answers kept for the conversation of `state`, saving each new one there."""
    path = state.path / GRANTS_FILE

    def save(grants: ConversationGrants) -> None:
        try:
            write_private_file(path, grants.as_json())
        except OSError as exc:  # kept in memory still: this process goes on honouring it
            _logger.warning('could not keep a "for this conversation" answer: %s', exc)

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ConversationGrants(on_grant=save)
    except (OSError, UnicodeDecodeError) as exc:
        _logger.warning('could not read the kept "for this conversation" answers: %s', exc)
        return ConversationGrants(on_grant=save)
    return ConversationGrants.from_json(text, on_grant=save)
