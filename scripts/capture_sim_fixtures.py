"""Capture the agy simulator's steps into fixtures/recorded_steps/sim/ (reproducibly).

Usage: .venv/bin/python scripts/capture_sim_fixtures.py [--check]

For every scenario plan in ``agy_sim.capture.PLANS`` this runs a fresh
engine with seeded ids and a fake clock in a throw-away workspace, and writes

- ``sim/<scenario>.poll.json``: ``{"steps": [{"idx", "step"}...]}`` every poll-shape state
  a step went through (one entry per status change, plus its final state), per cascade
  in order (a sub-agent's child cascade follows its parent's entries);
- ``sim/<scenario>.stream.json``: the StreamAgentStateUpdates frames, in order.

The workspace path is replaced by ``/home/user/project`` (as in the recorded engine steps).
``--check`` writes nothing and exits 1 when a committed file differs from a fresh capture.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from agy_sim.capture import PLANS, Capture, capture

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "recorded_steps" / "sim"
WORKSPACE_STANDIN = "/home/user/project"


def make_workspace(root: Path) -> Path:
    """The small, fixed workspace the scenarios list and read."""
    workspace = root / "project"
    (workspace / "src").mkdir(parents=True)
    (workspace / "README.md").write_text("# Demo project\nhello file content\n")
    (workspace / "src" / "app.py").write_text("print('hello')\n")
    (workspace / "notes.txt").write_text("")
    return workspace


def render(captured: Capture, workspace: Path) -> dict[str, str]:
    poll = {"steps": [e for entries in captured.poll.values() for e in entries]}
    frames = [f for frames in captured.frames.values() for f in frames]
    texts = {}
    for suffix, document in (("poll", poll), ("stream", frames)):
        text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
        texts[suffix] = text.replace(str(workspace), WORKSPACE_STANDIN)
    return texts


async def capture_all() -> dict[str, str]:
    files: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = make_workspace(Path(tmp))
        for plan in PLANS:
            captured = await capture(plan, workspace, deterministic=True)
            for suffix, text in render(captured, workspace).items():
                files[f"{plan.name}.{suffix}.json"] = text
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    files = asyncio.run(capture_all())
    stale: list[Any] = []
    for name, text in sorted(files.items()):
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if args.check and stale:
        sys.stderr.write("stale simulator fixtures: " + ", ".join(stale) + "\n")
        return 1
    sys.stdout.write(f"{len(files)} fixture files {'checked' if args.check else 'written'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
