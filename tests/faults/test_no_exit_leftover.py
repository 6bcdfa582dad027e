"""No, exit stops the agy an earlier harness process left running (docs/decisions.md §11).

The person trusted a cloned repository on the card; agy-sim started its own MCP server
(``.agents/mcp_config.json``, docs/wire.md §9). The harness process is SIGKILLed, as a crash
or the runner's release leaves it, so agy and that server keep running in tmux. The person
then takes the trust back (`omnigent-agy trust --forget`), and the next message, served by a
new harness process, shows the card again: "No, exit" must stop that agy and the server it
started, as docs/configuration.md says, not leave them until the idle stop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from runnerproc import HarnessProcess
from simproc import harness_env, wait_exited

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost

pytestmark = pytest.mark.tmux

ECHO = Path(__file__).parents[1] / "_mcp_echo.py"
CLI = Path(sys.executable).with_name("omnigent-agy")


def cloned(folder: Path) -> Path:
    """A repository with an MCP server of its own (a real stdio MCP server)."""
    (folder / ".agents").mkdir(parents=True)
    servers = {"mcpServers": {"tools": {"command": sys.executable, "args": [str(ECHO)]}}}
    (folder / ".agents" / "mcp_config.json").write_text(json.dumps(servers))
    (folder / "README.md").write_text("# cloned\n")
    return folder


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[HarnessProcess]:
    socket_name = f"agy-noexit-{uuid.uuid4().hex[:10]}"
    env = harness_env(tmp_path, socket_name)
    env["HARNESS_AGY_CLI_CWD"] = str(cloned(tmp_path / "cloned"))  # nobody trusts it yet
    logs = tmp_path / "logs"
    logs.mkdir()
    process = HarnessProcess(f"conv_{uuid.uuid4().hex[:12]}", env, logs)
    try:
        yield process.start()
    finally:
        process.stop()
        TerminalHost(socket_name=socket_name).kill_server()


def workspace_server(agy: psutil.Process) -> psutil.Process:
    """The repository's MCP server agy started (a process under agy running `_mcp_echo.py`)."""
    for child in agy.children(recursive=True):
        try:
            if str(ECHO) in child.cmdline():
                return child
        except psutil.Error:
            continue
    raise AssertionError(f"agy pid {agy.pid} runs no workspace MCP server")


def test_no_exit_stops_the_agy_a_killed_harness_left_and_its_servers(
    harness: HarnessProcess,
) -> None:
    turn = harness.turn("hello")
    card = turn.until("response.elicitation_request")
    harness.press(card, "yes")
    turn.until("response.completed", timeout=120)
    state = SessionStateDir.open(
        harness.conversation_id, base=Path(harness.env["OMNIGENT_AGY_STATE_DIR"])
    )
    record = state.read_record()
    assert record is not None
    agy = psutil.Process(record.pid)
    server = workspace_server(agy)

    harness.kill()  # agy and the repository's server outlive it
    assert agy.is_running()
    assert server.is_running()
    workspace = harness.env["HARNESS_AGY_CLI_CWD"]
    forgot = subprocess.run(
        [str(CLI), "trust", "--forget", workspace],
        env={**os.environ, **harness.env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "the next session there asks you again" in forgot.stdout

    harness.start()
    refused = harness.turn("hello again")
    card = refused.until("response.elicitation_request")
    assert "No, exit" in json.dumps(card["params"])
    harness.press(card, "no")
    ended = refused.until("response.failed", timeout=60)
    assert "agy_workspace_not_trusted" in json.dumps(ended)
    wait_exited(agy)
    wait_exited(server)
    kept = state.read_record()
    assert kept is not None
    # Stopped, not forgotten: trusted again, agy goes on with the same conversation.
    assert kept.stopped_at is not None
    assert kept.cascade_id == record.cascade_id
