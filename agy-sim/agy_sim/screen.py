"""agy's screen as agy-sim draws it on a terminal: keys in, the bottom block out.

What is drawn follows recorded screens of agy 1.2.1 (docs/simulator.md, "The screen"): the
conversation scrolls above a block made of the live part of the turn (the answer while it
streams, a ``⣟  Working...`` line), the composer between two full-width ``─`` rules with its
``>`` prompt, and the footer: ``? for shortcuts`` when the composer is empty and agy idle,
nothing while a draft is typed, ``esc to cancel`` while a turn runs or a dialog is open, the
model on the right. A dialog (permission, question, trust) takes the composer's place.

The block is redrawn in place (the cursor goes back to its first row and the rest of the
screen is erased), so the conversation above it stays in the terminal's scroll-back as agy's
inline render does. agy 1.4+ also reports its state with OSC 7501 (a third-party report):
``osc_status`` builds those reports.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Final

RULE: Final = "─"
PROMPT: Final = ">"
IDLE_FOOTER: Final = "? for shortcuts"
BUSY_FOOTER: Final = "esc to cancel"
WORKING_LINE: Final = "⣟  Working..."
#: agy folds a paste of this many line breaks or more into one placeholder row (measured on
#: agy 1.1.8 by omnigent's built-in harness: about 13 line breaks, whatever the length).
PASTE_FOLD_LINES: Final = 13
#: The app name agy-sim puts in its OSC 7501 reports (**guess**: no recording shows agy's).
OSC_APP: Final = "antigravity"

# Keys the parser produces besides printable text (one str each).
ENTER: Final = "enter"
ESCAPE: Final = "escape"
BACKSPACE: Final = "backspace"
UP: Final = "up"
DOWN: Final = "down"
LEFT: Final = "left"
RIGHT: Final = "right"
HOME: Final = "home"  # C-a
END: Final = "end"  # C-e
KILL_END: Final = "kill-end"  # C-k
KILL_START: Final = "kill-start"  # C-u
INTERRUPT: Final = "interrupt"  # C-c
TAB: Final = "tab"

_CONTROL: Final = {
    "\r": ENTER,
    "\n": ENTER,
    "\x7f": BACKSPACE,
    "\x08": BACKSPACE,
    "\x01": HOME,
    "\x05": END,
    "\x0b": KILL_END,
    "\x15": KILL_START,
    "\x03": INTERRUPT,
    "\t": TAB,
}
_CSI: Final = {"A": UP, "B": DOWN, "C": RIGHT, "D": LEFT, "H": HOME, "F": END}
_PASTE_START: Final = "\x1b[200~"
_PASTE_END: Final = "\x1b[201~"


@dataclass(frozen=True, slots=True)
class Paste:
    """A bracketed paste: its text, line breaks as ``\\n``."""

    text: str


Key = str | Paste


@dataclass(slots=True)
class KeyParser:
    """Terminal input bytes → keys; a bracketed paste arrives whole, split where it may."""

    _pending: str = ""
    _paste: list[str] | None = None

    def feed(self, data: str) -> list[Key]:
        keys: list[Key] = []
        text = self._pending + data
        self._pending = ""
        i = 0
        while i < len(text):
            if self._paste is not None:
                end = text.find(_PASTE_END, i)
                if end < 0:
                    tail = _partial_suffix(text[i:], _PASTE_END)
                    self._paste.append(text[i : len(text) - len(tail)])
                    self._pending = tail
                    return keys
                self._paste.append(text[i:end])
                body = "".join(self._paste).replace("\r\n", "\n").replace("\r", "\n")
                keys.append(Paste(body))
                self._paste = None
                i = end + len(_PASTE_END)
                continue
            char = text[i]
            if char == "\x1b":
                rest = text[i:]
                if rest.startswith(_PASTE_START):
                    self._paste = []
                    i += len(_PASTE_START)
                    continue
                match = re.match(r"\x1b\[([0-9;]*)([A-Za-z~])", rest)
                if match:
                    keys.append(_CSI.get(match.group(2), ""))
                    i += match.end()
                    continue
                if re.fullmatch(r"\x1b(\[[0-9;]*)?", rest):
                    # The rest of a sequence may still be coming; a lone ESC that stays
                    # alone is the Escape key (`flush`, after a short wait, as terminals do).
                    self._pending = rest
                    return [k for k in keys if k]
                keys.append(ESCAPE)
                i += 1
                continue
            keys.append(_CONTROL.get(char, char if char.isprintable() else ""))
            i += 1
        return [k for k in keys if k]

    def waiting_escape(self) -> bool:
        return self._pending == "\x1b"

    def flush(self) -> list[Key]:
        """A lone ESC left pending: the Escape key."""
        if self._pending == "\x1b":
            self._pending = ""
            return [ESCAPE]
        return []


def _partial_suffix(text: str, marker: str) -> str:
    """The longest end of ``text`` that starts ``marker`` (a sequence split across reads)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return text[-size:]
    return ""


