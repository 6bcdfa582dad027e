"""Turns with a gate: a command allowed once, a command denied, a question skipped.

Gates are found and answered with the plugin's own code (`interactions.gates`: the gate a
WAITING step asks as the mapper reads it, the payloads the bridge sends), so what passes
here is what a person's card does. docs/decisions.md §1: a denied command must not end the
turn; agy gets `allow: false` and carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from omnigent_agy.errors import RpcError
from omnigent_agy.interactions.gates import (
    ANSWER_FIELDS,
    REFUSALS,
    Gate,
    gates_in,
    permission_payload,
    question_payload,
)
from omnigent_agy.interactions.prompts import QuestionAnswer, QuestionAnswers, QuestionForm
from omnigent_agy.probe.facts import FactVerdict, Finding, Seen
from omnigent_agy.probe.probe_turns import ProbeExchange, turn_wait
from omnigent_agy.probe.turn_checks import Context, TurnPlan, after_turn, find
from omnigent_agy.reading.events import ToolCallFinished, ToolOutcome
from omnigent_agy.reading.steps import (
    InteractionKind,
    StepStatus,
    StepType,
    is_settled,
    metadata,
    obj,
    seq,
    step_status,
    step_type,
)

__all__ = ["check_command", "check_deny", "check_question"]

_QUIET: Final = 2.0  # seconds the stream is watched for frames while a gate is open
_SETTLE: Final = 60.0


def _gate(turn: ProbeExchange, kind: InteractionKind) -> Gate | None:
    found = [g for g in _open_gates(turn) if g.request.kind == kind]
    return found[-1] if found else None


def _no_gate(turn: ProbeExchange, kind: str, fact: str, expected: str, section: str) -> Finding:
    """Why a gate turn saw no gate: the model did something else, or ran without asking."""
    ran = [s for _, s in turn.of_type(kind) if is_settled(step_status(s))]
    if ran:
        seen = "agy ran it without asking (your agy's settings allow it): no gate to check"
    elif turn.ended():
        seen = "the model answered without using the tool: no gate to check"
    else:
        seen = turn.stream_error or "no gate within the probe's wait"
    verdict = FactVerdict.FAIL if turn.stream_error else FactVerdict.SKIP
    return Finding(fact, verdict, expected, seen, section)


async def _watch_gate(ctx: Context, turn: ProbeExchange, kind: InteractionKind) -> Gate | None:
    try:
        await turn_wait(turn, lambda t: _gate(t, kind) is not None or t.ended(), ctx.timeout)
    except TimeoutError:
        return None
    return _gate(turn, kind)


async def _listing_while_waiting(ctx: Context, turn: ProbeExchange, gate: Gate) -> Finding:
    """GetAllCascadeTrajectories names the open gate in waitingSteps (§3), which interrupt and
    delivery read; and the stream stays quiet meanwhile (§4)."""
    before = len(turn.frames)
    await asyncio.sleep(_QUIET)
    quiet = len(turn.frames) - before
    conversation = ctx.conversation
    expected = f"waitingSteps naming step {gate.key.step_index}"
    try:
        listing = await conversation.client.get_all_cascade_trajectories()
    except RpcError as exc:
        return Finding("gate: listed as waiting", FactVerdict.FAIL, expected, str(exc), "§3, §6")
    summary = obj(obj(listing.get("trajectorySummaries")).get(conversation.cascade_id))
    ctx.observations.add(
        Seen.LISTING_WAITING,
        f"{turn.name} listing",
        {"trajectorySummaries": {conversation.cascade_id: summary}},
    )
    listed = [obj(w).get("stepIndex") for w in seq(summary.get("waitingSteps"))]
    named = any(str(index) == str(gate.key.step_index) for index in listed)
    seen = f"waitingSteps {listed}; {quiet} frame(s) in {_QUIET:g} s while it waited"
    verdict = FactVerdict.PASS if named else FactVerdict.FAIL
    return Finding("gate: listed as waiting", verdict, expected, seen, "§3, §6")


async def _answer(ctx: Context, gate: Gate, **payload: Any) -> str | None:
    """Deliver an answer the bridge's way; the error text when agy refused it."""
    try:
        await ctx.conversation.client.handle_cascade_user_interaction(
            ctx.conversation.cascade_id,
            trajectory_id=gate.key.trajectory_id,
            step_index=gate.key.step_index,
            **payload,
        )
    except RpcError as exc:
        return str(exc)
    return None


