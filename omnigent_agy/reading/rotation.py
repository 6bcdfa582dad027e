"""Noticing a `/clear`: a new root cascade in agy's list (WIRE.md §7).

agy's TUI answers `/clear` by starting a new root cascade and showing it; the old one stays
listed. `RotationWatch` remembers the root cascades it has seen and names the newest root that
appeared since the last look. A sub-agent's child cascade carries a `parentConversationId`
and is never a rotation. The first look only learns what exists: nothing is a rotation yet.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.errors import CsrfError, RpcError

__all__ = ["RotationWatch"]

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
        roots = {
            cascade_id: obj(summary)
            for cascade_id, summary in summaries.items()
            if not obj(obj(summary).get("trajectoryMetadata")).get("parentConversationId")
        }
        known = self._known_roots
        self._known_roots = set(roots) | {following}
        if known is None:
            return None  # the first look: whatever exists now is not a rotation
        fresh = [cascade_id for cascade_id in roots if cascade_id not in known]
        if not fresh:
            return None
        return max(fresh, key=lambda c: _activity(roots[c]))


def _activity(summary: Mapping[str, Any]) -> str:
    """RFC 3339 timestamps in one zone sort as text; the latest activity wins (WIRE.md §7)."""
    for name in ("lastUserInputTime", "lastModifiedTime", "createdTime"):
        value = summary.get(name)
        if isinstance(value, str) and value:
            return value
    return ""
