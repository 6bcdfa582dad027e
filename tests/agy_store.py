"""agy's list of a person's conversations (docs/wire.md §9), written by hand in the shapes
the tests need (tests/agy/test_conversation_store.py, tests/cli/test_conversations_cli.py), and
the digest that shows a store untouched (also tests/e2e/test_e2e_conversations.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from omnigent_agy.agy.conversation_store import SUMMARIES_DB

A = "0b5e8a52-1d4c-4c1e-9d0a-6f3f1b0e2a11"
B = "7c9d2f10-8e4b-4a5c-b3d2-1e0f9a8b7c6d"
COLUMNS = (
    "conversation_id TEXT, title TEXT, preview TEXT, step_count INTEGER, "
    "last_modified_time, status TEXT, agent_name TEXT, workspace_uris TEXT"
)


def store(gemini: Path, rows: list[tuple[Any, ...]], columns: str = COLUMNS) -> Path:
    path = gemini / SUMMARIES_DB
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"CREATE TABLE conversation_summaries ({columns})")
        for row in rows:
            marks = ", ".join("?" * len(row))
            db.execute(f"INSERT INTO conversation_summaries VALUES ({marks})", row)
    return path


def row(cid: str = A, *, modified: object = "2026-11-30T10:00:00Z", uris: object = None) -> tuple:
    uris = json.dumps(["file:///home/me/project"]) if uris is None else uris
    return (cid, "Fix the build", "Done: the build passes.", 12, modified, "IDLE", "", uris)


def tree_digest(root: Path) -> str:
    """Every name and byte under `root`: equal digests, an untouched folder."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()
