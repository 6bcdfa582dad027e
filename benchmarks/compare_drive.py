"""The scenarios benchmarks/compare.py drives through each harness, as the web UI would.

Each scenario plays on an open conversation (tests/stack.py's `Conversation`) and returns a
`Cell`: what a person saw. A peer's misbehaviour (no card, a turn that never ends, a stray
message) is the cell's finding, never an exception out of the drive: `play` turns a
`Seen` (or a timeout) into "fails (what was seen)".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from stack import TURN_ENDS, Conversation
from waiting import wait_until

from agy_sim.scenarios import long_answer_parts
from agy_sim.stack.rest import Json, RestError, card_choices, card_questions

WORKS, FAILS, IMPOSSIBLE, FROM_SUITE, FROM_CODE = (
    "works",
    "fails",
    "impossible",
    "from the e2e suite",
    "from the code",
)
TURN_TIMEOUT = 60.0
LONG = "Give me a long answer about HTTP/2"
LONG_PARTS = 120  # agy-sim's long answer (EngineSettings.long_answer_chunks)


@dataclass
class Cell:
    status: str
    note: str = ""

    def text(self) -> str:
        return f"{self.status}: {self.note}" if self.note else self.status


class Seen(Exception):  # noqa: N818 - what was seen, not an error of the drive
    """The scenario saw something other than what a person wants: the cell says fails."""


@dataclass
class Timing:
    """Figures one harness gave along the drive (ms)."""

    first_delta_ms: list[float] = field(default_factory=list)
    turn_end_ms: list[float] = field(default_factory=list)
    stop_last_delta_ms: list[float] = field(default_factory=list)


Scenario = Callable[[Conversation, Timing], Cell]


#: What a drive that went wrong raises (tests/waiting.py's wait_until says a timeout with an
#: AssertionError); `failure_cell` words it as the row's cell.
DRIVE_FAILURES = (
    Seen,
    TimeoutError,
    AssertionError,
    RestError,
    LookupError,
    httpx.HTTPError,
)


def failure_cell(exc: BaseException) -> Cell:
    """The cell of a drive that raised `exc` (one of DRIVE_FAILURES): what was seen, or the
    error's kind and its first words."""
    if isinstance(exc, Seen):
        return Cell(FAILS, str(exc))
    return Cell(FAILS, f"{type(exc).__name__}: {str(exc)[:200]}")


def play(scenario: Scenario, conversation: Conversation, timing: Timing) -> Cell:
    """Run one scenario; what went wrong becomes the cell, and the conversation is left idle
    (a later scenario then starts clean)."""
    users = len(user_texts(conversation))
    try:
        cell = scenario(conversation, timing)
    except DRIVE_FAILURES as exc:
        cell = failure_cell(exc)
    if not settle(conversation) and cell.status == WORKS:
        cell = Cell(FAILS, f"{cell.note}; then the session stayed busy")
    stray = user_texts(conversation)[users:]
    sent = getattr(conversation, "sent_now", [])
    # omnigent's own note after a Stop ("[System: interrupted] ...") is not a stray message.
    extra = [text for text in stray if text not in sent and not text.startswith("[System:")]
    if extra and cell.status == WORKS:
        cell = Cell(FAILS, f"{cell.note}; then user messages nobody sent: {extra}")
    conversation.sent_now = []  # type: ignore[attr-defined]
    return cell


def settle(conversation: Conversation) -> bool:
    """Until the session is idle and stays idle for two looks a second apart (a stray turn a
    harness starts after a card begins within that); whether it did."""
    settled = False
    with contextlib.suppress(TimeoutError, AssertionError, RestError, httpx.HTTPError):
        for _ in range(2):
            conversation.idle(timeout=20)
            time.sleep(1.0)  # a benchmark's settling look, not a test's synchronisation
        conversation.idle(timeout=20)
        settled = True
    conversation.events.drain()
    return settled


def user_texts(conversation: Conversation) -> list[str]:
    with contextlib.suppress(RestError, httpx.HTTPError):
        return [
            "".join(str(p.get("text", "")) for p in item.get("content") or [])
            for item in conversation.items()
            if item.get("type") == "message" and item.get("role") == "user"
        ]
    return []


