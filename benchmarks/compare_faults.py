"""The scenarios of benchmarks/compare.py where a process goes away, driven alike for every
harness: agy stopped while the conversation is idle, and the harness process killed mid-turn.

They play on an open conversation (tests/stack.py's `Conversation`) whose processes are
found with psutil as benchmarks/compare_processes.py finds them (what appeared since
benchmarks/compare.py's snapshot before the conversation opened, `conversation.before`),
and return a `Cell` as the other scenarios of benchmarks/compare_drive.py do: what a person
saw.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import psutil
from compare_drive import (
    TURN_TIMEOUT,
    Cell,
    Seen,
    Timing,
    answer_card,
    last_answer,
    send,
    settle,
)
from compare_processes import kind, new_processes
from stack import TURN_ENDS, Conversation
from waiting import wait_until

from agy_sim.scenarios import long_answer_parts
from agy_sim.stack.local_stack import LocalStack
from agy_sim.stack.rest import OmnigentClient, RestError

LONG = "Give me a long answer about TCP"
LONG_PARTS = 120  # agy-sim's long answer (EngineSettings.long_answer_chunks)
RECALL = "What did I say before this?"  # agy-sim recites the conversation's earlier messages
GREETING = "hello"  # what benchmarks/compare.py's first turn of a conversation says
AFTER = "hello after the kill"
RESTART_COMMAND = "Please run: echo after the restart"
RESTART_OUTPUT = "after the restart"
AFTER_RESTART = "hello after the restart"


def _processes(conversation: Conversation) -> list[psutil.Process]:
    """The conversation's processes now (a harness may have started new ones since its
    first turn): what appeared since the stack's snapshot before it opened."""
    before: set[psutil.Process] = getattr(conversation, "before", set())
    return [p for p in new_processes(conversation.stack, before) if p.is_running()]


def agy_processes(conversation: Conversation) -> list[psutil.Process]:
    """agy (agy-sim) as the conversation runs it: in tmux, or `agy acp` under the harness."""
    return [p for p in _processes(conversation) if kind(p) == "agy-sim (agy)"]


def harness_process(conversation: Conversation) -> psutil.Process | None:
    """The process running the conversation's harness: omnigent forks two per conversation
    from its zygote (omnigent/runner/_zygote.py), the session's runner and then the harness
    process, so the later of the two (`agy acp` runs under it on the ACP route)."""
    forked = []
    for process in _processes(conversation):
        with contextlib.suppress(psutil.Error):
            if "omnigent.runner._zygote" in " ".join(process.cmdline()):
                forked.append((process.create_time(), process.pid, process))
    return max(forked)[2] if len(forked) >= 2 else None


def idle_resume(conversation: Conversation, timing: Timing) -> Cell:
    """agy stopped while nobody used the conversation (the machine's, a person's, the
    plugin's idle sweep alike: the process ends), then a message that needs its history."""
    agys = agy_processes(conversation)
    if not agys:
        raise Seen("no agy process of the conversation was found to stop")
    for process in agys:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _, alive = psutil.wait_procs(agys, timeout=15)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    settle(conversation)
    answers = len(conversation.assistant_texts())
    send(conversation, RECALL)
    end = conversation.turn_end(timeout=TURN_TIMEOUT * 2)
    if end["type"] != "response.completed":
        raise Seen(f"the next turn ended with {end['type']}: {_error(end)}")
    if len(conversation.assistant_texts()) == answers:
        raise Seen("the turn completed with no answer from agy")
    answer = last_answer(conversation)
    if f"- {GREETING}" not in answer:
        raise Seen(f"the turn completed, but agy had lost the conversation: {answer[:90]!r}")
    return Cell("works", "agy started again on the conversation: it recited the earlier message")


def kill_mid_turn(conversation: Conversation, timing: Timing) -> Cell:
    """The harness process SIGKILLed while agy streams a long answer; then the next message.
    Nothing lost or repeated: the next turn answers once, the killed turn's answer is not
    shown twice; whether it reached the conversation whole is said."""
    send(conversation, LONG)
    conversation.until("response.output_text.delta", timeout=TURN_TIMEOUT)
    victim = harness_process(conversation)
    if victim is None:
        raise Seen("the conversation's harness process was not found")
    victim.kill()
    with contextlib.suppress(psutil.Error):
        victim.wait(15)
    killed = conversation.until(*TURN_ENDS, timeout=TURN_TIMEOUT)["type"]
    settle(conversation)
    send(conversation, AFTER)
    end = conversation.until(*TURN_ENDS, timeout=TURN_TIMEOUT * 3)
    if end["type"] == "response.failed" and "connection" in json.dumps(end).lower():
        # The message reached the dead process's socket before omnigent's runner noticed the
        # death, and the runner failed it (docs/reliability.md): a person sends again.
        settle(conversation)
        send(conversation, AFTER)
        end = conversation.until(*TURN_ENDS, timeout=TURN_TIMEOUT * 3)
    if end["type"] != "response.completed":
        raise Seen(
            f"the killed turn ended as {killed}; the next one with {end['type']}: {_error(end)}"
        )
    settle(conversation)
    texts = conversation.assistant_texts()
    said = [t for t in texts if AFTER in t]
    if not said:
        raise Seen(
            f"the next turn completed without its answer: {last_answer(conversation)[:90]!r}"
        )
    # The killed turn's answer may be split between the item omnigent kept of what had
    # streamed and the rest published later: read them together, in order.
    parts = long_answer_parts(LONG, LONG_PARTS)
    joined = "".join(texts)
    repeated = [p for p in (parts[0], parts[-1]) if joined.count(p) > 1]
    if len(said) > 1 or repeated:
        raise Seen(f"repeated: the next answer {len(said)} times; {repeated}")
    whole = "".join(parts)
    reached = sum(1 for p in parts if p in joined)
    kept = (
        "its whole answer reached the conversation (the rest at the next turn)"
        if whole in joined
        else f"{reached} of its {len(parts)} answer parts reached the conversation"
    )
    return Cell("works", f"the killed turn ended as {killed}; {kept}; the next turn answered")


