"""A hidden-folder workspace whose agy starts again for a changed sign-in keeps its
conversation: the restart's stop removes the dot-free link, and the launch right after makes
it again before agy enters it. agy-sim in a private tmux server."""

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
from omnigent_agy.session.agy_session import AgySession, SessionSettings
from omnigent_agy.session.turn import Turn
from omnigent_agy.session.turn_results import AgyRestarted

pytestmark = pytest.mark.tmux

TOKEN = Path("antigravity-cli/antigravity-oauth-token")


async def turn(session: AgySession, text: str) -> list[object]:
    events = session.run_turn(Turn(text, object()))  # type: ignore[arg-type]
    return [event async for event in events]


def test_a_hidden_workspaces_agy_restarts_for_a_new_sign_in_on_its_conversation(
    tmp_path: Path,
) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    hidden = tmp_path / "repo" / ".worktrees" / "feature"
    hidden.mkdir(parents=True)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    settings = SessionSettings(
        conversation_id=f"conv-hidden-{uuid.uuid4().hex[:8]}",
        workspace=hidden,
        command=(str(AGY_SIM), *FAST),
        state_base=tmp_path / "state",
        tmux_socket=f"agy-hidden-{uuid.uuid4().hex[:10]}",
        preflight=lambda: None,
        gemini_seed=GeminiSeed(person.path),
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(hidden)),)),
        env={"XDG_RUNTIME_DIR": str(runtime)},
    )

    async def scenario(session: AgySession) -> None:
        await turn(session, "hello")
        first = session._binding.agy
        assert first is not None
        cascade = first.cascade_id
        link = Path(psutil.Process(first.pid).environ()["PWD"])
        assert link != hidden, "agy works in the dot-free link"
        assert link.is_symlink()

        renewed = {"token": {"access_token": "a2", "refresh_token": "another sign-in"}}
        (person.path / TOKEN).write_text(json.dumps(renewed))
        events = await turn(session, "hello with the new sign-in")
        second = session._binding.agy
        assert second is not None
        assert second.pid != first.pid, "agy started again"
        assert second.cascade_id == cascade, "on the same conversation"
        assert any(isinstance(e, AgyRestarted) for e in events)
        process = psutil.Process(second.pid)
        assert process.environ()["PWD"] == str(link)
        assert Path(process.cwd()) == hidden
        assert link.is_symlink(), "the link lives as long as the agy working in it"
        record = session._binding.state.read_record()
        assert record is not None
        assert record.cascade_id == cascade

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
