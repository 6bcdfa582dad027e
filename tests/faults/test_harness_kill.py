"""The harness process SIGKILLed mid-turn and started again, as omnigent's runner does.

The harness runs in an OS process of its own, started by omnigent's runner entry point on a Unix
socket (`runnerproc.HarnessProcess`); agy is agy-sim in its own tmux server, which outlives the
harness. The harness is killed (i) while an answer streams, (ii) while an approval card waits,
(iii) while an approved command runs, (iv) while a question waits. omnigent's part is played as
it plays it: the killed turn's stream breaks (the runner fails that turn as `connection_error`;
the host decides that, not the plugin), and the person's next message starts a new harness
process on the same socket. Then, against what agy committed (read back over RPC):

- every committed step of the killed turn and of the next reaches omnigent exactly once, in
  order: the text deltas of both turns, concatenated, equal the committed answers; each tool
  step is one completed call and one output;
- a card still waiting in agy is shown again once, and answering it lands on that live WAITING
  step (the card of the killed process is refused by the new one);
- the message of the next turn reaches agy once, and the turn after it works as any turn.

The runner going away while a card waits (its host stopped: it closes the turn's stream, then
sends SIGTERM, and the process shuts down as it does) leaves the card to agy the same way: it
is not refused, the next process asks it again, and omnigent running the lost turn once more
does not send its message twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultmix import PLANNER, TOOL_STEPS, USER_INPUT, HarnessConversation, answer, environment
from runnerproc import HarnessProcess
from waiting import wait_until

from agy_sim.stack.harness_server import StreamedTurn
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

DONE = "CORTEX_STEP_STATUS_DONE"
RUNNING = "CORTEX_STEP_STATUS_RUNNING"
WAITING = "CORTEX_STEP_STATUS_WAITING"
IDLE = "CASCADE_RUN_STATUS_IDLE"
RUN_COMMAND = "CORTEX_STEP_TYPE_RUN_COMMAND"


class ProcessConversation(HarnessConversation):
    """A conversation whose harness is an OS process (`HarnessProcess`), not a thread."""

    def __init__(self, env: dict[str, str], faults: Path, log_dir: Path) -> None:
        super().__init__(env, faults)
        self.process = HarnessProcess(self.conversation_id, env, log_dir)

    def open(self) -> Any:
        self.harness = self.process.start()  # type: ignore[assignment]
        return self.harness

    def close(self) -> None:
        self.process.stop()
        self.harness = None

    def status(self) -> str:
        """agy's own status of the bound cascade (IDLE once its turn is over)."""
        record = self.record()
        listed = self.rpc("GetAllCascadeTrajectories", {})
        summary = listed.get("trajectorySummaries", {}).get(record.cascade_id, {})
        return str(summary.get("status", ""))

    def rpc(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        record, port = self.record(), self.port()

        async def call() -> dict[str, Any]:
            async with RpcClient(port=port, csrf_token=record.csrf_token) as client:
                reply: dict[str, Any] = await client.call(method, body)
                return reply

        return asyncio.run(call())


@pytest.fixture
def talk(tmp_path: Path) -> Iterator[ProcessConversation]:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"restart": 0, "faults": []}))
    env = environment(
        tmp_path,
        faults,
        AGY_SIM_LONG_TOKEN_DELAY="0.05",
        AGY_SIM_SLOW_COMMAND_SECONDS="4",
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    conversation = ProcessConversation(env, faults, logs)
    try:
        conversation.open()
        yield conversation
    finally:
        try:
            conversation.close()
        finally:
            conversation.kill_agy()


def _turn_steps(steps: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The steps of the turn that began with the USER_INPUT saying `text` (exactly once)."""
    starts = [
        i
        for i, s in enumerate(steps)
        if s.get("type") == USER_INPUT and s.get("userInput", {}).get("userResponse") == text
    ]
    assert len(starts) == 1, f"{text!r} reached agy {len(starts)} times, not once"
    end = next(
        (i for i in range(starts[0] + 1, len(steps)) if steps[i].get("type") == USER_INPUT),
        len(steps),
    )
    return steps[starts[0] : end]


def _committed_text(steps: list[dict[str, Any]]) -> str:
    return "".join(
        str(s.get("plannerResponse", {}).get("response") or "")
        for s in steps
        if s.get("type") == PLANNER and s.get("status") == DONE
    )


def _check_exactly_once(
    talk: ProcessConversation, turns: list[StreamedTurn], texts: list[str]
) -> None:
    """Every step agy committed for `texts` reached omnigent once, in order, over `turns`."""
    steps = talk.steps()
    ours = [s for text in texts for s in _turn_steps(steps, text)]
    # The executor starts each further message of a turn on a new paragraph ("\n\n"); where
    # one turn's messages end and the next turn's begin depends on the kill, so paragraph
    # breaks are left out of the comparison (any lost or repeated text still shows).
    shown = "".join(turn.text() for turn in turns).replace("\n\n", "")
    want = _committed_text(ours).replace("\n\n", "")
    assert shown == want, f"the deltas do not rebuild agy's text:\n got {shown!r}\nwant {want!r}"
    calls = [
        item
        for turn in turns
        for item in turn.items("function_call")
        if item.get("status") == "completed"
    ]
    outputs = [item for turn in turns for item in turn.items("function_call_output")]
    call_ids = [str(c["call_id"]) for c in calls]
    output_ids = [str(o["call_id"]) for o in outputs]
    assert len(call_ids) == len(set(call_ids)), f"a tool call was published twice: {call_ids}"
    assert len(output_ids) == len(set(output_ids)), f"an output was published twice: {output_ids}"
    tool_steps = sum(1 for s in ours if s.get("type") in TOOL_STEPS)
    assert len(call_ids) == tool_steps, f"{tool_steps} tool steps, {len(call_ids)} calls shown"
    assert sorted(output_ids) == sorted(call_ids)


def _next_turn_works(talk: ProcessConversation, harness: HarnessProcess, text: str) -> None:
    turn = harness.turn(text)
    turn.finish(60)
    assert turn.kinds()[-1] == "response.completed", turn.kinds()
    assert turn.text() == _committed_text(_turn_steps(talk.steps(), text))


def _killed(turn: StreamedTurn) -> None:
    """The killed turn's stream broke, as the runner sees it (it fails the turn)."""
    turn.finish(30)
    assert turn.broken is not None or "response.completed" not in turn.kinds(), turn.kinds()


def _step(talk: ProcessConversation, step_type: str, status: str) -> dict[str, Any] | None:
    found = [s for s in talk.steps() if s.get("type") == step_type]
    return found[-1] if found and found[-1].get("status") == status else None


def test_killed_while_an_answer_streams(talk: ProcessConversation) -> None:
    harness = talk.process
    text = "write a long answer, please"
    first = harness.turn(text)
    first.until("response.output_text.delta", lambda e: len(first.text()) > 200, timeout=60)
    harness.kill()
    _killed(first)
    assert first.text(), "nothing streamed before the kill"
    # agy finishes the answer on its own while no harness runs.
    wait_until(lambda: talk.status() == IDLE, timeout=60, what="agy to finish the answer")
    harness.start()
    second = harness.turn("and now a short one")
    second.finish(60)
    assert second.kinds()[-1] == "response.completed", second.kinds()
    _check_exactly_once(talk, [first, second], [text, "and now a short one"])
    _next_turn_works(talk, harness, "one more, after the kill")


@pytest.mark.parametrize(
    ("text", "step_type"),
    [
        ("run: echo killed at the card", "CORTEX_STEP_TYPE_RUN_COMMAND"),
        ("ask me a question, killed at the card", "CORTEX_STEP_TYPE_ASK_QUESTION"),
    ],
    ids=["approval", "question"],
)
def test_killed_while_a_card_waits(talk: ProcessConversation, text: str, step_type: str) -> None:
    harness = talk.process
    first = harness.turn(text)
    card = first.until("response.elicitation_request")
    harness.kill()
    _killed(first)
    assert _step(talk, step_type, WAITING) is not None, "agy no longer waits for the answer"
    asked = len([s for s in talk.steps() if s.get("type") == step_type])
    harness.start()
    # The card shown before the kill belongs to the dead process: the new one refuses it.
    with pytest.raises(RuntimeError, match="refused") as refused:
        answer(harness, card)  # type: ignore[arg-type]
    assert "no outstanding elicitation" in str(refused.value), refused.value
    second = harness.turn("are you still there?")
    again = second.until("response.elicitation_request", timeout=60)
    assert again["params"].get("message") == card["params"].get("message")
    answer(harness, again)  # type: ignore[arg-type]
    second.finish(60)
    assert second.kinds()[-1] == "response.completed", second.kinds()
    assert second.kinds().count("response.elicitation_request") == 1, "the card was shown twice"
    landed = [s for s in talk.steps() if s.get("type") == step_type]
    assert len(landed) == asked, "agy asked again instead of taking the answer"
    assert landed[-1]["status"] == DONE, "the answer did not land on the WAITING step"
    assert landed[-1].get("completedInteractions"), "the step does not show the answer"
    _check_exactly_once(talk, [first, second], [text, "are you still there?"])
    _next_turn_works(talk, harness, "one more, after the card")


def test_killed_while_an_approved_command_runs(talk: ProcessConversation) -> None:
    harness = talk.process
    text = "run a slow command, killed while it runs"
    first = harness.turn(text)
    card = first.until("response.elicitation_request")
    answer(harness, card)  # type: ignore[arg-type]
    wait_until(
        lambda: _step(talk, "CORTEX_STEP_TYPE_RUN_COMMAND", RUNNING),
        timeout=30,
        what="the approved command to run",
    )
    harness.kill()
    _killed(first)
    # The command ends and agy answers while no harness runs: all of it waits for the next.
    wait_until(lambda: talk.status() == IDLE, timeout=60, what="agy to finish the turn")
    harness.start()
    second = harness.turn("did it finish?")
    second.finish(60)
    assert second.kinds()[-1] == "response.completed", second.kinds()
    assert "response.elicitation_request" not in second.kinds(), "an answered card came back"
    _check_exactly_once(talk, [first, second], [text, "did it finish?"])
    _next_turn_works(talk, harness, "one more, after the command")


@pytest.mark.parametrize(
    ("next_text", "hang_up"),
    [
        ("run: echo left at the card", True),
        ("are you still there?", True),
        # SIGTERM alone: uvicorn cancels the open stream after its graceful timeout (5 s).
        ("are you still there?", False),
    ],
    ids=["the-lost-turn-again", "a-next-message", "sigterm-alone"],
)
def test_the_runner_going_away_leaves_the_card_to_agy(
    talk: ProcessConversation, next_text: str, hang_up: bool
) -> None:
    harness = talk.process
    text = "run: echo left at the card"
    first = harness.turn(text)
    first.until("response.elicitation_request")
    if hang_up:
        first.hang_up()
    harness.terminate()
    _killed(first)
    assert _step(talk, RUN_COMMAND, WAITING) is not None, "the card was refused on the way out"
    asked = len([s for s in talk.steps() if s.get("type") == RUN_COMMAND])
    harness.start()
    # omnigent runs the lost turn again (the same message), or the person writes next.
    second = harness.turn(next_text)
    again = second.until("response.elicitation_request", timeout=60)
    assert "left at the card" in json.dumps(again["params"]), again
    answer(harness, again)  # type: ignore[arg-type]
    second.finish(60)
    assert second.kinds()[-1] == "response.completed", second.kinds()
    assert second.kinds().count("response.elicitation_request") == 1, "the card was shown twice"
    landed = [s for s in talk.steps() if s.get("type") == RUN_COMMAND]
    assert len(landed) == asked, "agy asked again instead of taking the answer"
    assert landed[-1]["status"] == DONE, "the approval did not land on the WAITING step"
    texts = list(dict.fromkeys([text, next_text]))  # each reached agy once (_turn_steps)
    _check_exactly_once(talk, [first, second], texts)
    _next_turn_works(talk, harness, "one more, after the runner came back")