@dataclass(slots=True)
class Composer:
    """The draft being typed: text with a cursor; folded pastes keep their text aside."""

    text: str = ""
    cursor: int = 0
    pastes: dict[str, str] = field(default_factory=dict)

    def insert(self, text: str) -> None:
        self.text = self.text[: self.cursor] + text + self.text[self.cursor :]
        self.cursor += len(text)

    def paste(self, text: str) -> None:
        breaks = text.count("\n")
        if breaks >= PASTE_FOLD_LINES:
            label = f"[Pasted text #{len(self.pastes) + 1} +{breaks} lines]"
            self.pastes[label] = text
            self.insert(label)
        else:
            self.insert(text)

    def key(self, key: str) -> None:
        """An editing key (C-a, C-k, arrows, backspace…)."""
        start = self.text.rfind("\n", 0, self.cursor) + 1
        end = self.text.find("\n", self.cursor)
        end = len(self.text) if end < 0 else end
        if key == HOME:
            self.cursor = start
        elif key == END:
            self.cursor = end
        elif key == KILL_END:
            self.text = self.text[: self.cursor] + self.text[end:]
        elif key == KILL_START:
            self.text = self.text[:start] + self.text[self.cursor :]
            self.cursor = start
        elif key == BACKSPACE and self.cursor > 0:
            self.text = self.text[: self.cursor - 1] + self.text[self.cursor :]
            self.cursor -= 1
        elif key == LEFT:
            self.cursor = max(0, self.cursor - 1)
        elif key == RIGHT:
            self.cursor = min(len(self.text), self.cursor + 1)

    def take(self) -> str:
        """The draft as submitted (folded pastes put back), leaving the composer empty."""
        text = self.text
        for label, pasted in self.pastes.items():
            text = text.replace(label, pasted)
        self.text, self.cursor, self.pastes = "", 0, {}
        return text

    def lines(self) -> list[str]:
        rows = self.text.split("\n")
        return [f"{PROMPT} {rows[0]}".rstrip(), *(f"  {row}".rstrip() for row in rows[1:])]


def footer(left: str, right: str, width: int) -> str:
    """The status bar: the state on the left, the model on the right."""
    gap = max(2, width - len(left) - len(right))
    return f"{left}{' ' * gap}{right}"


def fit(line: str, width: int) -> str:
    """``line`` cut to the terminal's width (the block's rows must not wrap)."""
    return line if len(line) <= width else line[: max(1, width - 1)] + "…"


def osc_status(state: str, *, kind: str = "", message: str = "") -> str:
    """An OSC 7501 report (the Program Status Protocol): ``state`` is idle, working or
    blocked (with ``kind`` permission or question); ``message`` travels base64-encoded."""
    pairs = [f"state={state}"]
    if kind:
        pairs.append(f"kind={kind}")
    pairs.append(f"app={OSC_APP}")
    if message:
        # The protocol caps a message at 2048 bytes of UTF-8; a character cut keeps it valid.
        # A folder name's bytes that are no UTF-8 (surrogate escapes here) go as they are, as
        # agy (Go, whose strings are bytes) sends them.
        raw = message[:500].encode("utf-8", "surrogateescape")
        encoded = base64.b64encode(raw).decode("ascii")
        pairs.append(f"msg={encoded}")
    return f"\x1b]7501;{':'.join(pairs)}\x1b\\"


@dataclass(slots=True)
class Painter:
    """Redraws the block at the bottom in place; text written above it scrolls away."""

    rows: int = 0  # rows the block occupies now (the cursor sits at the end of its last)

    def erase(self) -> str:
        """Back to the block's first row, everything below erased."""
        if not self.rows:
            return ""
        up = f"\x1b[{self.rows - 1}A" if self.rows > 1 else ""
        self.rows = 0
        return f"\r{up}\x1b[J"

    def draw(self, lines: list[str], width: int) -> str:
        rows = [fit(line, width) for line in lines]
        self.rows = len(rows)
        return "\r\n".join(rows)


def model_label(display_name: str) -> str:
    """agy's footer spelling of a model: "Gemini 3 Pro (High)" → "Gemini 3 Pro · high"."""
    match = re.fullmatch(r"(.*?)\s*\((\w+)\)", display_name)
    return f"{match.group(1)} · {match.group(2).lower()}" if match else display_name
