"""Earlier messages a client carried inside a message, read as a model would read them.

A conversation that began elsewhere (an omnigent fork or import) reaches agy with its earlier
messages in one block ahead of the newest message (docs/in-omnigent.md, "Forks and imports"):
``<earlier-conversation>`` … ``</earlier-conversation>``, one ``### User`` or ``### Assistant``
section per message. A real model reads that as context and answers what follows the block;
the simulator's scripted "model" does the same: its scenario is chosen by the text after the
block, and the block's ``### User`` sections count among the person's earlier messages (the
``recall`` scenario lists them). Text without a block is all "after".
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["split_carried"]

_BLOCK: Final = re.compile(r"<earlier-conversation>\n(.*?)\n</earlier-conversation>\n*", re.DOTALL)
_SECTION: Final = re.compile(r"^### (User|Assistant)\n", re.MULTILINE)


def split_carried(text: str) -> tuple[list[str], str]:
    """The person's messages carried in `text`'s block, and the text after the block."""
    match = _BLOCK.search(text)
    if match is None:
        return [], text
    parts = _SECTION.split(match.group(1))
    # re.split with one group: [before, role, body, role, body, …]
    users = [
        body.strip()
        for role, body in zip(parts[1::2], parts[2::2], strict=False)
        if role == "User" and body.strip()
    ]
    return users, text[match.end() :]
