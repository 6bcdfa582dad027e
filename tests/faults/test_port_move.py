"""agy's language server moving to a new port while the harness talks to it.

agy restarts its listeners on a fresh random port and logs a new "listening on random port"
line; its conversations are kept. Every part that talks to agy must follow: the reader, the
answer to a card, the interrupt, steering, the next turn. agy-sim runs as a separate process,
started by the executor exactly as agy would be; its fault control file asks for the restart.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omnigent.community.harness.agy.app import create_app
from simproc import harness_env
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

RUN_COMMAND = "CORTEX_STEP_TYPE_RUN_COMMAND"
LISTENING = re.compile(r"Language server listening on random port at (\d+) for HTTPS")


class MovableAgy:
    """The conversation's agy-sim, seen from outside: its log and fault control file."""

    def __init__(self, env: dict[str, str], faults: Path) -> None:
        self.env = env
        self.faults = faults
        self.restarts = 0

    def log(self, conversation_id: str) -> str:
        state = SessionStateDir.open(conversation_id, base=Path(self.env["OMNIGENT_AGY_STATE_DIR"]))
        record = state.read_record()
        assert record is not None, "agy was never started"
        return Path(record.log_file).read_text(encoding="utf-8")

    def steps(self, conversation_id: str, step_type: str) -> list[dict[str, Any]]:
        """The conversation's steps of `step_type`, read from agy where it listens now."""
        state = SessionStateDir.open(conversation_id, base=Path(self.env["OMNIGENT_AGY_STATE_DIR"]))
        record = state.read_record()
        assert record is not None
        port = self.ports(conversation_id)[-1]

        async def read() -> list[dict[str, Any]]:
            async with RpcClient(port=port, csrf_token=record.csrf_token) as client:
                return await client.get_cascade_trajectory_steps(record.cascade_id or "")

        return [s for s in asyncio.run(read()) if s.get("type") == step_type]

    def ports(self, conversation_id: str) -> list[int]:
        return [int(p) for p in LISTENING.findall(self.log(conversation_id))]

    def move(self, conversation_id: str, *, pause: float = 0.0) -> int:
        """Restart agy-sim's listeners on a new port; the old one stops answering. With a
        `pause`, once the old port is closed: the new one answers `pause` seconds later."""
        old = self.ports(conversation_id)[-1]
        self.restarts += 1
        tmp = self.faults.with_suffix(".tmp")
        plan = {"restart": self.restarts, "restart_pause": pause, "faults": []}
        tmp.write_text(json.dumps(plan))
        tmp.replace(self.faults)
        if pause:
            wait_until(lambda: _refused(old), timeout=20, what="agy-sim to leave its port")
            return old
        new = wait_until(
            lambda: (p := self.ports(conversation_id)[-1]) != old and p,
            timeout=20,
            what="agy-sim to listen on a new port",
        )
        assert _refused(old), "the old port still answers"
        return new


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def movable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MovableAgy]:
    socket_name = f"agy-move-{uuid.uuid4().hex[:10]}"
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"restart": 0, "faults": []}))
    values = {**harness_env(tmp_path, socket_name), "AGY_SIM_FAULTS": str(faults)}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
    try:
        yield MovableAgy(values, faults)
    finally:
        TerminalHost(socket_name=socket_name).kill_server()


def _harness() -> HarnessServer:
    return HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}")


def test_a_card_answered_after_agy_moved_reaches_agy(movable: MovableAgy) -> None:
    with _harness() as harness:
        turn = harness.turn("run: echo across the move")
        card = turn.until("response.elicitation_request")
        movable.move(harness.conversation_id)
        harness.press(card, "allow once")
        done = turn.until("response.completed", timeout=40)
        assert "response.failed" not in turn.kinds(), done
        (command,) = movable.steps(harness.conversation_id, RUN_COMMAND)
        assert command["status"] == "CORTEX_STEP_STATUS_DONE"
        assert command["runCommand"].get("userRejected") is not True


def test_stop_during_a_card_after_agy_moved_stops_the_turn(movable: MovableAgy) -> None:
    with _harness() as harness:
        turn = harness.turn("run: echo stopped across the move")
        turn.until("response.elicitation_request")
        movable.move(harness.conversation_id)
        assert harness.post({"type": "interrupt"}).status_code == 204
        turn.until("response.cancelled", timeout=40)
        (command,) = movable.steps(harness.conversation_id, RUN_COMMAND)
        assert command["status"] != "CORTEX_STEP_STATUS_WAITING"
        # The next turn goes to the new port too.
        after = harness.turn("hello after the move")
        after.until("response.completed", timeout=40)
        assert "hello after the move" in after.text()


def test_steering_and_the_next_turn_follow_agy_to_its_new_port(movable: MovableAgy) -> None:
    with _harness() as harness:
        harness.turn("first hello").until("response.completed")
        movable.move(harness.conversation_id)
        turn = harness.turn("give me a long answer")
        turn.until("response.output_text.delta", timeout=40)
        movable.move(harness.conversation_id)
        reply = harness.post(
            {"type": "message", "role": "user", "content": "and mention tests", "model": "agy"}
        )
        assert reply.status_code < 300, reply.text
        turn.until("response.completed", timeout=120)
        assert "response.failed" not in turn.kinds()
        said = [
            s["userInput"]["userResponse"]
            for s in movable.steps(harness.conversation_id, "CORTEX_STEP_TYPE_USER_INPUT")
        ]
        assert "and mention tests" in said


def test_a_turn_waits_for_agy_slow_to_come_back_on_its_new_port(movable: MovableAgy) -> None:
    """agy's language server takes seconds to answer on its new port (a restart under load):
    the next turn waits for it as long as agy's process lives. It used to give discovery 5 s
    and fail the turn agy_unreachable ("could not connect to agy at port N")."""
    with _harness() as harness:
        harness.turn("first hello").until("response.completed")
        movable.move(harness.conversation_id, pause=12.0)
        turn = harness.turn("hello after a slow move")
        turn.until("response.completed", timeout=120)
        assert "response.failed" not in turn.kinds(), turn.kinds()
        assert "hello after a slow move" in turn.text()
        assert len(movable.ports(harness.conversation_id)) == 2
