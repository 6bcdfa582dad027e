"""A conversation agy has never seen: its earlier messages, carried to agy once.

omnigent resends a conversation's whole history every turn and the plugin sends agy only the
newest message, because agy keeps its own history (docs/decisions.md §3). A conversation that
began elsewhere breaks that: an omnigent fork or an imported session has earlier messages
that no agy of this conversation ever had, and a conversation whose agy state was removed
(docs/configuration.md, "How long agy is kept") or whose agy was stopped and forgotten (a
fresh agy conversation) lost them. On such a conversation's first
turn to agy the earlier messages travel ahead of the newest one, in one block that says what
it is, and never again: the state directory remembers that they were sent
(``history.json``: ``pending`` from the send until agy records the turn, then ``delivered``).

"agy has never seen this conversation" is read from the state directory: no agy was ever
recorded for it and nothing was carried yet. A conversation opened on one of the person's own
agy conversations (`omnigent-agy conversations open`) has a record, so its history is agy's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.statedir import SessionStateDir, write_private_file

__all__ = [
    "CARRY_LIMIT",
    "Carried",
    "answered",
    "carry_history",
    "earlier_messages",
    "mark_delivered",
]

_logger = logging.getLogger(__name__)

CARRY_LIMIT: Final = 200_000
"""Characters of earlier messages carried inline at most; the oldest go first beyond it (the
whole transcript is then in a file agy can read, named in the block)."""

_STATE_FILE: Final = "history.json"
_PENDING: Final = "pending"
_DELIVERED: Final = "delivered"
OPEN: Final = "<earlier-conversation>"
CLOSE: Final = "</earlier-conversation>"
_ROLES: Final = {"user": "User", "assistant": "Assistant"}


@dataclass(frozen=True, slots=True)
class Carried:
    """The prompt to send and how many earlier messages it carries (0: none)."""

    prompt: str
    messages: int = 0


def earlier_messages(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of the person's and the assistant's messages before the newest user
    message; other roles and empty messages are left out."""
    last_user = max(
        (i for i, message in enumerate(messages) if message.get("role") == "user"), default=None
    )
    if last_user is None:
        return []
    earlier = []
    for message in messages[:last_user]:
        role = str(message.get("role"))
        said = _text(message.get("content"))
        if role in _ROLES and said:
            earlier.append((role, said))
    return earlier


def carry_history(
    state: SessionStateDir,
    messages: Sequence[Mapping[str, Any]],
    prompt: str,
    *,
    anew: bool = False,
) -> Carried:
    """`prompt`, with the conversation's earlier messages ahead of it when agy has never had
    this conversation (see the module's docstring); marks them pending.

    `anew`: agy's conversation had to begin anew (agy would not go on with the one recorded),
    so whatever was carried or kept by agy before is not in it: they are carried again."""
    status = _status(state)
    if not anew and (status == _DELIVERED or (status is None and state.read_record() is not None)):
        return Carried(prompt)
    earlier = earlier_messages(messages)
    if not earlier:
        return Carried(prompt)
    block = _block(earlier, state.path)
    _write_status(state, _PENDING)
    _logger.info(
        "carrying %d earlier messages of this conversation to agy once (a fork, an import, "
        "a conversation whose agy state is gone or one agy would not go on with)",
        len(earlier),
    )
    return Carried(f"{block}\n\n{prompt}", len(earlier))


def mark_delivered(state: SessionStateDir) -> None:
    """agy recorded the turn that carried the earlier messages: never carry them again."""
    if _status(state) == _PENDING:
        _write_status(state, _DELIVERED)


def _block(earlier: list[tuple[str, str]], folder: Path) -> str:
    sections = [f"### {_ROLES[role]}\n{said}" for role, said in earlier]
    kept: list[str] = []
    size = 0
    for section in reversed(sections):
        size += len(section) + 2
        if size > CARRY_LIMIT and kept:
            break
        kept.append(section)
    kept.reverse()
    head = (
        "[omnigent-agy: this conversation began before you had it (it was forked or imported "
        "in omnigent, or your earlier state of it is gone). Its earlier messages follow once, "
        "for context; answer the message after the block.]"
    )
    left_out = len(sections) - len(kept)
    if left_out:
        whole = folder / "earlier-conversation.md"
        write_private_file(whole, "\n\n".join(sections))
        head += f" (The oldest {left_out} are left out here; all of them are in {whole}.)"
    body = "\n\n".join(kept)
    return f"{head}\n{OPEN}\n{body}\n{CLOSE}"


def _text(content: object) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts).strip()
    return ""


def _status(state: SessionStateDir) -> str | None:
    try:
        data = json.loads((state.path / _STATE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return _DELIVERED  # unreadable: better not to carry twice
    status = data.get("status") if isinstance(data, dict) else None
    return status if status in (_PENDING, _DELIVERED) else _DELIVERED


def _write_status(state: SessionStateDir, status: str) -> None:
    write_private_file(state.path / _STATE_FILE, json.dumps({"status": status}))


def answered(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the history's newest user message already has its answer. omnigent goes on
    after an output of its own tools (the rename that titles a session, docs/in-omnigent.md
    "Titles") with the history as it is, as when a forked session is first bound to a runner;
    sending that user message again would have agy answer it twice."""
    roles = [m.get("role") for m in messages if m.get("role") in ("user", "assistant")]
    return bool(roles) and roles[-1] == "assistant"
