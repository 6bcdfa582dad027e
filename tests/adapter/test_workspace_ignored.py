"""A hidden-folder workspace that agy ignores anyway is said, not silent (docs/wire.md §9).

The workspace is in a hidden folder (``repo/.worktrees/feature``), so the plugin starts agy in
a dot-free link to it. agy-sim, as the reports say of agy, takes the link; with
``--sim-resolve-workspace-links`` it is an agy that tests the folder with its links resolved
and drops it too: it logs ``failed to add project resource folder … is hidden: ignore uri``
and works in its scratch folder. The real harness app must then end the turn with
``agy_workspace_ignored`` naming both folders and what to do, send agy nothing, and stop that
agy — not let it answer from a folder with nothing of the person's in it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from harnessproc import runner_env
from omnigent.community.harness.agy.app import create_app
from simproc import wait_exited

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn
from omnigent_agy.agy.statedir import SessionStateDir

pytestmark = pytest.mark.tmux


@pytest.fixture
def hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The runner's environment, its workspace in a hidden folder the operator trusts."""
    with runner_env(tmp_path, monkeypatch):
        workspace = tmp_path / "repo" / ".worktrees" / "feature"
        workspace.mkdir(parents=True)
        (workspace / "README.md").write_text("# feature\n")
        monkeypatch.setenv("HARNESS_AGY_CLI_CWD", str(workspace))
        monkeypatch.setenv("OMNIGENT_AGY_TRUSTED_WORKSPACES", str(workspace))
        yield workspace


def error_of(turn: StreamedTurn) -> dict[str, Any]:
    failed = turn.until("response.failed", timeout=120)
    error = failed["response"].get("error")
    assert isinstance(error, dict), failed
    return error


def test_an_agy_that_ignores_the_link_ends_the_turn_with_both_folders(
    hidden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGY_SIM_RESOLVE_WORKSPACE_LINKS", "1")
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as harness:
        turn = harness.turn("Please run: touch notes.txt")
        error = error_of(turn)
    assert turn.text() == ""  # agy answered nothing: it was never sent the message
    assert error["code"] == "agy_workspace_ignored"
    said = f"{error.get('message')} {error.get('remediation', '')}"
    state = SessionStateDir.open(conversation, base=Path(os.environ["OMNIGENT_AGY_STATE_DIR"]))
    scratch = state.gemini_dir / "antigravity-cli" / "scratch"
    assert str(hidden) in said  # the person's folder
    assert str(scratch) in said  # where agy works instead
    assert "is hidden: ignore uri" in said  # agy's own words
    assert "no folder starting with a dot" in said  # what to do
    assert not (scratch / "notes.txt").exists()
    record = state.read_record()
    assert record is not None
    assert record.stopped_at is not None
    with contextlib.suppress(psutil.NoSuchProcess):  # stopped: gone already, or soon
        wait_exited(psutil.Process(record.pid))


def test_an_agy_that_takes_the_link_works_there(hidden: Path) -> None:
    with HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}") as harness:
        turn = harness.turn("Please run: touch notes.txt")
        harness.press(turn.until("response.elicitation_request", timeout=120), "allow once")
        turn.until("response.completed", timeout=120)
    assert (hidden / "notes.txt").exists()
