"""agy-sim, a separate process over real TLS, works where agy works (docs/wire.md §9, public
reports modelled, not recordings): a workspace inside a hidden folder is dropped for the scratch
folder, a dot-free link to it works, trust is per exact spelling, and a trusted workspace's
``.agents/mcp_config.json`` starts its own MCP servers — only once it is trusted."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from simproc import FAST, Sim, SimLauncher, end_process, sim_launcher
from test_sim_gemini_dir import send
from waiting import wait_until

pytestmark = pytest.mark.tmux

ECHO_SCRIPT = Path(__file__).parents[1] / "_mcp_echo.py"
MARKER = "started-by-the-workspace"
HIDDEN_LINE = "is hidden: ignore uri"


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def repository(folder: Path, servers: dict[str, object] | None = None) -> Path:
    """A cloned repository whose own MCP server creates `MARKER` in it when it starts."""
    (folder / ".agents").mkdir(parents=True)
    command = f"touch {MARKER}; exec {sys.executable} {ECHO_SCRIPT}"
    servers = servers or {"tools": {"command": "sh", "args": ["-c", command]}}
    (folder / ".agents" / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    (folder / "README.md").write_text("# cloned\n")
    return folder


def touched(sim: Sim, name: str) -> None:
    """agy runs `touch NAME` (allowed in its terminal) and finishes its turn."""
    sim.type(f"run: touch {name}")
    sim.wait_screen(f"permission to run: touch {name}")
    sim.type("/allow")
    sim.wait_screen(f"`touch {name}` finished with exit code 0")


# -- hidden folders ----------------------------------------------------------------------------


def test_a_hidden_workspace_is_dropped_for_the_scratch_folder(
    sims: SimLauncher, tmp_path: Path
) -> None:
    worktree = repository(tmp_path / "repo" / ".worktrees" / "feature")
    sim = sims.launch(*FAST, workspace=worktree)
    touched(sim, "made-by-agy.txt")
    scratch = sim.gemini_dir / "antigravity-cli" / "scratch"
    assert (scratch / "made-by-agy.txt").is_file()  # agy's write went to its own folder
    assert not (worktree / "made-by-agy.txt").exists()  # and nothing of the person's changed
    assert f"failed to add project resource folder {worktree.as_uri()}" in sim.log_text()
    assert HIDDEN_LINE in sim.log_text()
    assert not (worktree / MARKER).exists()  # the dropped folder's servers never start


def test_a_dot_free_link_to_it_works(sims: SimLauncher, tmp_path: Path) -> None:
    worktree = repository(tmp_path / "repo" / ".worktrees" / "feature")
    link = tmp_path / "links" / "feature"
    link.parent.mkdir()
    link.symlink_to(worktree, target_is_directory=True)
    sim = sims.launch(*FAST, workspace=link)
    touched(sim, "made-by-agy.txt")
    assert (worktree / "made-by-agy.txt").is_file()
    assert HIDDEN_LINE not in sim.log_text()
    sim.type("run: pwd")
    sim.wait_screen("permission to run: pwd")
    sim.type("/allow")
    sim.wait_screen(f"{link}\n")  # agy's working folder is the link as spelled


def test_an_agy_that_resolves_links_drops_the_link_too(sims: SimLauncher, tmp_path: Path) -> None:
    """--sim-resolve-workspace-links: an agy testing the folder behind the link (none is
    known to) drops it as it drops the hidden folder, naming the link it was given."""
    worktree = repository(tmp_path / "repo" / ".worktrees" / "feature")
    link = tmp_path / "links" / "feature"
    link.parent.mkdir()
    link.symlink_to(worktree, target_is_directory=True)
    sim = sims.launch(*FAST, "--sim-resolve-workspace-links", workspace=link)
    touched(sim, "made-by-agy.txt")
    assert (sim.gemini_dir / "antigravity-cli" / "scratch" / "made-by-agy.txt").is_file()
    assert not (worktree / "made-by-agy.txt").exists()
    assert f"failed to add project resource folder {link.as_uri()}" in sim.log_text()
    assert HIDDEN_LINE in sim.log_text()


# -- trust, per exact spelling ------------------------------------------------------------------


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param("parent", id="a trusted parent does not cover its child"),
        pytest.param("target", id="the folder a link names is another spelling"),
    ],
)
def test_trust_is_the_exact_spelling(sims: SimLauncher, tmp_path: Path, listed: str) -> None:
    project = repository(tmp_path / "src" / "project")
    link = tmp_path / "shortcut"
    link.symlink_to(project, target_is_directory=True)
    started_in, trusted = (
        (project, [str(project.parent)]) if listed == "parent" else (link, [str(project)])
    )
    sim = sims.launch(*FAST, workspace=started_in, trusted=trusted)
    sim.wait_screen("Do you trust the contents of this project?")
    assert send(sim, "hello").startswith("failed_precondition")
    assert not (project / MARKER).exists()


# -- a workspace's own MCP servers ---------------------------------------------------------------


def test_an_untrusted_workspaces_servers_start_only_once_it_is_trusted(
    sims: SimLauncher, tmp_path: Path
) -> None:
    clone = repository(tmp_path / "clone")
    sim = sims.launch(*FAST, workspace=clone, trusted=False)
    sim.wait_screen(f"Accessing workspace: {clone}")
    sim.wait_screen("Antigravity CLI requires permission to read, edit, and execute files here.")
    sim.wait_screen("1. Yes, I trust this folder")
    refused = send(sim, "hello")
    assert "Do you trust the contents of this project?" in refused
    assert not (clone / MARKER).exists()
    sim.type("1")
    sim.wait_screen("[trusted]")
    sim.wait_screen("[mcp] tools: 1 tools (shout)")
    assert (clone / MARKER).exists()
    assert send(sim, 'use tools/shout {"text": "from the repo"}') == ""


def test_no_exit_starts_nothing(sims: SimLauncher, tmp_path: Path) -> None:
    clone = repository(tmp_path / "clone")
    sim = sims.launch(*FAST, workspace=clone, trusted=False)
    sim.wait_screen("2. No, exit")
    sim.type("2")
    wait_until(lambda: "[not trusted] exiting" in sim.screen(), timeout=20, what="agy-sim to exit")
    wait_until(lambda: "agy-sim stopped" in sim.log_text(), timeout=20, what="agy-sim's last line")
    assert not (clone / MARKER).exists()


def test_a_trusted_workspaces_servers_start_and_the_persons_win_a_name(
    sims: SimLauncher, tmp_path: Path
) -> None:
    clone = repository(tmp_path / "clone")
    person_echo = {"command": sys.executable, "args": [str(ECHO_SCRIPT)]}
    sim = sims.launch(*FAST, workspace=clone, mcp_servers={"echo": person_echo})
    sim.wait_screen("[mcp] echo: 1 tools (shout)")
    sim.wait_screen("[mcp] tools: 1 tools (shout)")
    assert (clone / MARKER).exists()
    sim.type('use tools/shout {"text": "hi"}')
    sim.wait_screen("permission to run: tools/shout")
    sim.type("/allow")
    sim.wait_screen("tools/shout answered: HI")

    clash = repository(tmp_path / "clash", {"echo": {"command": "sh", "args": ["-c", "exit 3"]}})
    other = sims.launch(*FAST, workspace=clash, mcp_servers={"echo": person_echo})
    other.wait_screen("[mcp] echo: not started (a server of that name runs already)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def remote_echo() -> Iterator[str]:
    """The echo server over MCP's streamable HTTP on loopback; its URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, str(ECHO_SCRIPT), "--http", str(port)])
    try:

        def listening() -> bool:
            with socket.socket() as client:
                return client.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, timeout=20, what="the remote MCP server to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        end_process(server)


def test_a_remote_server_is_reached_by_its_url(
    sims: SimLauncher, tmp_path: Path, remote_echo: str
) -> None:
    servers = {
        "remote": {"serverUrl": remote_echo},
        "faraway": {"serverUrl": "https://mcp.example.com/mcp"},
    }
    clone = repository(tmp_path / "clone", servers)
    sim = sims.launch(*FAST, workspace=clone)
    sim.wait_screen("[mcp] remote: 1 tools (shout)")
    sim.wait_screen("[mcp] faraway: not started (ValueError: agy-sim connects only to MCP")
    sim.type('use remote/shout {"text": "over http"}')
    sim.wait_screen("permission to run: remote/shout")
    sim.type("/allow")
    sim.wait_screen("remote/shout answered: OVER HTTP")
