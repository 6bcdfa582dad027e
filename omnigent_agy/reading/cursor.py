"""The durable cursor: what the reader already published for a cascade, kept on disk.

A restarted reader (a respawned harness process re-attaching to the same agy, docs/decisions.md §4)
loads it and goes on without publishing history again (docs/decisions.md §5). One small JSON file
per cascade in the session's private state directory, written atomically and 0600; its size
depends on the steps still open, not on the conversation's length (see `indexset`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from omnigent_agy.reading.mapper import MapperState

_logger = logging.getLogger(__name__)
_VERSION = 1


class CursorStore:
    """Loads and saves the mapper progress of the cascades of one session."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path_for(self, cascade_id: str) -> Path:
        safe = "".join(c for c in cascade_id if c.isalnum() or c in "-_") or "cascade"
        return self.directory / f"cursor-{safe}.json"

    def load_into(self, state: MapperState) -> dict[str, Any] | None:
        """Restore `state` from its cursor file and return the extra data saved with it.

        None when there is no cursor (or it is unusable).

        A damaged cursor is logged and ignored rather than trusted: starting over means the
        history of this cascade is published again, which is visible but loses nothing.
        """
        path = self.path_for(state.cascade_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            _logger.warning("ignoring unreadable cursor %s: %s", path, exc)
            return None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            _logger.warning("ignoring cursor %s: not a version %d cursor", path, _VERSION)
            return None
        if data.get("cascade_id") != state.cascade_id:
            _logger.warning("ignoring cursor %s: it belongs to another cascade", path)
            return None
        try:
            state.restore_progress(data["progress"])
        except (KeyError, ValueError) as exc:
            _logger.warning("ignoring malformed cursor %s: %s", path, exc)
            return None
        extra = data.get("extra")
        return extra if isinstance(extra, dict) else {}

    def save(self, state: MapperState, extra: dict[str, Any] | None = None) -> None:
        """Write `state`'s progress (and `extra`, the reader's own bookkeeping) atomically
        (temp file + rename), readable by the user only."""
        payload: dict[str, Any] = {
            "version": _VERSION,
            "cascade_id": state.cascade_id,
            "progress": state.export_progress(),
            "extra": extra or {},
        }
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.path_for(state.cascade_id)
        fd, tmp = tempfile.mkstemp(prefix=".cursor-", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, separators=(",", ":"))
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
