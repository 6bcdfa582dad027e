"""A resume agy refuses is said on the turn, with what was carried instead.

`omnigent-agy conversations open` makes a session whose first message goes on from one of the
person's agy conversations: the session's state records an agy stopped on it, so the first
turn starts agy with ``--conversation <id>`` (cli/own_conversations.py) and the session
shows "your next message here goes on from it". Here agy does not know that id (agy-sim, as
a guess of agy, then starts a new conversation): the real harness app must say so in the
turn's own text, where the person reads it, and carry the session's earlier messages to the
new conversation, once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harnessproc import runner_env
from omnigent.community.harness.agy.app import create_app

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn
from omnigent_agy.agy.conversation_store import ConversationSummary
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.cli.own_conversations import OPENED_REASON, history_note
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

UNKNOWN = str(uuid.uuid4())  # no agy has this conversation


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with runner_env(tmp_path, monkeypatch) as values:
        yield values


def opened(env: dict[str, str], conversation: str) -> dict[str, Any]:
    """The session as `conversations open` leaves it: an agy record stopped on the person's
    conversation (here one agy does not know), and the note it adds as the first item."""
    state = SessionStateDir.open(conversation, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    workspace = Path(env["HARNESS_AGY_CLI_CWD"])
    state.write_record(
        AgyRecord(
            pid=0,
            pid_create_time=0.0,
            port=None,
            csrf_token="",
            tmux_socket=env["OMNIGENT_AGY_TMUX_SOCKET"],
            tmux_session=session_name(conversation),
            log_file=str(state.log_file),
            cascade_id=UNKNOWN,
            follows_tui=True,
            workspace=str(workspace),
            stopped_at=time.time(),
            stopped_reason=OPENED_REASON,
        )
    )
    summary = ConversationSummary(
        UNKNOWN, "fix the flaky test", "the retry loop", 12, None, "IDLE", (workspace,)
    )
    note = history_note(summary, workspace, "agy")
    text = note["item_data"]["content"][0]["text"]  # type: ignore[index]
    return {"type": "message", "role": "assistant", "content": text}


def user_inputs(env: dict[str, str], conversation: str) -> list[str]:
    state = SessionStateDir.open(conversation, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    record = state.read_record()
    assert record is not None
    assert record.port is not None

    async def go() -> Any:
        async with RpcClient(port=record.port, csrf_token=record.csrf_token) as client:
            return await client.call("GetCascadeTrajectorySteps", {"cascadeId": record.cascade_id})

    steps = asyncio.run(go()).get("steps", [])
    return [
        s["userInput"]["userResponse"] for s in steps if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"
    ]


def test_a_refused_resume_is_said_on_the_turn_and_the_history_carried(
    env: dict[str, str],
) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    note = opened(env, conversation)
    with HarnessServer(create_app(), conversation) as harness:
        turn = StreamedTurn(harness)
        history = [note, {"type": "message", "role": "user", "content": "where were we?"}]
        turn.start({"type": "message", "role": "user", "content": history, "model": "agy"})
        turn.until("response.completed", timeout=120)
        shown = turn.text()
        said, _, answer = shown.partition("\n\n")
        assert said.startswith("> **A new agy conversation began.**")
        assert f"could not go on from its conversation {UNKNOWN} (agy did not know it)" in said
        assert "omnigent carried this session's 1 earlier message to it" in said
        assert answer  # agy's own answer follows, a paragraph of its own
        (sent,) = user_inputs(env, conversation)
        assert "<earlier-conversation>" in sent  # the note, with where it stopped
        assert "the retry loop" in sent
        assert sent.endswith("where were we?")
        # agy titles the new conversation by the carried block: the session keeps its own.
        renames = [i for i in turn.items("function_call") if i.get("name") == "sys_session_rename"]
        assert renames == []

        # Said once: the next turn goes on from the new conversation, nothing carried again.
        again = StreamedTurn(harness)
        later = [
            *history,
            {"type": "message", "role": "assistant", "content": answer},
            {"type": "message", "role": "user", "content": "and now?"},
        ]
        again.start({"type": "message", "role": "user", "content": later, "model": "agy"})
        again.until("response.completed", timeout=120)
        assert "A new agy conversation began" not in again.text()
        assert user_inputs(env, conversation)[1:] == ["and now?"]


def test_with_nothing_to_carry_it_says_agy_starts_from_this_message(
    env: dict[str, str],
) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    opened(env, conversation)
    with HarnessServer(create_app(), conversation) as harness:
        turn = harness.turn("hello")
        turn.until("response.completed", timeout=120)
    assert "this session holds no earlier messages to carry" in turn.text()
    assert user_inputs(env, conversation) == ["hello"]


def test_an_agy_that_exits_on_the_id_is_started_on_a_new_one_and_says_so(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agy that exits on an id it does not keep (the launcher starts it again without
    one): the note says agy would not start on that conversation."""
    monkeypatch.setenv("AGY_SIM_REFUSE_UNKNOWN_CONVERSATION", "1")
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    note = opened(env, conversation)
    with HarnessServer(create_app(), conversation) as harness:
        turn = StreamedTurn(harness)
        history = [note, {"type": "message", "role": "user", "content": "where were we?"}]
        turn.start({"type": "message", "role": "user", "content": history, "model": "agy"})
        turn.until("response.completed", timeout=120)
    said = turn.text().partition("\n\n")[0]
    assert f"could not go on from its conversation {UNKNOWN} (agy would not start on it)" in said
    assert "omnigent carried this session's 1 earlier message to it" in said
    (sent,) = user_inputs(env, conversation)
    assert "<earlier-conversation>" in sent