async def _settle(ctx: Context, turn: ProbeExchange, answered: Gate) -> list[Finding]:
    """Until the turn ends. A gate agy opens after the one answered (the model trying again,
    or another command) is refused as omnigent's Stop refuses it: the probe agreed to one."""
    seen = {answered.id}
    refused = 0
    stop_at = asyncio.get_running_loop().time() + max(ctx.timeout, _SETTLE)

    def done_or_new(t: ProbeExchange) -> bool:
        return t.ended() or any(g.id not in seen for g in _open_gates(t))

    while (left := stop_at - asyncio.get_running_loop().time()) > 0:
        with contextlib.suppress(TimeoutError):
            await turn_wait(turn, done_or_new, left)
        fresh = [g for g in _open_gates(turn) if g.id not in seen]
        if not fresh:
            break
        for gate in fresh:
            seen.add(gate.id)
            field = ANSWER_FIELDS[gate.request.kind]
            await _answer(ctx, gate, **{field: REFUSALS[gate.request.kind]})
            refused += 1
    if not refused:
        return []
    seen_text = f"agy asked {refused} more time(s) after the answer; refused each"
    return [
        Finding("gate: asked again", FactVerdict.INFO, "one gate per probe turn", seen_text, "§6")
    ]


def _open_gates(turn: ProbeExchange) -> list[Gate]:
    opened = turn.open_gate()
    if opened is None:
        return []
    index, step = opened
    return gates_in(step, index, cascade_id=turn.cascade_id)


def _outcome(turn: ProbeExchange, gate: Gate) -> ToolCallFinished | None:
    finished = [e for e in turn.events if isinstance(e, ToolCallFinished) and e.key == gate.key]
    return finished[-1] if finished else None


def _carried_on(turn: ProbeExchange, gate: Gate) -> tuple[bool, str]:
    """agy went on after the gate: a planner step after it settled DONE and the turn ended
    without an ERROR step."""
    later = [
        (i, s)
        for i, s in turn.own_steps()
        if i > gate.key.step_index and step_type(s) == StepType.PLANNER_RESPONSE
    ]
    replied = any(step_status(s) == StepStatus.DONE for _, s in later)
    errors = [i for i, s in turn.own_steps() if step_status(s) == StepStatus.ERROR]
    ok = replied and turn.ended() and not errors
    seen = (
        f"{'a reply' if replied else 'no reply'} after the gate; "
        f"{'IDLE' if turn.ended() else 'not IDLE'}"
        + (f"; ERROR at step {errors}" if errors else "")
    )
    return ok, seen


@dataclass(frozen=True, slots=True)
class _GateTurn:
    """What a gate turn checks: the gate it waits for and where its settled step goes."""

    kind: InteractionKind
    step_type: str
    fact: str
    expected: str
    section: str
    settled: Seen


type _WhileOpen = Callable[[ProbeExchange, Gate], Awaitable[list[Finding]]]


async def _gate_turn(
    ctx: Context, plan: TurnPlan, what: _GateTurn, while_open: _WhileOpen
) -> tuple[ProbeExchange, Gate | None, list[Finding]]:
    """Send the turn, wait for its gate, run `while_open` (which answers it), wait for the
    turn to settle; the gate's settled step is kept for the field table."""
    async with ctx.conversation.turn(plan.name, plan.prompt) as turn:
        gate = await _watch_gate(ctx, turn, what.kind)
        if gate is None:
            found = _no_gate(turn, what.step_type, what.fact, what.expected, what.section)
            return turn, None, [found]
        findings = await while_open(turn, gate)
        findings += await _settle(ctx, turn, gate)
    step = turn.latest(gate.key.step_index)
    if is_settled(step_status(step)):
        ctx.observations.add(what.settled, f"{turn.name} step {gate.key.step_index}", step)
    return turn, gate, findings


def _gate_found(what: _GateTurn, gate: Gate) -> Finding:
    wanted = gate.request.wanted
    seen = f"step {gate.key.step_index}: {wanted.action or '?'} {wanted.target or ''!r}"
    return Finding(what.fact, FactVerdict.PASS, what.expected, seen, what.section)


def _answered(fact: str, refused: str | None) -> Finding:
    return find(
        fact, refused is None, "HandleCascadeUserInteraction answers {}", refused or "{}", "§3"
    )


_COMMAND = _GateTurn(
    InteractionKind.PERMISSION,
    StepType.RUN_COMMAND,
    "command: a permission gate",
    "RUN_COMMAND WAITING on a permission",
    "§6",
    Seen.COMMAND_ALLOWED,
)


