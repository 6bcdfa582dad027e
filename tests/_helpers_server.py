"""A scriptable agy stand-in on the real TLS HTTP/2 server core, for the client tests.

Handlers run on the server's own thread and loop; what they saw is recorded in
``FakeAgy`` so tests can assert request shapes and call counts afterwards.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agy_sim.connect_app import ConnectApp, ConnectHandlerError
from agy_sim.server import TlsConnectServer

TOKEN = "test-csrf-token-0123456789"

STREAM_UPDATES = [
    {"update": {"conversationId": "multi", "status": "CASCADE_RUN_STATUS_RUNNING", "n": n}}
    for n in range(3)
]
# A snapshot of many steps, 2 MB: large enough for the client to read its steps lazily.
SNAPSHOT_STEPS = [
    {"type": "CORTEX_STEP_TYPE_USER_INPUT", "n": n, "pad": "x" * 2000} for n in range(1000)
]
SNAPSHOT = {
    "update": {
        "conversationId": "snapshot",
        "mainTrajectoryUpdate": {
            "stepsUpdate": {
                "indices": list(range(len(SNAPSHOT_STEPS))),
                "steps": SNAPSHOT_STEPS,
                "totalLength": len(SNAPSHOT_STEPS),
            }
        },
    }
}


class FakeAgy:
    """Unary and stream handlers that behave per request, plus what they were asked."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.failures_left: Counter[str] = Counter()  # method → answer UNAVAILABLE this often
        self.stream_closed = threading.Event()
        self.steps = [{"type": "CORTEX_STEP_TYPE_USER_INPUT", "n": n} for n in range(5)]

    def app(self) -> ConnectApp:
        unary = {
            name: self._recorded(name, handler)
            for name, handler in {
                "Heartbeat": self._heartbeat,
                "GetConversationMetadata": self._metadata,
                "GetAllCascadeTrajectories": self._trajectories,
                "StartCascade": self._start_cascade,
                "SendUserCascadeMessage": self._empty,
                "GetCascadeTrajectorySteps": self._steps,
                "HandleCascadeUserInteraction": self._empty,
                "CancelCascadeSteps": self._empty,
                "ForceStopCascadeTree": self._force_stop,
                "GetAvailableModels": self._models,
                "Slow": self._slow,
            }.items()
        }
        return ConnectApp(
            csrf_token=TOKEN,
            unary=unary,
            streams={"StreamAgentStateUpdates": self._stream},
        )

    def _recorded(self, name: str, handler: Any) -> Any:
        async def wrapper(request: dict[str, Any]) -> dict[str, Any]:
            self.calls[name] += 1
            self.requests.setdefault(name, []).append(request)
            if self.failures_left[name] > 0:
                self.failures_left[name] -= 1
                raise ConnectHandlerError("unavailable", "warming up", 503)
            result: dict[str, Any] = await handler(request)
            return result

        return wrapper

    async def _heartbeat(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"lastExtensionHeartbeat": "2026-08-02T04:49:11Z"}

    async def _empty(self, request: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def _trajectories(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"trajectorySummaries": {"c-7": {"trajectoryId": "t-1", "stepCount": 5}}}

    async def _metadata(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("conversationId") != "known":
            # What agy answers for an id it does not know (docs/wire.md §3).
            raise ConnectHandlerError("unknown", "trajectory not found", 500)
        return {"metadata": {"rootConversationId": "known"}}

    async def _start_cascade(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"cascadeId": request.get("cascadeId", "cascade-new")}

    async def _steps(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"steps": self.steps[int(request.get("stepOffset", 0)) :]}

    async def _force_stop(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"stoppedConversationIds": [request["conversationId"], "child"]}

    async def _models(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"response": {"models": {"m": {"model": "MODEL_X", "displayName": "X"}}}}

    async def _slow(self, request: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(3600)  # cancelled when the server stops
        return {}

    async def _stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Behaviour chosen by the conversation id the client asks for."""
        self.calls["StreamAgentStateUpdates"] += 1
        self.requests.setdefault("StreamAgentStateUpdates", []).append(request)
        kind = request["conversationId"]
        try:
            if kind == "snapshot":
                yield SNAPSHOT
            if kind in ("multi", "error", "endless", "stall-after-one"):
                for update in STREAM_UPDATES[: 1 if kind == "stall-after-one" else None]:
                    yield update
            if kind == "error":
                raise ConnectHandlerError("failed_precondition", "cascade was cleared")
            if kind in ("silent", "endless", "stall-after-one", "snapshot"):
                await asyncio.sleep(3600)  # no frame and no trailer, like a stream after /clear
        finally:
            self.stream_closed.set()


@pytest.fixture
def fake_agy() -> Iterator[tuple[FakeAgy, TlsConnectServer]]:
    """A FakeAgy served on real TLS HTTP/2 on loopback, stopped after the test."""
    agy = FakeAgy()
    with TlsConnectServer(agy.app()) as server:
        yield agy, server
