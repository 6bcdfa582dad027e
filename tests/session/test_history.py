"""A conversation agy never had: its earlier messages carried once (session/history.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.session import history
from omnigent_agy.session.history import carry_history, earlier_messages, mark_delivered

FORKED: list[dict[str, Any]] = [
    {"role": "user", "content": "My name is Ada."},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Hello Ada."}]},
    {"role": "system", "content": "ignored"},
    {"role": "user", "content": [{"type": "input_text", "text": "   "}]},
    {"role": "user", "content": "What is my name?"},
]


@pytest.fixture
def state(tmp_path: Path) -> SessionStateDir:
    return SessionStateDir.open("conv-fork", base=tmp_path)


def test_earlier_messages_are_the_peoples_and_the_assistants_before_the_newest() -> None:
    assert earlier_messages(FORKED) == [("user", "My name is Ada."), ("assistant", "Hello Ada.")]
    assert earlier_messages([{"role": "user", "content": "hi"}]) == []
    assert earlier_messages([]) == []


def test_a_fork_carries_its_history_once_marked_as_such(state: SessionStateDir) -> None:
    carried = carry_history(state, FORKED, "What is my name?")
    assert carried.messages == 2
    assert carried.prompt.startswith("[omnigent-agy: this conversation began before you had it")
    assert "### User\nMy name is Ada.\n\n### Assistant\nHello Ada." in carried.prompt
    assert carried.prompt.endswith("</earlier-conversation>\n\nWhat is my name?")
    # Not yet recorded by agy (the send failed, say): the next turn carries it again.
    assert carry_history(state, FORKED, "again").messages == 2
    mark_delivered(state)
    assert carry_history(state, [*FORKED, {"role": "user", "content": "and?"}], "and?").prompt == (
        "and?"
    )
    assert (state.path / "history.json").stat().st_mode & 0o777 == 0o600


def test_a_conversation_agy_already_has_carries_nothing(state: SessionStateDir) -> None:
    state.write_record(
        AgyRecord(
            pid=1,
            pid_create_time=0.0,
            port=None,
            csrf_token="t",
            tmux_socket="s",
            tmux_session="x",
            log_file="agy.log",
        )
    )
    assert carry_history(state, FORKED, "What is my name?").prompt == "What is my name?"


def test_a_long_history_keeps_the_newest_inline_and_all_of_it_in_a_file(
    state: SessionStateDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "CARRY_LIMIT", 60)
    many = [{"role": "user", "content": f"message {i:02d} " + "x" * 20} for i in range(6)]
    carried = carry_history(state, [*many, {"role": "user", "content": "now"}], "now")
    assert "message 05" in carried.prompt
    assert "message 00" not in carried.prompt
    whole = state.path / "earlier-conversation.md"
    assert f"all of them are in {whole}" in carried.prompt
    assert "message 00" in whole.read_text()


def test_an_unreadable_state_file_carries_nothing(state: SessionStateDir) -> None:
    (state.path / "history.json").write_text("{garbage")
    assert carry_history(state, FORKED, "q").messages == 0
