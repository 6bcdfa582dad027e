"""``agy changelog``: agy's release notes, printed offline (docs/wire.md §10), recorded.

The plugin relies on nothing in them, so the finding is INFO whatever happens; the probe keeps
their first lines with agy's version (``probe.json``), so a report says which agy it came from
and what its makers changed in it. An agy without the command (§10 reports it from the 1.3 to
1.5 line; agy-sim's 1.2.14 has none) is said as such, never a failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from omnigent_agy.errors import scrub
from omnigent_agy.probe.facts import FactVerdict, Finding

__all__ = ["KEPT_LINES", "Changelog", "read_changelog"]

#: How many of its first lines the recording keeps.
KEPT_LINES: Final = 40
_TIMEOUT: Final = 15.0
_FACT: Final = "agy changelog"
_EXPECTED: Final = "the release notes, printed offline (agy 1.3 and later)"
_SECTION: Final = "§10"
_ESCAPES: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


@dataclass(frozen=True, slots=True)
class Changelog:
    """What ``agy changelog`` showed: the finding and its first lines (none without it)."""

    finding: Finding
    lines: tuple[str, ...] = ()


def read_changelog(executable: Path, env: Mapping[str, str]) -> Changelog:
    """Run ``agy changelog`` without a terminal, as the doctor runs ``agy --version``."""
    try:
        process = subprocess.Popen(  # noqa: S603 - the configured agy, no shell
            [str(executable), "changelog"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(env),
            start_new_session=True,  # its own group, killed whole if it hangs
        )
    except OSError as exc:
        return _info(f"could not run it: {exc}")
    try:
        stdout, stderr = process.communicate(timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return _info(f"did not finish within {_TIMEOUT:g} s")
    if process.returncode != 0:
        said = _first_lines(stderr or stdout, KEPT_LINES)  # its last words say why
        detail = f": {said[-1]}" if said else ""
        return _info(f"not available here (exit status {process.returncode}{detail})")
    lines = _lines(stdout)[:KEPT_LINES]
    if not any(lines):
        return _info("printed nothing")
    first = " / ".join(_first_lines(stdout, 3))
    return Changelog(_info(f"{len(_lines(stdout))} lines; first: {first}").finding, lines)


def _info(seen: str) -> Changelog:
    return Changelog(Finding(_FACT, FactVerdict.INFO, _EXPECTED, seen, _SECTION))


def _lines(text: str) -> tuple[str, ...]:
    """The output's lines, without colours, scrubbed of anything secret-looking."""
    cleaned = [scrub(_ESCAPES.sub("", line)).rstrip() for line in text.splitlines()]
    while cleaned and not cleaned[0]:
        cleaned.pop(0)
    return tuple(cleaned)


def _first_lines(text: str, count: int) -> list[str]:
    shown = [line.strip() for line in _lines(text) if line.strip()][:count]
    return [line if len(line) <= 100 else line[:99] + "…" for line in shown]
