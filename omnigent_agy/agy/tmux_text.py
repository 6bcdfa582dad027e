"""What outside text becomes on its way to tmux: data, never a command, a format or a key.

tmux reads its arguments in three ways that text a person or a repository wrote must not reach:
as commands (an argument ending in ``;`` ends the command, and what follows is the next one), as
formats (``#(command)`` runs a command, ``#{…}`` and ``#S`` expand) where it expands them — a
start directory, ``display-message`` —, and as targets (``-t name`` matches a prefix or an
fnmatch pattern). And what is typed into a pane is read as keys: a Ctrl-C byte interrupts, a
newline submits. Each function here makes one of these data again; `terminal` applies them.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["exact_target", "format_literal", "tmux_argument", "typeable"]

_HASHES: Final = re.compile(r"(#+)(\[?)")


def format_literal(text: str) -> str:
    """``text`` as tmux reads it back from a format: every ``#`` doubled (``##`` is one
    ``#``), so nothing in it is a format or a command (``#(…)``, ``#{…}``, ``#S``) — but for
    a run of ``#`` before ``[``, which tmux copies as it is (a style, drawn later if ever)."""
    return _HASHES.sub(lambda m: m[0] if m[2] else m[1] * 2, text)


def tmux_argument(text: str) -> str:
    """``text`` as one argument of a tmux command: tmux takes an argument ending in ``;``
    for the end of a command (what follows would be another command) and drops that ``;``,
    unless it is written ``\\;`` — only the last two characters count."""
    return text[:-1] + "\\;" if text.endswith(";") else text


def exact_target(session: str) -> str:
    """A ``-t`` naming ``session`` exactly: without the ``=`` tmux takes a name for a prefix
    or an fnmatch pattern, and a missing session would match another."""
    return f"={session}"


def typeable(text: str) -> str:
    """`text` with every control character (category Cc: C0 such as Ctrl-C, CR and LF, DEL,
    and C1; ESC starts every terminal escape sequence) replaced by a space.

    ``send-keys -l`` types characters literally, but the pane's terminal still reads them as
    keys: a Ctrl-C byte interrupts the program and a newline submits what came before it.
    """
    return "".join(" " if unicodedata.category(char) == "Cc" else char for char in text)
