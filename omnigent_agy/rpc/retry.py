"""Retries of agy's idempotent reads: which calls, on which codes, how long (tenacity).

Small values built once: a `RetryPolicy` makes a fresh tenacity
controller per call; only reads are ever repeated, only on transient codes, with jittered
exponential backoff and a total deadline. Tests patch `_sleep` so no time passes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Final

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from omnigent_agy.errors import Code, CsrfError, ProtocolError, RpcError

__all__ = ["DEFAULT_RETRY", "IDEMPOTENT_METHODS", "TRANSIENT_CODES", "RetryPolicy", "is_transient"]

logger = logging.getLogger("omnigent_agy.rpc.client")

# Codes worth another try of an idempotent read: the server was briefly unreachable or
# overloaded (UNAVAILABLE, which also covers 429/502/503/504 and transport failures) or
# slow (DEADLINE_EXCEEDED). RESOURCE_EXHAUSTED is left out: from agy it means a model
# quota, which seconds of backoff do not restore. CSRF and protocol errors never heal.
TRANSIENT_CODES: Final = frozenset({Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED})

# Methods safe to repeat (they only read). SendUserCascadeMessage and
# HandleCascadeUserInteraction must never be repeated blindly: a retry after a lost
# answer could post a turn twice or answer a fresh gate that agy re-opened (docs/wire.md §6).
IDEMPOTENT_METHODS: Final = frozenset(
    {
        "Heartbeat",
        "GetConversationMetadata",
        "GetAllCascadeTrajectories",
        "GetCascadeTrajectorySteps",
        "GetAvailableModels",
        "GetCascadeTrajectoryGeneratorMetadata",
        "RetrieveUserQuotaSummary",
        "GetUserStatus",
    }
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How idempotent reads are retried: at most ``attempts`` tries within ``deadline``
    seconds in total, waiting an exponentially growing, jittered backoff in between."""

    attempts: int = 4
    deadline: float = 20.0
    initial_backoff: float = 0.2
    max_backoff: float = 2.0

    def retrying(self) -> AsyncRetrying:
        """A fresh tenacity controller for one call."""
        return AsyncRetrying(
            sleep=_retry_sleep,
            stop=stop_after_attempt(self.attempts) | stop_before_delay(self.deadline),
            wait=wait_exponential_jitter(
                multiplier=self.initial_backoff, max=self.max_backoff, jitter=self.initial_backoff
            ),
            retry=retry_if_exception(is_transient),
            before_sleep=_log_retry,
            reraise=True,
        )


DEFAULT_RETRY: Final = RetryPolicy()


def is_transient(exc: BaseException) -> bool:
    """True for an RpcError worth retrying on an idempotent read."""
    return (
        isinstance(exc, RpcError)
        and not isinstance(exc, CsrfError | ProtocolError)
        and exc.connect_code in TRANSIENT_CODES
    )


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def _retry_sleep(seconds: float) -> Awaitable[None]:
    # Looked up at call time so tests can patch ``_sleep`` and let no time pass.
    return _sleep(seconds)


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    delay = state.next_action.sleep if state.next_action else 0.0
    logger.warning(
        "retrying after attempt %d failed (%s) in %.2fs", state.attempt_number, exc, delay
    )