async def check_command(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """A command's gate allowed once: agy runs it and the plugin shows its output."""

    async def allow(turn: ProbeExchange, gate: Gate) -> list[Finding]:
        listed = await _listing_while_waiting(ctx, turn, gate)
        refused = await _answer(ctx, gate, permission=permission_payload(allow=True))
        return [_gate_found(_COMMAND, gate), listed, _answered("command: allowed once", refused)]

    turn, gate, findings = await _gate_turn(ctx, plan, _COMMAND, allow)
    if gate is not None:
        finished = _outcome(turn, gate)
        output = finished.output if finished is not None else ""
        seen = (
            f"{finished.outcome.value}, exit {finished.exit_code}, output {output.strip()[:40]!r}"
            if finished is not None
            else "the step never settled"
        )
        ok = finished is not None and finished.outcome is ToolOutcome.SUCCESS and bool(output)
        expected = "success with the command's output"
        findings.append(find("command: output as the plugin reads it", ok, expected, seen, "§5"))
        findings.append(_tool_call_left_out(turn, gate))
    return [*findings, *await after_turn(ctx, turn)]


def _tool_call_left_out(turn: ProbeExchange, gate: Gate) -> Finding:
    streamed = [s for s in turn.states.get(gate.key.step_index, []) if is_settled(step_status(s))]
    stripped = bool(streamed) and "toolCall" not in metadata(streamed[-1])
    return Finding(
        "stream: tool calls left out",
        FactVerdict.PASS if stripped else FactVerdict.INFO,
        "the streamed RUN_COMMAND without metadata.toolCall (the plugin never needs it)",
        "left out" if stripped else "kept",
        "§4",
    )


_DENY = _GateTurn(
    InteractionKind.PERMISSION,
    StepType.RUN_COMMAND,
    "deny: a permission gate",
    "RUN_COMMAND WAITING on a permission",
    "§6",
    Seen.COMMAND_DENIED,
)


async def check_deny(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """CancelCascadeSteps leaves a gate open (§3: why Stop refuses gates first); a denial
    reaches agy, the plugin shows it as denied, and agy carries on (§6)."""

    async def deny(turn: ProbeExchange, gate: Gate) -> list[Finding]:
        cancel = await _cancel_leaves_gate(ctx, turn, gate)
        refused = await _answer(ctx, gate, permission=permission_payload(allow=False))
        return [_gate_found(_DENY, gate), cancel, _answered("deny: the denial is taken", refused)]

    turn, gate, findings = await _gate_turn(ctx, plan, _DENY, deny)
    if gate is not None:
        finished = _outcome(turn, gate)
        denied = finished is not None and finished.outcome is ToolOutcome.DENIED
        seen = finished.outcome.value if finished is not None else "the step never settled"
        expected = "the plugin reads the step as denied (userRejected or an echo without allow)"
        findings.append(find("deny: shown as denied", denied, expected, seen, "§6"))
        ok, seen = _carried_on(turn, gate)
        expected = "a reply after the denial, then IDLE (docs/decisions.md §1)"
        findings.append(find("deny: agy carries on", ok, expected, seen, "§6"))
    return [*findings, *await after_turn(ctx, turn)]


async def _cancel_leaves_gate(ctx: Context, turn: ProbeExchange, gate: Gate) -> Finding:
    expected = "CancelCascadeSteps answers {} and the step stays WAITING"
    fact = "Stop: CancelCascadeSteps on a gate"
    try:
        await ctx.conversation.client.cancel_cascade_steps(ctx.conversation.cascade_id)
        await asyncio.sleep(_QUIET)
        steps = await ctx.conversation.poll(turn, offset=gate.key.step_index)
    except RpcError as exc:
        return Finding(fact, FactVerdict.FAIL, expected, str(exc), "§3")
    status = str(step_status(steps[0])) if steps else "gone"
    waiting = status == StepStatus.WAITING
    seen = "still WAITING" if waiting else f"now {status.removeprefix('CORTEX_STEP_STATUS_')}"
    if not waiting:
        seen += ": Stop would end a turn with a gate open by cancelling it (plugin refuses first)"
    return Finding(fact, FactVerdict.PASS if waiting else FactVerdict.INFO, expected, seen, "§3")


_QUESTION = _GateTurn(
    InteractionKind.ASK_QUESTION,
    StepType.ASK_QUESTION,
    "question: asked",
    'ASK_QUESTION WAITING, options with ids "1".."N"',
    "§5, §6",
    Seen.QUESTION_ANSWERED,
)


async def check_question(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """A question with option ids "1".."N", answered by skipping it (`skipped: true`, how the
    plugin delivers a declined form), and whether agy carries on (unconfirmed, §3)."""

    async def skip(turn: ProbeExchange, gate: Gate) -> list[Finding]:
        del turn
        questions = gate.request.wanted.questions
        ids = [[option.id for option in q.options] for q in questions]
        numbered = all(row == [str(n) for n in range(1, len(row) + 1)] and row for row in ids)
        seen = f"{len(questions)} question(s), option ids {ids}"
        asked = find(_QUESTION.fact, numbered, _QUESTION.expected, seen, _QUESTION.section)
        form = QuestionForm(gate.request.call_id, questions)
        skipped = QuestionAnswers(tuple(QuestionAnswer(skipped=True) for _ in questions))
        refused = await _answer(ctx, gate, ask_question=question_payload(form, skipped))
        return [asked, _answered("question: skipped", refused)]

    turn, gate, findings = await _gate_turn(ctx, plan, _QUESTION, skip)
    if gate is not None:
        ok, seen = _carried_on(turn, gate)
        expected = "a reply after the skipped question, then IDLE"
        findings.append(find("question: agy carries on after a skip", ok, expected, seen, "§3, §6"))
    return [*findings, *await after_turn(ctx, turn)]
