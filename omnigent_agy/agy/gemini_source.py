"""Reading the person's own gemini dir for a seed (docs/wire.md §1b): never through a link
that leads out of it, JSON files read as objects or refused with a `SeedError`, and what was
skipped noted in the seed's `SeedReport` (by part name, never a file's content)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnigent_agy.errors import SeedError

__all__ = ["GeminiSource", "SeedError", "SeedReport"]

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class SeedReport:
    """What a seed did, by part name (never a file's content)."""

    copied: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    mcp_servers: tuple[str, ...] = ()


class GeminiSource:
    """Reads from the person's gemini dir without following a link out of it."""

    def __init__(self, root: Path, report: SeedReport) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.report = report

    def inside(self, relative: Path) -> Path | None:
        """The resolved path of ``relative`` when it exists inside the root, else None."""
        path = self.root / relative
        if not path.exists():
            return None
        resolved = path.resolve()
        if not resolved.is_relative_to(self.real_root):
            # A link out of ~/.gemini (dotfiles, or something planted): never read it.
            _log.warning("not seeding %s: it links outside %s", relative, self.root)
            self.report.skipped.append(f"{relative} (links outside {self.root})")
            return None
        return resolved

    def read(self, relative: Path) -> bytes | None:
        resolved = self.inside(relative)
        if resolved is None or not resolved.is_file():
            return None
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def json_object(self, relative: Path) -> dict[str, Any] | None:
        data = self.read(relative)
        if data is None:
            return None
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SeedError(
                f"{self.root / relative} is not valid JSON ({type(exc).__name__})",
                path=self.root / relative,
            ) from None
        if not isinstance(value, dict):
            raise SeedError(
                f"{self.root / relative} is not a JSON object", path=self.root / relative
            )
        return value
