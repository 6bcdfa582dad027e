"""Load with faults through the real host: several conversations at once on one
`omnigent host`, each turn under a seeded mix of the fault suite's faults, counted like it.

The seeded suite (tests/faults/faultmix.py) drives the harness app in its own process; here
every message goes the way a person's does: the web's REST API to `omnigent server`, the host,
its runner, a harness process per conversation, agy-sim. The host's agy-sim follows a *folder*
of fault control files (`AGY_SIM_FAULTS` = a folder, docs/simulator.md), one file per
conversation's gemini dir, so one conversation's faults never reach another's agy though all
were launched with the host's one environment.

Per turn, drawn by `faultmix.draw_trial` from a seeded `random.Random`: 0-3 wire faults (stream
drops of every mode, stalls, 5xx bursts, garbage bodies), maybe agy's language server moving to
a new port (before the turn, while it streams, while a card waits, while an approved command
runs), maybe the harness replaced (its process killed between turns: omnigent's runner starts
a new one for the next message, which re-attaches to agy and reads on from the durable
cursor), maybe a second message right after the answer. The seeded suite's slow disk needs the
harness in the test's process and is not drawn here.

A turn is counted lost when it does not complete, when the deltas the client received do not
add up to what agy committed, or when a tool step or a gate of agy's has no call or card;
duplicated when its message reached agy twice or a call, an output or a card shows twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import socket
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from faults.faultmix import (
    GATED,
    PLANNER,
    TOOL_STEPS,
    USER_INPUT,
    Tally,
    Trial,
    draw_trial,
    logged_faults,
    logged_port,
)
from stack import Conversation, extra_host, typed_text
from waiting import wait_until

from agy_sim.faults import control_file_for
from agy_sim.stack.homes import HostHome, write_simulator
from agy_sim.stack.local_stack import TEST_SIMULATOR, LocalStack
from agy_sim.stack.rest import Json, OmnigentClient, card_choices, card_questions
from omnigent_agy.agy.keep import read_activity
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.rpc.client import RpcClient

SERVER_PATIENCE = 120.0  # s for one call of omnigent's REST API
TURN_DEADLINE = 120.0  # one event at most this far apart: a loaded machine, a stalled stream
SYSTEM_CALLS = ("sys_session_rename",)  # omnigent's own call in a session's first turn (21.7)


@contextlib.contextmanager
def fault_host(stack: LocalStack, name: str, conversations: int) -> Iterator[HostHome]:
    """A host of its own whose agy-sim follows the folder `<root>/<name>/faults`, with the
    seeded suite's short timings (a stalled stream noticed after 1 s, a slow command 1 s)."""
    folder = stack.root / name / "faults"

    def prepare(host: HostHome) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        flags = {
            **TEST_SIMULATOR,
            "AGY_SIM_SLOW_COMMAND_SECONDS": "1",
            "AGY_SIM_FAULTS": str(folder),
        }
        agy = write_simulator(stack.root / name / "agy-sim", flags)
        with host.config_file.open("a", encoding="utf-8") as config:
            config.write(f"    command: {agy.path}\n")
        host.env["OMNIGENT_AGY_STREAM_IDLE_TIMEOUT"] = "1"
        # All of them kept at once: the keep limit would stop the least recent one between
        # its turns (it would come back on its next, but that is not the load asked for).
        host.env["OMNIGENT_AGY_CLI_MAX_KEPT"] = str(2 * conversations)

    with extra_host(stack, name, prepare=prepare) as host:
        yield host


@dataclass
class Played:
    """One message of a trial and the events of its turn."""

    text: str
    events: list[Json] = field(default_factory=list)
    #: omnigent's second ending of the turn before, met while waiting for this one (`late_failure`).
    late: list[Json] = field(default_factory=list)

    def completed(self) -> bool:
        return bool(self.events) and self.events[-1].get("type") == "response.completed"

    def kinds(self) -> list[str]:
        return [str(e.get("type")) for e in self.events]

    def text_streamed(self) -> str:
        return "".join(
            str(e.get("delta", ""))
            for e in self.events
            if e.get("type") == "response.output_text.delta"
        )


