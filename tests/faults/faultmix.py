"""The seeded fault suite's parts: a conversation on agy-sim, random fault mixes, the checks.

A `Conversation` is one omnigent conversation served by the real harness app (`HarnessServer`)
whose agy is agy-sim, launched by the executor as agy would be, with a fault control file.
A `Trial` is one turn under a random mix of faults drawn from a seeded `random.Random`;
`run_trial` plays it as a person in the web UI would (answering every card) and checks what
reached omnigent against what agy committed:

- the turn completes (no `response.failed`, no hang past its deadline);
- the concatenated text deltas equal the turn's committed PLANNER_RESPONSE texts, in order;
- every tool step of the turn appears as exactly one completed call and one output;
- every gate agy asked is shown as exactly one card (none lost, none twice);
- the turn's message reached agy exactly once (one USER_INPUT with its text).

Faults fired are counted from agy-sim's own log ("fault … on …" lines and the listening lines
of each restart), so the tally is what agy-sim did, not what the suite meant to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import socket
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from omnigent.community.harness.agy.app import create_app
from omnigent.community.harness.agy.local import HarnessServer, Turn
from simproc import harness_env, wait_for

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.rpc.client import RpcClient

LISTENING = re.compile(r"Language server listening on random port at (\d+) for HTTPS")
FAULT_LINE = re.compile(r"fault (\w+)")
PLANNER = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
USER_INPUT = "CORTEX_STEP_TYPE_USER_INPUT"
GATED = ("CORTEX_STEP_TYPE_RUN_COMMAND", "CORTEX_STEP_TYPE_ASK_QUESTION")
TOOL_STEPS = ("CORTEX_STEP_TYPE_RUN_COMMAND", "CORTEX_STEP_TYPE_ASK_QUESTION")
STREAM = "StreamAgentStateUpdates"
READS = ("GetCascadeTrajectorySteps", "GetAllCascadeTrajectories", STREAM)
TURN_DEADLINE = 60.0

# What a trial's turn asks agy-sim to do (docs/simulator.md, "Scenarios").
SCENARIOS: dict[str, str] = {
    "plain": "tell me something, trial {n}",
    "approval": "run: echo trial {n}",
    "chained": "run: echo one {n} && echo two {n}",
    "question": "ask me a question, trial {n}",
    "slow_command": "run a slow command, trial {n}",
}
# When a language server restart (a move to a new port) happens within a turn.
RESTART_MOMENTS = ("before", "streaming", "card", "command")


def environment(tmp: Path, faults: Path, **extra: str) -> dict[str, str]:
    """What a runner gives the harness (`simproc.harness_env`), pointed at agy-sim with a
    fault control file and the suite's short timings."""
    return {
        **harness_env(tmp, f"agy-faults-{uuid.uuid4().hex[:10]}"),
        "OMNIGENT_AGY_STREAM_IDLE_TIMEOUT": "1",
        "AGY_SIM_STARTUP_DELAY": "0.2",
        "AGY_SIM_TOKEN_DELAY": "0.002",
        "AGY_SIM_SLOW_COMMAND_SECONDS": "1",
        "AGY_SIM_FAULTS": str(faults),
        **extra,
    }


@contextlib.contextmanager
def conversation_on_sim(tmp: Path, **extra: str) -> Iterator[Conversation]:
    """One conversation with its harness open, in the environment above (set for the
    duration); its harness, agy and tmux server are stopped at the end, even on failure."""
    faults = tmp / "faults.json"
    faults.write_text(json.dumps({"restart": 0, "faults": []}))
    env = environment(tmp, faults, **extra)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        patch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
        talk = Conversation(env, faults)
        try:
            talk.open()
            yield talk
        finally:
            try:
                talk.close()
            finally:
                talk.kill_agy()


