"""How the plugin learns that omnigent deleted a session (docs/host.md, "Deleting a session").

omnigent tells a harness nothing particular when a session is deleted: the runner ends the
harness process exactly as when it reaps an idle one or the host stops (the executor's
``close_session``, then ``close``). What only a deletion does, on the host, is remove the
per-session folders the runner keeps for its native harnesses — among them the attachment
cache of the built-in Antigravity harness's bridge folder, which is named by the session id
alone and lives in omnigent's data folder, so a reboot keeps it. The harness puts a marker
file there and records its path in the conversation's state (``agy/retention``): the marker
gone means deleted. At the first turn the harness process also arms a watch that starts when
the process ends, however it ends, and waits a while for that; the sweep of every later
harness process checks it too.

The folder's path comes from omnigent's own functions, so it is the runner's by
construction; an omnigent without them leaves deletion to the retention (logged once).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

from omnigent_agy import SessionStateDir, arm_deletion_watch, record_deletion_marker

__all__ = ["MARKER_NAME", "mark_for_deletion", "marker_path"]

_logger = logging.getLogger(__name__)

MARKER_NAME: Final = "omnigent-agy-conversation"
_warned = False


def marker_path(conversation_id: str) -> Path | None:
    """Where the marker of ``conversation_id`` goes (None: this omnigent has no such folder)."""
    global _warned  # noqa: PLW0603 - one warning per process
    try:
        from omnigent.harnesses.antigravity_native.bridge import (  # noqa: PLC0415
            bridge_dir_for_bridge_id,
        )
        from omnigent.inner.native_attachments import attachment_cache_dir  # noqa: PLC0415
    except ImportError as exc:
        if not _warned:
            _warned = True
            _logger.warning(
                "this omnigent has no per-session folder it removes on deletion (%s): a deleted "
                "session's private state goes only at its retention",
                exc,
            )
        return None
    return attachment_cache_dir(bridge_dir_for_bridge_id(conversation_id)) / MARKER_NAME


def mark_for_deletion(state: SessionStateDir, conversation_id: str) -> None:
    """Place the conversation's marker (once), record it in its state, and arm the watch that
    looks at it once this process has ended (``arm_deletion_watch``)."""
    marker = marker_path(conversation_id)
    if marker is None:
        return
    try:
        if not marker.exists():
            marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(
                    "omnigent-agy: when this folder goes (omnigent deleted the session), the "
                    f"session's agy stops and its private state goes: {state.path}\n"
                )
        record_deletion_marker(state, marker)
    except OSError as exc:  # deletion then waits for the retention; the turn goes on
        _logger.warning("could not place the deletion marker %s: %s", marker, exc)
        return
    try:
        arm_deletion_watch(state.path, marker)
    except OSError as exc:  # the sweep of a later harness process still finds the deletion
        _logger.warning("could not watch for the deletion of %s: %s", state.key, exc)
