"""The TUI's drawn screen: what the block shows now, and what the keys typed into it do.

`TuiScreen` holds the state agy's screen shows below the conversation (the streaming answer,
the composer or an open dialog, the footer) and turns keys into actions for the TUI (a
submitted line, a gate's answer, an interrupt). It follows the engine through hooks: the
TUI's cascade's WAITING step opens its dialog and its answer (by any route: a key, RPC, a
time-out) closes it; a running turn turns the footer to ``esc to cancel``. From agy 1.4 on
(docs/simulator.md, "The screen") each change of state is also reported with an OSC 7501 sequence.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agy_sim import screen as sc
from agy_sim.dialogs import Dialog, dialog_for, trust_dialog
from agy_sim.versions import STATUS_OSC, at_least

if TYPE_CHECKING:
    from agy_sim.engine import SimEngine

#: An action for the TUI: ("line", text) a submitted draft; ("answer", interaction) the wire
#: body a dialog chose; ("interrupt", None); ("trust", "1"|"2"|typed) the trust dialog's
#: answer; ("typed", text) a line typed into a gate's dialog; ("lost", None) an Enter before
#: ready.
Action = tuple[str, Any]
_LIVE_ROWS = 4


@dataclass(slots=True)
class ScreenHooks:
    """What the screen reads from the engine."""

    waiting: Callable[[], tuple[int, dict[str, Any]] | None] = lambda: None
    busy: Callable[[], bool] = lambda: False
    model: Callable[[], str] = lambda: ""
    osc: bool = False  # agy >= 1.4 reports its state with OSC 7501


class TuiScreen:
    """agy's screen on a terminal (drawn only when the output is one)."""

    def __init__(self, out: TextIO, hooks: ScreenHooks) -> None:
        self._out = out
        self.hooks = hooks
        self.drawn = _is_terminal(out)
        self.composer = sc.Composer()
        self.dialog: Dialog | None = None
        self.mounted = False  # the composer is shown (agy is ready)
        self._live = ""
        self._busy = False
        self._painter = sc.Painter()
        self._parser = sc.KeyParser()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._reported = ""
        self._settled: int | None = None  # the gate a key answered, until the engine has it

    # -- output -------------------------------------------------------------------------
    def write(self, text: str) -> None:
        """``text`` (whole lines) above the block, which is redrawn below it."""
        if not self.drawn:
            self._emit(text)
            return
        body = text.rstrip("\n").replace("\n", "\r\n")
        self._emit(self._painter.erase() + body + "\r\n" + self._block())

    def live(self, delta: str) -> None:
        """A streamed answer's new text: shown in the block until the answer is whole."""
        self._live += delta
        self.redraw()

    def end_live(self) -> None:
        self._live = ""

    def open_trust(self, workspace: str) -> None:
        self.dialog = trust_dialog(workspace)
        self.redraw()

    def close_trust(self) -> None:
        if self.dialog is not None and self.dialog.kind == "trust":
            self.dialog = None
        self.redraw()

    def sync(self) -> None:
        """Follow the engine: the TUI cascade's WAITING step and whether a turn runs."""
        self._busy = self.hooks.busy()
        if self.dialog is None or self.dialog.kind != "trust":
            waiting = self.hooks.waiting()
            if waiting is None or waiting[0] == self._settled:
                self.dialog = None
                self._settled = None if waiting is None else self._settled
            elif self.dialog is None or self.dialog.step_index != waiting[0]:
                self.dialog = dialog_for(waiting[1], waiting[0])
        self.redraw()

    def redraw(self) -> None:
        if self.drawn and self.mounted:
            self._emit(self._painter.erase() + self._block())
        self._report()

    def _block(self) -> str:
        if not self.mounted:
            return ""
        width = _width(self._out)
        lines: list[str] = []
        if self._live:
            lines += self._live.split("\n")[-_LIVE_ROWS:]
        if self._busy and self.dialog is None:
            lines += ["", sc.WORKING_LINE]
        model = sc.model_label(self.hooks.model())
        if self.dialog is not None:
            lines += self.dialog.lines(width)
            left = "" if self.dialog.kind == "trust" else sc.BUSY_FOOTER
        else:
            rule = sc.RULE * max(8, width - 1)
            lines += [rule, *self.composer.lines(), rule]
            left = sc.BUSY_FOOTER if self._busy else "" if self.composer.text else sc.IDLE_FOOTER
        lines.append(sc.footer(left, model, width - 1))
        return self._painter.draw(lines, width)

    def _report(self) -> None:
        """An OSC 7501 report when agy's state changed (agy >= 1.4)."""
        if not (self.hooks.osc and self.drawn and self.mounted):
            return
        if self.dialog is not None:
            kind = "question" if self.dialog.kind == "question" else "permission"
            report = sc.osc_status("blocked", kind=kind, message=_asks(self.dialog))
        else:
            report = sc.osc_status("working" if self._busy else "idle")
        if report != self._reported:
            self._reported = report
            self._emit(report)

    def close(self) -> None:
        if self.drawn and self.mounted:
            self._emit(self._painter.erase())

    def _emit(self, text: str) -> None:
        try:
            self._out.write(text)
            self._out.flush()
        except (OSError, ValueError):
            pass  # a closed terminal must not stop the language server

    # -- input --------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Action]:
        """Bytes typed at the terminal → the actions they make."""
        actions: list[Action] = []
        for key in self._parser.feed(self._decoder.decode(data)):
            actions += self.key(key)
        self.redraw()
        return actions

    @property
    def escape_pending(self) -> bool:
        return self._parser.waiting_escape()

    def flush_escape(self) -> list[Action]:
        """The Escape key, once no sequence followed a lone ESC."""
        actions = [a for key in self._parser.flush() for a in self.key(key)]
        self.redraw()
        return actions

    def key(self, key: sc.Key) -> list[Action]:
        if not self.mounted:
            return [("lost", None)] if key == sc.ENTER else []  # typed too early: lost
        if self.dialog is not None:
            return self._dialog_key(self.dialog, key)
        if isinstance(key, sc.Paste):
            self.composer.paste(key.text)
        elif key == sc.ENTER:
            text = self.composer.take()
            return [("line", text)] if text.strip() else []
        elif key in (sc.ESCAPE, sc.INTERRUPT):
            if self._busy:
                return [("interrupt", None)]
            self.composer.take()
        elif len(key) == 1:
            self.composer.insert(key)
        else:
            self.composer.key(key)
        return []

    def _dialog_key(self, dialog: Dialog, key: sc.Key) -> list[Action]:
        outcome = dialog.key(key)
        if outcome is None:
            return []
        kind, value = outcome
        if dialog.kind == "trust":
            answer = ("1" if value else "2") if kind == "trust" else str(value)
            return [("trust", answer)]
        if kind != "typed":
            # Settled: the keys after this one are the composer's (a digit answers alone).
            self._settled, self.dialog = dialog.step_index, None
        return [(kind, value)]


