"""When a started agy is ready: its own port answers Heartbeat with our token (and the
caller's ``ReadyCheck``, when given).

agy spends 7-9 s on an account check after start and loses earlier input (docs/wire.md §1);
agy-sim answers 503 until its check is done, and a half-started agy that answers nothing never
passes. An agy that dies meanwhile is reported with the last lines of its screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from omnigent_agy.agy.terminal import AgyTerminal
from omnigent_agy.errors import AgyExitedError, PortNeverOpenedError, RpcError
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.discovery import discover_pin
from omnigent_agy.rpc.pinning import Pin

__all__ = ["ReadyCheck", "wait_ready"]

logger = logging.getLogger(__name__)

type ReadyCheck = Callable[[RpcClient], Awaitable[bool]]

_TAIL_LINES = 12


async def wait_ready(
    terminal: AgyTerminal,
    *,
    pid: int,
    log_file: Path,
    csrf_token: str,
    conversation_id: str | None = None,
    deadline: float,
    ready_check: ReadyCheck | None = None,
    poll_interval: float = 0.2,
) -> Pin:
    """Wait until agy's port answers Heartbeat (and ``ready_check``); returns the port with
    the certificate agy serves there (the binding trusts that pin without fetching it again).

    A DiscoveryError from agy dying carries the last lines of its screen, which say why.
    """
    started = time.monotonic()
    try:
        pin = await discover_pin(
            pid=pid,
            log_file=log_file,
            csrf_token=csrf_token,
            conversation_id=conversation_id,
            deadline=deadline,
            poll_interval=poll_interval,
        )
        if ready_check is not None:
            stop_at = started + deadline
            await _wait_check(
                pin,
                csrf_token,
                check=ready_check,
                stop_at=stop_at,
                poll_interval=poll_interval,
                pid=pid,
                log_file=log_file,
            )
    except AgyExitedError as exc:
        tail = [line for line in terminal.capture(history=True) if line.strip()][-_TAIL_LINES:]
        screen = "\n  ".join(tail) if tail else "(nothing)"
        message = f"{exc.args[0]}; its terminal showed:\n  {screen}"
        raise AgyExitedError(message, pid=pid, log_file=log_file) from exc
    if ready_check is None:
        logger.info("agy pid %s ready on port %s", pid, pin.port)
    return pin


async def _wait_check(
    pin: Pin,
    token: str,
    *,
    check: ReadyCheck,
    stop_at: float,
    poll_interval: float,
    pid: int,
    log_file: Path,
) -> None:
    port = pin.port
    async with RpcClient(
        port=port, csrf_token=token, retry=RetryPolicy(attempts=1), certificate=pin.certificate
    ) as client:
        while True:
            with contextlib.suppress(RpcError):
                if await check(client):
                    return
            remaining = stop_at - time.monotonic()
            if remaining <= 0:
                raise PortNeverOpenedError(
                    f"agy answers on port {port} but its readiness check never passed",
                    pid=pid,
                    log_file=log_file,
                )
            await asyncio.sleep(min(poll_interval, remaining))
