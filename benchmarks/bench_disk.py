"""What one conversation leaves on disk as its turns add up.

Run: `.venv/bin/python benchmarks/bench_disk.py [--quick]` (`--quick`: 20 turns). Drives one
conversation through the plugin's own session (`AgySession`, as the harness does) against
agy-sim in a private tmux server, then prints the private state folder's disk use after 1, 10,
100 and 1,000 turns (allocated blocks, as `omnigent-agy ps` counts them), split into agy's
own folder (its sign-in copy, settings, its store of the conversation), agy's log, and the
plugin's own files (record, cursor, lease, ledger, model choice). Everything it started is
stopped and removed at the end. agy-sim's store and log are the simulator's, not agy's: the
plugin's own files are the figures this measures for real.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gemini_home import make_person_gemini

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.retention import disk_usage, size
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.session.agy_session import AgySession, SessionSettings
from omnigent_agy.session.turn import Turn

AGY_SIM = Path(sys.executable).with_name("agy-sim")
FAST = ("--sim-startup-delay", "0.3", "--sim-token-delay", "0")
MARKS = (1, 10, 100, 1000)
QUICK_MARKS = (1, 5, 20)


def _parts(state: Path) -> dict[str, int]:
    gemini = disk_usage(state / "gemini")
    log = sum(
        disk_usage(p) if p.is_dir() else p.stat().st_blocks * 512 for p in state.glob("*.log")
    )
    total = disk_usage(state)
    return {"agy's folder": gemini, "agy's log": log, "plugin's files": total - gemini - log}


async def _drive(session: AgySession, state: Path, marks: tuple[int, ...]) -> list[str]:
    rows: list[str] = []
    done = 0
    for mark in marks:
        while done < mark:
            events = session.run_turn(
                Turn(f"turn {done + 1}: say hello", object())  # type: ignore[arg-type]
            )
            async for _ in events:
                pass
            done += 1
        parts = _parts(state)
        total = sum(parts.values())
        cells = "  ".join(f"{name} {size(count):>9}" for name, count in parts.items())
        rows.append(
            f"{mark:>5} turns  total {size(total):>9}  {cells}  per turn {size(total // mark)}"
        )
    return rows


def main() -> int:
    marks = QUICK_MARKS if "--quick" in sys.argv else MARKS
    with tempfile.TemporaryDirectory(prefix="bench-disk-") as folder:
        root = Path(folder)
        person = make_person_gemini(root / "home" / ".gemini")
        workspace = root / "workspace"
        workspace.mkdir()
        settings = SessionSettings(
            conversation_id="bench-disk",
            workspace=workspace,
            command=(str(AGY_SIM), *FAST),
            state_base=root / "state",
            tmux_socket=f"bench-disk-{uuid.uuid4().hex[:10]}",
            preflight=lambda: None,
            gemini_seed=GeminiSeed(person.path),
            trust=WorkspaceTrust(operator=(WorkspacePattern(str(workspace)),)),
        )

        async def run() -> list[str]:
            session = AgySession(settings)
            try:
                return await _drive(session, root / "state" / "bench-disk", marks)
            finally:
                await session.close(stop_agy=True)

        try:
            rows = asyncio.run(run())
        finally:
            TerminalHost(socket_name=settings.tmux_socket).kill_server()
    print("disk of one conversation's private state (agy-sim; allocated blocks)")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
