"""Pieces of the translation of the session's events into omnigent's: splices into append-only
chunks (`Stream`), a tool's outcome and output (`TOOL_STATUS`, `tool_result`); agy's usage
in omnigent's keys is `usage`."""

from __future__ import annotations

import logging

from omnigent.inner.executor import ToolCallStatus

from omnigent_agy.reading import events as ev
from omnigent_agy.reading.mapper_state import DEFAULT_OUTPUT_CAP
from omnigent_agy.reading.steps import StepKey
from omnigent_agy.session.shown import ShownLedger

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
    of showing the step again from its start (session/shown.py).
    """

    def __init__(self, ledger: ShownLedger | None = None) -> None:
        self._ledger = ledger
        self._shown: dict[str, int] = ledger.load() if ledger is not None else {}
        self._last_text_key: object = None
        self.calls: set[str] = set()
        """The tool calls this turn showed as started (`ToolCallRequest`)."""

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
