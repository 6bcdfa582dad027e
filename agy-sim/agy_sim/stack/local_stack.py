"""omnigent's real stack on loopback with omnigent-agy in it: what the demo and the e2e tests run.

`LocalStack` does, in a private folder, what a person does on their own machine (README,
"Installing into omnigent"): `omnigent-agy enable`, `omnigent server`, `omnigent agent add
"$(omnigent-agy agent-path)"`, `omnigent host`. Nothing of omnigent is stubbed: the server lists
the harness from the plugin's entry point, the host reports it ready, and the host's runner
spawns the harness process, which starts agy in a private tmux server.

Isolation: omnigent keeps its state under ``~/.omnigent`` (config, database, host identity), so
the stack runs with a HOME of its own, except with a real agy, whose sign-in is bound to the
person's HOME (docs/wire.md §1b): then HOME stays and ``OMNIGENT_CONFIG_HOME`` /
``OMNIGENT_DATA_DIR`` point into the private folder instead. Ports are
free ones picked at start; only 127.0.0.1 is ever used. Stopping the stack stops the host, the
server, the tmux server and every process left whose command line names the stack's folder or
tmux socket, wherever tmux put its socket (``TMUX_TMPDIR`` or not).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import httpx
import yaml

from .homes import (
    HARNESS_ID,
    Agy,
    HostHome,
    clean_environment,
    simulated_sign_in,
    write_model_catalog,
)
from .processes import BIN, kill_tmux, spawn, stop_process, sweep
from .rest import OmnigentClient

#: Quick simulator settings for tests; the demo uses slower, readable ones.
TEST_SIMULATOR = {
    "AGY_SIM_STARTUP_DELAY": "0.5",
    "AGY_SIM_TOKEN_DELAY": "0.005",
    # A long answer (120 parts) lasts a minute: long enough to press Stop in a browser on a
    # busy machine; every test that asks for one stops it.
    "AGY_SIM_LONG_TOKEN_DELAY": "0.5",
    "AGY_SIM_DEBUG_RPC": "1",
    # The agy people run now: its sub-agents ask in their own cascades (docs/wire.md §7).
    "AGY_SIM_VERSION": "1.5.16",
}
# Starting omnigent takes ~20 s for the server and as long for the host on a small machine.
SERVER_TIMEOUT = 120.0
HOST_TIMEOUT = 120.0

Progress = Callable[[str], None]
AGENT_EDITOR_FEATURE = "custom_agents_settings_ui"
#: agy as an agent of omnigent's generic ACP harness, with no plugin: the two lines a person
#: adds to ``~/.omnigent/config.yaml`` (``omnigent/onboarding/acp_auth.py``). ``agy`` is the
#: stack's agy, so agy-sim answers as ``agy-sim acp``. omnigent lists it as harness
#: ``acp:antigravity`` and seeds an agent named ``antigravity`` for it.
AGY_ACP_AGENT: Mapping[str, str] = {"name": "Antigravity", "command": "agy acp"}
AGY_ACP_HARNESS = "acp:antigravity"


@functools.cache
def agent_name() -> str:
    """The name of the shipped agent, as sessions are opened with: from the folder
    `omnigent-agy agent-path` prints, as a person finds it."""
    folder = subprocess.run(  # noqa: S603 - our own console script, no shell
        [str(BIN / "omnigent-agy"), "agent-path"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()
    spec = yaml.safe_load((Path(folder) / "config.yaml").read_text(encoding="utf-8"))
    return str(spec["name"])


class StackError(RuntimeError):
    """A part of the stack did not start; the message names the log to read."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LocalStack:
    """`omnigent server` + `omnigent host` on loopback with the plugin enabled and registered.

    Use it as a context manager; `start()` and `stop()` are there for callers that need the
    steps apart (the demo shows progress between them).
    """

    root: Path
    agy: Agy
    private_home: bool = True
    agy_on_path: bool = True
    progress: Progress = field(default=lambda message: None)
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    model_catalog: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """omnigent's model catalog as a host that reached it has it: provider → the catalog's
    JSON (MLflow's format), put in the private HOME's cache where omnigent looks first
    (``omnigent/onboarding/providers``). omnigent downloads it from the internet, which a
    stack on loopback cannot; without one omnigent knows no model's window or price."""
    host_env: Mapping[str, str] = field(default_factory=dict)
    """Variables every host (and so its harness processes) gets on top of its clean
    environment, which drops the caller's ``OMNIGENT_*`` ones (e.g. the timing log the
    scale benchmark reads)."""
    acp_agents: Sequence[Mapping[str, object]] = ()
    """Agents for omnigent's generic ACP harness (the ``acp: {agents: [...]}`` block of every
    host's config, which the server reads too), e.g. ``AGY_ACP_AGENT``."""
    runner_idle_timeout_s: float | None = None
    """omnigent's ``runner.idle_timeout_s`` in every host's config: a session's runner (and
    its harness process) ends after that long with no work and comes back at its next
    message. ``None`` keeps omnigent's hour."""
    port: int = 0
    server: subprocess.Popen[bytes] | None = None
    hosts: list[HostHome] = field(default_factory=list)
    _token: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- layout ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def main(self) -> HostHome:
        """The first host, whose HOME the server shares."""
        return self.hosts[0]

    @property
    def client(self) -> OmnigentClient:
        return OmnigentClient(self.url)

    def home_for(self, name: str, *, agy_on_path: bool) -> HostHome:
        """A HOME (and config) for a host named `name`, with `self.agy` on its PATH or in
        its ``harness.agy-cli.command``."""
        root = self.root / name
        home = root / "home" if self.private_home else Path(self.base_env.get("HOME", "~"))
        env = clean_environment(self.base_env)
        env.update(
            {
                "HOME": str(home.expanduser()),
                "OMNIGENT_CONFIG_HOME": str(root / "home" / ".omnigent"),
                "OMNIGENT_DATA_DIR": str(root / "home" / ".omnigent"),
                # The host and the harness must not open a browser, even where one exists.
                "BROWSER": "true",
            }
        )
        env.update(self.host_env)
        path = [str(BIN), env.get("PATH", os.defpath)]
        if agy_on_path:
            path.insert(0, str(self.agy.path.parent))
        env["PATH"] = os.pathsep.join(path)
        socket_name = f"omnigent-agy-{name}-{self._token}"
        config = Path(env["OMNIGENT_CONFIG_HOME"]) / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        # Each host its own name (`host.name`; its id is generated): the server lists one host
        # per name, so two hosts named after this machine would hide each other.
        lines = ["host:", f"  name: omnigent-agy-{name}"]
        if self.acp_agents:
            block = {"acp": {"agents": [dict(agent) for agent in self.acp_agents]}}
            lines += yaml.safe_dump(block, sort_keys=False).splitlines()
        if self.runner_idle_timeout_s is not None:
            lines += ["runner:", f"  idle_timeout_s: {self.runner_idle_timeout_s}"]
        # The plugin's block last: a test adds its own keys to it by appending lines.
        lines += ["harness:", f"  {HARNESS_ID}:", f"    tmux_socket: {socket_name}"]
        # The stack made its workspace, and the private HOME the web's new-session page
        # starts sessions in, so its operator trusts them (docs/configuration.md, "Which
        # folders agy may work in"); any other folder (a person's own HOME too) is asked about.
        trusted = [str(self.workspace), *([str(home)] if self.private_home else [])]
        lines.append(f"    trusted_workspaces: {json.dumps(trusted)}")
        if not agy_on_path:
            lines.append(f"    command: {self.agy.path}")
        config.write_text("\n".join(lines) + "\n")
        if self.private_home:
            simulated_sign_in(home / ".gemini")
            env["XDG_CACHE_HOME"] = str(home / ".cache")
            write_model_catalog(home / ".cache", self.model_catalog)
        return HostHome(name, root, env, socket_name)

    # -- life --------------------------------------------------------------------------

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.workspace.mkdir(exist_ok=True)
        main = self.home_for("main", agy_on_path=self.agy_on_path)
        self.hosts.append(main)
        self.progress("enabling the plugin: omnigent-agy enable")
        self.run(main, ["omnigent-agy", "enable"])
        self.start_server()
        self.progress("registering the agent: omnigent agent add $(omnigent-agy agent-path)")
        agent_folder = self.run(main, ["omnigent-agy", "agent-path"]).strip()
        self.run(main, ["omnigent", "agent", "add", agent_folder, "--server", self.url])
        self.start_host(main)

    def start_server(self) -> None:
        main = self.main
        self.port = free_port()
        self.progress(f"starting omnigent server on {self.url} (about 20 s)")
        argv = ["omnigent", "server", "--host", "127.0.0.1", "--port", str(self.port)]
        # omnigent 0.19 shows its agent editor (Settings → Custom agents, where the Harness
        # dropdown offers "Antigravity CLI") only with this opt-in feature of its server.
        env = {**main.env, "OMNIGENT_FEATURES": AGENT_EDITOR_FEATURE}
        self.server = spawn([*argv, "--no-open"], env, self.root / "server.log")
        self._wait(
            lambda: self.client.health() or None,
            "omnigent server to answer /health",
            SERVER_TIMEOUT,
            self.root / "server.log",
            self.server,
        )

    def start_host(self, host: HostHome) -> str:
        """Start `omnigent host` for `host` and return its host id once it is online."""
        self.progress(f"starting omnigent host {host.name!r} (about 20 s)")
        argv = ["omnigent", "host", "--server", self.url, "--no-open", "--non-interactive"]
        before = {h["host_id"] for h in self.client.hosts()}
        host.process = spawn(argv, host.env, host.log)

        def online() -> str | None:
            for listed in self.client.hosts():
                fresh = listed["host_id"] not in before or listed["host_id"] == host.host_id
                if fresh and listed.get("status") == "online":
                    return str(listed["host_id"])
            return None

        host.host_id = self._wait(
            online, f"host {host.name!r} to come online", HOST_TIMEOUT, host.log, host.process
        )
        return host.host_id

    def wait_ready(self, host: HostHome, timeout: float = 60.0) -> str:
        """`host`'s id once the server lists it with the agy-cli harness ready; a StackError
        naming the host's log if it is not (no agy found there, plugin disabled, ...)."""

        def ready() -> str | None:
            for listed in self.client.hosts():
                configured = listed.get("configured_harnesses") or {}
                if listed["host_id"] == host.host_id and configured.get(HARNESS_ID) is True:
                    return str(listed["host_id"])
            return None

        what = f"host {host.name!r} to report the {HARNESS_ID} harness ready"
        return self._wait(ready, what, timeout, host.log, host.process)

    def add_host(self, name: str, *, agy_on_path: bool) -> HostHome:
        """A second host with a HOME of its own (another machine, as far as omnigent knows)."""
        host = self.home_for(name, agy_on_path=agy_on_path)
        self.hosts.append(host)
        self.run(host, ["omnigent-agy", "enable"])
        self.start_host(host)
        return host

    def stop_host(self, host: HostHome) -> None:
        """Stop `host`'s `omnigent host` and the runners it started (its process group); its
        tmux server and agys go when the stack stops."""
        stop_process(host.process)

    def restart(self, *, enabled: bool = True) -> None:
        """`omnigent-agy enable|disable`, then restart the server and the hosts running now,
        as the README tells a person to (a host a test stopped stays stopped)."""
        running = [h for h in self.hosts if h.process is not None and h.process.poll() is None]
        for host in running:
            self.run(host, ["omnigent-agy", "enable" if enabled else "disable"])
            stop_process(host.process)
        stop_process(self.server)
        self.start_server()
        for host in running:
            self.start_host(host)

    def stop(self) -> None:
        """Stop everything the stack started; safe to call twice and after a failed start."""
        for host in reversed(self.hosts):
            stop_process(host.process)
        stop_process(self.server)
        for host in self.hosts:
            kill_tmux(host.tmux_socket, host.env)
        sweep([str(self.root), *(host.tmux_socket for host in self.hosts)])

    # -- helpers -----------------------------------------------------------------------

    def run(self, host: HostHome, argv: list[str]) -> str:
        """Run one of the venv's commands as a person would in `host`'s shell; its output."""
        command = [str(BIN / argv[0]), *argv[1:]]
        done = subprocess.run(  # noqa: S603 - our own console scripts, no shell
            command, env=host.env, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise StackError(
                f"`{' '.join(argv)}` failed ({done.returncode}): {done.stderr.strip()}"
            )
        return done.stdout

    def _wait[T](
        self,
        probe: Callable[[], T | None],
        what: str,
        timeout: float,
        log: Path,
        process: subprocess.Popen[bytes] | None,
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            if process is not None and process.poll() is not None:
                raise StackError(f"{what}: it exited with {process.returncode}; see {log}")
            with contextlib.suppress(httpx.HTTPError):
                found = probe()
                if found is not None:
                    return found
            if time.monotonic() > deadline:
                raise StackError(f"timed out after {timeout:.0f} s waiting for {what}; see {log}")
            time.sleep(0.25)
