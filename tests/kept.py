"""agys launched as a harness launches them, for the tests of what keeps them and who watches
them (tests/agy/test_sweep.py, tests/agy/test_tmux_attach.py): agy-sim in a private tmux server,
each conversation's state under one base, its gemini dir seeded as a session seeds it."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import psutil
from gemini_home import seeded_sim_gemini
from simproc import AGY_SIM, FAST

from omnigent_agy.agy import deletion_watch
from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.launcher import AgyLaunchSpec, ensure_agy
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.sweep import AgyStatus, survey
from omnigent_agy.agy.terminal import TerminalHost


class Agys:
    """Launches agy-sim for conversations under one state base and tmux socket."""

    def __init__(self, tmp_path: Path) -> None:
        self.base = tmp_path / "state"
        self.tmp = tmp_path
        self.terminals = TerminalHost(socket_name=f"agy-kept-{uuid.uuid4().hex[:10]}")

    def launch(self, conversation: str, *flags: str, workspace: Path | None = None) -> AgyProcess:
        """agy for `conversation`, its cascade bound; again on that cascade when an earlier
        agy of the conversation was stopped (`launcher.ensure_agy`)."""
        if workspace is None:
            workspace = self.tmp / f"ws-{conversation}"
            workspace.mkdir(exist_ok=True)
        state = SessionStateDir.open(conversation, base=self.base)
        seeded_sim_gemini(state.gemini_dir, workspace)  # as a session seeds it (docs/wire.md §1b)
        spec = AgyLaunchSpec(
            command=(str(AGY_SIM), *FAST, *flags),
            workspace=workspace,
            state_dir=state,
            ready_timeout=30.0,
        )

        async def go() -> AgyProcess:
            agy = await ensure_agy(self.terminals, spec, conversation_id=conversation)
            if agy.cascade_id is None:
                async with agy.client() as client:
                    agy.bind_cascade(await client.start_cascade())
            return agy

        return asyncio.run(go())

    def status(self, policy: KeepPolicy, key: str) -> AgyStatus | None:
        return next((s for s in survey(policy, self.base) if s.running.key == key), None)


def deletion_watches(state: Path) -> list[psutil.Process]:
    """The deletion watches of the conversation `state` running now: the shell waiting for its
    harness process to end, then the Python it starts (omnigent_agy/agy/deletion_watch.py);
    both name the module and the folder."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if deletion_watch.__name__ in cmdline and str(state) in cmdline:
            found.append(process)
    return found