def send(conversation: Conversation, text: str) -> int:
    """Send as the composer does; the index in the stream's events where the turn begins."""
    conversation.sent_now = [*getattr(conversation, "sent_now", []), text]  # type: ignore[attr-defined]
    start = len(conversation.events.seen) + len(conversation.events.drain())
    conversation.send(text)
    return start


def turn_end(conversation: Conversation) -> Json:
    end = conversation.turn_end(timeout=TURN_TIMEOUT)
    if end["type"] != "response.completed":
        raise Seen(f"the turn ended with {end['type']}")
    return end


def last_answer(conversation: Conversation) -> str:
    texts = conversation.assistant_texts()
    return texts[-1] if texts else ""


def after(conversation: Conversation, start: int, kind: str) -> list[Json]:
    return [e for e in conversation.events.seen[start:] if kind in str(e.get("type"))]


# -- the scenarios ---------------------------------------------------------------------------


def streamed(conversation: Conversation, timing: Timing) -> Cell:
    """A plain turn: the answer in deltas, the thinking shown; the send → first delta and
    → turn end figures."""
    sent = time.monotonic_ns()
    start = send(conversation, "hello, how are you?")
    end = turn_end(conversation)
    ended = time.monotonic_ns()
    seen = conversation.events.seen[start:]
    stamps = conversation.events.seen_ns[start:]
    deltas = [n for n, e in zip(stamps, seen, strict=True) if _answer_delta(e)]
    thinking = [e for e in seen if "reasoning" in str(e.get("type"))]
    if not deltas:
        raise Seen("the answer arrived whole (no text deltas)")
    timing.first_delta_ms.append((deltas[0] - sent) / 1e6)
    timing.turn_end_ms.append((ended - sent) / 1e6)
    if "You said: hello, how are you?" not in last_answer(conversation):
        raise Seen(f"the answer item says {last_answer(conversation)[:80]!r}")
    note = f"{len(deltas)} deltas; " + (
        f"thinking shown ({len(thinking)} events)" if thinking else "no thinking events"
    )
    del end
    return Cell(WORKS if thinking else FAILS, note)


def _answer_delta(event: Json) -> bool:
    return event.get("type") == "response.output_text.delta"


def tool_rows(conversation: Conversation, timing: Timing) -> Cell:
    send(conversation, "Please list the files here")
    _answer_cards(conversation, "approve")
    calls = [i for i in conversation.items() if i.get("type") == "function_call"]
    if not calls:
        raise Seen("no tool row in the conversation")
    return Cell(WORKS, f"row {calls[-1].get('name')!r}")


def subagent_rows(conversation: Conversation, timing: Timing) -> Cell:
    """A message agy hands to a sub-agent: the sub-agent as a row of its own (omnigent's
    child session, which the web lists under the conversation) with what it did."""
    send(conversation, "Please use a sub-agent.")
    _answer_cards(conversation, "approve")
    path = f"/v1/sessions/{conversation.id}/child_sessions?limit=100"

    def child() -> Json | None:
        rows = conversation.client.get(path).get("data") or []
        return rows[0] if rows else None

    def done(child_id: str) -> list[Json] | None:
        items = conversation.client.items(child_id)
        ended = any(i.get("type") == "message" and i.get("role") == "assistant" for i in items)
        return items if ended else None

    try:
        found = wait_until(child, timeout=20, what="the sub-agent's row")
    except AssertionError:
        raise Seen("no sub-agent row: the conversation has no child session") from None
    try:
        items = wait_until(lambda: done(str(found["id"])), timeout=20, what="its summary")
    except AssertionError:
        raise Seen(f"a row {found.get('title')!r} without the sub-agent's summary") from None
    calls = [i.get("name") for i in items if i.get("type") == "function_call"]
    title = str(found.get("title") or "").split(":")[0]
    return Cell(WORKS, f"row {title!r}: {len(calls)} tool call(s) {calls}, its summary")


def _answer_cards(conversation: Conversation, want: str, limit: int = 3) -> int:
    """Answer every card of the turn with `want` until it ends; how many there were."""
    cards = 0
    while True:
        event = conversation.until("response.elicitation_request", *TURN_ENDS, timeout=TURN_TIMEOUT)
        if event["type"] != "response.elicitation_request":
            if event["type"] != "response.completed":
                raise Seen(f"the turn ended with {event['type']}")
            return cards
        cards += 1
        if cards > limit:
            raise Seen(f"more than {limit} cards in one turn")
        answer_card(conversation, event, want)


