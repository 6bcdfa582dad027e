"""The probe's own agy, started the way the plugin starts agy for a conversation.

A scratch folder of the probe's (removed at the end) holds a workspace whose path has no dot
in it (agy drops a workspace in a hidden folder, docs/wire.md §9) and agy's private state: a
``--gemini_dir`` seeded from the person's own ``~/.gemini`` exactly as a conversation's is
(`agy.gemini_home`, docs/wire.md §1b), checked as agy will see it (`doctor.gemini_checks`),
and agy started by the plugin's launcher (a fresh CSRF token, ``--log-file``, tmux), on a tmux
server of the probe's own that goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from omnigent_agy.agy.gemini_home import seed_gemini_dir
from omnigent_agy.agy.launcher import AgyLaunchSpec, launch_agy
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.config.settings import AgyConfig
from omnigent_agy.doctor.checks import DoctorLine
from omnigent_agy.doctor.gemini_checks import check_gemini_dir, gemini_seed
from omnigent_agy.errors import ProbeError
from omnigent_agy.probe.facts import Finding
from omnigent_agy.probe.transport import check_tls
from omnigent_agy.rpc.agy_log import LogWatcher
from omnigent_agy.rpc.discovery import pin_if_ours
from omnigent_agy.rpc.pinning import Pin

__all__ = ["ProbeAgy", "Scratch", "Started"]

_README = (
    "# omnigent-agy probe\n\nA scratch workspace of `omnigent-agy probe`; it is removed when "
    "the probe ends.\n"
)


@dataclass(frozen=True, slots=True)
class Scratch:
    """The probe's folder: ``workspace/`` (agy's working folder) and ``state/`` (agy's
    private state, one folder per agy the probe starts)."""

    root: Path
    workspace: Path

    @classmethod
    def create(cls) -> Scratch:
        """A new private folder under the system's temporary folder (or /tmp when that one's
        path is hidden), with a workspace agy accepts."""
        base = Path(tempfile.gettempdir())
        if "/." in str(base.resolve()):
            base = Path("/tmp")  # noqa: S108 - only when the usual one is in a hidden folder
        root = Path(tempfile.mkdtemp(prefix="omnigent-agy-probe-", dir=base))
        workspace = root / "workspace"
        workspace.mkdir(mode=0o700)
        (root / "state").mkdir(mode=0o700)
        (workspace / "README.md").write_text(_README, encoding="utf-8")
        scratch = cls(root, workspace)
        if "/." in str(workspace) or "/." in str(workspace.resolve()):
            scratch.remove()
            raise ProbeError(
                f"the probe's workspace {workspace} is in a hidden folder, which agy ignores "
                "(docs/wire.md §9); set TMPDIR to a folder whose path has no '/.' in it"
            )
        return scratch

    def state(self, name: str) -> SessionStateDir:
        return SessionStateDir.open(name, base=self.root / "state")

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class Started:
    """An agy the probe started: the launcher's process and the certificate of its port."""

    agy: AgyProcess
    pin: Pin
    state: SessionStateDir


class ProbeAgy:
    """Starts and stops the probe's agys on a tmux server of its own."""

    def __init__(
        self,
        scratch: Scratch,
        *,
        command: tuple[str, ...],
        config: AgyConfig,
        env: Mapping[str, str],
        ready_timeout: float = 90.0,
    ) -> None:
        self.scratch = scratch
        self.command = command
        self._config = config
        self._env = dict(env)
        self._ready_timeout = ready_timeout
        self.terminals = TerminalHost(socket_name=f"omnigent-agy-probe-{os.getpid()}")
        self._running: list[AgyProcess] = []
        self.first_look: Finding | None = None
        """The TLS check on the port agy's log announced, made while agy starts: when the
        plugin's own client cannot talk to agy at all (say, HTTP/1.1 only), it says why."""

    def seed(self, state: SessionStateDir, workspace: Path | None = None) -> list[DoctorLine]:
        """Seed agy's private folder as a conversation's is (no omnigent tools: there is no
        omnigent here) and check it as agy will see it; `workspace`: another of the probe's
        own folders than its scratch workspace, as spelled."""
        # The probe's own empty scratch folder: nothing of a repository's is in it to trust
        # or not (docs/decisions.md §11), so it is trusted as the person's would be.
        folder = workspace or self.scratch.workspace
        seed = replace(gemini_seed(self._config, self._env), trusted_workspace=folder)
        seed_gemini_dir(state.gemini_dir, seed, fresh=True)
        return check_gemini_dir(state.gemini_dir, folder, self._env)

    async def start(
        self, name: str, *, extra_flags: tuple[str, ...] = (), workspace: Path | None = None
    ) -> Started:
        """agy started by the launcher in state folder `name` (seeded before), in `workspace`
        as spelled (the scratch workspace by default), ready: its port answers Heartbeat with
        the token (docs/wire.md §1)."""
        state = self.scratch.state(name)
        spec = AgyLaunchSpec(
            command=self.command,
            workspace=workspace or self.scratch.workspace,
            state_dir=state,
            extra_flags=extra_flags,
            env=self._env,
            ready_timeout=self._ready_timeout,
        )
        look = asyncio.create_task(self._look_early(state.log_file))
        try:
            agy = await launch_agy(self.terminals, spec, conversation_id=name)
        finally:
            look.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await look
        self._running.append(agy)
        pin = await pin_if_ours(agy.port, pid=agy.pid, log_file=agy.log_file)
        if pin is None:
            raise ProbeError(f"agy's port {agy.port} stopped being agy's right after it started")
        return Started(agy, pin, state)

    async def _look_early(self, log_file: Path) -> None:
        """Once agy's log names its port, a TLS handshake there (nothing is sent after it)."""
        watcher = LogWatcher(log_file)
        while (announced := watcher.poll()) is None:
            await asyncio.sleep(0.1)
        self.first_look = await check_tls(announced.port, None)

    async def stop(self, started: Started) -> None:
        await self._stop(started.agy)

    async def _stop(self, agy: AgyProcess) -> None:
        if agy in self._running:
            self._running.remove(agy)
        with contextlib.suppress(Exception):
            await agy.stop()

    async def close(self) -> None:
        """Stop every agy (and wait until it is gone: agy writes its folder as it stops) and
        the probe's tmux server."""
        for agy in list(self._running):
            await self._stop(agy)
        await asyncio.to_thread(self.terminals.kill_server)
