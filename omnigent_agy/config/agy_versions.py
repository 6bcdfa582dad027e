"""Which agys omnigent-agy supports: the one place that names the versions it is tested with.

- **Tested: agy 1.2.x to 1.5.x** (``TESTED``): the test suite runs agy-sim as 1.5.16 and as
  1.2.14, modelled on what users of those lines reported (docs/wire.md §9, §10).
- **Refused: older than 1.2.2** (``MIN_AGY_VERSION``): such an agy cannot be started with a
  CSRF token, so any local program could drive it (docs/wire.md §1); the pre-flight stops
  the turn with ``agy_too_old``.
- **Anything else is untested, not refused**: a newer agy (1.6 or 2.0) may well work. The
  doctor warns (``untested_warning``), and the first turn of a conversation says so once
  (``untested_notice``), both naming what to run: ``omnigent-agy probe`` checks that agy
  against every wire fact the plugin relies on.

Pure: the versions come from ``agy --version`` (``checks.read_agy_version``), which every
agy prints (docs/wire.md §1).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Final

from omnigent_agy.constants import MIN_AGY_VERSION

__all__ = [
    "TESTED",
    "TESTED_TEXT",
    "Support",
    "parse_version",
    "support",
    "untested_notice",
    "untested_warning",
]

type Version = tuple[int, int, int]

#: The (major, minor) lines the plugin is tested with, first and last (both included).
TESTED: Final = ((1, 2), (1, 5))
TESTED_TEXT: Final = f"{TESTED[0][0]}.{TESTED[0][1]}.x to {TESTED[1][0]}.{TESTED[1][1]}.x"

_VERSION = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?:\.(\d+))?")
_PROBE = "`omnigent-agy probe`"
_UPGRADE = "`pip install -U omnigent-agy`"


class Support(StrEnum):
    TESTED = "tested"
    TOO_OLD = "too old"
    UNTESTED = "untested"


def parse_version(text: str) -> Version | None:
    """``"1.2.5"``, ``"agy 1.2.7 (abc)"``, ``"1.2.5-sim"``, ``"v2.0"`` → a version tuple."""
    match = _VERSION.search(text)
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


def support(version: Version) -> Support:
    """What the plugin does with an agy of ``version``: run it, refuse it, or warn."""
    if version < MIN_AGY_VERSION:
        return Support.TOO_OLD
    first, last = TESTED
    return Support.TESTED if first <= version[:2] <= last else Support.UNTESTED


def untested_warning(shown: str) -> tuple[str, str]:
    """The doctor's line for an untested agy (``shown``: what ``agy --version`` printed):
    its summary and what to run."""
    summary = f"{shown}: omnigent-agy is tested with agy {TESTED_TEXT} only"
    remedy = (
        f"It may work. Run {_PROBE} to check this agy against what the plugin relies on, "
        f"and {_UPGRADE} for a release tested with it."
    )
    return summary, remedy


def untested_notice(shown: str) -> str:
    """What the first turn of a conversation says, once, on an untested agy."""
    return (
        f"(omnigent-agy: this agy is {shown}, and omnigent-agy is tested with agy "
        f"{TESTED_TEXT} only. It may work; if something looks wrong, run {_PROBE} to check "
        f"this agy against what the plugin relies on, and {_UPGRADE}.)"
    )
