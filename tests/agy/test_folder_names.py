"""A folder's name is data: nothing in it reaches tmux as a format or a shell as a command, and
a folder agy cannot enter is said as such, with its own code. Real tmux, agy-sim as agy."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from simproc import AGY_SIM, FAST
from waiting import wait_until

from omnigent_agy.agy.launcher import AgyLaunchSpec, ensure_agy, launch_agy
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trampoline import ENTER_FAILED, ENTER_FAILED_CODE, write_launch_file
from omnigent_agy.errors import WorkspaceUnreachableError, failure_for

pytestmark = pytest.mark.tmux

CONVERSATION = "conv-names"


@pytest.fixture
def tmux_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TerminalHost]:
    # The server starts in tmp_path: a format job (`#(touch X)`) would run there.
    monkeypatch.chdir(tmp_path)
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    yield host
    for name in host.names():
        terminal = host.find(name)
        if terminal is not None:
            terminal.stop(timeout=2)
    host.kill_server()


def spec_for(tmp_path: Path, workspace: Path, **overrides: object) -> AgyLaunchSpec:
    values: dict[str, object] = {
        "command": (str(AGY_SIM), *FAST),
        "workspace": workspace,
        "state_dir": SessionStateDir.open(CONVERSATION, base=tmp_path / "state"),
        "ready_timeout": 30.0,
    }
    values.update(overrides)
    return AgyLaunchSpec(**values)  # type: ignore[arg-type]


def run[T](coro: object) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type,no-any-return]


def jobs_settled(pane_pid: int) -> None:
    """Wait until the tmux server (the pane process's parent) runs nothing but that pane's
    process: a format job it started (`#(…)`) has ended, and what it writes is written."""
    server = psutil.Process(pane_pid).parent()
    assert server is not None

    def only_the_pane() -> bool:
        return {child.pid for child in server.children()} <= {pane_pid}

    wait_until(only_the_pane, timeout=10, what="the tmux server's jobs to end")


def test_a_folder_named_as_a_tmux_format_runs_nothing(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    """`repo#(touch PWNED)`: tmux expands formats in a pane's start directory; agy still
    starts in that very folder, and nothing ran."""
    workspace = tmp_path / "repo#(touch PWNED)#{pane_pid}$(touch PWNED2);`touch PWNED3`"
    workspace.mkdir()
    spec = spec_for(tmp_path, workspace)
    agy: AgyProcess = run(launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    try:
        assert Path(psutil.Process(agy.pid).cwd()) == workspace
        jobs_settled(agy.pid)
        assert not list(tmp_path.rglob("PWNED*")), "a folder's name ran a command"
        assert not list(Path(os.environ.get("HOME", "/nonexistent")).glob("PWNED*"))
    finally:
        run(agy.stop())


def test_the_pane_starts_in_the_plugins_own_folder(tmux_host: TerminalHost, tmp_path: Path) -> None:
    """tmux is given the launch file's private folder, never the workspace (its `#` doubled:
    a state folder of the person's choosing is data too)."""
    private = tmp_path / "state #{session_name} #(true) #[bold] ##[x] %s;"
    private.mkdir(mode=0o700)
    workspace = tmp_path / "work"
    workspace.mkdir()
    script = "import os, time; print('CWD', os.getcwd(), flush=True); time.sleep(60)"
    terminal = tmux_host.start(
        "names", [sys.executable, "-c", script], cwd=workspace, private_dir=private
    )
    wait_until(lambda: any("CWD" in line for line in terminal.capture()), timeout=10, what="cwd")
    pane = tmux_host.server.sessions[0].panes[0]
    # tmux's idea of the pane's start: the private folder, spelled exactly.
    shown = tmux_host.server.cmd(
        "display-message", "-p", "-t", pane.pane_id or "", "#{pane_start_path}"
    )
    assert shown.stdout == [str(private)]
    assert any(f"CWD {workspace}" in line for line in terminal.capture())


def test_the_trampoline_says_it_could_not_enter_a_folder(tmp_path: Path) -> None:
    missing = tmp_path / "gone\nfolder"
    launch = write_launch_file([str(AGY_SIM)], cwd=missing, env={}, private_dir=tmp_path)
    done = subprocess.run(
        [sys.executable, "-I", "-m", "omnigent_agy.agy.trampoline", str(launch.path)],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert done.returncode == ENTER_FAILED
    assert done.stderr.startswith(f"omnigent-agy [{ENTER_FAILED_CODE}]: could not enter the folder")
    assert repr(str(missing)) in done.stderr, "named, its newline shown escaped"
    assert "No such file or directory" in done.stderr
    assert "cannot start" not in done.stderr
    assert not launch.path.exists(), "the launch file (agy's token) is gone all the same"


def test_a_folder_that_cannot_be_entered_is_refused_with_its_code(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    workspace = tmp_path / "removed"
    spec = spec_for(tmp_path, workspace)
    with pytest.raises(WorkspaceUnreachableError) as refused:
        run(launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    failure = failure_for(refused.value)
    assert failure.code == "agy_workspace_unreachable"
    assert repr(str(workspace)) in failure.message
    assert "could not enter the folder" in failure.message
    assert "ls -ld" in failure.remediation
    assert tmux_host.names() == [], "nothing was started"


def test_a_folder_gone_between_the_check_and_the_start_is_said_as_such(
    tmux_host: TerminalHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trampoline's own check: the folder goes after the launcher looked at it."""
    workspace = tmp_path / "soon-gone"
    workspace.mkdir()
    from omnigent_agy.agy import launcher  # noqa: PLC0415

    def looked_then_gone(link: Path | None, person: Path, state_dir: Path) -> None:
        person.rmdir()

    monkeypatch.setattr(launcher, "ready_folder", looked_then_gone)
    spec = spec_for(tmp_path, workspace)
    with pytest.raises(WorkspaceUnreachableError) as refused:
        run(launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    failure = failure_for(refused.value)
    assert failure.code == "agy_workspace_unreachable"
    assert failure.message == (
        f"agy was not started: could not enter the folder {str(workspace)!r}: "
        "No such file or directory"
    )


def test_a_failed_launch_keeps_the_conversation_to_resume(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    """The record is all that names the conversation agy was on: a launch that fails (here:
    the folder went away) leaves it for the next turn."""
    workspace = tmp_path / "work"
    workspace.mkdir()
    spec = spec_for(tmp_path, workspace)
    agy: AgyProcess = run(launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    agy.bind_cascade("c-kept")
    record = spec.state_dir.read_record()
    assert record is not None
    run(agy.stop())
    spec.state_dir.write_record(replace(record, csrf_token="").as_stopped("idle", time.time()))
    workspace.rmdir()
    with pytest.raises(WorkspaceUnreachableError):
        run(ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    kept = spec.state_dir.read_record()
    assert kept is not None
    assert kept.cascade_id == "c-kept"
    workspace.mkdir()
    again: AgyProcess = run(ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    try:
        assert again.cascade_id == "c-kept"
        assert "c-kept" in psutil.Process(again.pid).cmdline()
    finally:
        run(again.stop())