def screen_hooks(engine: SimEngine, *, osc: bool) -> ScreenHooks:
    """What agy's drawn screen follows: the TUI cascade's WAITING step, its turn, its model."""

    def waiting() -> tuple[int, dict[str, Any]] | None:
        cascade = engine.cascades[engine.tui_cascade_id]
        indices = cascade.waiting_indices()
        return (indices[-1], cascade.steps[indices[-1]]) if indices else None

    return ScreenHooks(
        waiting=waiting,
        busy=lambda: engine.cascades[engine.tui_cascade_id].running,
        model=lambda: engine.tui_model.display_name,
        osc=osc,
    )


def reports_status(version: str) -> bool:
    """Whether an agy of ``version`` reports its state with OSC 7501 (``versions.STATUS_OSC``)."""
    return at_least(version, STATUS_OSC)


def _asks(dialog: Dialog) -> str:
    """The line a blocked report carries: what agy asks."""
    text = " ".join(line.strip() for line in dialog.header if line.strip())
    return text[:200]


def _is_terminal(out: TextIO) -> bool:
    try:
        return os.isatty(out.fileno())
    except (OSError, ValueError, AttributeError):
        return False


def _width(out: TextIO) -> int:
    try:
        return max(20, os.get_terminal_size(out.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return 80
