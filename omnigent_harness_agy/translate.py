"""Pieces of the translation of the session's events into omnigent's: splices into append-only
chunks (`Stream`), a tool's outcome and output (`TOOL_STATUS`, `tool_result`); agy's usage
in omnigent's keys is `usage`."""

from __future__ import annotations

import logging

from omnigent.inner.executor import (
    ExecutorEvent,
    ReasoningChunk,
    SubAgentCompleted,
    TextChunk,
    ToolCallStatus,
)

from omnigent_agy import DEFAULT_OUTPUT_CAP, ShownLedger, StepKey
from omnigent_agy import events as ev

__all__ = ["TOOL_STATUS", "Stream", "tool_result"]

_logger = logging.getLogger(__name__)

TOOL_STATUS = {
    "success": ToolCallStatus.SUCCESS,
    "error": ToolCallStatus.ERROR,
    "canceled": ToolCallStatus.CANCELLED,
    "denied": ToolCallStatus.BLOCKED,
}


class Stream:
    """Turns splice deltas (`events.apply_delta`) into omnigent's append-only chunks.

    What it hands over is recorded in the session's `ShownLedger`, so a harness process
    started after this one was killed mid-answer goes on where the host's text stops instead
    of showing the step again from its start (session/shown_ledger.py).
    """

    def __init__(self, ledger: ShownLedger | None = None) -> None:
        self._ledger = ledger
        self._shown: dict[str, int] = ledger.load() if ledger is not None else {}
        self._last_text_key: object = None
        self.calls: set[str] = set()
        """The tool calls this turn showed as started (`ToolCallRequest`)."""
        self.ends: list[SubAgentCompleted] = []
        """The sub-agents' ends, said at the turn's end (`closing`)."""
        self._text_open = False  # the last thing handed over was answer text

    def once(self, key: str) -> bool:
        """True the first time `key` is handed over in this turn, by this process or by one
        killed before it (the ledger keeps it): a sub-agent's start and its calls, which
        omnigent appends to the sub-agent's row each time it gets them."""
        if self._shown.get(key):
            return False
        self._shown[key] = 1
        if self._ledger is not None:
            self._ledger.record(key, 1)
        return True

    def note(self, event: ExecutorEvent) -> None:
        """Record what was handed over: whether omnigent's web has answer text open."""
        self._text_open = isinstance(event, TextChunk)

    def note_call(self) -> None:
        """One of omnigent's tools was called through its bridge, which shows it as a row."""
        self._text_open = False

    def closing(self) -> list[ExecutorEvent]:
        """What goes ahead of the turn's result: the sub-agents' ends, the answer closed first.

        omnigent's runner turns a `SubAgentCompleted` into posts of its own, after which the
        server appends a "Completed …" mark to the conversation (``runner/app.py``,
        ``subagent.completed``; ``server/subagent_activity.py``), with no order against the
        turn's stream. omnigent's web shows the mark as a row of its own and splits the turn's
        bubble there, but closes the answer only at a tool call, a reasoning start or the
        turn's end (its chat reducer): a mark landing while the answer is open leaves the
        text streamed so far above the mark and the closed answer below it, the answer twice.
        So the ends wait for the turn's end, when no more text comes, and a reasoning start
        closes the answer before them: the web closes the text there, the mark lands after
        it, and the saved answer then takes the closed text's place (it matches it).
        """
        ends, self.ends = self.ends, []
        if not ends:
            return []
        close: list[ExecutorEvent] = []
        if self._text_open:
            close.append(ReasoningChunk(delta="", event_type="reasoning_started"))
        self._text_open = False
        return [*close, *ends]

    def text(self, delta: ev.TextDelta) -> str:
        piece = self._append_only(_stream_key("text", delta.key), delta.offset, delta.text)
        if piece and self._last_text_key not in (None, delta.key):
            piece = "\n\n" + piece  # a new message of the same turn starts a new paragraph
        if piece:
            self._last_text_key = delta.key
        return piece

    def reasoning(self, delta: ev.ReasoningDelta) -> str:
        return self._append_only(_stream_key("reasoning", delta.key), delta.offset, delta.text)

    def ended(self) -> None:
        """The turn ended with every step settled: nothing of it is open any more."""
        if self._ledger is not None:
            self._ledger.clear()

    def _append_only(self, key: str, offset: int, text: str) -> str:
        shown = self._shown.get(key, 0)
        end = offset + len(text)
        if offset > shown:
            _logger.warning("a delta skipped %d characters", offset - shown)
        if end <= shown:
            if offset < shown:
                _logger.info("agy rewrote text already shown; the committed text keeps it")
            return ""
        self._shown[key] = end
        if self._ledger is not None:
            self._ledger.record(key, end)
        return text[max(0, shown - offset) :]


def _stream_key(kind: str, key: StepKey) -> str:
    return f"{kind}|{key.cascade_id}|{key.trajectory_id}|{key.step_index}"


def tool_result(event: ev.ToolCallFinished) -> str:
    output = event.output or ""
    if event.full_bytes is not None:
        shown = len(output.encode("utf-8", errors="replace"))
        output += (
            f"\n[output truncated: {shown:,} of {event.full_bytes:,} bytes shown; omnigent-agy"
            f" passes at most {DEFAULT_OUTPUT_CAP // 1024} KiB of a tool's output to omnigent,"
            " agy itself saw all of it. Ask agy about the part you need, or have the command"
            " write its output to a file and read that in parts.]"
        )
    elif event.truncated:
        output += "\n[output truncated by agy]"
    if event.exit_code is not None and event.exit_code != 0:
        output += f"\n[exit code {event.exit_code}]"
    return output
