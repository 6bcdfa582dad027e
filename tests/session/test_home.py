"""The session's pre-flight checks agy's private gemini dir as agy will see it
(docs/wire.md §1b)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from gemini_home import make_person_gemini

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.launcher import write_agy_settings
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.session.agy_session import AgySession, PreflightError, SessionSettings
from omnigent_agy.session.turn import Turn


def first_turn(session: AgySession) -> None:
    async def go() -> None:
        turn = session.run_turn(Turn("hello", object()))  # type: ignore[arg-type]
        async for _ in turn:
            pass

    asyncio.run(go())


def settings(tmp_path: Path, seed: GeminiSeed | None) -> SessionSettings:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return SessionSettings(
        conversation_id="conv-home",
        workspace=workspace,
        command=(str(tmp_path / "no-agy-here"),),
        state_base=tmp_path / "state",
        tmux_socket=f"agy-home-{uuid.uuid4().hex[:10]}",
        preflight=lambda: None,  # agy, its version and tmux are fine
        gemini_seed=seed,
    )


def test_an_unseeded_folder_is_caught_by_the_preflight_with_its_code(tmp_path: Path) -> None:
    plain = settings(tmp_path, None)
    session = AgySession(plain)
    write_agy_settings(session._binding.state.gemini_dir)  # what the plugin wrote before §1b
    try:
        with pytest.raises(PreflightError) as caught:
            first_turn(session)
    finally:
        TerminalHost(socket_name=plain.tmux_socket).kill_server()
    assert caught.value.failure.code == "agy_signed_out"
    assert "holds no sign-in" in caught.value.failure.message


def test_a_seeded_folder_passes_the_preflight(tmp_path: Path) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    seeded = replace(
        settings(tmp_path, GeminiSeed(person.path)),
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(tmp_path / "workspace")),)),
    )
    try:
        with pytest.raises(Exception) as caught:  # noqa: PT011 - any failure but the pre-flight's
            first_turn(AgySession(seeded))
    finally:
        TerminalHost(socket_name=seeded.tmux_socket).kill_server()
    assert not isinstance(caught.value, PreflightError), caught.value  # it went on to launch
