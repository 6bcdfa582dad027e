"""The plugin inside the real omnigent stack: `omnigent server` + `omnigent host` on loopback.

Nothing of omnigent is stubbed: the server validates the agent and lists the harness from the
plugin's entry point, the host reports it ready (`agy` on PATH), the runner spawns the harness
process through the plugin's spawn-env builder and `create_app()`, and the web UI's calls
(create a session, send a message, resolve a card) drive agy-sim, which the host finds as `agy`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import omnigent.community.harness.agy as adapter
import pytest
from simproc import wait_for

from omnigent_agy.agy.terminal import TerminalHost

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

BIN = Path(sys.executable).parent
AGENT_YAML = "agy-cli.yaml"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def poll[T](probe: Callable[[], T | None], what: str, timeout: float) -> T:
    """`simproc.wait_for`, counting an HTTP error (a server still starting) as not yet."""

    def tolerant() -> T | None:
        try:
            return probe()
        except httpx.HTTPError:
            return None

    return wait_for(tolerant, what, timeout)


@dataclass
class Stack:
    url: str
    home: Path
    workspace: Path
    tmux_socket: str

    def get(self, path: str) -> Any:
        reply = httpx.get(f"{self.url}{path}", timeout=30)
        reply.raise_for_status()
        return reply.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        reply = httpx.post(f"{self.url}{path}", json=body, timeout=30)
        assert reply.status_code < 300, f"{path}: {reply.status_code} {reply.text}"
        return reply.json() if reply.content else None

    def session(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.get(f"/v1/sessions/{session_id}")
        return result

    def say(self, session_id: str, text: str) -> None:
        content = [{"type": "input_text", "text": text}]
        self.post(
            f"/v1/sessions/{session_id}/events",
            {"type": "message", "data": {"role": "user", "content": content}},
        )

    def idle_with(self, session_id: str, count: int, timeout: float = 60) -> dict[str, Any]:
        """The session once it is idle with at least `count` items."""

        def settled() -> dict[str, Any] | None:
            state = self.session(session_id)
            done = state["status"] == "idle" and len(state["items"]) >= count
            return state if done else None

        return poll(settled, f"session {session_id} to settle", timeout)


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("stack")
    home, bin_dir, workspace = root / "home", root / "bin", root / "workspace"
    for folder in (home / ".omnigent", bin_dir, workspace):
        folder.mkdir(parents=True)
    (workspace / "README.md").write_text("# a project\n")
    tmux_socket = f"agy-e2e-{uuid.uuid4().hex[:10]}"
    (home / ".omnigent" / "config.yaml").write_text(
        f"harness:\n  agy-cli:\n    enabled: true\n    tmux_socket: {tmux_socket}\n"
    )
    # The host finds agy on PATH (the core "gemini" install key): here it is the simulator.
    agy = bin_dir / "agy"
    agy.write_text(
        "#!/bin/sh\nAGY_SIM_STARTUP_DELAY=0.5 AGY_SIM_TOKEN_DELAY=0.005 "
        f'exec {BIN / "agy-sim"} "$@"\n'
    )
    agy.chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OMNIGENT_", "HARNESS_", "AGY_SIM_"))
    }
    env.update({"HOME": str(home), "PATH": f"{bin_dir}:{BIN}:{env.get('PATH', '')}"})
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    agent_yaml = Path(adapter.__file__).with_name(AGENT_YAML)
    server = _start(
        [
            str(BIN / "omnigent"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-open",
            "--agent",
            str(agent_yaml),
        ],
        env,
        root / "server.log",
    )
    host: subprocess.Popen[bytes] | None = None
    try:
        poll(lambda: httpx.get(f"{url}/health", timeout=5).status_code == 200, "server", 120)
        host = _start(
            [str(BIN / "omnigent"), "host", "--server", url, "--no-open", "--non-interactive"],
            env,
            root / "host.log",
        )
        yield Stack(url, home, workspace, tmux_socket)
    finally:
        if host is not None:
            _stop(host)
        _stop(server)
        TerminalHost(socket_name=tmux_socket).kill_server()


def ready_host(stack: Stack) -> str:
    def online() -> str | None:
        for host in stack.get("/v1/hosts")["hosts"]:
            if host["status"] == "online" and host["configured_harnesses"].get("agy-cli") is True:
                return str(host["host_id"])
        return None

    return poll(online, "the host to report agy-cli ready", 120)


def new_session(stack: Stack) -> str:
    agents = stack.get("/v1/agents")["data"]
    agent = next(a for a in agents if a["name"] == "agy-cli")
    created = stack.post(
        "/v1/sessions",
        {"agent_id": agent["id"], "host_id": ready_host(stack), "workspace": str(stack.workspace)},
    )
    return str(created["id"])


def test_the_server_lists_the_harness_under_its_label(stack: Stack) -> None:
    harnesses = stack.get("/v1/harnesses")
    listed = harnesses if isinstance(harnesses, list) else harnesses.get("data", [])
    ours = [h for h in listed if h.get("id") == "agy-cli"]
    assert ours, "agy-cli is not in GET /v1/harnesses"
    assert ours[0]["label"] == "Antigravity CLI"


def test_a_turn_with_a_tool_and_an_approved_command(stack: Stack) -> None:
    session = new_session(stack)
    stack.say(session, "Say hello and list the files here")
    state = stack.idle_with(session, 4)
    kinds = [item["type"] for item in state["items"]]
    assert kinds[0] == "message"
    assert "function_call" in kinds
    outputs = [i["data"]["output"] for i in state["items"] if i["type"] == "function_call_output"]
    assert any("README.md" in output for output in outputs)
    assert state["items"][-1]["data"]["role"] == "assistant"

    stack.say(session, "Please run: echo hi from the stack")
    card = poll(
        lambda: (stack.session(session).get("pending_elicitations") or [None])[0],
        "the approval card",
        60,
    )
    choices = card["params"]["requestedSchema"]["properties"]["answer"]["enum"]
    assert "Deny" in choices
    stack.post(
        f"/v1/sessions/{session}/elicitations/{card['elicitation_id']}/resolve",
        {"action": "accept", "content": {"answer": "Allow once"}},
    )
    state = stack.idle_with(session, 8)
    outputs = [i["data"]["output"] for i in state["items"] if i["type"] == "function_call_output"]
    assert "hi from the stack\n" in outputs
    assert state["last_total_tokens"], "the context ring got no token count"