def answer_card(conversation: Conversation, card: Json, want: str) -> None:
    """Press the button a person would: approve, deny or allow for the conversation."""
    params = card["params"]
    choices = card_choices(params)
    words = {
        "approve": ("allow once", "yes", "allow", "approve"),
        "deny": ("deny", "no", "reject"),
        "conversation": ("conversation", "always", "session"),
    }[want]
    for word in words:
        picked = [c for c in choices if word in c.lower()]
        if picked:
            conversation.client.resolve(
                conversation.id, card["elicitation_id"], {"answer": picked[0]}
            )
            return
    if want == "conversation":
        raise Seen(f"the card offers no conversation-wide choice ({choices or 'yes/no only'})")
    action = {"action": "accept", "content": {}} if want == "approve" else {"action": "decline"}
    conversation.client.post(
        f"/v1/sessions/{conversation.id}/elicitations/{card['elicitation_id']}/resolve", action
    )


def _command(conversation: Conversation, command: str, want: str) -> str:
    send(conversation, f"Please run: {command}")
    card = conversation.card(timeout=TURN_TIMEOUT)
    answer_card(conversation, card, want)
    turn_end(conversation)
    return last_answer(conversation)


def approve(conversation: Conversation, timing: Timing) -> Cell:
    answer = _command(conversation, "echo approved-here", "approve")
    if "exit code 0" not in answer:
        raise Seen(f"the answer says {answer[:100]!r}")
    return Cell(WORKS)


def deny(conversation: Conversation, timing: Timing) -> Cell:
    answer = _command(conversation, "touch denied-here", "deny")
    if "did not run" not in answer:
        raise Seen(f"the answer says {answer[:100]!r}")
    return Cell(WORKS, "the turn went on: agy answered after the refusal")


def allow_conversation(conversation: Conversation, timing: Timing) -> Cell:
    # agy's conversation-wide permission covers the same command ("Allow “echo x” for this
    # conversation"), so the second turn runs that command again.
    _command(conversation, "echo allowed-twice", "conversation")
    settle(conversation)
    send(conversation, "Please run: echo allowed-twice")
    event = conversation.until("response.elicitation_request", *TURN_ENDS, timeout=TURN_TIMEOUT)
    if event["type"] == "response.elicitation_request":
        answer_card(conversation, event, "approve")
        turn_end(conversation)
        raise Seen("the second command was asked about again")
    if event["type"] != "response.completed":
        raise Seen(f"the second turn ended with {event['type']}")
    return Cell(WORKS, "the second command ran with no card")


def _question(conversation: Conversation, text: str, pick: str | list[str], multi: bool) -> Cell:
    send(conversation, text)
    event = conversation.until("response.elicitation_request", *TURN_ENDS, timeout=TURN_TIMEOUT)
    if event["type"] != "response.elicitation_request":
        raise Seen(
            f"no question card; the turn ended with {event['type']}: "
            f"{last_answer(conversation)[:80]!r}"
        )
    questions = card_questions(event["params"])
    buttons = card_choices(event["params"])
    if not questions and not buttons:
        conversation.client.post(
            f"/v1/sessions/{conversation.id}/elicitations/{event['elicitation_id']}/resolve",
            {"action": "decline"},
        )  # the next scenario must not wait behind it
        raise Seen(f"the card holds no question ({sorted(event['params'])})")
    # One question whose options are buttons (a choice card) is a single choice.
    offered_multi = bool(questions and questions[0].get("multiSelect"))
    if multi and not offered_multi:
        conversation.answer(event, [pick[0]] if isinstance(pick, list) else pick)
        with contextlib.suppress(TimeoutError, Seen):
            turn_end(conversation)
        raise Seen("the card offered one choice for a multi-select question")
    if isinstance(pick, str) and buttons and not any(b.lower() == pick.lower() for b in buttons):
        # A written answer: the button a person presses for their own words, then its form.
        own = [b for b in buttons if "own answer" in b.lower() or "write" in b.lower()]
        if not own:
            raise Seen(f"no button for a written answer among {buttons}")
        conversation.answer(event, own[-1])
        event = conversation.card(timeout=TURN_TIMEOUT)
    conversation.answer(event, pick)
    turn_end(conversation)
    answer = last_answer(conversation)
    wanted = pick if isinstance(pick, list) else [pick]
    if not all(w in answer for w in wanted):
        raise Seen(f"agy's answer does not carry the choice: {answer[:100]!r}")
    return Cell(WORKS)


