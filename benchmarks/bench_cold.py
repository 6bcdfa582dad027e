"""Cold start: a new conversation's first message to its first delta, split into its parts.

Run: `.venv/bin/python benchmarks/bench_cold.py [--quick]` (`--quick`: one run). An
`AgySession` built as the executor builds it (the real pre-flight, the private gemini dir
seeded from a signed-in ~/.gemini, omnigent's tools relayed) runs its first turn against
agy-sim in tmux, agy-sim's start-up delay set to 2 s (a real agy's own start is 7-9 s:
docs/simulator.md). Each part is timed where the plugin does it (its functions wrapped, in
this process), and agy's own start from its pane's start to the line of its log that
announces its port:

- **seeding, pre-flight, trust, re-attach check**: the plugin's work before agy starts;
- **agy's own start** (agy-sim's) and **discovery** (its port found, certificate pinned,
  Heartbeat answered);
- **binding** (the cascade, the model catalog, the reader caught up) and the turn up to its
  first delta;
- **relay**: the MCP server agy starts beside its own start (agy-sim does not wait for it):
  when it started, and the CPU it used, which the machine's cores share with agy's start.

Printed as a timeline (ms from run_turn being called; parts that overlap show so) and the
total, medians of 5 runs. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
from bench_turn import Prompts
from common import load_average, options, table
from gemini_home import make_person_gemini

from agy_sim.stack.homes import write_simulator
from omnigent_agy import ENV_PATH
from omnigent_agy.agy import launcher
from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.config.settings import load_config
from omnigent_agy.doctor.checkup import preflight
from omnigent_agy.reading import events as ev
from omnigent_agy.reading.reader import CascadeReader
from omnigent_agy.session import binding
from omnigent_agy.session.agy_session import AgySession
from omnigent_agy.session.binding import AgyBinding, SessionSettings
from omnigent_agy.session.home import AgyHome
from omnigent_agy.session.turn import Turn
from omnigent_agy.session.workspace_gate import WorkspaceGate

STARTUP_DELAY = "2"
LISTENING = "Language server listening on random port at"
TOOLS = [{"name": "sys_session_list", "parameters": {"type": "object", "properties": {}}}]

Spans = dict[str, list[tuple[float, float]]]


def _timed(spans: Spans, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(function):

        @functools.wraps(function)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            started = time.time()
            try:
                return await function(*args, **kwargs)
            finally:
                spans[label].append((started, time.time()))

        return timed_async

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            spans[label].append((started, time.time()))

    return timed


WRAPPED: list[tuple[object, str, str]] = [
    (AgyHome, "start", "relay socket listening"),
    (WorkspaceGate, "prepare", "workspace looked at"),
    (binding, "reattach", "re-attach check"),
    (launcher, "reattach", "re-attach check"),
    (WorkspaceGate, "require_trust", "trust"),
    (AgyHome, "seed", "seeding the private gemini dir"),
    (AgyBinding, "_preflight", "pre-flight (agy --version, agy models, tmux)"),
    (TerminalHost, "start", "agy's tmux pane started"),
    (launcher, "wait_ready", "agy's start + discovery"),
    (AgyBinding, "_bind_endpoint", "binding: endpoint pinned"),
    (AgyBinding, "_tui_cascade", "binding: the TUI's cascade"),
    (AgyBinding, "catalog", "binding: model catalog"),
    (CascadeReader, "wait_ready", "binding: reader caught up"),
]


@contextlib.contextmanager
def instrumented(spans: Spans) -> Iterator[None]:
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in WRAPPED]
    for owner, name, label in WRAPPED:
        setattr(owner, name, _timed(spans, label, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _listening_time(log_file: Path) -> float | None:
    """When agy's log announced its port (glog's local time, to the microsecond)."""
    for line in log_file.read_text(encoding="utf-8", errors="replace").splitlines():
        if LISTENING in line:
            stamp = line[1:21]  # "MMDD HH:MM:SS.micros"
            year = time.localtime().tm_year
            whole = time.mktime(time.strptime(f"{year}{stamp[:13]}", "%Y%m%d %H:%M:%S"))
            return whole + int(stamp[14:20]) / 1e6
    return None


async def first_turn(root: Path, agy: Path) -> dict[str, float]:
    """One cold first turn; each part's start and end in ms from run_turn being called."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    person = make_person_gemini(root / "person-gemini")
    env = {ENV_PATH: str(agy), "PATH": f"{agy.parent}:/usr/bin:/bin"}
    config = load_config(root / "config.yaml", env=env)
    settings = SessionSettings(
        conversation_id=f"cold-{uuid.uuid4().hex[:8]}",
        workspace=workspace,
        command=(str(agy),),
        state_base=root / "state",
        tmux_socket=f"omnigent-agy-cold-{uuid.uuid4().hex[:8]}",
        keep_agy_running=False,
        preflight=lambda: preflight(config, env),
        gemini_seed=GeminiSeed(source=person.path),
        omnigent_tools=True,
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(workspace)),)),
    )
    session = AgySession(settings)
    spans: Spans = defaultdict(list)
    marks: dict[str, float] = {}
    with instrumented(spans):
        try:
            started = time.time()
            async for event in session.run_turn(Turn("hello", Prompts(), tools=TOOLS)):
                if isinstance(event, ev.TextDelta) and "first delta" not in marks:
                    marks["first delta"] = time.time()
            agy = session.agy
            assert agy is not None
            listening = _listening_time(agy.log_file)
            relays = [
                child
                for child in psutil.Process(agy.pid).children()
                if "omnigent_agy.relay" in " ".join(child.cmdline())
            ]
            relay_cpu = sum(sum(r.cpu_times()[:2]) for r in relays)
            relay_start = min((r.create_time() for r in relays), default=None)
        finally:
            await session.close(stop_agy=True)
    figures: dict[str, float] = {}
    for label, found in spans.items():
        figures[f"{label}|start"] = (found[0][0] - started) * 1e3
        figures[f"{label}|end"] = (found[-1][1] - started) * 1e3
        figures[f"{label}|total"] = sum(end - begin for begin, end in found) * 1e3
    if listening is not None:
        figures["agy announces its port|end"] = (listening - started) * 1e3
    if relay_start is not None:
        figures["relay MCP server started|start"] = (relay_start - started) * 1e3
        figures["relay MCP server CPU|total"] = relay_cpu * 1e3
    figures["first delta|end"] = (marks["first delta"] - started) * 1e3
    return figures


def main() -> None:
    args = options(__doc__ or "")
    runs = 1 if args.quick else 5
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as name:
        root = Path(name)
        agy = write_simulator(
            root / "bin",
            {"AGY_SIM_STARTUP_DELAY": STARTUP_DELAY, "AGY_SIM_TOKEN_DELAY": "0.001"},
        ).path
        results = [asyncio.run(first_turn(root / f"run{run}", agy)) for run in range(runs)]
    keys = sorted({key for result in results for key in result})
    labels = sorted(
        {key.split("|")[0] for key in keys},
        key=lambda label: statistics.median(
            r.get(f"{label}|start", r.get(f"{label}|end", 0.0)) for r in results
        ),
    )
    rows = []
    for label in labels:

        def median(part: str, label: str = label) -> object:
            values = [r[f"{label}|{part}"] for r in results if f"{label}|{part}" in r]
            return statistics.median(values) if values else ""

        rows.append([label, median("start"), median("end"), median("total")])
    table(
        f"Cold start: the first message to the first delta (ms from run_turn; medians of {runs};"
        f" agy-sim's start-up delay {STARTUP_DELAY} s; {load_average()})",
        ["part", "starts", "ends", "time in it"],
        rows,
    )


if __name__ == "__main__":
    main()