def host_restarted_with_card(stack: LocalStack, agent: str, tag: str) -> Cell:
    """`omnigent host` stopped and started again while a command's card waits (a host of its
    own, so the others' conversations stay up); the card answered once the host is back, or
    the card that comes back; then a next message. What a person needs: the turn does not
    hang, the command runs at most once, and the next message is answered.

    omnigent keeps a stopped host's runners for 90 s (``RUNNER_DISCONNECT_GRACE_S``), so
    this row takes two minutes or more per harness: the full run only."""
    host = stack.add_host(f"compare-restart-{tag}", agy_on_path=True)
    try:
        with Conversation(stack, host=host, agent=agent) as conversation:
            conversation.client = OmnigentClient(stack.url, timeout=120)  # the server is busy
            conversation.send(GREETING)
            conversation.turn_end(timeout=180)
            settle(conversation)
            send(conversation, RESTART_COMMAND)
            card = conversation.card(timeout=TURN_TIMEOUT)
            stack.stop_host(host)
            stack.start_host(host)
            stack.wait_ready(host)
            seen = [_restart_answer(conversation, card)]
            seen.append(_restart_settled(conversation))
            settle(conversation)
            send(conversation, AFTER_RESTART)
            try:
                seen.append(_answered_after_restart(conversation))
            except Seen as unanswered:
                raise Seen("; ".join([*seen, str(unanswered)])) from None
            ran = sum(RESTART_OUTPUT in output for output in conversation.outputs())
            if ran > 1:
                raise Seen(f"the command ran {ran} times; " + "; ".join(seen))
            said = [t for t in conversation.assistant_texts() if AFTER_RESTART in t]
            if len(said) != 1:
                raise Seen(f"the next message was answered {len(said)} times; " + "; ".join(seen))
            if not ran:  # nothing hung or repeated, but the person's approval came to nothing
                seen.append("the approval was lost: the command never ran")
                return Cell("partly", "; ".join(seen))
            return Cell("works", f"{'; '.join(seen)}; the command ran once")
    finally:
        stack.stop_host(host)


def _restart_answer(conversation: Conversation, card: dict[str, Any]) -> str:
    """Approve the card shown before the restart, as a person whose page stayed open."""
    try:
        answer_card(conversation, card, "approve")
    except RestError as exc:
        return f"the old card could not be answered ({exc.status})"
    return "the old card was answered after the restart"


def _restart_settled(conversation: Conversation) -> str:
    """How the interrupted turn ended: answering any card that came back (approve), until a
    turn end, or omnigent's own failed/idle status for a runner that went away."""
    cards = 0
    deadline = 240.0

    def settled() -> str | None:
        nonlocal cards
        for event in conversation.events.drain():
            kind = event.get("type")
            if kind == "response.elicitation_request" and cards < 3:
                cards += 1
                answer_card(conversation, event, "approve")
            elif kind in TURN_ENDS:
                return f"the turn ended as {kind}"
        status = conversation.state()
        if status.get("status") == "failed" and status.get("last_task_error"):
            code = (status.get("last_task_error") or {}).get("code")
            return f"omnigent failed the turn ({code})"
        if status.get("status") == "idle":
            return "omnigent ended the turn (the session idle, no turn end)"
        return None

    try:
        ended = wait_until(settled, timeout=deadline, what="the turn to end or fail")
    except AssertionError as exc:
        raise Seen(f"the turn neither ended nor failed within {deadline:.0f} s") from exc
    return ended + (f" after {cards} card(s) came back" if cards else "")


def _answered_after_restart(conversation: Conversation) -> str:
    """The next message's turn, approving a card that asks for the command again (omnigent
    may run the failed turn again first)."""
    unanswered = 0
    for _ in range(6):
        try:
            event = conversation.until("response.elicitation_request", *TURN_ENDS, timeout=180)
        except TimeoutError:
            break
        if event["type"] == "response.elicitation_request":
            answer_card(conversation, event, "approve")
            continue
        if event["type"] != "response.completed":
            raise Seen(f"the next message's turn ended with {event['type']}: {_error(event)}")
        if any(AFTER_RESTART in t for t in conversation.assistant_texts()):
            return "the next message's turn completed"
        unanswered += 1
    raise Seen(
        f"the next message was never answered ({unanswered} turn(s) completed without its answer)"
    )


def _error(end: dict[str, Any]) -> str:
    response = end.get("response") or {}
    error = response.get("error") if isinstance(response, dict) else None
    return json.dumps(error or end.get("error") or end)[:160]
