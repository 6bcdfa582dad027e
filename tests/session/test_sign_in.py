"""A sign-in the person renewed or revoked reaches a kept agy at its next turn: the running agy
keeps the sign-in it started with, so the session starts it again on the same conversation
with the person's sign-in as it is now; signed out, the turn fails with its code. Against
agy-sim in a private tmux server."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import psutil
import pytest
from gemini_home import make_person_gemini
from simproc import AGY_SIM, FAST

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.session.agy_session import AgySession, PreflightError, SessionSettings
from omnigent_agy.session.turn import Turn
from omnigent_agy.session.turn_results import AgyRestarted

pytestmark = pytest.mark.tmux

TOKEN = Path("antigravity-cli/antigravity-oauth-token")


async def turn(session: AgySession, text: str) -> list[object]:
    events = session.run_turn(Turn(text, object()))  # type: ignore[arg-type]
    return [event async for event in events]


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_changed_sign_in_restarts_agy_on_its_conversation_and_a_revoked_one_fails(
    tmp_path: Path,
) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    settings = SessionSettings(
        conversation_id="conv-sign-in",
        workspace=workspace,
        command=(str(AGY_SIM), *FAST),
        state_base=tmp_path / "state",
        tmux_socket=f"agy-sign-in-{uuid.uuid4().hex[:10]}",
        preflight=lambda: None,
        gemini_seed=GeminiSeed(person.path),
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(workspace)),)),
    )
    copy = tmp_path / "state" / "conv-sign-in" / "gemini" / TOKEN

    async def scenario(session: AgySession) -> None:
        await turn(session, "hello")
        first = session._binding.agy
        assert first is not None
        cascade = first.cascade_id
        await turn(session, "hello again")
        assert session._binding.agy is first, "the sign-in unchanged: the same agy"

        renewed = {"token": {"access_token": "a2", "refresh_token": "another sign-in"}}
        (person.path / TOKEN).write_text(json.dumps(renewed))
        events = await turn(session, "hello with the new sign-in")
        second = session._binding.agy
        assert second is not None
        assert second.pid != first.pid, "agy started again"
        assert gone(first.pid)
        assert second.cascade_id == cascade, "on the same conversation"
        assert any(isinstance(e, AgyRestarted) for e in events)
        assert json.loads(copy.read_text()) == renewed

        (person.path / TOKEN).unlink()
        with pytest.raises(PreflightError) as refused:
            await turn(session, "hello signed out")
        assert refused.value.failure.code == "agy_signed_out"
        assert not copy.exists(), "no copy outlives the person's own sign-in"
        assert gone(second.pid)

    async def run() -> None:
        session = AgySession(settings)
        try:
            await scenario(session)
        finally:
            await session.close(stop_agy=True)

    try:
        asyncio.run(run())
    finally:
        TerminalHost(socket_name=settings.tmux_socket).kill_server()
