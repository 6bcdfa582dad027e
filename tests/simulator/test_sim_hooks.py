"""agy-sim runs hooks as agy ≥ 1.4 is reported to (docs/wire.md §9; the file's shape is a
guess, docs/simulator.md): a trusted workspace's ``.agents/hooks.json`` and the person's
``config/hooks.json`` run as commands at agy's events, a ``PreToolUse`` hook decides whether a
tool runs (a bare ``{}`` denies), and an untrusted workspace's hooks run not at all. agy-sim is
a separate process in tmux, as agy is."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from simproc import FAST, SimLauncher, sim_launcher
from test_sim_gemini_dir import send
from waiting import wait_until

pytestmark = pytest.mark.tmux

HOOKS_VERSION = ("--sim-version", "1.5.16")


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def hooks_file(path: Path, event: str, command: str, *, matcher: str | None = None) -> None:
    group: dict[str, object] = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        group["matcher"] = matcher
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": {event: [group]}}))


def repository(folder: Path, event: str, command: str) -> Path:
    folder.mkdir(parents=True)
    hooks_file(folder / ".agents" / "hooks.json", event, command)
    (folder / "README.md").write_text("# cloned\n")
    return folder


def test_a_trusted_workspaces_session_start_hook_runs(sims: SimLauncher, tmp_path: Path) -> None:
    clone = repository(tmp_path / "clone", "SessionStart", "cat > started-by-a-hook")
    sims.launch(*FAST, *HOOKS_VERSION, workspace=clone)
    wait_until((clone / "started-by-a-hook").exists, timeout=20, what="the hook's file")
    # It ran in the workspace, with agy's event on its stdin.
    event = json.loads((clone / "started-by-a-hook").read_text())
    assert event["hook_event_name"] == "SessionStart"
    assert event["cwd"] == str(clone)


def test_an_untrusted_workspaces_hooks_do_not_run(sims: SimLauncher, tmp_path: Path) -> None:
    clone = repository(tmp_path / "clone", "SessionStart", "touch started-by-a-hook")
    sim = sims.launch(*FAST, *HOOKS_VERSION, workspace=clone, trusted=False)
    sim.wait_screen("1. Yes, I trust this folder")
    assert "Do you trust the contents of this project?" in send(sim, "hello")
    assert not (clone / "started-by-a-hook").exists()
    assert "hook SessionStart ran" not in sim.log_text()


@pytest.mark.parametrize(("version", "runs"), [("1.2.14", False), ("1.4.0", True)])
def test_hooks_run_from_agy_1_4_on(
    sims: SimLauncher, tmp_path: Path, version: str, runs: bool
) -> None:
    clone = repository(tmp_path / "clone", "PreInvocation", "touch started-by-a-hook")
    sim = sims.launch(*FAST, "--sim-version", version, workspace=clone)
    sim.type("hello")
    sim.wait_screen("Hello from the agy simulator")
    assert (clone / "started-by-a-hook").exists() is runs


@pytest.mark.parametrize(
    ("answer", "runs"),
    [
        pytest.param("{}", False, id="a bare object denies"),
        pytest.param('{"decision": "deny", "reason": "no"}', False, id="deny"),
        pytest.param("not json", False, id="output that is not JSON denies"),
        pytest.param('{"decision": "allow"}', True, id="allow"),
    ],
)
def test_a_pre_tool_use_hook_decides(
    sims: SimLauncher, tmp_path: Path, answer: str, runs: bool
) -> None:
    clone = repository(
        tmp_path / "clone", "PreToolUse", f"cat > asked.json; echo {shlex.quote(answer)}"
    )
    sim = sims.launch(*FAST, *HOOKS_VERSION, workspace=clone)
    sim.type("run: touch made-by-agy")
    if runs:
        sim.wait_screen("permission to run: touch made-by-agy")
        sim.type("/allow")
        sim.wait_screen("`touch made-by-agy` finished with exit code 0")
    else:
        sim.wait_screen("Understood, I did not run `touch made-by-agy`")
    assert (clone / "made-by-agy").exists() is runs
    asked = json.loads((clone / "asked.json").read_text())
    assert asked["hook_event_name"] == "PreToolUse"
    assert asked["tool_input"] == {"CommandLine": "touch made-by-agy"}


def test_the_persons_own_hooks_run_in_their_config_folder(sims: SimLauncher) -> None:
    group = {"hooks": [{"type": "command", "command": "pwd > stopped-here"}]}
    sim = sims.launch(*FAST, *HOOKS_VERSION, hooks={"hooks": {"Stop": [group]}})
    assert send(sim, "hello") == ""
    where = sim.gemini_dir / "config"
    wait_until((where / "stopped-here").exists, timeout=20, what="the Stop hook's file")
    assert (where / "stopped-here").read_text().strip() == str(where)
    assert not (sim.workspace / "stopped-here").exists()
