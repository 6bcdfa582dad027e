"""A cold start launches agy while the pre-flight runs (docs/performance.md, "Cold start"):
the checks do not wait for agy's own start, and a failed check still wins, with no agy left
running and the conversation's record as it was. Against agy-sim in a private tmux server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gemini_home import make_person_gemini
from simproc import AGY_SIM
from test_home import first_turn
from waiting import wait_until

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.errors import AGY_SIGNED_OUT, Failure
from omnigent_agy.rpc import discovery
from omnigent_agy.rpc.discovery import pin_if_ours
from omnigent_agy.rpc.pinning import Pin, fetch_certificate
from omnigent_agy.session import binding
from omnigent_agy.session.agy_session import AgySession, PreflightError, SessionSettings
from omnigent_agy.session.turn import Turn

pytestmark = pytest.mark.tmux
CONVERSATION = "conv-cold"


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    name = f"agy-cold-{uuid.uuid4().hex[:10]}"
    yield name
    TerminalHost(socket_name=name).kill_server()


def settings(
    tmp_path: Path, tmux_socket: str, preflight: Callable[[], Failure | None]
) -> SessionSettings:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    return SessionSettings(
        conversation_id=CONVERSATION,
        workspace=workspace,
        command=(str(AGY_SIM), "--sim-startup-delay", "0.3", "--sim-token-delay", "0.001"),
        state_base=tmp_path / "state",
        tmux_socket=tmux_socket,
        keep_agy_running=False,
        preflight=preflight,
        gemini_seed=GeminiSeed(person.path),
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(workspace)),)),
    )


def agy_pane_alive(tmux_socket: str) -> bool:
    pane = TerminalHost(socket_name=tmux_socket).find(session_name(CONVERSATION))
    return pane is not None and pane.is_alive()


def first_turn_then_close(session: AgySession) -> None:
    """The session's first turn, then the session closed with its agy stopped."""

    async def go() -> None:
        try:
            async for _ in session.run_turn(Turn("hello", object())):  # type: ignore[arg-type]
                pass
        finally:
            await session.close(stop_agy=True)

    asyncio.run(go())


def test_agy_starts_while_the_preflight_runs(tmp_path: Path, tmux_socket: str) -> None:
    """The pre-flight returns only once agy's pane runs: the turn completes only when the
    launch does not wait for the checks (before, it waited for them and this timed out)."""

    def preflight() -> None:
        wait_until(lambda: agy_pane_alive(tmux_socket), timeout=60, what="agy's pane")

    session = AgySession(settings(tmp_path, tmux_socket, preflight))
    first_turn_then_close(session)


def test_a_failed_preflight_wins_and_leaves_no_agy(tmp_path: Path, tmux_socket: str) -> None:
    def preflight() -> Failure:
        wait_until(lambda: agy_pane_alive(tmux_socket), timeout=60, what="agy's pane")
        return AGY_SIGNED_OUT.failure("agy is not signed in")

    made = settings(tmp_path, tmux_socket, preflight)
    session = AgySession(made)
    with pytest.raises(PreflightError) as caught:
        first_turn(session)
    assert caught.value.failure.code == AGY_SIGNED_OUT.code
    assert not agy_pane_alive(tmux_socket)
    state = SessionStateDir.open(CONVERSATION, base=made.state_base)
    assert state.read_record() is None  # as before the launch: nothing to re-attach to


def test_the_launch_hands_its_pin_to_the_session(
    tmp_path: Path, tmux_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The binding trusts the pin the launch took when agy answered: it fetches and checks
    agy's certificate no more on the way to the first answer (before, it did both again).
    The launch's own discovery may fetch more than once (agy still starting at its first
    look), so the binding's fetches are counted, not all of them."""
    fetched: list[int] = []
    launch_fetched: list[int] = []

    async def counting(port: int, **kwargs: object) -> bytes:
        certificate = await fetch_certificate(port, **kwargs)  # type: ignore[arg-type]
        launch_fetched.append(port)
        return certificate

    async def binding_pins(port: int, **kwargs: Any) -> Pin | None:
        fetched.append(port)
        return await pin_if_ours(port, **kwargs)

    monkeypatch.setattr(discovery, "fetch_certificate", counting)
    monkeypatch.setattr(binding, "pin_if_ours", binding_pins)
    session = AgySession(settings(tmp_path, tmux_socket, lambda: None))
    first_turn_then_close(session)
    assert launch_fetched, "the launch found agy without its certificate"
    assert fetched == [], f"the binding fetched agy's certificate again on ports {fetched}"
