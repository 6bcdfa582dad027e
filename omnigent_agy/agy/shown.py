"""Text from a repository as a person can read it faithfully: nothing hidden, nothing obeyed.

A card or a command's output that names what a repository would run must show each character
of it, and must not let that text act on the page or the terminal: a newline starting a fake
line, a right-to-left mark turning ``hs.lruc`` around, a control character moving the cursor.
:func:`visible` keeps every printable character as it is and writes the others as Python
writes them in a string (``\\n``, ``\\x1b``, ``\\u202e``), a backslash as ``\\\\``, so the
text shown reads back to exactly the text found (:func:`unvisible`). :func:`quoted` sets it
off in double quotes, with a quote inside shown as ``\\"``: where the quoted text ends is never
the repository's choice.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["quoted", "unvisible", "visible"]

# Control, format (the bidirectional marks, zero-width joiners), unassigned, private-use and
# surrogate (undecodable bytes) characters, and line or paragraph separators.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})
_NAMED: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPE: Final = re.compile(r"\\(\\|n|r|t|\"|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")
_UNNAMED: Final = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t", '"': '"'}


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    category = unicodedata.category(char)
    if category not in _HIDDEN_CATEGORIES and (category != "Zs" or char == " "):
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every character a person could not see (or that would act) escaped."""
    return "".join(_escaped(char) for char in text)


def quoted(text: str) -> str:
    """``text`` in double quotes, escaped (`visible`), a quote inside shown as ``\\"``."""
    return '"' + visible(text).replace('"', '\\"') + '"'


def unvisible(shown: str) -> str:
    """The text `visible` (or `quoted`'s inside) was made from."""

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        return _UNNAMED[body] if body in _UNNAMED else chr(int(body[1:], 16))

    return _ESCAPE.sub(one, shown)