def single_question(conversation: Conversation, timing: Timing) -> Cell:
    return _question(conversation, "Ask me a question about the colour", "Blue", multi=False)


def multi_question(conversation: Conversation, timing: Timing) -> Cell:
    return _question(conversation, "multi: which checks?", ["Lint", "Unit tests"], multi=True)


def write_in(conversation: Conversation, timing: Timing) -> Cell:
    return _question(conversation, "A write-in: name the module", "gizmo_tools", multi=False)


def stop_mid_answer(conversation: Conversation, timing: Timing) -> Cell:
    start = send(conversation, LONG)
    conversation.until("response.output_text.delta", timeout=TURN_TIMEOUT)
    stopped = time.monotonic_ns()
    conversation.stop()
    end = conversation.turn_end(timeout=TURN_TIMEOUT)
    settle(conversation)
    seen = conversation.events.seen[start:]
    stamps = conversation.events.seen_ns[start:]
    late = [n for n, e in zip(stamps, seen, strict=True) if _answer_delta(e) and n >= stopped]
    timing.stop_last_delta_ms.append(((late[-1] - stopped) / 1e6) if late else 0.0)
    whole = "".join(long_answer_parts(LONG, LONG_PARTS))
    if len(last_answer(conversation)) >= len(whole):
        raise Seen(f"ended as {end['type']} with the whole answer: Stop did not stop it")
    return Cell(WORKS, f"ended as {end['type']}, the answer cut short")


def stop_on_card(conversation: Conversation, timing: Timing) -> Cell:
    send(conversation, "Please run: echo never-ran")
    conversation.card(timeout=TURN_TIMEOUT)
    conversation.stop()
    end = conversation.turn_end(timeout=60)
    try:
        wait_until(
            lambda: conversation.state()["pending_elicitations"] == [],
            timeout=30,
            what="the card to close",
        )
    except AssertionError:  # tests/waiting.py's timeout
        raise Seen(f"ended as {end['type']}, but the card stayed open") from None
    if any("never-ran" in output for output in conversation.outputs()):
        raise Seen("the command ran anyway")
    return Cell(WORKS, f"ended as {end['type']}; the card closed; the command never ran")


def _model_turn(conversation: Conversation, wanted: str, **fields: str) -> Cell:
    conversation.client.update(conversation.id, **fields)
    send(conversation, "hello with another model")
    turn_end(conversation)
    answer = last_answer(conversation)
    if f"({wanted})" not in answer:
        raise Seen(f"agy answered: {answer[:70]!r}")
    return Cell(WORKS, f"agy answered as {wanted}")


def model_per_turn(conversation: Conversation, timing: Timing) -> Cell:
    return _model_turn(conversation, "Gemini 3 Flash", model_override="gemini-3-flash")


def effort_per_turn(conversation: Conversation, timing: Timing) -> Cell:
    return _model_turn(
        conversation,
        "Gemini 3.1 Pro (Low)",
        model_override="gemini-3-1-pro-high",
        reasoning_effort="low",
    )


def usage_and_meter(conversation: Conversation, timing: Timing) -> Cell:
    send(conversation, "hello, count my tokens")
    end = turn_end(conversation)
    usage = (end.get("response") or {}).get("usage") or {}
    state = conversation.state()
    tokens = state.get("last_total_tokens")
    found = []
    if usage.get("input_tokens"):
        found.append(f"usage {usage.get('input_tokens')} in / {usage.get('output_tokens')} out")
    found.append(f"context ring {tokens} tokens" if tokens else "no context ring count")
    if not usage.get("input_tokens") or not tokens:
        raise Seen("; ".join(found) if found else "no usage on the turn")
    return Cell(WORKS, "; ".join(found))
