"""Which agy agy-sim is: one version, and the first version of each thing that differs.

agy-sim is agy **1.5.16** unless told otherwise (``--sim-version`` / ``AGY_SIM_VERSION``): the
newest version users reported at the end of November 2026 (docs/wire.md §10). ``1.2.14``
(``OLDER``) is the newest of the 1.2 line, the one agy-sim modelled before; the test suite runs
its gate, sub-agent and resume cases as both. Everything that behaves differently by version
asks one question, ``at_least(version, FEATURE)`` (``SimOptions.at_least`` and
``EngineSettings.at_least`` ask it of the version they run as), with a feature's first version
from the table below, so the differences between versions sit here and nowhere else.

Each first version is what docs/wire.md reports, or a **guess** where it says so.
"""

from __future__ import annotations

import re
import sys
from typing import Final

__all__ = [
    "ACP",
    "CHANGELOG",
    "CSRF",
    "DEFAULT",
    "DEFAULT_VERSION",
    "HOOKS",
    "OLDER",
    "STATUS_OSC",
    "SUBAGENT_GATES",
    "Version",
    "at_least",
    "version_tuple",
]

type Version = tuple[int, ...]

#: What ``--version`` prints and the log's version line says when nothing else is asked for.
DEFAULT_VERSION: Final = "1.5.16"
#: The other version the test suite runs agy-sim as (``--sim-version 1.2.14``).
OLDER: Final = "1.2.14"

#: The CSRF header is required (docs/wire.md §1); older agys check no token.
CSRF: Final[Version] = (1, 2, 2)
#: ``agy changelog`` prints the release notes offline (§10 reports it from the 1.3 to 1.5 line;
#: that no 1.2.x has it is a **guess**: no 1.2 report mentions it).
CHANGELOG: Final[Version] = (1, 3, 0)
#: Hooks from ``hooks.json`` in the customization roots (§10: reported with 1.4).
HOOKS: Final[Version] = (1, 4, 0)
#: OSC 7501 status sequences on agy's screen (§10: 1.4.0).
STATUS_OSC: Final[Version] = (1, 4, 0)
#: ``agy acp``, the Agent Client Protocol on stdio (§10: 1.4.12).
ACP: Final[Version] = (1, 4, 12)
#: A sub-agent's own tool calls wait on gates on the sub-agent's cascade (§10: 1.5.15).
SUBAGENT_GATES: Final[Version] = (1, 5, 15)


def version_tuple(version: str) -> Version:
    """``"1.5.16"`` → ``(1, 5, 16)``, ``"1.2.1-sim"`` → ``(1, 2, 1)``; no leading number
    counts as the newest (a development build has everything)."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    if match is None:
        return (sys.maxsize,)
    return tuple(int(part) for part in match.group(0).split("."))


#: ``DEFAULT_VERSION`` as numbers.
DEFAULT: Final[Version] = version_tuple(DEFAULT_VERSION)


def at_least(version: str | Version, feature: Version) -> bool:
    """Whether agy ``version`` has ``feature`` (one of the first versions above)."""
    parsed = version_tuple(version) if isinstance(version, str) else version
    return parsed >= feature
