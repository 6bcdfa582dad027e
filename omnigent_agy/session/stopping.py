"""Stopping the agys of one conversation from the session's side.

A conversation's agy outlives harness processes (docs/decisions.md §4), so "this
conversation's agy" can be the one this process bound or the one an earlier process left in
tmux; a respawned harness finds the latter through the record in the state directory
(``launcher.reattach``), and so does a stop here. Either is stopped with its process tree: the
servers agy started (a workspace's own MCP servers, docs/wire.md §9) and the commands it runs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from omnigent_agy.agy.process import AgyProcess, session_name
from omnigent_agy.agy.running_agys import recorded, stop_running
from omnigent_agy.agy.terminal import TerminalHost

__all__ = ["stop_every_agy", "stop_for_sign_in"]

_logger = logging.getLogger(__name__)


async def stop_every_agy(
    terminals: TerminalHost,
    state_dir: Path,
    conversation_id: str,
    bound: AgyProcess | None,
    reason: str,
) -> None:
    """Stop every agy of the conversation: the recorded one (its record kept, marked stopped,
    so agy goes on with the conversation when it starts again), ``bound`` if it is another,
    and a tmux session of the conversation that no record names (a launch cut short)."""
    await asyncio.to_thread(_stop_recorded, state_dir, reason)
    if bound is not None and await asyncio.to_thread(bound.terminal.is_alive):
        await bound.stop()
    leftover = await asyncio.to_thread(terminals.find, session_name(conversation_id))
    if leftover is not None:
        await asyncio.to_thread(leftover.stop)


def _stop_recorded(state_dir: Path, reason: str) -> None:
    running = recorded(state_dir)
    if running is not None and running.alive and stop_running(running, reason):
        _logger.info("stopped agy pid %s of this conversation: %s", running.pid, reason)


def stop_for_sign_in(state_dir: Path) -> bool:
    """Stop the conversation's agy, its record kept: the turn starts it again on the same
    conversation (``launcher.ensure_agy``). False when none ran."""
    running = recorded(state_dir)
    if running is None or not running.alive:
        return False
    return stop_running(running, "the person's sign-in changed")
