"""agy-sim as a separate process in a private tmux server, for the integration tests.

Shared by every test that needs a running simulator: `SimLauncher` starts `agy-sim` processes
in panes of a tmux server on a unique socket and stops them all; `Sim` is one of them (its
log, port, screen, fault control file). The pytest fixtures live in conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libtmux
import psutil
from gemini_home import make_person_gemini
from waiting import wait_until

from omnigent_agy.rpc.client import RpcClient

AGY_SIM = Path(sys.executable).with_name("agy-sim")
STARTING = re.compile(r"Starting language server process with pid (\d+)")
LISTENING = re.compile(r"Language server listening on random port at (\d+) for HTTPS \(gRPC\)")
TOKEN = "tmux-test-token-0123456789"
FAST = ["--sim-startup-delay", "0.3", "--sim-token-delay", "0.005"]


def harness_env(tmp_path: Path, socket_name: str) -> dict[str, str]:
    """The environment a runner would give a harness process, pointed at agy-sim: config,
    state and a workspace (with a README) under ``tmp_path``, agy in tmux server ``socket_name``.
    """
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "README.md").write_text("# demo project\n")
    return {
        "OMNIGENT_CONFIG_HOME": str(tmp_path / "omnigent"),
        "OMNIGENT_AGY_CLI_PATH": str(AGY_SIM),
        "OMNIGENT_AGY_STATE_DIR": str(tmp_path / "state"),
        "OMNIGENT_AGY_TMUX_SOCKET": socket_name,
        "HARNESS_AGY_CLI_CWD": str(workspace),
        # The operator trusts the test's own workspace; trust tests use another one.
        "OMNIGENT_AGY_TRUSTED_WORKSPACES": str(workspace),
        "AGY_SIM_STARTUP_DELAY": "0.3",
        "AGY_SIM_TOKEN_DELAY": "0.005",
    }


def end_process(process: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """SIGTERM a process this test started (if it still runs), SIGKILL it if it outlives
    `grace` seconds, and reap it."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def exited(process: psutil.Process) -> bool:
    """Whether ``process`` has exited. A zombie its parent (agy's: its tmux server) has not
    reaped yet counts: it holds no memory, port or file, only its exit status."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_exited(process: psutil.Process, timeout: float = 15.0) -> None:
    """Until ``process`` has exited (:func:`exited`)."""
    wait_until(lambda: exited(process), timeout=timeout, what=f"process {process.pid} to exit")


@dataclass
class Sim:
    """One agy-sim process running in a tmux pane."""

    pane: libtmux.Pane
    log: Path
    workspace: Path
    faults: Path
    gemini_dir: Path
    token: str | None = TOKEN

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8") if self.log.exists() else ""

    @property
    def pid(self) -> int:
        match = wait_until(
            lambda: STARTING.search(self.log_text()), timeout=20, what="the pid line"
        )
        return int(match.group(1))

    def ports_logged(self) -> list[int]:
        return [int(port) for port in LISTENING.findall(self.log_text())]

    @property
    def port(self) -> int:
        """The TLS port of the latest listening line (discovery from the log file)."""
        return wait_until(
            lambda: (self.ports_logged() or [None])[-1], timeout=20, what="the listening line"
        )

    def screen(self) -> str:
        return "\n".join(self.pane.capture_pane(start=-3000) or [])

    def wait_screen(self, text: str, timeout: float = 20.0) -> str:
        return wait_until(
            lambda: text in self.screen() and self.screen(),
            timeout=timeout,
            what=f"{text!r} on screen",
        )

    def type(self, line: str, *, enter: bool = True) -> None:
        self.pane.send_keys(line, enter=enter, literal=True)

    def set_faults(
        self, *faults: dict[str, Any], restart: int = 0, restart_pause: float = 0.0
    ) -> None:
        tmp = self.faults.with_suffix(".tmp")
        plan = {"restart": restart, "restart_pause": restart_pause, "faults": list(faults)}
        tmp.write_text(json.dumps(plan))
        tmp.replace(self.faults)  # atomic: the process never reads half a file

    def clear_faults(self) -> None:
        """No faults, and no pending restart beyond those already done."""
        self.set_faults(restart=max(0, len(self.ports_logged()) - 1))

    def client(self) -> RpcClient:
        return RpcClient(port=self.port, csrf_token=self.token or "")

    def rpc[T](self, scenario: Callable[[RpcClient], Awaitable[T]], *, token: str = TOKEN) -> T:
        async def main() -> T:
            async with RpcClient(port=self.port, csrf_token=token) as client:
                result = await scenario(client)
                assert client.http_version in (None, "HTTP/2")
                return result

        return asyncio.run(main())

    def stop(self, signum: signal.Signals = signal.SIGTERM) -> None:
        try:
            process = psutil.Process(self.pid)
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            return
        wait_exited(process)


class SimLauncher:
    """Starts agy-sim processes in panes of a private tmux server and stops them all."""

    def __init__(self, tmux: libtmux.Server, root: Path) -> None:
        self.tmux = tmux
        self.root = root
        self.sims: list[Sim] = []

    def launch(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        survey: bool = False,
        token: str | None = TOKEN,
        wait_ready: bool = True,
        signed_in: bool = True,
        trusted: bool | list[str] = True,
        workspace: Path | None = None,
        **gemini: Any,
    ) -> Sim:
        """`workspace`: the folder agy-sim starts in, as spelled (PWD names it, as agy's
        launcher sets it); a new folder of its own by default. `trusted`: the workspace's
        spelling in trustedWorkspaces (True), nothing (False), or these entries."""
        home = self.root / f"sim{len(self.sims)}"
        gemini_dir = home / "gemini"
        # Private, as the plugin's state folder is: tools that read agy's log (omnigent's own
        # agy client) trust a log only in a folder nobody else can write.
        home.mkdir(mode=0o700, parents=True)
        if workspace is None:
            workspace = home / "workspace"
            workspace.mkdir()
            (workspace / "README.md").write_text("# a project\n")
        # As the plugin seeds it (docs/wire.md §1b): signed in, the workspace trusted, and the
        # survey off (it swallows typed input, docs/wire.md §1).
        settings: dict[str, Any] = {} if survey else {"showFeedbackSurvey": False}
        if trusted:
            listed = [str(workspace)] if trusted is True else trusted
            settings["trustedWorkspaces"] = listed
        make_person_gemini(
            gemini_dir, signed_in=signed_in, onboarded=signed_in, settings=settings, **gemini
        )
        sim = Sim(
            pane=None,  # type: ignore[arg-type]
            log=home / "agy.log",
            workspace=workspace,
            faults=home / "faults.json",
            gemini_dir=gemini_dir,
            token=token,
        )
        argv = [str(AGY_SIM)]
        if token is not None:
            argv.append(f"--csrf_token={token}")
        argv += ["--log-file", str(sim.log), "--gemini_dir", str(gemini_dir)]
        argv += ["--sim-faults", str(sim.faults), *args]
        session = self.tmux.new_session(
            session_name=f"sim{len(self.sims)}",
            window_command=shlex.join(argv),
            start_directory=str(workspace),
            environment={"PWD": str(workspace), **(env or {})},
            x=220,
            y=60,
        )
        session.set_option("remain-on-exit", "on", global_=True)
        sim.pane = session.active_pane  # type: ignore[assignment]
        self.sims.append(sim)
        if wait_ready:
            sim.wait_screen("[ready")
        return sim

    def stop_all(self) -> None:
        for sim in self.sims:
            if STARTING.search(sim.log_text()):
                sim.stop()


@contextlib.contextmanager
def sim_launcher(root: Path, prefix: str = "agy-sim-test") -> Iterator[SimLauncher]:
    """A tmux server on a socket of its own; its processes, server and socket go at the end."""
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    tmux = libtmux.Server(socket_name=name)
    launcher = SimLauncher(tmux, root)
    try:
        yield launcher
    finally:
        try:
            launcher.stop_all()
        finally:
            with contextlib.suppress(Exception):
                tmux.kill()
            tmp = Path(os.environ.get("TMUX_TMPDIR", "/tmp"))
            (tmp / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)


async def plan_model(client: RpcClient) -> str:
    """The enum of the catalog's default model (what a turn must name, docs/wire.md §3)."""
    response = (await client.get_available_models())["response"]
    return str(response["models"][response["defaultAgentModelId"]]["model"])
