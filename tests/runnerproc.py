"""The harness in an OS process of its own, started, killed and started again as omnigent's
runner does it.

omnigent's `HarnessProcessManager` (omnigent/runtime/harnesses/process_manager.py) spawns, per
conversation, ``python -P -m omnigent.runtime.harnesses._runner --harness <id> --module
<harness_modules[id]> --socket <uds> --conversation-id <id> --parent-pid <pid>`` with its own
environment plus the spawn-env builder's, and waits until the socket answers. When that process
dies, the turn streaming from it fails on the runner's side (`proxy_stream`: an
`httpx.HTTPError` becomes ``response.failed`` with code ``connection_error``, "Harness stream
connection error: …"); nothing is respawned then. The next request for the conversation
(`get_client`) sees the exit code, drops the entry and spawns a fresh process on the same socket
path. `HarnessProcess` is that: `start` (spawn, wait for the socket), `kill` (SIGKILL, reaped),
`start` again; and, as a `HarnessSurface`, the runner's calls over the Unix socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from omnigent.community.harness.agy.plugin import APP_MODULE, HARNESS_ID
from simproc import end_process
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessSurface

RUNNER = "omnigent.runtime.harnesses._runner"
SPAWN_READY_SECONDS = 60.0


class HarnessProcess(HarnessSurface):
    """One conversation's harness process; every spawn logs to its own file in `log_dir`."""

    base_url = "http://harness"  # any host: the transport is the Unix socket

    def __init__(self, conversation_id: str, env: dict[str, str], log_dir: Path) -> None:
        super().__init__(conversation_id)
        self.env = env
        self.log_dir = log_dir
        # A Unix socket path has at most 107 bytes: a short private folder, not tmp_path.
        self._dir = Path(tempfile.mkdtemp(prefix="agy-h-"))
        self.socket = self._dir / "harness.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.spawns = 0

    def http(self, timeout: float) -> httpx.Client:
        transport = httpx.HTTPTransport(uds=str(self.socket))
        return httpx.Client(transport=transport, timeout=timeout)

    def start(self) -> HarnessProcess:
        """Spawn the runner's entry point and wait until its socket accepts a connection."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.socket.unlink(missing_ok=True)  # as the manager's endpoint cleanup does
        self.spawns += 1
        argv = [
            sys.executable,
            "-P",
            "-m",
            RUNNER,
            "--harness",
            HARNESS_ID,
            "--module",
            APP_MODULE,
            "--socket",
            str(self.socket),
            "--conversation-id",
            self.conversation_id,
            "--parent-pid",
            str(os.getpid()),
        ]
        log_path = self.log_dir / f"harness-{self.spawns}.log"
        env = {**os.environ, **self.env, "OMNIGENT_PROCESS_LOG_FILE": str(log_path)}
        with log_path.with_suffix(".out").open("wb") as out:
            self.process = subprocess.Popen(
                argv, env=env, cwd=self.env["HARNESS_AGY_CLI_CWD"], stdout=out, stderr=out
            )
        wait_until(self._accepts, timeout=SPAWN_READY_SECONDS, what="the harness to listen")
        return self

    def _accepts(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the harness exited with {self.process.returncode} at start")
        if not self.socket.exists():
            return False
        with socket.socket(socket.AF_UNIX) as probe:
            return probe.connect_ex(str(self.socket)) == 0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed; reaped before returning."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def terminate(self) -> None:
        """SIGTERM, as the runner's release sends it once it has closed its client (SIGKILL if
        the process lingers); reaped before returning, and `start` works again."""
        assert self.process is not None
        end_process(self.process, grace=20)

    def respawn(self) -> HarnessProcess:
        """Kill the process (if alive) and start a new one, as the runner's next request does."""
        if self.process is not None and self.process.poll() is None:
            self.kill()
        return self.start()

    def stop(self) -> None:
        """SIGTERM (the runner's release), SIGKILL if it lingers; the socket folder goes."""
        process = self.process
        if process is not None:
            end_process(process, grace=20)
        with contextlib.suppress(OSError):
            shutil.rmtree(self._dir)

    def logs(self) -> str:
        """Every spawn's log (and its stdout/stderr), for a failure message."""
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
            for path in sorted(self.log_dir.glob("harness-*"))
        )