class LoadConversation:
    """One session on the fault host, its agy upset through its own control file."""

    def __init__(self, stack: LocalStack, host: HostHome, folder: Path) -> None:
        self.talk = Conversation(stack, host=host).__enter__()
        # omnigent's server answers slowly with many turns at once on a loaded machine (a
        # message's POST took over 30 s at load 25): the person's browser waits, so do we.
        self.talk.client = OmnigentClient(stack.url, timeout=SERVER_PATIENCE)
        self.host = host
        self.folder = folder
        self.restarts = 0
        self.rules: list[dict[str, Any]] = []
        self.respawns = 0
        self.played: list[Played] = []

    def close(self) -> None:
        self.talk.__exit__(None, None, None)

    @property
    def state(self) -> SessionStateDir:
        return SessionStateDir.open(self.talk.id, base=self.host.state_dir)

    @property
    def control_file(self) -> Path:
        return control_file_for(self.folder, self.state.gemini_dir)

    def write_plan(self) -> None:
        plan = {"restart": self.restarts, "faults": self.rules}
        tmp = self.control_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(plan), encoding="utf-8")
        tmp.replace(self.control_file)

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        self.rules = rules
        self.write_plan()

    # --- agy seen from outside -------------------------------------------------------------

    def log(self) -> str:
        record = self.state.read_record()
        assert record is not None, "agy was never started"
        return Path(record.log_file).read_text(encoding="utf-8", errors="replace")

    def port(self) -> int:
        return logged_port(self.log())

    def omnigent_denials(self) -> int:
        """How often omnigent's runner has answered a gate of this conversation itself: when
        its call to the server to evaluate its policy fails (a loaded server), it fails closed
        with POLICY_ACTION_DENY (runner/app.py), which the plugin, letting a host DENY decide,
        gives agy without a card. Read from the conversation's runner logs."""
        logs = Path(self.host.env["OMNIGENT_DATA_DIR"]) / "logs" / "runner"
        return sum(
            path.read_text(encoding="utf-8", errors="replace").count(_FAILED_CLOSED)
            for path in logs.glob(f"runner-{self.talk.id}-*.log")
        )

    def fault_counts(self) -> Counter[str]:
        return logged_faults(self.log())

    def steps(self) -> list[Json]:
        """The steps of agy's conversation, asked on the port agy's log names last (the
        record's may be one agy has just left)."""
        record = self.state.read_record()
        assert record is not None, "agy was never started"
        port = self.port()

        async def read() -> list[Json]:
            async with RpcClient(port=port, csrf_token=record.csrf_token) as client:
                return await client.get_cascade_trajectory_steps(record.cascade_id or "")

        return asyncio.run(read())

    # --- faults ----------------------------------------------------------------------------

    def move(self) -> None:
        """agy-sim restarts its listeners on a new port (waits until the old one is gone)."""
        old = self.port()
        self.restarts += 1
        self.write_plan()
        wait_until(lambda: self.port() != old, timeout=60, what="agy-sim to listen on a new port")
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", old)) != 0, "the old port still answers"

    def replace_harness(self) -> None:
        """The conversation's harness process killed between turns (SIGKILL, as a crash)."""
        activity = read_activity(self.state)
        if activity.holder_pid is None or not activity.holder_alive:
            return
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(activity.holder_pid)
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            self.respawns += 1

    # --- a trial ---------------------------------------------------------------------------

    def play(self, trial: Trial) -> list[Played]:
        if trial.respawn_before:
            self.replace_harness()
        self.set_faults(trial.rules)
        if trial.restart == "before":
            self.move()
        moved = trial.restart in (None, "before")
        played: list[Played] = []
        try:
            for text in trial.texts:
                before = played[-1] if played else self.last_played()
                played.append(Played(text))
                self.talk.send(text)
                moved = self._turn(trial, played[-1], moved=moved, before=before)
        finally:
            self.set_faults([])
            self.played += played
        return played

    def _next_event(self) -> Json:
        """The session's next event; a turn omnigent settled as failed without ending it on
        the stream (a harness that did not start in time, a runner gone) as a `session.failed`
        of our own with omnigent's error."""
        deadline = time.monotonic() + TURN_DEADLINE
        while True:
            try:
                return self.talk.events.next(min(10.0, max(0.1, deadline - time.monotonic())))
            except TimeoutError:
                session = self.talk.state()
                if session.get("status") == "failed":
                    return {"type": "session.failed", "error": session.get("last_task_error")}
                if time.monotonic() >= deadline:
                    raise

    def follow(self, played: Played) -> None:
        """A turn without faults to its end, every card answered."""
        self._turn(None, played, moved=True, before=self.last_played())

    def last_played(self) -> Played | None:
        return self.played[-1] if self.played else None

    def _turn(
        self, trial: Trial | None, played: Played, *, moved: bool, before: Played | None
    ) -> bool:
        """One turn to its end, answering every card, moving agy at the trial's moment;
        whether agy has moved (once a trial). `before`: the turn played before this one."""
        restart = trial.restart if trial is not None else None
        answered: set[str] = set()
        started = False  # this turn's response.in_progress seen
        while True:
            event = self._next_event()
            kind = str(event.get("type"))
            if late_failure(event, started=started, before=before):
                played.late.append(event)
                continue
            played.events.append(event)
            started = started or kind == "response.in_progress"
            if kind in ("response.completed", "response.failed", "response.cancelled"):
                return moved
            if kind in ("session.interrupted", "session.failed", "stream.end", "stream.error"):
                return moved
            if not moved and restart == "streaming" and kind.endswith(".delta"):
                self.move()
                moved = True
            if kind != "response.elicitation_request":
                continue
            card = str(event["elicitation_id"])
            if card in answered:
                continue  # counted as a card shown twice by `check`
            answered.add(card)
            if not moved and restart == "card":
                self.move()
                moved = True
            self.talk.answer(event, *_picks(event))
            if not moved and restart == "command":
                self.move()
                moved = True


