"""The seeded fault suite's parts: a conversation on agy-sim, random fault mixes, the checks.

A `HarnessConversation` is one omnigent conversation served by the real harness app
(`HarnessServer`) whose agy is agy-sim, launched by the executor as agy would be, with a fault
control file.
A `Trial` is one turn under a random mix of faults drawn from a seeded `random.Random`;
`run_trial` plays it as a person in the web UI would (answering every card) and checks what
reached omnigent against what agy committed:

- the turn completes (no `response.failed`, no hang past its deadline);
- the concatenated text deltas equal the turn's committed PLANNER_RESPONSE texts, in order;
- every tool step of the turn appears as exactly one completed call and one output;
- every gate agy asked is shown as exactly one card (none lost, none twice);
- the turn's message reached agy exactly once (one USER_INPUT with its text);
- while a card of the turn waits, the activity lease says a turn runs (a sweep must not stop
  agy under it).

Faults fired are counted from agy-sim's own log ("fault … on …" lines and the listening lines
of each restart), so the tally is what agy-sim did, not what the suite meant to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from omnigent.community.harness.agy.app import create_app
from simproc import harness_env
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn
from omnigent_agy.agy.keep import read_activity
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


def logged_port(log: str) -> int:
    """The port agy's log names last."""
    return int(LISTENING.findall(log)[-1])


def logged_faults(log: str) -> Counter[str]:
    """The faults agy-sim's log says it made, with agy's restarts (ports named after the
    first)."""
    counts = Counter(FAULT_LINE.findall(log))
    counts["restart"] = max(0, len(LISTENING.findall(log)) - 1)
    return counts


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


class SlowDisk:
    """A disk that stalls: while a conversation's disk is slow, every file the harness renames
    into place in its private state (the activity lease, the agy record, the cursor, the relay's
    tools file, agy's seeded settings) takes `delay` seconds more, as an fsync on a loaded disk
    does. Writers that would have followed each other now overlap: two writers of one file at
    once (a turn's lease and the one before it, the reader's record and the turn's) must not
    fail the turn nor leave a file half one writer's and half the other's.

    The harness runs in this process, so the rename (`os.replace`, which every atomic write
    ends with) is wrapped once for the suite; the delay applies only below the state folders
    of the conversations marked slow, whichever thread writes.
    """

    def __init__(self) -> None:
        self.slow: dict[Path, float] = {}
        self.renames: Counter[Path] = Counter()
        self._replace = os.replace

    def install(self, patch: pytest.MonkeyPatch) -> None:
        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            target = Path(os.fsdecode(dst))
            for folder, delay in list(self.slow.items()):
                if target.is_relative_to(folder):
                    self.renames[folder] += 1
                    time.sleep(delay)
            self._replace(src, dst, *args, **kwargs)

        patch.setattr(os, "replace", replace)


SLOW_DISK = SlowDisk()


@contextlib.contextmanager
def conversation_on_sim(tmp: Path, **extra: str) -> Iterator[HarnessConversation]:
    """One conversation with its harness open, in the environment above (set for the
    duration); its harness, agy and tmux server are stopped at the end, even on failure."""
    faults = tmp / "faults.json"
    faults.write_text(json.dumps({"restart": 0, "faults": []}))
    env = environment(tmp, faults, **extra)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        patch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
        talk = HarnessConversation(env, faults)
        try:
            talk.open()
            yield talk
        finally:
            try:
                talk.close()
            finally:
                talk.kill_agy()


@contextlib.contextmanager
def conversation_after_a_turn(tmp: Path, **extra: str) -> Iterator[HarnessConversation]:
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
    slow_disk: float = 0.0  # seconds every private rename of the turn stalls (SlowDisk)
    back_to_back: bool = False  # the next message follows the moment the answer is complete

    @property
    def text(self) -> str:
        return SCENARIOS[self.scenario].format(n=self.number)

    @property
    def texts(self) -> list[str]:
        """What the person sends: the trial's message, and at once a second one if any."""
        # A command, so that the second turn shows a card (where the lease is checked).
        follow = [f"run: echo and then {self.number}"] if self.back_to_back else []
        return [self.text, *follow]


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
    slow = rng.choice((0.02, 0.05, 0.1)) if rng.random() < 0.2 else 0.0
    if slow:
        labels.append("slow_disk")
    back_to_back = rng.random() < 0.25
    if back_to_back:
        labels.append("back_to_back")
    return Trial(number, scenario, rules, restart, respawn, labels, slow, back_to_back)


