"""What a sweep costs, and what one kept agy-sim holds, as the number of kept agys grows.

Run: `.venv/bin/python benchmarks/bench_sweep.py [--quick]` (`--quick`: one agy). Starts
agy-sim processes in a private tmux server (stopped at the end, whatever happens), then
prints, per count of running agys, the time of a survey (`omnigent-agy ps`'s work) and of a
sweep that stops nothing, and the RSS `ps` reports for one agy. Asserts nothing about time:
every harness process sweeps at most every 10 minutes, so what matters is that a survey stays
well under a second per agy.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gemini_home import seeded_sim_gemini

from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.launcher import AgyLaunchSpec, launch_agy
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.sweep import survey, sweep
from omnigent_agy.agy.terminal import TerminalHost

AGY_SIM = Path(sys.executable).with_name("agy-sim")
COUNTS = (1, 4, 8)
ROUNDS = 5
POLICY = KeepPolicy(idle_stop_after=4 * 3600.0, max_kept=None)


async def _launch(terminals: TerminalHost, base: Path, root: Path, name: str) -> None:
    workspace = root / f"ws-{name}"
    workspace.mkdir()
    state = SessionStateDir.open(name, base=base)
    seeded_sim_gemini(state.gemini_dir, workspace)  # signed in, as a session seeds it (§1b)
    spec = AgyLaunchSpec(
        command=(str(AGY_SIM), "--sim-startup-delay", "0.3"),
        workspace=workspace,
        state_dir=state,
        ready_timeout=60.0,
    )
    agy = await launch_agy(terminals, spec, conversation_id=name)
    async with agy.client() as client:
        agy.bind_cascade(await client.start_cascade())


def _timed(action: object) -> float:
    assert callable(action)
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    terminals = TerminalHost(socket_name=f"agy-bench-sweep-{uuid.uuid4().hex[:8]}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        base = root / "state"
        try:
            print("agys  survey ms (median)  sweep ms (median)  rss MB per agy")
            launched = 0
            for count in (1,) if "--quick" in sys.argv else COUNTS:
                while launched < count:
                    asyncio.run(_launch(terminals, base, root, f"conv-{launched}"))
                    launched += 1
                surveys = [_timed(lambda: survey(POLICY, base)) for _ in range(ROUNDS)]
                sweeps = [_timed(lambda: sweep(POLICY, base)) for _ in range(ROUNDS)]
                rss = [s.rss for s in survey(POLICY, base) if s.rss is not None]
                print(
                    f"{count:4d}  {statistics.median(surveys) * 1000:18.0f}"
                    f"  {statistics.median(sweeps) * 1000:17.0f}"
                    f"  {statistics.median(rss) / 2**20:14.0f}"
                )
        finally:
            terminals.kill_server()
            _wait_gone(root)  # agy-sim writes in its gemini dir until it has exited


def _wait_gone(root: Path, timeout: float = 15.0) -> None:
    """Until no process started with a path under `root` runs (the folder can then go)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(str(root) in " ".join(p.info["cmdline"] or ()) for p in _processes()):
            return
        time.sleep(0.05)


def _processes() -> list[psutil.Process]:
    return list(psutil.process_iter(["cmdline"]))


if __name__ == "__main__":
    main()
