"""A cold start: agy launched while the pre-flight runs (docs/performance.md, "Cold start").

Only a launch needs the pre-flight (a running agy already passed it), but its checks need
not wait for agy: they run agy twice and tmux, while agy's own start is the longest part of
a new conversation's first turn. A failed check wins over whatever the launch did: an agy it
started meanwhile is stopped and the conversation's record is left as it was (the
conversation an earlier agy was on, to resume next time).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from omnigent_agy.agy.launcher import AgyLaunchSpec, ensure_agy
from omnigent_agy.agy.process import AgyProcess, session_name
from omnigent_agy.agy.terminal import TerminalHost

__all__ = ["launch_checked"]


async def launch_checked(
    terminals: TerminalHost,
    spec: AgyLaunchSpec,
    *,
    conversation_id: str,
    preflight: Callable[[], Awaitable[None]],
) -> AgyProcess:
    """``ensure_agy`` while ``preflight`` runs; the pre-flight's failure is raised first."""
    state = spec.state_dir
    earlier = state.read_record()
    launch = asyncio.ensure_future(ensure_agy(terminals, spec, conversation_id=conversation_id))
    try:
        await preflight()
    except BaseException:
        launch.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await (await launch).stop()  # it was ready before the cancel
        leftover = await asyncio.to_thread(terminals.find, session_name(conversation_id))
        if leftover is not None:  # cancelled while agy was starting
            await asyncio.to_thread(leftover.stop)
        if earlier is None:
            state.clear_record()
        else:
            state.write_record(earlier)
        raise
    return await launch
