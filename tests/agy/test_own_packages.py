"""A repository's own ``omnigent_agy`` package never runs in the plugin's place: not as the
trampoline agy's pane runs, not as the agent terminal's ``omnigent-agy attach``, not as the
deletion watch — even with ``PYTHONPATH=":"`` (what ``export PYTHONPATH=$PYTHONPATH:/x`` gives
when it was unset), whose empty entry ``python -P`` still takes for the current folder."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_until

from omnigent_agy.agy import trampoline
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trampoline import trampoline_argv
from omnigent_agy.config.agent_folder import attach_command

MODULES = (
    "omnigent_agy/__init__.py",
    "omnigent_agy/agy/__init__.py",
    "omnigent_agy/cli/__init__.py",
)


def repository_with_own_package(root: Path) -> Path:
    """A workspace shipping ``omnigent_agy`` (its trampoline and CLI too) that leaves a
    marker wherever any of it is imported."""
    marker = root / "the-repository-ran"
    code = f"open({str(marker)!r}, 'w').close()\nprint('FAKE', flush=True)\n"
    for module in (*MODULES, "omnigent_agy/agy/trampoline.py", "omnigent_agy/cli/__main__.py"):
        path = root / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
    return marker


@pytest.fixture
def hostile_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tmux server a test starts takes this environment, and so does every pane.
    monkeypatch.setenv("PYTHONPATH", ":")


@pytest.fixture
def tmux_host(hostile_path: None) -> Iterator[TerminalHost]:
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    yield host
    for name in host.names():
        terminal = host.find(name)
        if terminal is not None:
            terminal.stop(timeout=2)
    host.kill_server()


@pytest.mark.tmux
def test_the_real_trampoline_runs_whatever_the_workspace_ships(
    tmux_host: TerminalHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    marker = repository_with_own_package(workspace)
    monkeypatch.chdir(workspace)  # the harness itself may run there
    script = "import os; print('RAN IN', os.getcwd(), flush=True); input()"
    terminal = tmux_host.start("own", [sys.executable, "-c", script], cwd=workspace)
    wait_until(
        lambda: any("RAN IN" in line for line in terminal.capture()), timeout=10, what="start"
    )
    screen = terminal.capture()
    assert f"RAN IN {workspace}" in screen, "the real trampoline ran, and entered the workspace"
    assert "FAKE" not in screen
    assert not marker.exists(), "the workspace's omnigent_agy ran in the plugin's place"


def test_the_trampoline_is_isolated_and_imports_the_installed_plugin(tmp_path: Path) -> None:
    """``-I`` still finds the plugin: it is in site-packages (an editable install through the
    finder its .pth file installs there)."""
    argv = trampoline_argv(tmp_path / "launch.json")
    assert argv[:4] == [sys.executable, "-I", "-m", "omnigent_agy.agy.trampoline"]
    where = subprocess.run(
        [argv[0], "-I", "-c", "import omnigent_agy.agy.trampoline as t; print(t.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ":"},
    )
    # The module this test process imports: site-packages under tox's wheel, the checkout
    # under an editable install; never the working folder's.
    assert Path(where.stdout.strip()) == Path(trampoline.__file__)


def test_the_agent_terminals_command_runs_the_installed_plugin(
    tmp_path: Path, hostile_path: None
) -> None:
    """omnigent starts the agent's terminal in a folder of its choosing, a workspace."""
    workspace = tmp_path / "repo"
    marker = repository_with_own_package(workspace)
    command = attach_command()
    shown = subprocess.run(
        [command.command, *command.args, "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=workspace,
    )
    assert shown.returncode == 0, shown.stderr
    assert "FAKE" not in shown.stdout
    assert "Show a conversation's agy" in shown.stdout, "the real attach command answered"
    assert not marker.exists(), "the workspace's omnigent_agy ran in the plugin's place"
    assert command.args[:1] == ("-I",)
