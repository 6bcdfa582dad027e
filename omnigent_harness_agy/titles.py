"""A session's title from agy's own title for its conversation (docs/in-omnigent.md, "Titles").

agy keeps a title per conversation in its list of conversations (``conversation_summaries.db``
in the conversation's private gemini dir, docs/wire.md §9). After a turn the plugin reads the
title of the conversation the session is bound to and, when it is new, hands it to omnigent's
``sys_session_rename`` through the turn's tool bridge, as the relay hands omnigent's tools to
agy: the session is then found by agy's title instead of its first message cut short.

A title the session already has is not given again: not omnigent's own (the first message, as
omnigent titles a session by itself), not the one given before (kept in the conversation's
state folder, so a harness started again does not give it twice). Each rename shows in
omnigent's web as a tool call, so the plugin calls it only when the title changes.
omnigent's title-generator hook cannot do this: its context carries no session id
(``BackgroundTitleContext``, omnigent's runner/background_titles/service.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from omnigent_agy import SessionStateDir, read_conversations, write_private_file
from omnigent_agy.errors import AgyError

__all__ = ["RENAME_TOOL", "SessionTitle", "agy_title", "omnigent_title", "retitle"]

_logger = logging.getLogger(__name__)

RENAME_TOOL: Final = "sys_session_rename"
#: omnigent's bounds for a title (entities/conversation.py DEFAULT_GENERATED_TITLE_MAX_CHARS).
_MIN, _MAX = 2, 100
#: How long the turn's end waits for omnigent to take the title.
_RENAME_WITHIN: Final = 10.0
#: omnigent's own title of a session: its first message cut at this many characters
#: (entities/conversation.py synthesize_conversation_title).
_OMNIGENT_LIMIT: Final = 60
_TITLE_FILE: Final = "title"


def agy_title(gemini_dir: Path, cascade_id: str) -> str | None:
    """agy's title for the conversation, on one line and within omnigent's bounds; None when
    agy has none (yet) or its list cannot be read."""
    try:
        stored = read_conversations(gemini_dir)
    except AgyError as exc:
        _logger.info("agy's list of conversations is unreadable: %s", exc)
        return None
    found = next((c for c in stored.conversations if c.conversation_id == cascade_id), None)
    if found is None:
        return None
    title = " ".join(found.title.split())
    if len(title) > _MAX:
        title = title[: _MAX - 1].rstrip() + "…"
    return title if len(title) >= _MIN else None


async def retitle(
    title: str | None,
    applied: str | None,
    run_tool: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]],
) -> str | None:
    """Give the session `title` unless it is the one `applied` already; the title now."""
    if title is None or title == applied:
        return applied
    try:
        async with asyncio.timeout(_RENAME_WITHIN):
            result = await run_tool(RENAME_TOOL, {"title": title})
    except TimeoutError:  # a title never holds up the turn's end
        _logger.info("omnigent did not answer the rename within %s s", _RENAME_WITHIN)
        return applied
    if "error" in result:
        _logger.info("omnigent did not take agy's title: %s", result["error"])
        return applied
    return title


def omnigent_title(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The title omnigent gives a session by itself: the text of its first user message, lines
    run together, cut at 60 characters with an ellipsis."""
    first = next((m for m in messages if m.get("role") == "user"), None)
    content = first.get("content") if first is not None else None
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [
            str(block.get("text"))
            for block in content
            if isinstance(block, dict) and block.get("type") in ("input_text", "text")
        ]
    else:
        return None
    collapsed = " ".join(" ".join(texts).split())
    if not collapsed:
        return None
    if len(collapsed) <= _OMNIGENT_LIMIT:
        return collapsed
    return collapsed[: _OMNIGENT_LIMIT - 1].rstrip() + "…"


class SessionTitle:
    """The title a session has from the plugin's side: given once per change of agy's title."""

    def __init__(self, state: SessionStateDir) -> None:
        self._state = state
        self._applied: str | None = None

    @classmethod
    def open(cls, state: SessionStateDir, messages: Sequence[Mapping[str, Any]]) -> SessionTitle:
        """The session's title as this harness starts on it, before its first turn runs: the
        one kept in its folder, else (the conversation's first turn) omnigent's own, kept now,
        since a harness started again later is handed the newest message only."""
        title = cls(state)
        title._applied = title._given()
        if title._applied is None:
            title._applied = omnigent_title(messages)
            if title._applied is not None:
                try:
                    write_private_file(state.path / _TITLE_FILE, title._applied, durable=False)
                except OSError as exc:  # a title is never worth the turn
                    _logger.info("the session's title is not kept: %s", exc)
        return title

    def _given(self) -> str | None:
        try:
            return (self._state.path / _TITLE_FILE).read_text(encoding="utf-8") or None
        except OSError:
            return None

    async def after_turn(
        self,
        cascade_id: str | None,
        run_tool: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]],
        *,
        carried: bool = False,
    ) -> None:
        """Give the session agy's title for `cascade_id` when the session has another.

        `carried`: the turn handed agy a fork's or an import's earlier messages, which agy
        titles its conversation by; the session keeps omnigent's title for it (a fork's), and
        only a later title of agy's is given."""
        if cascade_id is None:  # no conversation bound (yet)
            return
        title = agy_title(self._state.gemini_dir, cascade_id)
        given = self._applied
        if carried and title is not None:
            now: str | None = title
        else:
            now = await retitle(title, given, run_tool)
        if now is not None and now != given:  # kept, for a harness started again
            write_private_file(self._state.path / _TITLE_FILE, now, durable=False)
        self._applied = now