@contextlib.contextmanager
def conversation_after_a_turn(tmp: Path, **extra: str) -> Iterator[Conversation]:
    """`conversation_on_sim` once a first turn has run (agy started, its cascade bound)."""
    with conversation_on_sim(tmp, **extra) as conversation:
        assert conversation.harness is not None
        conversation.harness.turn("hello").finish()
        yield conversation


@dataclass
class Tally:
    """What a run tried and found: reported by the suite and written to .artifacts."""

    trials: int = 0
    failures: list[str] = field(default_factory=list)
    planned: Counter[str] = field(default_factory=Counter)
    fired: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)  # time spent per label (profiling)

    def add(self, other: Tally) -> None:
        self.trials += other.trials
        self.failures += other.failures
        self.planned.update(other.planned)
        self.fired.update(other.fired)
        self.seconds.update(other.seconds)

    def as_json(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "failures": len(self.failures),
            "failed": self.failures,
            "planned": dict(sorted(self.planned.items())),
            "fired": dict(sorted(self.fired.items())),
            "seconds": {k: round(v, 1) for k, v in sorted(self.seconds.items())},
        }


@dataclass
class Trial:
    """One turn and the faults drawn for it."""

    number: int
    scenario: str
    rules: list[dict[str, Any]]
    restart: str | None  # one of RESTART_MOMENTS
    respawn_before: bool  # the harness is killed and respawned before the turn
    labels: list[str]

    @property
    def text(self) -> str:
        return SCENARIOS[self.scenario].format(n=self.number)


def draw_trial(rng: random.Random, number: int) -> Trial:
    """A random fault mix for one turn (0-3 wire faults, maybe a move, maybe a respawn)."""
    scenario = rng.choice(list(SCENARIOS))
    rules: list[dict[str, Any]] = []
    labels: list[str] = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):  # most turns see one or two
        kind = rng.choice(("drop", "stall", "5xx", "garbage"))
        rule_id = f"t{number}-{len(rules)}"
        if kind == "drop":
            mode = rng.choice(("eof", "truncate", "trailer", "oversize"))
            rules.append(
                {
                    "kind": "drop_stream",
                    "method": STREAM,
                    "after_frames": rng.randint(0, 4),
                    "mode": mode,
                    "times": rng.randint(1, 2),
                    "id": rule_id,
                }
            )
            labels.append(f"drop_stream:{mode}")
        elif kind == "stall":
            rules.append(
                {
                    "kind": "stall_stream",
                    "method": STREAM,
                    "after_frames": rng.randint(0, 4),
                    "times": 1,
                    "id": rule_id,
                }
            )
            labels.append("stall_stream")
        elif kind == "5xx":
            method = rng.choice((*READS, "HandleCascadeUserInteraction"))
            rules.append(
                {
                    "kind": "http_error",
                    "method": method,
                    "status": rng.choice((502, 503, 504)),
                    "times": rng.randint(1, 3),
                    "id": rule_id,
                }
            )
            labels.append(f"http_error:{method}")
        else:
            method = rng.choice(READS)
            rules.append({"kind": "garbage", "method": method, "times": 1, "id": rule_id})
            labels.append(f"garbage:{method}")
    restart = rng.choice(RESTART_MOMENTS) if rng.random() < 0.3 else None
    if restart == "card" and scenario == "plain":
        restart = "streaming"
    if restart == "command" and scenario != "slow_command":
        restart = "before"
    if restart is not None:
        labels.append(f"restart:{restart}")
    respawn = rng.random() < 0.12
    if respawn:
        labels.append("harness_respawn")
    return Trial(number, scenario, rules, restart, respawn, labels)


