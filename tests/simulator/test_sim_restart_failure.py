"""agy-sim's language server restarts even when its old server fails as it stops.

hypercorn can end with an ``ssl.SSLError`` (APPLICATION_DATA_AFTER_CLOSE_NOTIFY) when a
client's TLS close races the server's; the fault suite saw agy-sim exit mid-restart that way
(docs/reliability.md). agy keeps running and listens on its new port (docs/wire.md §1).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from agy_sim.fault_injector import FaultInjector
from agy_sim.faults import FaultSource
from agy_sim.server import TlsConnectServer
from agy_sim.serving import RestartableServer


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    del scope, receive, send


def test_a_restart_survives_the_old_server_failing_as_it_stops(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    served = TlsConnectServer.serve
    started: list[TlsConnectServer] = []

    async def first_fails(self: TlsConnectServer, shutdown_event: asyncio.Event) -> None:
        started.append(self)
        await served(self, shutdown_event)
        if len(started) == 1:
            raise ssl.SSLError("APPLICATION_DATA_AFTER_CLOSE_NOTIFY")

    monkeypatch.setattr(TlsConnectServer, "serve", first_fails)

    async def scenario() -> tuple[int, int, BaseException | None]:
        server = RestartableServer(FaultInjector(_nothing, FaultSource(static_rules=())))
        old = server.start()
        await asyncio.sleep(0)  # the first server's task starts serving
        new = await server.restart()
        failed = server.failed
        await server.stop()
        return old, new, failed

    old, new, failed = asyncio.run(scenario())
    assert new != old
    assert failed is None  # the new server runs; the old one's failure is not its own
    assert len(started) == 2
    assert "ended with SSLError" in caplog.text
