"""Turn overhead and TLS handshakes per turn, against agy-sim in tmux.

Run: `.venv/bin/python benchmarks/bench_turn.py [--quick]`. An `AgySession` (the plugin's
whole turn path: lease, binding, catalog, `/clear` check, bridge) drives agy-sim:

- **agy start-up** (reported apart): `ensure_started` of a fresh session, i.e. launching
  agy-sim in tmux, its (shortened) start-up delay, discovery and the reader catching up;
- **turn overhead**: from `run_turn` being called to `SendUserCascadeMessage` leaving the
  client, cold (the session's first turn) and warm (later turns);
- **TLS handshakes per warm turn**, counted at `ssl.SSLContext.wrap_bio` / `wrap_socket`
  (every httpx TLS connection, async or sync, passes there), from `run_turn` to the turn's
  end; and the built-in's for its own `send_user_cascade_message` (one of its per-turn RPCs).

Medians over the warm turns. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import ssl
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import options, table
from gemini_home import make_person_gemini
from omnigent.harnesses.antigravity_native import rpc as builtin_rpc
from simproc import AGY_SIM, TOKEN, sim_launcher

from omnigent_agy.agy.gemini_home import GeminiSeed
from omnigent_agy.agy.trust_store import WorkspacePattern, WorkspaceTrust
from omnigent_agy.interactions.prompts import PolicyAction, PolicyVerdict
from omnigent_agy.reading.reader import ReaderSettings
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.session.agy_session import AgySession
from omnigent_agy.session.binding import SessionSettings
from omnigent_agy.session.turn import Turn


class Prompts:
    """A host that never needs to ask (the turns run no tools)."""

    async def evaluate_policy(self, request: Any) -> PolicyVerdict:
        del request
        return PolicyVerdict(PolicyAction.ASK)

    async def ask_permission(self, card: Any) -> None:
        del card

    async def ask_questions(self, form: Any) -> None:
        del form

    async def ask_elicitation(self, card: Any) -> None:
        del card


class Stamps:
    def __init__(self) -> None:
        self.sent: list[float] = []
        self.handshakes = 0


@contextmanager
def instrumented() -> Iterator[Stamps]:
    stamps = Stamps()
    wrap_bio, wrap_socket = ssl.SSLContext.wrap_bio, ssl.SSLContext.wrap_socket
    send = RpcClient.send_user_cascade_message

    def counting(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        stamps.handshakes += 1
        return wrap_bio(self, *args, **kwargs)

    def counting_socket(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        stamps.handshakes += 1
        return wrap_socket(self, *args, **kwargs)

    async def stamped(self: RpcClient, *args: Any, **kwargs: Any) -> dict[str, Any]:
        stamps.sent.append(time.perf_counter())
        return await send(self, *args, **kwargs)

    ssl.SSLContext.wrap_bio = counting  # type: ignore[method-assign]
    ssl.SSLContext.wrap_socket = counting_socket  # type: ignore[method-assign]
    RpcClient.send_user_cascade_message = stamped  # type: ignore[method-assign]
    try:
        yield stamps
    finally:
        ssl.SSLContext.wrap_bio = wrap_bio  # type: ignore[method-assign]
        ssl.SSLContext.wrap_socket = wrap_socket  # type: ignore[method-assign]
        RpcClient.send_user_cascade_message = send  # type: ignore[method-assign]


async def session_turns(root: Path, turns: int) -> dict[str, Any]:
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    person = make_person_gemini(root / "person-gemini")  # signed in (docs/wire.md §1b)
    settings = SessionSettings(
        conversation_id=f"bench-{uuid.uuid4().hex[:8]}",
        workspace=workspace,
        command=(str(AGY_SIM), "--sim-startup-delay", "0.3", "--sim-token-delay", "0.001"),
        state_base=root / "state",
        tmux_socket=f"omnigent-agy-bench-{uuid.uuid4().hex[:8]}",
        keep_agy_running=False,
        reader=ReaderSettings(),
        gemini_seed=GeminiSeed(source=person.path),
        trust=WorkspaceTrust(operator=(WorkspacePattern(str(workspace)),)),
    )
    session = AgySession(settings)
    figures: dict[str, Any] = {"overhead": [], "handshakes": []}
    with instrumented() as stamps:
        try:
            started = time.perf_counter()
            await session.ensure_started()
            figures["startup"] = time.perf_counter() - started
            for turn in range(turns):
                before = stamps.handshakes
                started = time.perf_counter()
                async for _ in session.run_turn(Turn(f"hello {turn}", Prompts())):
                    pass
                figures["overhead"].append(stamps.sent[-1] - started)
                figures["handshakes"].append(stamps.handshakes - before)
        finally:
            await session.close(stop_agy=True)
    return figures


def builtin_send_handshakes(root: Path) -> int:
    with sim_launcher(root, "bench-builtin") as launcher:
        sim = launcher.launch("--sim-startup-delay", "0.3", "--sim-token-delay", "0.001")

        async def cascade() -> tuple[str, str]:
            async with RpcClient(port=sim.port, csrf_token=TOKEN) as client:
                models = (await client.get_available_models())["response"]
                model = models["models"][models["defaultAgentModelId"]]["model"]
                return await client.start_cascade(), str(model)

        cascade_id, model = asyncio.run(cascade())
        with instrumented() as stamps:
            builtin_rpc.send_user_cascade_message(sim.port, cascade_id, "hello", plan_model=model)
        return stamps.handshakes


def main() -> None:
    args = options(__doc__ or "")
    turns = 2 if args.quick else 6
    with tempfile.TemporaryDirectory() as root:
        figures = asyncio.run(session_turns(Path(root) / "plugin", turns))
        theirs = builtin_send_handshakes(Path(root) / "builtin")
    warm = figures["overhead"][1:]
    table(
        f"Turn overhead (ms): run_turn → SendUserCascadeMessage sent ({turns} turns)",
        ["figure", "plugin"],
        [
            ["agy start-up (ensure_started, reported apart)", figures["startup"] * 1e3],
            ["cold turn (the session's first)", figures["overhead"][0] * 1e3],
            ["warm turn (median of the others)", statistics.median(warm) * 1e3],
        ],
    )
    table(
        "TLS handshakes",
        ["what", "count"],
        [
            [
                "plugin, per warm turn (run_turn to its end)",
                statistics.median(figures["handshakes"][1:]),
            ],
            ["built-in, its send_user_cascade_message alone", theirs],
        ],
    )


if __name__ == "__main__":
    main()