def late_failure(event: Json, *, started: bool, before: Played | None) -> bool:
    """Whether `event` is omnigent's second ending of the turn before, not this turn's end.

    omnigent's runner relays the harness's `response.completed` as it comes and reads the
    harness's stream on to its end; a harness killed in between (here right after the person
    saw the answer, as the next trial replaces it) cuts that stream, and the runner then also
    reports the completed turn `response.failed`, `connection_error`, with no response id
    (runner/app.py, `proxy_stream`). It arrives after the next message was sent and before
    that message's turn starts (`response.in_progress`); read as that turn's end, every later
    turn would be read against the events of the one before it. Its message says a stream was
    cut ("peer closed connection without sending complete message body"); the next message
    sent to the dead process's socket fails too before it starts, but "Connection refused":
    that one is the next turn's own.
    """
    if started or before is None or not before.completed():
        return False
    if event.get("type") != "response.failed":
        return False
    response = event.get("response")
    response = response if isinstance(response, dict) else {}
    error = response.get("error") or event.get("error") or {}
    if response.get("id") or not isinstance(error, dict):
        return False
    return error.get("code") == "connection_error" and _STREAM_CUT in str(error.get("message"))


_STREAM_CUT = "peer closed connection"  # httpx's RemoteProtocolError on a cut body
_FAILED_CLOSED = "defaulting to POLICY_ACTION_DENY"  # omnigent's runner, its policy call failed


def _picks(card: Json) -> list[str]:
    """What a person presses: allow once, or the first option of each question."""
    params = card.get("params") or {}
    choices = card_choices(params)
    if choices:
        allow = next((c for c in choices if c.lower().startswith("allow once")), None)
        return [allow or choices[0]]
    return [
        str((question.get("options") or [{"label": "yes"}])[0]["label"])
        for question in card_questions(params)
    ]


def _turn_steps(steps: list[Json], text: str) -> list[Json]:
    starts = [
        i for i, s in enumerate(steps) if s.get("type") == USER_INPUT and typed_text(s) == text
    ]
    if len(starts) != 1:
        verdict = "duplicated" if starts else "lost"
        raise AssertionError(f"{verdict}: the message reached agy {len(starts)} times, not once")
    start = starts[0]
    end = next(
        (i for i in range(start + 1, len(steps)) if steps[i].get("type") == USER_INPUT),
        len(steps),
    )
    return steps[start:end]