class Conversation:
    """One conversation of the real harness app on agy-sim, across trials and respawns."""

    def __init__(self, env: dict[str, str], faults: Path) -> None:
        self.env = env
        self.faults = faults
        self.conversation_id = f"conv_{uuid.uuid4().hex[:12]}"
        self.restarts = 0
        self.harness: HarnessServer | None = None
        self.respawns = 0
        self.seen: list[str] = []  # every SSE event that reached omnigent, as JSON text

    # --- the harness ---------------------------------------------------------------------

    def open(self) -> HarnessServer:
        self.harness = HarnessServer(create_app(), self.conversation_id).__enter__()
        return self.harness

    def respawn(self) -> HarnessServer:
        """The harness goes away and a new one serves the same conversation (re-attaching
        to the running agy and reading on from the durable cursor)."""
        self.close()
        self.respawns += 1
        return self.open()

    def close(self) -> None:
        if self.harness is not None:
            self.harness.__exit__(None, None, None)
            self.harness = None

    def kill_agy(self) -> None:
        TerminalHost(socket_name=self.env["OMNIGENT_AGY_TMUX_SOCKET"]).kill_server()

    # --- agy seen from outside -----------------------------------------------------------

    def record(self) -> Any:
        state = SessionStateDir.open(
            self.conversation_id, base=Path(self.env["OMNIGENT_AGY_STATE_DIR"])
        )
        record = state.read_record()
        assert record is not None, "agy was never started"
        return record

    def log(self) -> str:
        return Path(self.record().log_file).read_text(encoding="utf-8", errors="replace")

    def port(self) -> int:
        return int(LISTENING.findall(self.log())[-1])

    def fault_counts(self) -> Counter[str]:
        log = self.log()
        counts = Counter(FAULT_LINE.findall(log))
        counts["restart"] = max(0, len(LISTENING.findall(log)) - 1)
        return counts

    def steps(self) -> list[dict[str, Any]]:
        record = self.record()
        port = self.port()

        async def read() -> list[dict[str, Any]]:
            async with RpcClient(port=port, csrf_token=record.csrf_token) as client:
                return await client.get_cascade_trajectory_steps(record.cascade_id or "")

        return asyncio.run(read())

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        tmp = self.faults.with_suffix(".tmp")
        tmp.write_text(json.dumps({"restart": self.restarts, "faults": rules}))
        tmp.replace(self.faults)

    def move(self) -> None:
        """agy-sim restarts its listeners on a new port (waits until the old one is gone)."""
        old = self.port()
        self.restarts += 1
        self.faults.write_text(json.dumps({"restart": self.restarts, "faults": []}))
        wait_for(lambda: self.port() != old, "agy-sim to listen on a new port", timeout=40)
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", old)) != 0, "the old port still answers"


def answer(harness: HarnessServer, card: dict[str, Any]) -> None:
    """Press what a person would: allow once, or the first option of a question."""
    params = card["params"]
    schema = (params.get("requestedSchema") or {}).get("properties", {}).get("answer", {})
    choices = [str(c) for c in schema.get("enum") or []]
    allow = next((c for c in choices if c.lower().startswith("allow once")), None)
    harness.press(card, allow or (choices[0] if choices else ""))


def play(conversation: Conversation, trial: Trial) -> Turn:
    """Run the trial's turn to its end, answering every card, moving agy at its moment."""
    harness = conversation.harness
    assert harness is not None
    if trial.restart == "before":
        conversation.move()
    turn = harness.turn(trial.text)
    answered: set[str] = set()
    moved = trial.restart in (None, "before")
    while True:
        event = turn.next(TURN_DEADLINE)
        if event is None:
            return turn
        conversation.seen.append(json.dumps(event))
        kind = str(event.get("type"))
        if not moved and trial.restart == "streaming" and kind.endswith(".delta"):
            conversation.move()
            moved = True
        if kind != "response.elicitation_request":
            continue
        card_id = str(event["elicitation_id"])
        assert card_id not in answered, f"card {card_id} shown twice"
        answered.add(card_id)
        if not moved and trial.restart == "card":
            conversation.move()  # the card waits while agy moves; the answer must follow
            moved = True
        answer(harness, event)
        if not moved and trial.restart == "command":
            conversation.move()  # the approved command runs while agy moves
            moved = True


