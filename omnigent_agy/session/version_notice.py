"""An agy outside the tested versions, said once per conversation at its first turn.

The plugin is tested with agy 1.2.x to 1.5.x (``config.agy_versions``). An agy of another
version is run all the same (a newer one may well work), but the person is told, once per
conversation, and what to run: ``omnigent-agy probe`` and an upgrade of the plugin.

- **Where the version comes from**: ``agy --version`` (every agy prints it, docs/wire.md §1),
  the same reading as the doctor's, read in a thread while agy starts (``begin``), so a first
  turn waits for nothing more than it did. An agy that prints no version says nothing here
  (the doctor warns about that).
- **Once per conversation**: the version read is kept in the conversation's private folder
  (``agy-version``), so neither later turns nor another harness process ask again.
- **Said as text of the turn**, ahead of agy's answer: a ``TextDelta`` of a step of its own
  (``NOTICE_TRAJECTORY``, not one of agy's), so every host that shows agy's text shows it, and
  a new step's text starts a new paragraph after it. It is never a failure: the turn goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Final

from omnigent_agy.agy.statedir import SessionStateDir, write_private_file
from omnigent_agy.config.agy_versions import Support, parse_version, support, untested_notice
from omnigent_agy.reading.events import TextDelta
from omnigent_agy.reading.steps import StepKey

__all__ = ["NOTICE_FILE", "NOTICE_TRAJECTORY", "VersionNotice"]

_logger = logging.getLogger(__name__)

#: The conversation's record of the agy version it checked.
NOTICE_FILE: Final = "agy-version"
#: The "trajectory" of the notice's text: the plugin's own, never an agy step.
NOTICE_TRAJECTORY: Final = "omnigent-agy-version-notice"

type ReadVersion = Callable[[], str | None]


class VersionNotice:
    """Reads agy's version once per conversation and says whether it is an untested one."""

    def __init__(self, state: SessionStateDir, read: ReadVersion | None) -> None:
        """``read``: ``agy --version``'s version line, or None when it printed none (no
        ``read``: nothing is checked, as for a test's fake agy)."""
        self._file = state.path / NOTICE_FILE
        self._read = read
        # Not tied to an event loop: a turn that failed before reading it leaves it to the next.
        self._reading: Future[str | None] | None = None

    def begin(self) -> None:
        """Read the version in a thread, unless this conversation has checked it already."""
        if self._read is None or self._reading is not None or self._file.exists():
            return
        reading: Future[str | None] = Future()
        read = self._read

        def run() -> None:
            try:
                reading.set_result(read())
            except Exception as exc:  # noqa: BLE001 - handed to the turn that reads it
                reading.set_exception(exc)

        threading.Thread(target=run, name="agy-version", daemon=True).start()
        self._reading = reading

    async def text(self, cascade_id: str) -> TextDelta | None:
        """The notice for an untested agy (after ``begin``), at most once per conversation."""
        reading, self._reading = self._reading, None
        if reading is None:
            return None
        try:
            shown = await asyncio.wrap_future(reading)
        except Exception as exc:  # noqa: BLE001 - a notice is never worth the turn
            _logger.info("could not read agy's version: %s", exc)
            return None
        try:
            write_private_file(self._file, json.dumps({"version": shown}), durable=False)
        except OSError as exc:  # said again at the next turn, then
            _logger.info("could not keep the agy version checked: %s", exc)
        version = parse_version(shown) if shown else None
        if shown is None or version is None or support(version) is not Support.UNTESTED:
            return None
        _logger.warning("agy %s is outside the versions omnigent-agy is tested with", shown)
        key = StepKey(cascade_id, NOTICE_TRAJECTORY, 0)
        return TextDelta(key, 0, untested_notice(shown))
