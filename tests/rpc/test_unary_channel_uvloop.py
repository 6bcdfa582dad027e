"""Unary calls on uvloop, the event loop omnigent's runner serves a harness on (uvicorn picks it
when installed): its transports implement asyncio.Transport without subclassing it, and a
channel that insisted on the class failed every call (every turn under the real runner failed
as `agy_internal`, AssertionError; tests/faults/test_harness_kill.py found it)."""

from __future__ import annotations

from typing import Any

import pytest
from _helpers_server import TOKEN, FakeAgy, fake_agy

from agy_sim.server import TlsConnectServer
from omnigent_agy.rpc.client import RpcClient

__all__ = ["fake_agy"]  # the fixture is used by name

pytest.importorskip("uvloop")
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", {"use_uvloop": True})


async def test_unary_calls_work_on_uvloop(fake_agy: tuple[FakeAgy, TlsConnectServer]) -> None:
    _, server = fake_agy
    async with RpcClient(port=server.port, csrf_token=TOKEN) as client:
        assert await client.heartbeat() == {"lastExtensionHeartbeat": "2026-08-02T04:49:11Z"}
        assert await client.start_cascade(cascade_id="c-7") == "c-7"
        assert client.http_version == "HTTP/2"
