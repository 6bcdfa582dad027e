"""``agy changelog``: the release notes, printed offline (docs/wire.md §10).

agy 1.3 and later print their release notes with ``agy changelog``, without asking Google for
anything (§10; the first version that has the command is a guess, ``versions.CHANGELOG``).
What real agy prints is not recorded, so these notes are **the simulator's own**, not Google's
text: one entry per version agy-sim can run as, newest first, each naming what that version
changed as users reported it and agy-sim models it. An agy-sim run as an older version prints
only the entries up to its own, as that agy would not know of later ones.
"""

from __future__ import annotations

import textwrap
from typing import Final

from agy_sim.versions import Version, version_tuple

__all__ = ["NOTES", "changelog_output"]

_HEADER: Final = (
    "Antigravity CLI release notes (agy-sim: the simulator's own notes, not Google's)\n"
)

_WRAP: Final = textwrap.TextWrapper(
    width=88, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False
)

#: (version, its notes), newest first.
NOTES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (
        "1.5.16",
        (
            "Sub-agents: an approval or a question a sub-agent waits on is answered on the "
            "sub-agent's own conversation, and the parent's turn goes on after it.",
            "The version agy-sim runs as unless --sim-version names another.",
        ),
    ),
    (
        "1.5.15",
        (
            "Sub-agents ask: a sub-agent's own tool call can wait on an approval or a "
            "question, on the sub-agent's conversation (its cascade), not on the parent's.",
        ),
    ),
    (
        "1.5.0",
        ("agy acp: a message sent while a turn runs steers it.",),
    ),
    (
        "1.4.12",
        (
            'agy acp: the Agent Client Protocol on stdio (agentInfo "Antigravity ACP '
            'Server"), beside the terminal interface.',
        ),
    ),
    (
        "1.4.0",
        (
            "Hooks: commands from hooks.json in a trusted workspace's .agents folder and in "
            "the gemini dir's config folder run at SessionStart, PreInvocation, PreToolUse, "
            "PostToolUse, PostInvocation and Stop.",
            "The terminal is told whether agy is busy, idle or waiting (OSC 7501).",
        ),
    ),
    (
        "1.3.0",
        ("agy changelog prints these notes, offline.",),
    ),
    (
        "1.2.14",
        (
            "A trusted workspace's .agents/mcp_config.json starts its MCP servers beside the "
            "person's.",
            "A workspace whose path has a hidden folder in it is ignored ('is hidden: ignore "
            "uri' in the log) and agy works in its scratch folder.",
            "The version agy-sim runs as with --sim-version 1.2.14.",
        ),
    ),
)


def changelog_output(version: Version | str) -> str:
    """What ``agy changelog`` prints for an agy of ``version``: the entries up to it."""
    own = version_tuple(version) if isinstance(version, str) else version
    lines = [_HEADER]
    for number, notes in NOTES:
        if version_tuple(number) > own:
            continue
        lines.append(f"\n{number}\n")
        lines += [f"{_WRAP.fill(note)}\n" for note in notes]
    return "".join(lines)