class HarnessConversation:
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

    @property
    def state(self) -> SessionStateDir:
        """The conversation's private state folder (where the harness keeps its files)."""
        return SessionStateDir.open(
            self.conversation_id, base=Path(self.env["OMNIGENT_AGY_STATE_DIR"])
        )

    @property
    def state_path(self) -> Path:
        return self.state.path

    def slow_disk(self, delay: float) -> None:
        """Every private rename of this conversation stalls `delay` s (0: the disk is quick)."""
        if delay:
            SLOW_DISK.slow[self.state_path] = delay
        else:
            SLOW_DISK.slow.pop(self.state_path, None)

    def renames(self) -> int:
        """Renames the slow disk stalled for this conversation so far."""
        return SLOW_DISK.renames[self.state_path]

    # --- agy seen from outside -----------------------------------------------------------

    def record(self) -> Any:
        record = self.state.read_record()
        assert record is not None, "agy was never started"
        return record

    def log(self) -> str:
        return Path(self.record().log_file).read_text(encoding="utf-8", errors="replace")

    def port(self) -> int:
        return logged_port(self.log())

    def fault_counts(self) -> Counter[str]:
        return logged_faults(self.log())

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
        wait_until(lambda: self.port() != old, timeout=40, what="agy-sim to listen on a new port")
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", old)) != 0, "the old port still answers"


def answer(harness: HarnessServer, card: dict[str, Any]) -> None:
    """Press what a person would: allow once, or the first option of a question."""
    params = card["params"]
    schema = (params.get("requestedSchema") or {}).get("properties", {}).get("answer", {})
    choices = [str(c) for c in schema.get("enum") or []]
    allow = next((c for c in choices if c.lower().startswith("allow once")), None)
    harness.press(card, allow or "")  # the first button the web shows


def play(conversation: HarnessConversation, trial: Trial) -> list[tuple[str, StreamedTurn]]:
    """Run the trial's turns to their ends, answering every card, moving agy at its moment;
    each message with its turn. A back-to-back message is sent the moment the turn before
    it has ended."""
    harness = conversation.harness
    assert harness is not None
    if trial.restart == "before":
        conversation.move()
    played: list[tuple[str, StreamedTurn]] = []
    moved = trial.restart in (None, "before")
    for text in trial.texts:
        played.append((text, harness.turn(text)))
        moved = _play_turn(conversation, trial, played[-1][1], moved=moved)
    return played


def _play_turn(
    conversation: HarnessConversation, trial: Trial, turn: StreamedTurn, *, moved: bool
) -> bool:
    """One turn to its end; whether agy has moved (it moves once a trial). While the turn
    waits on a card, the activity lease must say a turn runs: a sweep trusts it not to stop
    agy."""
    harness = conversation.harness
    assert harness is not None
    answered: set[str] = set()
    while True:
        event = turn.next(TURN_DEADLINE)
        if event is None:
            return moved
        conversation.seen.append(json.dumps(event))
        kind = str(event.get("type"))
        if not moved and trial.restart == "streaming" and kind.endswith(".delta"):
            conversation.move()
            moved = True
        if kind != "response.elicitation_request":
            continue
        # The turn cannot end while its card waits: the lease must say it runs.
        assert read_activity(conversation.state).turn_running, (
            "a card waits and the activity lease says no turn runs"
        )
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


def check(conversation: HarnessConversation, text: str, turn: StreamedTurn) -> None:
    """What reached omnigent is exactly what agy committed for the turn that began with the
    message `text` (see the module)."""
    kinds = turn.kinds()
    assert "response.failed" not in kinds, f"the turn failed: {_failure(turn)}"
    assert "response.completed" in kinds, f"the turn never completed: {kinds}"
    ours = turn_steps(conversation.steps(), text)
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


def _failure(turn: StreamedTurn) -> str:
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