def turn_steps(steps: list[dict[str, Any]], text: str) -> list[tuple[int, dict[str, Any]]]:
    """(index, step) of the turn that began with the USER_INPUT saying `text`."""
    starts = [
        i
        for i, s in enumerate(steps)
        if s.get("type") == USER_INPUT and s.get("userInput", {}).get("userResponse") == text
    ]
    assert len(starts) == 1, f"the message reached agy {len(starts)} times, not once"
    start = starts[0]
    end = next(
        (i for i in range(start + 1, len(steps)) if steps[i].get("type") == USER_INPUT),
        len(steps),
    )
    return [(i, steps[i]) for i in range(start, end)]


def check(conversation: Conversation, trial: Trial, turn: Turn) -> None:
    """What reached omnigent is exactly what agy committed for this turn (see the module)."""
    kinds = turn.kinds()
    assert "response.failed" not in kinds, f"the turn failed: {_failure(turn)}"
    assert "response.completed" in kinds, f"the turn never completed: {kinds}"
    ours = turn_steps(conversation.steps(), trial.text)
    committed = "".join(
        str(s.get("plannerResponse", {}).get("response") or "")
        for _, s in ours
        if s.get("type") == PLANNER and s.get("status") == "CORTEX_STEP_STATUS_DONE"
    )
    assert turn.text() == committed, (
        f"the deltas do not rebuild the committed text:\n got {turn.text()!r}\nwant {committed!r}"
    )
    tool_indices = [i for i, s in ours if s.get("type") in TOOL_STEPS]
    calls = [item for item in turn.items("function_call") if item.get("status") == "completed"]
    outputs = turn.items("function_call_output")
    call_ids = [str(item["call_id"]) for item in calls]
    output_ids = [str(item["call_id"]) for item in outputs]
    assert len(call_ids) == len(set(call_ids)), f"a tool call was published twice: {call_ids}"
    assert len(output_ids) == len(set(output_ids)), f"an output was published twice: {output_ids}"
    published = sorted(int(c.rsplit(":", 1)[1]) for c in call_ids)
    assert published == tool_indices, f"tool steps {tool_indices}, published {published}"
    assert sorted(output_ids) == sorted(call_ids)
    gates = sum(
        len(s.get("completedInteractions") or []) for _, s in ours if s.get("type") in GATED
    )
    cards = kinds.count("response.elicitation_request")
    assert cards == gates, f"agy asked {gates} times, {cards} cards were shown"


def _failure(turn: Turn) -> str:
    failed = [e for e in turn.events if e.get("type") == "response.failed"]
    return json.dumps(failed[-1].get("response", {}).get("error")) if failed else "?"


def token_leaks(
    token: str, *, texts: dict[str, str], root: Path, private: list[Path], tmux_socket: str
) -> list[str]:
    """Where `token` shows: among `texts` (name → captured text), in any file under `root`
    outside the `private` state directories, or in the command line or environment of this
    process (the harness) and of the tmux server it started (socket `tmux_socket`)."""
    found = [name for name, text in texts.items() if token in text]
    for path in root.rglob("*"):
        if not path.is_file() or any(path.is_relative_to(p) for p in private):
            continue
        with contextlib.suppress(OSError):
            if token.encode() in path.read_bytes():
                found.append(str(path))
    for process in [psutil.Process(), *_tmux_servers(tmux_socket)]:
        with contextlib.suppress(psutil.Error):
            listing = " ".join(process.cmdline()) + json.dumps(process.environ())
            if token in listing:
                found.append(f"process {process.pid} ({process.name()})")
    return found


def _tmux_servers(socket_name: str) -> list[psutil.Process]:
    servers: list[psutil.Process] = []
    for process in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            name = process.info["name"] or ""
            if name.startswith("tmux") and socket_name in " ".join(process.info["cmdline"] or []):
                servers.append(process)
    return servers