def check_turn(steps: list[Json], played: Played, *, decided_by_omnigent: int = 0) -> int:
    """What reached the client of one turn is exactly what agy committed for it (the seeded
    suite's `faultmix.check`, on omnigent's stream). `decided_by_omnigent`: gates omnigent's
    runner answered itself in this turn's trial, which show no card (`omnigent_denials`); the
    number of them this turn had is returned."""
    kinds = played.kinds()
    ending = played.events[-1] if played.events else {}
    if ending.get("type") in ("response.failed", "session.failed"):
        raise AssertionError(f"failed: the turn ended failed, as the person sees it: {ending}")
    if "response.completed" not in kinds:
        raise AssertionError(f"lost: the turn did not complete ({kinds[-3:]}: {played.events[-1]})")
    ours = _turn_steps(steps, played.text)
    committed = "".join(
        str(s.get("plannerResponse", {}).get("response") or "")
        for s in ours
        if s.get("type") == PLANNER and s.get("status") == "CORTEX_STEP_STATUS_DONE"
    )
    streamed = played.text_streamed()
    if streamed != committed:
        raise AssertionError(
            f"{'duplicated' if len(streamed) > len(committed) else 'lost'}: the deltas do not "
            f"rebuild the committed text:\n got {streamed!r}\nwant {committed!r}"
        )
    cards = [
        str(e["elicitation_id"])
        for e in played.events
        if e.get("type") == ("response.elicitation_request")
    ]
    gates = sum(len(s.get("completedInteractions") or []) for s in ours if s.get("type") in GATED)
    if len(cards) != len(set(cards)):
        raise AssertionError(f"duplicated: a card was shown twice: {cards}")
    unshown = gates - len(cards)
    if unshown < 0 or unshown > decided_by_omnigent:
        raise AssertionError(f"agy asked {gates} times, {len(cards)} cards were shown")
    return unshown


def check_calls(conversation: LoadConversation, steps: list[Json]) -> None:
    """Every tool step agy ran is one completed call and one output among the session's items
    (omnigent's own title call aside)."""
    items = conversation.talk.items()
    calls = [
        str(i["call_id"])
        for i in items
        if i.get("type") == "function_call"
        and i.get("status") == "completed"
        and i.get("name") not in SYSTEM_CALLS
    ]
    system = {str(i["call_id"]) for i in items if i.get("name") in SYSTEM_CALLS}
    outputs = [
        str(i["call_id"])
        for i in items
        if i.get("type") == "function_call_output" and str(i["call_id"]) not in system
    ]
    tools = sum(1 for s in steps if s.get("type") in TOOL_STEPS)
    if len(calls) != len(set(calls)) or len(outputs) != len(set(outputs)):
        raise AssertionError(f"duplicated: a call or output shows twice: {calls} / {outputs}")
    if len(calls) != tools or sorted(outputs) != sorted(calls):
        raise AssertionError(
            f"lost: agy ran {tools} tools; {len(calls)} calls, {len(outputs)} outputs shown"
        )


@dataclass
class Counted:
    """One conversation's run: the seeded suite's tally, and turns lost or duplicated."""

    tally: Tally = field(default_factory=Tally)
    turns: int = 0
    lost: int = 0
    duplicated: int = 0
    failed_turns: int = 0  # ended failed, shown so to the person (not silent: not lost)
    #: turns omnigent reported failed after their completion (`late_failure`): not lost.
    late_failures: int = 0
    #: gates omnigent's runner denied itself, its policy call failed (`omnigent_denials`).
    denied_by_omnigent: int = 0
    seconds: float = 0.0

    def failed(self, what: str, exc: BaseException) -> None:
        text = str(exc)
        if text.startswith("duplicated"):
            self.duplicated += 1
        elif text.startswith("failed"):
            self.failed_turns += 1
        else:
            self.lost += 1
        self.tally.failures.append(
            f"{what}: {type(exc).__name__}: {text}\n{traceback.format_exc(limit=3)}"
        )


