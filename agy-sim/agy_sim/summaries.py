"""The list of conversations agy keeps beside them (docs/wire.md §9: public reports).

People report two files in agy's folder that list a person's conversations:
``antigravity-cli/conversation_summaries.db``, SQLite with a table
``conversation_summaries(conversation_id, title, preview, step_count, last_modified_time,
status, agent_name, workspace_uris)``, and ``antigravity-cli/cache/last_conversations.json``,
which maps a workspace to its last conversation. agy-sim writes both whenever it stores a
conversation (`store.ConversationStore.save`), root conversations only (a sub-agent is not
one the person resumes).

The table's name and columns are the report's; everything else is a **guess**: the column
types, ``title`` (the first line of the first message, as a client without a model would make
one), that a conversation is listed once it has a message, ``preview`` (the last answer's
start), ``last_modified_time`` as RFC 3339 text,
``status`` as agy's run-status enum name, ``agent_name`` empty, ``workspace_uris`` as a JSON
array of ``file://`` URIs, and ``last_conversations.json`` as ``{<workspace path>:
<conversation id>}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Final

__all__ = ["DB_FILE", "LAST_FILE", "TABLE", "write_summary"]

DB_FILE: Final = Path("antigravity-cli") / "conversation_summaries.db"
LAST_FILE: Final = Path("antigravity-cli") / "cache" / "last_conversations.json"
TABLE: Final = "conversation_summaries"
_TITLE: Final = 80
_PREVIEW: Final = 200
_INSERT: Final = "INSERT OR REPLACE INTO conversation_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_SCHEMA: Final = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "conversation_id TEXT PRIMARY KEY, title TEXT, preview TEXT, step_count INTEGER, "
    "last_modified_time TEXT, status TEXT, agent_name TEXT, workspace_uris TEXT)"
)


def write_summary(gemini_dir: Path, cascade: Any) -> None:
    """Record ``cascade`` (a root `Cascade`) in both files once the person said something in
    it; raises OSError/sqlite3.Error."""
    steps: list[dict[str, Any]] = cascade.steps
    if not any(s.get("type") == "CORTEX_STEP_TYPE_USER_INPUT" for s in steps):
        return
    row = (
        cascade.cascade_id,
        _title(steps),
        _preview(steps),
        len(steps),
        cascade.last_modified or cascade.created_at,
        cascade.status,
        "",
        json.dumps([cascade.workspace_uri]),
    )
    db = gemini_dir / DB_FILE
    db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(db, timeout=5)) as connection, connection:
        connection.execute(_SCHEMA)
        connection.execute(_INSERT, row)
    _remember_last(gemini_dir / LAST_FILE, cascade.workspace_uri, cascade.cascade_id)


def _title(steps: list[dict[str, Any]]) -> str:
    for step in steps:
        if step.get("type") == "CORTEX_STEP_TYPE_USER_INPUT":
            text = str(step.get("userInput", {}).get("userResponse", "")).strip()
            return text.splitlines()[0][:_TITLE] if text else ""
    return ""


def _preview(steps: list[dict[str, Any]]) -> str:
    for step in reversed(steps):
        response = step.get("plannerResponse", {})
        text = str(response.get("response") or response.get("modifiedResponse") or "").strip()
        if text:
            return " ".join(text.split())[:_PREVIEW]
    return ""


def _remember_last(path: Path, workspace_uri: str, cascade_id: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    workspace = workspace_uri.removeprefix("file://")
    if known.get(workspace) == cascade_id:
        return
    known[workspace] = cascade_id
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(known, indent=2), encoding="utf-8")
    os.replace(temp, path)
