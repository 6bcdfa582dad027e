"""agy's lifecycle through the real harness app: the harness's own sweep stops an idle agy,
and the next turn starts agy again on the same conversation, with its history, publishing
nothing twice.

The limits come from the environment (OMNIGENT_AGY_CLI_IDLE_STOP_AFTER), as a harness
process started without a config file would read them. The resume runs as each agy version
the plugin is tested with (`both_versions`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from harnessproc import both_versions
from omnigent.community.harness.agy.app import create_app
from simproc import harness_env
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux


@pytest.fixture
def short_lived_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim_version: str
) -> Iterator[Path]:
    """A harness environment pointed at agy-sim (as agy `sim_version`) whose agys are
    stopped after 3 s idle."""
    socket_name = f"agy-life-{uuid.uuid4().hex[:10]}"
    values = {
        **harness_env(tmp_path, socket_name),
        "OMNIGENT_AGY_CLI_IDLE_STOP_AFTER": "3s",
        "AGY_SIM_VERSION": sim_version,
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
    try:
        yield Path(values["OMNIGENT_AGY_STATE_DIR"])
    finally:
        TerminalHost(socket_name=socket_name).kill_server()


def record_of(state: Path, conversation_id: str) -> AgyRecord | None:
    return SessionStateDir.open(conversation_id, base=state).read_record()


def user_inputs(record: AgyRecord) -> list[str]:
    async def go() -> Any:
        assert record.port is not None
        assert record.cascade_id is not None
        async with RpcClient(port=record.port, csrf_token=record.csrf_token) as client:
            return await client.call("GetCascadeTrajectorySteps", {"cascadeId": record.cascade_id})

    steps = asyncio.run(go()).get("steps", [])
    return [
        s["userInput"]["userResponse"] for s in steps if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"
    ]


@both_versions
def test_an_idle_agy_is_stopped_by_the_harness_and_resumed_with_its_history(
    short_lived_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="omnigent.community.harness.agy")
    caplog.set_level(logging.INFO, logger="omnigent_agy.session")
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as harness:
        first = harness.turn("Remember the word apricot.")
        first.until("response.completed")
        before = record_of(short_lived_env, conversation)
        assert before is not None
        assert before.stopped_at is None

        # Nobody uses it: this harness process's own periodic sweep stops it.
        stopped = wait_until(
            lambda: (r := record_of(short_lived_env, conversation)) and r.stopped_at and r,
            timeout=30,
            what="the harness's sweep to stop the idle agy",
        )
        assert stopped.stopped_reason is not None
        assert stopped.stopped_reason.startswith("idle ")
        assert stopped.stopped_reason.endswith("(limit 3s)")
        assert stopped.cascade_id == before.cascade_id
        assert not psutil.pid_exists(before.pid) or (
            psutil.Process(before.pid).status() == psutil.STATUS_ZOMBIE
        )

        second = harness.turn("Which word did I ask you to remember?")
        completed = second.until("response.completed")
        after = record_of(short_lived_env, conversation)
        assert after is not None
        assert after.pid != before.pid, "a new agy"
        assert after.cascade_id == before.cascade_id, "on the same conversation"
        # agy's own history came back: both messages are in the conversation it runs.
        assert user_inputs(after) == [
            "Remember the word apricot.",
            "Which word did I ask you to remember?",
        ]
        # The durable cursor: the first turn's steps are not published again — not in this
        # turn, and not as events between turns (which the session would only skip; the old
        # reader noticing its agy stopped is all that may arrive there).
        assert "apricot" not in second.text()
        skipped = [r.getMessage() for r in caplog.records if "between turns" in r.getMessage()]
        kinds = {k for m in skipped for k in m.partition("(")[2].rstrip(")").split(", ")}
        assert kinds <= {"ReaderModeChanged", "ReaderFailed"}, skipped
        assert "You said: Which word did I ask you to remember?" in second.text()
        assert completed["type"] == "response.completed"

    restarts = [r for r in caplog.records if "agy was restarted" in r.getMessage()]
    assert len(restarts) == 1
    assert before.cascade_id in restarts[0].getMessage()
    assert "idle " in restarts[0].getMessage()
    assert getattr(restarts[0], "event_name", None) == "agy_restarted"
