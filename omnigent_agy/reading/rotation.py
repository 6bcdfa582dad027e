"""Noticing a `/clear`: a new root cascade in agy's list (docs/wire.md §7).

agy's TUI answers `/clear` by starting a new root cascade and showing it; the old one stays
listed. `RotationWatch` remembers the root cascades it has seen and names the newest root that
appeared since the last look. A sub-agent's child cascade carries a `parentConversationId`
and is never a rotation. The first look only learns what exists: nothing is a rotation yet.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from omnigent_agy.errors import CsrfError, RpcError
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient

__all__ = ["RotationWatch", "root_cascades", "tui_cascade", "untouched"]

_logger = logging.getLogger("omnigent_agy.reading.reader")


class RotationWatch:
    """The root cascades seen so far, to tell a fresh one from history."""

    def __init__(self) -> None:
        self._known_roots: set[str] | None = None
        self.checks = 0
        """How many listings were looked at (diagnostics, tests)."""

    async def look(self, client: RpcClient, following: str) -> str | None:
        """List agy's cascades and name a fresh root, if any (None also when the listing
        failed: the next look tries again). A rejected token is not transient: CsrfError."""
        try:
            listing = await client.get_all_cascade_trajectories()
        except CsrfError:
            raise
        except RpcError as exc:
            _logger.debug("listing cascades failed: %s", exc)
            return None
        return self.fresh_root(obj(listing.get("trajectorySummaries")), following)

    def fresh_root(self, summaries: Mapping[str, Any], following: str) -> str | None:
        """The newest root cascade not seen before in `summaries` (GetAllCascadeTrajectories'
        `trajectorySummaries`), or None; `following` counts as seen."""
        self.checks += 1
        roots = root_cascades(summaries)
        known = self._known_roots
        self._known_roots = set(roots) | {following}
        if known is None:
            return None  # the first look: whatever exists now is not a rotation
        fresh = [cascade_id for cascade_id in roots if cascade_id not in known]
        if not fresh:
            return None
        return max(fresh, key=lambda c: _activity(roots[c]))


def root_cascades(summaries: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The root cascades of a listing's `trajectorySummaries`: a sub-agent's cascade carries
    a `parentConversationId` (docs/wire.md §7)."""
    return {
        str(cascade_id): obj(summary)
        for cascade_id, summary in summaries.items()
        if not obj(obj(summary).get("trajectoryMetadata")).get("parentConversationId")
    }


def untouched(value: object) -> bool:
    """A cascade summary with no user input and no steps yet (docs/wire.md §3)."""
    summary = obj(value)
    if not summary or summary.get("lastUserInputTime"):
        return False
    try:
        return int(str(summary.get("stepCount") or 0)) == 0
    except ValueError:
        return False


def tui_cascade(summaries: Mapping[str, Any]) -> str | None:
    """The empty conversation a freshly started agy's TUI opened: the only root cascade, and
    nobody has typed into it yet (docs/wire.md §7); else None."""
    roots = root_cascades(summaries)
    if len(roots) != 1:
        return None
    cascade_id, summary = next(iter(roots.items()))
    return cascade_id if untouched(summary) else None


def _activity(summary: Mapping[str, Any]) -> str:
    """RFC 3339 timestamps in one zone sort as text; the latest activity wins (docs/wire.md §7)."""
    for name in ("lastUserInputTime", "lastModifiedTime", "createdTime"):
        value = summary.get(name)
        if isinstance(value, str) and value:
            return value
    return ""
