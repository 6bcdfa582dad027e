"""At a turn's end, agy's own estimate of how full its context window is.

agy keeps that estimate per model call and hands it out through
``GetCascadeTrajectoryGeneratorMetadata`` (docs/wire.md §3, §9 "Context in use";
`reading.context`). It is asked once, when the turn has ended, and briefly: a context meter
is not worth holding the end of a turn for. An agy without the method, or one that says
nothing, leaves the turn as it was, and the meter then shows the prompt of the turn's
largest model call (`TurnResult.last_call`), the best figure agy's steps carry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Final

from omnigent_agy.errors import AgyError
from omnigent_agy.reading.context import estimated_context
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.session.turn_results import TurnResult

__all__ = ["ASK_TIMEOUT", "with_context_used"]

_logger = logging.getLogger(__name__)

ASK_TIMEOUT: Final = 3.0
"""Seconds the end of a turn waits for agy's estimate at most."""

_unanswered: set[str] = set()  # agys' answers logged once per reason, not per turn


async def with_context_used(
    result: TurnResult,
    rpc: Callable[[], Awaitable[FollowingClient]],
    cascade_id: str | None,
    *,
    timeout: float = ASK_TIMEOUT,
) -> TurnResult:
    """``result`` with agy's estimate of the context in use, when agy gives one."""
    if cascade_id is None or result.status == "cancelled":
        return result

    async def ask() -> int | None:
        client = await rpc()
        answer = await client.run(lambda c: c.get_generator_metadata(cascade_id))
        return estimated_context(answer)

    try:
        used = await asyncio.wait_for(ask(), timeout)
    except (AgyError, TimeoutError) as exc:
        reason = type(exc).__name__
        if reason not in _unanswered:
            _unanswered.add(reason)
            _logger.info(
                "agy gave no estimate of its context in use (%s); the context meter shows the "
                "prompt of the turn's largest model call instead",
                exc or reason,
            )
        return result
    return result if used is None else replace(result, context_used=used)
