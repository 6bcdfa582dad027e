"""A session's title from agy's (titles): given once, again only when agy's changes, never on
omnigent's refusal."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from omnigent.community.harness.agy.titles import (
    RENAME_TOOL,
    SessionTitle,
    agy_title,
    omnigent_title,
    retitle,
)

from agy_sim.cascade import Cascade
from agy_sim.summaries import write_summary
from omnigent_agy.agy.statedir import SessionStateDir

CASCADE = "cascade-1"


def test_agys_title_is_given_once_and_again_only_when_it_changes() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    async def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append((name, arguments))
        return {"result": "renamed"}

    async def go() -> None:
        applied = await retitle("Fix the login form", None, run_tool)
        assert applied == "Fix the login form"
        assert await retitle("Fix the login form", applied, run_tool) == applied
        assert await retitle(None, applied, run_tool) == applied
        assert await retitle("Login form fixed", applied, run_tool) == "Login form fixed"

    asyncio.run(go())
    assert calls == [
        (RENAME_TOOL, {"title": "Fix the login form"}),
        (RENAME_TOOL, {"title": "Login form fixed"}),
    ]


def test_a_refused_rename_is_tried_again_next_time() -> None:
    async def refuse(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"error": "denied by a policy"}

    assert asyncio.run(retitle("Fix the login form", None, refuse)) is None


def test_no_list_of_conversations_is_no_title(tmp_path: Any) -> None:
    assert agy_title(tmp_path, "cascade-1") is None


def _agy_titled(state: SessionStateDir, first_message: str) -> None:
    """agy's list of conversations holds CASCADE, titled from `first_message` (agy-sim's way)."""
    cascade = Cascade(
        cascade_id=CASCADE,
        trajectory_id="t",
        created_at="2026-12-02T09:00:00Z",
        workspace_uri="file:///home/me/project",
        steps=[
            {"type": "CORTEX_STEP_TYPE_USER_INPUT", "userInput": {"userResponse": first_message}}
        ],
    )
    write_summary(state.gemini_dir, cascade)


def _renames(
    state: SessionStateDir, messages: list[dict[str, Any]], *, carried: bool = False
) -> list[dict[str, Any]]:
    """A harness started on the conversation with `messages`, after one turn: its renames."""
    calls: list[dict[str, Any]] = []

    async def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        return {"renamed": True}

    title = SessionTitle.open(state, messages)
    asyncio.run(title.after_turn(CASCADE, run_tool, carried=carried))
    return calls


def test_a_title_the_session_already_has_is_not_given(tmp_path: Path) -> None:
    """omnigent titles a session by its first message: agy's title being that, nothing is
    called (each call shows in the web as a tool row)."""
    state = SessionStateDir(tmp_path / "conversation")
    _agy_titled(state, "run: echo hello")
    assert _renames(state, [{"role": "user", "content": "run:  echo\thello"}]) == []
    # A harness started again is handed the newest message only (a respawn): still nothing.
    assert _renames(state, [{"role": "user", "content": "run: echo again"}]) == []


def test_agys_own_title_is_given_once_across_harness_restarts(tmp_path: Path) -> None:
    state = SessionStateDir(tmp_path / "conversation")
    _agy_titled(state, "Fix the login form\nIt rejects passwords that contain a space.")
    first = [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "Fix the login form\nIt rejects passwords that contain a space.",
                }
            ],
        }
    ]
    assert _renames(state, first) == [{"title": "Fix the login form"}]
    # A harness started again (a new SessionTitle) on the same conversation gives it no more.
    assert _renames(state, [*first, {"role": "user", "content": "and the signup form"}]) == []


def test_omnigents_own_title_is_the_first_message_cut_at_60() -> None:
    long = "word " * 30
    title = omnigent_title([{"role": "user", "content": long}, {"role": "user", "content": "x"}])
    assert title is not None
    assert len(title) == 60
    assert title.endswith("…")
    assert omnigent_title([{"role": "assistant", "content": "hi"}]) is None


def test_a_fork_keeps_its_title_over_agys_title_of_the_carried_messages(tmp_path: Path) -> None:
    """A fork's first turn hands agy the earlier messages; agy titles its conversation by
    them, the fork keeps omnigent's title; a title agy gives later is given."""
    state = SessionStateDir(tmp_path / "conversation")
    _agy_titled(state, "[Earlier in this conversation]\nyou: hello")
    messages = [{"role": "user", "content": "hello"}, {"role": "user", "content": "and now?"}]
    assert _renames(state, messages, carried=True) == []
    assert _renames(state, messages) == []
    _agy_titled(state, "Greetings, then a question")
    assert _renames(state, messages) == [{"title": "Greetings, then a question"}]
