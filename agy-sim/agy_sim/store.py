"""Conversations kept on disk, so a restarted agy-sim resumes one with its history
(docs/wire.md §7).

agy keeps each conversation in a brain directory named by its id (``cascadeId ==
conversationId ==`` the brain directory's UUID, docs/wire.md §7 [R]) under its ``--gemini_dir``,
and ``agy --conversation <id>`` starts on a stored conversation. Where exactly and in which
format agy writes its history is not recorded: agy-sim's layout is a **guess**, one JSON
file per cascade, ``<gemini_dir>/antigravity-cli/brain/<cascadeId>/agy-sim-cascade.json``,
holding the steps in their poll shape and what GetAllCascadeTrajectories summarises. Beside
them, the list of conversations people report (`summaries`, docs/wire.md §9), and an empty
``antigravity-cli/conversations/<cascadeId>.db``: agy keeps a database per conversation
there (omnigent's built-in harness tells its own agy's conversations by that file, seen on
real agys; its format is unknown, so agy-sim's is empty).

A cascade is saved when it is made, when a turn of it ends and when agy-sim stops; a step
that was still moving when agy-sim stopped comes back CANCELED (a **guess** at what agy
shows for a turn its restart cut short).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any, Final

from agy_sim import steps_factory as sf
from agy_sim.cascade import Cascade
from agy_sim.summaries import write_summary

__all__ = ["ConversationStore"]

logger = logging.getLogger(__name__)

FILE_NAME: Final = "agy-sim-cascade.json"
_VERSION: Final = 1
_SETTLED: Final = frozenset({sf.S_DONE, sf.S_ERROR, sf.S_CANCELED})
_FIELDS: Final = (
    "cascade_id",
    "trajectory_id",
    "created_at",
    "workspace_uri",
    "parent_id",
    "root_id",
    "last_modified",
    "last_user_input_time",
    "last_user_input_index",
    "planner_invocations",
    "turns_started",
    "plan_models",
    "interactions",
)


class ConversationStore:
    """The brain directories under one ``--gemini_dir``."""

    def __init__(self, gemini_dir: Path) -> None:
        self.gemini_dir = gemini_dir
        self.root = gemini_dir / "antigravity-cli" / "brain"

    def path_for(self, cascade_id: str) -> Path:
        # A cascade id is a UUID; anything else must not walk out of the store.
        safe = "".join(c for c in cascade_id if c.isalnum() or c == "-") or "cascade"
        return self.root / safe / FILE_NAME

    def save(self, cascade: Cascade) -> None:
        """Write ``cascade`` atomically (a crash leaves the previous copy)."""
        data: dict[str, Any] = {"version": _VERSION, "steps": cascade.steps}
        data.update({name: getattr(cascade, name) for name in _FIELDS})
        path = self.path_for(cascade.cascade_id)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temp, path)
        database = self.gemini_dir / "antigravity-cli" / "conversations" / f"{path.parent.name}.db"
        database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        database.touch()
        if not (cascade.parent_id or cascade.root_id):
            try:
                write_summary(self.gemini_dir, cascade)
            except (OSError, sqlite3.Error) as exc:  # the list is agy's, the history is kept
                logger.warning("could not list conversation %s: %s", cascade.cascade_id, exc)

    def load(self, cascade_id: str) -> Cascade | None:
        """The stored cascade, or None when there is none (or it is unreadable: logged)."""
        path = self.path_for(cascade_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("stored conversation %s is unreadable: %s", path, exc)
            return None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            logger.warning("stored conversation %s has an unknown format", path)
            return None
        cascade = Cascade(**{name: data[name] for name in _FIELDS if name in data})
        cascade.steps = [_settled(step, cascade.last_modified) for step in data.get("steps", [])]
        return cascade

    def load_tree(self, cascade_id: str) -> list[Cascade]:
        """The stored cascade and every stored sub-agent cascade under it (root first)."""
        root = self.load(cascade_id)
        if root is None:
            return []
        children: list[Cascade] = []
        with contextlib.suppress(FileNotFoundError):
            for directory in sorted(self.root.iterdir()):
                if directory.name == root.cascade_id or not (directory / FILE_NAME).is_file():
                    continue
                child = self.load(directory.name)
                if child is not None and (child.root_id or child.parent_id) == root.cascade_id:
                    children.append(child)
        return [root, *children]


def _settled(step: dict[str, Any], ts: str) -> dict[str, Any]:
    if step.get("status") not in _SETTLED:
        sf.set_status(step, sf.S_CANCELED, ts or step.get("metadata", {}).get("createdAt", ""))
    return step
