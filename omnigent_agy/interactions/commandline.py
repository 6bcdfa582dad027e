"""A shell command line in its simple commands, as the permission rules see it.

agy asks to run a whole command line (``git add . && git commit -m x``); an allow rule must
hold for every simple command in it, and a deny rule for any one denies the line. A part that
runs a substitution or writes into a file is *opaque*: no allow rule lets it through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CommandPart", "split_command"]


@dataclass(frozen=True, slots=True)
class CommandPart:
    """One simple command of a command line; ``opaque`` parts are never auto-allowed.

    A part is opaque when it runs a command substitution (``$(…)``, backticks, ``<(…)``)
    or redirects output into a file: an allow rule for ``echo:*`` must not allow
    ``echo x > ~/.bashrc``.
    """

    text: str
    opaque: bool = False


_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")
_SAFE_REDIRECT = re.compile(r"^\d*>>?(&\d+|\s*/dev/null)")


def split_command(line: str) -> tuple[CommandPart, ...]:
    """Split a shell command line at ``&&``, ``||``, ``;``, ``|``, ``&`` and newlines.

    Quotes are respected; the text inside substitutions is returned as parts of its own
    so that deny rules see it too.
    """
    parts: list[CommandPart] = []
    inner: list[str] = []
    current: list[str] = []
    opaque = False
    quote: str | None = None
    i = 0
    while i < len(line):
        char = line[i]
        if quote is not None:
            current.append(char)
            if char == quote:
                quote = None
            elif char == "\\" and quote == '"' and i + 1 < len(line):
                current.append(line[i + 1])
                i += 1
            i += 1
            continue
        if char in "'\"":
            quote = char
        elif char == "\\" and i + 1 < len(line):
            current.append(line[i : i + 2])
            i += 2
            continue
        elif line.startswith(("$(", "<(", ">("), i) or char == "`":
            end = _substitution_end(line, i)
            inner.append(line[i + (1 if char == "`" else 2) : end])
            current.append(line[i : end + 1])
            opaque = True
            i = end + 1
            continue
        elif char == ">" and not _SAFE_REDIRECT.match(_redirect_start(line, i)):
            opaque = True
        sep = next((s for s in _SEPARATORS if line.startswith(s, i)), None)
        if sep is not None and not (sep == "&" and _is_fd_dup(line, i)):
            _flush(parts, current, opaque)
            current, opaque = [], False
            i += len(sep)
            continue
        current.append(char)
        i += 1
    _flush(parts, current, opaque)
    for text in inner:
        parts.extend(split_command(text))
    return tuple(parts)


def _flush(parts: list[CommandPart], current: list[str], opaque: bool) -> None:
    text = " ".join("".join(current).split())
    if text:
        parts.append(CommandPart(text, opaque))


def _substitution_end(line: str, start: int) -> int:
    """Index of the character closing the substitution that starts at ``start``."""
    if line[start] == "`":
        end = line.find("`", start + 1)
        return end if end != -1 else len(line) - 1
    depth = 0
    for index in range(start + 1, len(line)):
        if line[index] == "(":
            depth += 1
        elif line[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return len(line) - 1


def _redirect_start(line: str, index: int) -> str:
    """The redirection at ``index`` including a leading fd digit (``2>``)."""
    start = index - 1 if index > 0 and line[index - 1].isdigit() else index
    return line[start:]


def _is_fd_dup(line: str, index: int) -> bool:
    """``&`` that belongs to a redirection (``2>&1``, ``&>``) rather than backgrounding."""
    return (index > 0 and line[index - 1] in "<>") or line.startswith("&>", index)