def run_conversation(conversation: LoadConversation, seed: int, count: int) -> Counted:
    """`count` seeded trials on one conversation, after a first message without faults (agy
    started; sent again, up to twice, if omnigent failed it, as a person would); failures are
    counted, never raised."""
    started = time.monotonic()
    counted = Counted()
    try:
        if not _first_message(conversation, counted, seed):
            counted.tally.failures.append(f"seed {seed}: no first answer, no trials played")
            counted.seconds = time.monotonic() - started
            return counted
        before = conversation.fault_counts()
        _trials(conversation, counted, seed, count)
        check_calls(conversation, conversation.steps())
        fired = conversation.fault_counts()
        fired.subtract(before)
        counted.tally.fired.update({k: v for k, v in fired.items() if v > 0})
    except Exception as exc:  # counted and reported, as a trial's
        counted.failed(f"seed {seed}, the conversation", exc)
    counted.tally.fired["harness_respawn"] = conversation.respawns
    counted.late_failures = sum(len(one.late) for one in conversation.played)
    counted.seconds = time.monotonic() - started
    return counted


def _first_message(conversation: LoadConversation, counted: Counted, seed: int) -> bool:
    """Whether the conversation's first message was answered (each try counted as a turn)."""
    # A person whose message failed sends it again; on a loaded machine omnigent's 30 s for a
    # new harness process to bind can fail a few first messages in a row (harness_spawn_failed).
    for attempt in ("", ", again", ", once more"):
        first = Played(f"hello before the faults{attempt}")
        conversation.talk.send(first.text)
        conversation.follow(first)
        conversation.played.append(first)
        counted.turns += 1
        try:
            check_turn(conversation.steps(), first)
        except AssertionError as exc:
            counted.failed(f"seed {seed}, the first message{attempt}", exc)
        else:
            return True
    return False


def _trials(conversation: LoadConversation, counted: Counted, seed: int, count: int) -> None:
    rng = random.Random(seed)
    for number in range(count):
        trial = draw_trial(rng, number)
        trial.slow_disk = 0.0  # needs the harness in this process (the module's docstring)
        labels = [label for label in trial.labels if label != "slow_disk"]
        counted.tally.trials += 1
        counted.tally.planned.update(labels)
        try:
            denied = conversation.omnigent_denials()
            played = conversation.play(trial)
            steps = conversation.steps()
            denied = conversation.omnigent_denials() - denied
            for one in played:
                counted.turns += 1
                used = check_turn(steps, one, decided_by_omnigent=denied)
                denied -= used
                counted.denied_by_omnigent += used
        except Exception as exc:  # every failure is counted and reported
            counted.failed(f"seed {seed} trial {number} ({trial.scenario}, {labels})", exc)


def run_load(
    stack: LocalStack, name: str, conversations: int, trials: int, seed: int
) -> tuple[list[Counted], float]:
    """`conversations` sessions at once on a fault host of their own named `name`, `trials`
    seeded trials each (conversation c draws from seed + c); their counts, and the seconds the
    trials took (the host's start aside)."""
    with fault_host(stack, name, conversations) as host:
        folder = stack.root / name / "faults"
        talks = [LoadConversation(stack, host, folder) for _ in range(conversations)]
        started = time.monotonic()
        try:
            with ThreadPoolExecutor(max_workers=conversations) as pool:
                counted = list(
                    pool.map(
                        run_conversation,
                        talks,
                        [seed + c for c in range(conversations)],
                        [trials] * conversations,
                    )
                )
        finally:
            for talk in talks:
                talk.close()
        return counted, time.monotonic() - started


def summary(counted: list[Counted]) -> dict[str, Any]:
    total = Tally()
    for one in counted:
        total.add(one.tally)
    return {
        "conversations": len(counted),
        "turns": sum(c.turns for c in counted),
        "lost": sum(c.lost for c in counted),
        "duplicated": sum(c.duplicated for c in counted),
        "failed_turns": sum(c.failed_turns for c in counted),
        "late_failures": sum(c.late_failures for c in counted),
        "denied_by_omnigent": sum(c.denied_by_omnigent for c in counted),
        **total.as_json(),
    }
