"""agy-sim's text UI: the conversation, agy's screen below it, and what is typed there.

The conversation is plain lines (no curses), so it reads the same in a tmux pane, in
``capture-pane`` and in a log. On a terminal, agy's screen is drawn below it (`tui_screen`:
the composer between its rules, the footer, the dialogs) and keys are read one by one, as
agy's TUI reads them; without a terminal only the lines are written. What it models from the
real TUI (docs/wire.md §1):

- input typed before the process is ready is **lost** (read and dropped, and the
  terminal's pending line discarded at the moment it becomes ready);
- while ``showFeedbackSurvey`` is not false in ``<gemini_dir>/antigravity-cli/settings.json``
  a feedback survey is open when the process becomes ready and **swallows the first line**
  typed after that;
- signed out, typed turns are refused with the sign-in hint;
- without the workspace in ``trustedWorkspaces`` agy's trust dialog ("Accessing workspace:
  …", "Do you trust the contents of this project?", docs/wire.md §9) is open at ready and
  takes every line until it is answered ``1``/``yes`` (trust) or ``2``/``no`` (agy exits).

Without a terminal on stdin it only writes; a closed or broken stdout never stops the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import termios
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from agy_sim.cascade import TranscriptEvent
from agy_sim.tui_screen import Action, ScreenHooks, TuiScreen

_log = logging.getLogger(__name__)

SIGN_IN_HINT: Final = "You are not signed in. Run `agy` and sign in with your Google account."
SETTINGS_RELATIVE: Final = Path("antigravity-cli") / "settings.json"
SURVEY_PROMPT: Final = "How would you rate agy so far? (1-5, feedback survey) "
# agy's own dialog, line by line (one public report, docs/wire.md §9); the numbers are
# agy-sim's way to answer it from a plain terminal.
TRUST_QUESTION: Final = "Do you trust the contents of this project?"
TRUST_PROMPT: Final = (
    "Accessing workspace: {workspace}\n"
    f"{TRUST_QUESTION}\n"
    "Antigravity CLI requires permission to read, edit, and execute files here.\n"
    "  1. Yes, I trust this folder\n"
    "  2. No, exit"
)
HELP: Final = (
    "type a message + Enter to send a turn; /clear starts a new conversation; "
    "/model [id] shows or switches the model; "
    "/allow, /allow-conversation or /deny answers a permission; "
    "/answer 1[,2] or /answer <text> answers a question; /quit exits"
)
TURN_RULE: Final = "─" * 60
ESCAPE_WAIT: Final = 0.05  # a lone ESC is the Escape key unless a sequence follows this soon
_GATE_COMMANDS: Final = ("/allow", "/allow-conversation", "/deny", "/answer")


def survey_enabled(gemini_dir: Path) -> bool:
    """Whether agy would show its feedback survey: unless the setting is literally false."""
    try:
        settings = json.loads((gemini_dir / SETTINGS_RELATIVE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    return not (isinstance(settings, dict) and settings.get("showFeedbackSurvey") is False)


_FORMATS: Final = {
    "user": "\n> {text}",
    "thinking": "  (thinking) {text}",
    "answer": "{text}",
    "tool": "  [tool] {text}",
    "waiting": "  [waiting #{index}] {text}\n    {how}",
    "answered": "  [answered] {text}",
    "error": "  [error] {text}",
    "cleared": "[cleared] new conversation {cascade}",
    "status": "[{text}]",
}


def render(event: TranscriptEvent) -> tuple[str, bool]:
    """The text for one transcript event, and whether it ends its line."""
    if event.kind == "answer_delta":
        return event.text, False  # streamed: the answer grows on one line
    template = _FORMATS.get(event.kind, "  [{kind}] {text}")
    how = _how_to_answer(event) if event.kind == "waiting" else ""
    text = template.format(
        text=event.text,
        kind=event.kind,
        index=event.step_index,
        cascade=event.cascade_id,
        how=how,
    )
    return text, True


def _how_to_answer(event: TranscriptEvent) -> str:
    if "question" in event.text.casefold():
        return "answer: /answer 1[,2] or /answer <text> (or HandleCascadeUserInteraction)"
    return "answer: /allow, /allow-conversation or /deny (or HandleCascadeUserInteraction)"


@dataclass(slots=True)
class TuiActions:
    """What typed lines can do; the process wires these to its engine."""

    submit: Callable[[str], Awaitable[object]]  # a turn, or "/clear"
    answer: Callable[[str], Awaitable[str]] | None = None  # /allow … /answer → a status line
    quit: Callable[[], None] = lambda: None
    trust: Callable[[], None] | None = None  # set: the trust dialog is open at ready
    model: Callable[[str], str] | None = None  # /model [name] → a status line (model_switch)
    # The drawn screen's: a dialog's answer (the wire's interaction body) → a status line,
    # an interrupt (Esc while a turn runs), and what the screen follows of the engine.
    interaction: Callable[[dict[str, Any]], Awaitable[str]] | None = None
    interrupt: Callable[[], Awaitable[object]] | None = None
    hooks: ScreenHooks = field(default_factory=ScreenHooks)


class Tui:
    """Writes the transcript to ``out``; reads typed lines from ``stdin`` when it is a tty."""

    def __init__(
        self, out: TextIO, actions: TuiActions, *, signed_out: bool = False, survey: bool = False
    ) -> None:
        self._out = out
        self._actions = actions
        self._signed_out = signed_out
        self._survey_pending = survey
        self._trust_pending = actions.trust is not None
        self._workspace = ""
        self._ready = False
        self._line_open = False
        self._cascade_id = ""
        self._input_fd: int | None = None
        self._buffer = b""
        self._saved_mode: list[Any] | None = None
        self._lines: asyncio.Queue[Action] | None = None
        self._consumer: asyncio.Task[None] | None = None
        self.lost_lines = 0  # typed before ready, dropped as agy drops them
        self.screen = TuiScreen(out, actions.hooks)  # agy's drawn screen, on a terminal

    # -- output -------------------------------------------------------------------------
    def write(self, text: str, *, end_line: bool = True) -> None:
        """Show ``text``; a whole line ends a line left open by streamed deltas first."""
        if self.screen.drawn:
            self.screen.write(text)
            return
        if self._line_open and end_line:
            text = "\n" + text
        self._line_open = not end_line
        self._emit(text + ("\n" if end_line else ""))

    def _emit(self, text: str) -> None:
        try:
            self._out.write(text)
            self._out.flush()
        except (OSError, ValueError):
            pass  # a closed terminal must not stop the language server

    def on_transcript(self, event: TranscriptEvent) -> None:
        """The engine's listener: one transcript event."""
        if not self.screen.drawn:
            self._show(event)
            return
        if event.kind == "answer_delta":
            if event.cascade_id == self._cascade_id:
                self.screen.live(event.text)  # the block shows it until the answer is whole
        else:
            if event.kind == "answer" and event.cascade_id == self._cascade_id:
                self.screen.end_live()
            self._show(event)
        self.screen.sync()

    def _show(self, event: TranscriptEvent) -> None:
        if event.kind == "cleared" or not self._cascade_id:
            self._cascade_id = event.cascade_id
        elif event.cascade_id != self._cascade_id and event.kind != "answer_delta":
            # Another conversation (a sub-agent, or one started over RPC): say whose it is.
            text, ends = render(event)
            self.write(f"  {{{event.cascade_id[:8]}}} {text.strip()}", end_line=ends)
            return
        if event.kind == "answer" and self._line_open:
            self._line_open = False  # the deltas already showed it: just end the line
            self._emit("\n")
            return
        text, ends = render(event)
        if event.kind == "user" and self.screen.drawn:
            text = f"{TURN_RULE}\n> {event.text}"  # agy rules off each turn of the person's
        self.write(text, end_line=ends)

    def starting(self, version: str, workspace: Path) -> None:
        self._workspace = str(workspace)
        self.write(f"agy-sim {version} (simulated Antigravity CLI) in {workspace}")
        self.write("checking account eligibility ... (input typed now is lost)")

    def set_ready(self, cascade_id: str = "") -> None:
        self._ready = True
        self._cascade_id = cascade_id or self._cascade_id
        if self._input_fd is not None and os.isatty(self._input_fd):
            # A line typed (not yet entered) during start-up dies with it (docs/wire.md §1).
            with contextlib.suppress(termios.error):
                termios.tcflush(self._input_fd, termios.TCIFLUSH)
        state = "ready" if not self._signed_out else f"ready, signed out] [{SIGN_IN_HINT}"
        self.write(f"[{state}] conversation {self._cascade_id or '-'}")
        self.screen.mounted = True
        if self._trust_pending and self.screen.drawn:
            self.screen.open_trust(self._workspace)
        elif self._trust_pending:
            self.write(TRUST_PROMPT.format(workspace=self._workspace))
        elif self._survey_pending:
            self.write(SURVEY_PROMPT)
        self.write(f"({HELP})")

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def trust_pending(self) -> bool:
        """The trust dialog is open: agy accepts no turn until it is answered."""
        return self._trust_pending

    # -- input --------------------------------------------------------------------------
    def attach_input(self, stdin: TextIO | None = None) -> bool:
        """Read typed lines from ``stdin`` if it is a terminal; False when there is none."""
        stdin = sys.stdin if stdin is None else stdin
        try:
            fd = stdin.fileno()
        except (OSError, ValueError, AttributeError):
            fd = -1
        if fd < 0 or not os.isatty(fd):
            _log.info("stdin is not a terminal: the TUI only writes")
            return False
        if self.screen.drawn:
            self._keys_mode(fd)
        asyncio.get_running_loop().add_reader(fd, self._readable)
        self._input_fd = fd
        return True

    def _keys_mode(self, fd: int) -> None:
        """Keys one by one, unechoed, as agy's TUI reads them (output processing kept), and
        bracketed paste on: a paste arrives as one, its line breaks data, not Enter."""
        with contextlib.suppress(termios.error):
            self._saved_mode = termios.tcgetattr(fd)
            mode = termios.tcgetattr(fd)
            mode[0] &= ~(termios.ICRNL | termios.IXON)
            mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
            termios.tcsetattr(fd, termios.TCSANOW, mode)
            self._emit("\x1b[?2004h")

    def detach_input(self) -> None:
        if self._input_fd is not None:
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._input_fd)
            if self._saved_mode is not None:
                self._emit("\x1b[?2004l")
                with contextlib.suppress(termios.error):
                    termios.tcsetattr(self._input_fd, termios.TCSANOW, self._saved_mode)
                self._saved_mode = None
            self._input_fd = None

    def _readable(self) -> None:
        assert self._input_fd is not None
        try:
            chunk = os.read(self._input_fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:  # the terminal went away
            self.detach_input()
            return
        if self.screen.drawn:
            for action in self.screen.feed(chunk):
                self._act(action)
            if self.screen.escape_pending:
                asyncio.get_running_loop().call_later(ESCAPE_WAIT, self._escape)
            return
        self._buffer += chunk
        *lines, self._buffer = self._buffer.replace(b"\r", b"\n").split(b"\n")
        for raw in lines:
            self.feed_line(raw.decode("utf-8", "replace"))

    def _escape(self) -> None:
        for action in self.screen.flush_escape():
            self._act(action)

    def feed_line(self, line: str) -> None:
        """One typed line (without its newline)."""
        self._act(("line", line))

    def _act(self, action: Action) -> None:
        if action[0] == "lost" or not self._ready:
            self.lost_lines += 1
            _log.info("input typed before ready was lost")
            return
        if self._lines is None:
            self._lines = asyncio.Queue()
            self._consumer = asyncio.get_running_loop().create_task(self._consume(self._lines))
        self._lines.put_nowait(action)

    async def _consume(self, actions: asyncio.Queue[Action]) -> None:
        # One at a time, in the order typed, as a terminal would.
        while True:
            kind, value = await actions.get()
            try:
                await self._perform(kind, value)
            finally:
                actions.task_done()

    async def _perform(self, kind: str, value: Any) -> None:
        if kind == "line":
            await self.handle_line(value)
        elif kind == "trust":
            self._answer_trust(value)
        elif kind == "typed" and str(value).startswith("/"):
            await self.handle_line(value)  # /allow, /answer… typed into a dialog
        elif kind == "answer" and self._actions.interaction is not None:
            self.write(await self._actions.interaction(value))
        elif kind == "interrupt" and self._actions.interrupt is not None:
            await self._actions.interrupt()
        self.screen.sync()

    async def drain(self) -> None:
        """Wait until every line typed so far has been handled."""
        if self._lines is not None:
            await self._lines.join()

    async def handle_line(self, line: str) -> None:
        text = line.strip()
        if not text:
            return
        if self._trust_pending:
            self._answer_trust(text)
            return
        if self._survey_pending:
            self._survey_pending = False  # the survey ate it, as agy's does (docs/wire.md §1)
            self.write("[survey] thanks for your feedback")
            return
        command = text.split(maxsplit=1)[0]
        if command in ("/quit", "/exit"):
            self._actions.quit()
        elif command == "/help":
            self.write(f"({HELP})")
        elif command in _GATE_COMMANDS:
            await self._answer(text)
        elif command == "/model" and self._actions.model is not None:
            try:
                self.write(self._actions.model(text.removeprefix("/model")))
            except ValueError as exc:
                self.write(f"[error] {exc}")
        elif self._signed_out:
            self.write(f"[error] {SIGN_IN_HINT}")
        else:
            await self._submit(text)

    def _answer_trust(self, text: str) -> None:
        answer = text.casefold()
        if answer in ("1", "y", "yes"):
            self._trust_pending = False
            if self._actions.trust is not None:
                self._actions.trust()
            self.screen.close_trust()
            self.write(f"[trusted] {self._workspace}")
            if self._survey_pending:
                self.write(SURVEY_PROMPT)
        elif answer in ("2", "n", "no"):
            self.write("[not trusted] exiting")
            self._actions.quit()
        else:
            self.write(TRUST_PROMPT.format(workspace=self._workspace))

    async def _answer(self, text: str) -> None:
        if self._actions.answer is None:
            self.write("[error] answering from this terminal is not available")
            return
        try:
            self.write(await self._actions.answer(text))
        except Exception as exc:  # noqa: BLE001 - any failure is shown, never kills the TUI
            self.write(f"[error] {exc}")

    async def _submit(self, text: str) -> None:
        try:
            await self._actions.submit(text)
        except Exception as exc:  # noqa: BLE001 - shown to the person typing
            self.write(f"[error] {exc}")

    async def aclose(self) -> None:
        self.screen.close()
        self.detach_input()
        consumer, self._consumer, self._lines = self._consumer, None, None
        if consumer is not None:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
