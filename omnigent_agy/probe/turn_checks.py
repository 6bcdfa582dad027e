"""The turns the probe may spend, and what a plain turn and an interrupted one must show.

Each `TurnPlan` is one message to agy's model (it uses the person's quota, so the probe asks
first). The prompts are plain requests a real model follows and agy-sim's scripted model
recognises (docs/simulator.md, "Scenarios"). Gates and questions are in `gate_checks`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from omnigent_agy.errors import RpcError
from omnigent_agy.interactions.gates import ANSWER_FIELDS, REFUSALS, gates_in
from omnigent_agy.probe.facts import FactVerdict, Finding, Seen
from omnigent_agy.probe.observations import Observations
from omnigent_agy.probe.probe_turns import ProbeCascade, ProbeExchange, turn_wait
from omnigent_agy.reading.events import (
    AssistantMessage,
    TextDelta,
    UsageReported,
    apply_delta,
)
from omnigent_agy.reading.steps import (
    StepKey,
    StepStatus,
    StepType,
    metadata,
    obj,
    parse_model_usage,
    step_status,
    step_type,
    text,
)

__all__ = [
    "PLANS",
    "Context",
    "TurnPlan",
    "after_turn",
    "check_interrupt",
    "check_plain",
    "find",
    "stream_start",
]

STOP_DEADLINE: Final = 20.0
_BOOKKEEPING: Final = frozenset(
    {StepType.CHECKPOINT, StepType.CONVERSATION_HISTORY, StepType.EPHEMERAL_MESSAGE}
)


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """One turn the probe can spend: what it sends and what it shows."""

    name: str
    shows: str
    prompt: str


PLANS: Final[tuple[TurnPlan, ...]] = (
    TurnPlan(
        "plain",
        "a one-line answer streamed with its usage (docs/wire.md §4, §5)",
        "Write the numbers from one to thirty as English words on a single line, separated "
        "by spaces, and nothing else.",
    ),
    TurnPlan(
        "command",
        "a command's permission gate, allowed once, and its output (§5, §6)",
        "Run the shell command `echo omnigent-agy-probe` in the current folder and tell me "
        "what it printed. Do not do anything else.",
    ),
    TurnPlan(
        "deny",
        "a command's gate answered Deny: Stop leaves it open and agy carries on (§3, §6)",
        "Run the shell command `echo omnigent-agy-probe-denied` in the current folder. If you "
        "may not, say so in one sentence and stop.",
    ),
    TurnPlan(
        "question",
        "a question answered by skipping it, and whether agy carries on (§3, §6)",
        "Use your tool for asking the user to ask me one question: which colour do I like "
        "best, with the options red, blue and green. When I have answered, reply in one "
        "short sentence.",
    ),
    TurnPlan(
        "subagent",
        "a sub-agent's command gate in the sub-agent's own cascade, allowed once (§7)",
        "Use invoke_subagent to start exactly one sub-agent and wait for its report; do "
        "nothing else yourself. Start one sub-agent to run: echo omnigent-agy-probe-helper",
    ),
    TurnPlan(
        "interrupt",
        "an answer stopped while it streams, as omnigent's Stop does (§3)",
        "Write a long essay of about two thousand words on the history of the bicycle.",
    ),
)


@dataclass(slots=True)
class Context:
    """What every turn check uses."""

    conversation: ProbeCascade
    observations: Observations
    timeout: float
    say: Callable[[str], None]


def find(fact: str, ok: bool, expected: str, seen: str, section: str) -> Finding:
    return Finding(fact, FactVerdict.PASS if ok else FactVerdict.FAIL, expected, seen, section)


async def after_turn(ctx: Context, turn: ProbeExchange) -> list[Finding]:
    """Record what the turn showed for the field table, and compare a poll with the stream
    (docs/wire.md §3: stepOffset; §4: polling gives the same steps)."""
    observations = ctx.observations
    for number, frame in enumerate(turn.frames):
        observations.add_frame(f"{turn.name} frame {number}", frame)
    for index, states in turn.states.items():
        for state in states:
            observations.add_step(f"{turn.name} step {index}", state)
    answer = answer_step(turn)
    if answer is not None:
        observations.add_answer(f"{turn.name} step {answer}", turn.states[answer])
    try:
        polled = await ctx.conversation.poll(turn)
    except RpcError as exc:
        return [Finding("poll: the same steps", FactVerdict.FAIL, "the steps", str(exc), "§3, §4")]
    observations.add(Seen.STEPS, f"{turn.name} poll", {"steps": polled})
    for index, step in enumerate(polled):
        observations.add_step(f"{turn.name} poll step {index}", step)
    streamed = {i: (step_type(s), step_status(s)) for i, s in turn.own_steps()}
    differ = [
        i
        for i, shape in streamed.items()
        if i >= len(polled) or (step_type(polled[i]), step_status(polled[i])) != shape
    ]
    same = find(
        "poll: the same steps as the stream",
        not differ,
        "each streamed step at the same index, same type and status",
        f"{len(polled)} steps; differ at {differ}" if differ else f"{len(polled)} steps, same",
        "§4",
    )
    return [same, await _offset(ctx, turn, polled)]


def answer_step(turn: ProbeExchange) -> int | None:
    """The planner step that answered the turn in text: its last one, when only bookkeeping
    follows it (a planner step that calls a tool carries no text; a tool step follows it)."""
    own = turn.own_steps()
    planners = [i for i, s in own if step_type(s) == StepType.PLANNER_RESPONSE]
    if not planners:
        return None
    last = planners[-1]
    after = [step_type(s) for i, s in own if i > last]
    return last if all(kind in _BOOKKEEPING for kind in after) else None


async def _offset(ctx: Context, turn: ProbeExchange, whole: list[dict[str, object]]) -> Finding:
    start = turn.user_input or 1
    expected = f"steps from {start} on: the whole trajectory's [{start}:]"
    try:
        part = await ctx.conversation.poll(turn, offset=start)
    except RpcError as exc:
        return Finding("poll: stepOffset", FactVerdict.FAIL, expected, str(exc), "§3")
    shapes = [(step_type(s), step_status(s)) for s in part]
    wanted = [(step_type(s), step_status(s)) for s in whole[start:]]
    seen = f"{len(part)} steps" + ("" if shapes == wanted else f", not the {len(wanted)} expected")
    return find("poll: stepOffset", shapes == wanted, expected, seen, "§3")


async def check_plain(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """A short answer: the message lands, text grows while GENERATING, the DONE commit
    carries the text and the usage, the cascade goes IDLE, and the plugin reads it so."""
    async with ctx.conversation.turn(plan.name, plan.prompt) as turn:
        with contextlib.suppress(TimeoutError):
            await turn_wait(turn, ProbeExchange.ended, ctx.timeout)
    findings = [_arrived(turn, ctx.conversation.plan_model)]
    if turn.user_input is None:
        return [*findings, *await after_turn(ctx, turn)]
    findings += [_growth(turn), _commit(turn), _usage(turn), _end(turn), _plugin_read(turn)]
    return [*findings, *await after_turn(ctx, turn)]


def _arrived(turn: ProbeExchange, plan_model: str) -> Finding:
    expected = "a USER_INPUT whose userInput.userResponse is the text sent"
    if turn.user_input is None:
        seen = turn.stream_error or "no such step in the stream"
        return Finding("turn: the message lands", FactVerdict.FAIL, expected, seen, "§3")
    step = turn.latest(turn.user_input)
    planner = obj(obj(obj(step.get("userInput")).get("userConfig")).get("plannerConfig"))
    echoed = text(planner.get("planModel")) or text(obj(planner.get("requestedModel")).get("model"))
    seen = f"step {turn.user_input}, model {echoed or 'not echoed'}"
    if echoed is not None and echoed != plan_model:
        seen += f" (sent {plan_model})"
    return Finding("turn: the message lands", FactVerdict.PASS, expected, seen, "§3, §5")


def _planner_texts(turn: ProbeExchange, status: str) -> list[str]:
    texts = []
    for index, _ in turn.of_type(StepType.PLANNER_RESPONSE):
        for state in turn.states[index]:
            if step_status(state) == status:
                said = text(obj(state.get("plannerResponse")).get("modifiedResponse"))
                texts.append(said or "")
    return texts


def _growth(turn: ProbeExchange) -> Finding:
    expected = "modifiedResponse growing at its end over several GENERATING frames"
    texts = [t for t in _planner_texts(turn, StepStatus.GENERATING) if t]
    distinct = list(dict.fromkeys(texts))
    broken = [i for i in range(1, len(distinct)) if not distinct[i].startswith(distinct[i - 1])]
    if broken:
        seen = f"{len(distinct)} texts; text {broken[0]} does not extend the one before"
        return Finding("turn: text streams", FactVerdict.FAIL, expected, seen, "§4")
    if len(distinct) < 2:
        states = len(_planner_texts(turn, StepStatus.GENERATING))
        if states and not distinct:
            seen = f"{states} GENERATING frame(s), none with plannerResponse.modifiedResponse"
        else:
            seen = f"{len(distinct)} GENERATING text(s): the answer came whole, nothing to stream"
        return Finding("turn: text streams", FactVerdict.FAIL, expected, seen, "§4")
    return Finding(
        "turn: text streams", FactVerdict.PASS, expected, f"{len(distinct)} growths", "§4"
    )


def _done_planners(turn: ProbeExchange) -> list[dict[str, object]]:
    planners = turn.of_type(StepType.PLANNER_RESPONSE)
    return [step for _, step in planners if step_status(step) == StepStatus.DONE]


def _commit(turn: ProbeExchange) -> Finding:
    expected = "at DONE, modifiedResponse (or response) holding the whole text"
    done = _done_planners(turn)
    growing = [t for t in _planner_texts(turn, StepStatus.GENERATING) if t]
    if not done:
        seen = "no DONE planner step"
        return Finding("turn: the DONE commit", FactVerdict.FAIL, expected, seen, "§4")
    response = obj(done[-1].get("plannerResponse"))
    final = text(response.get("modifiedResponse")) or text(response.get("response")) or ""
    ok = bool(final) and (not growing or final.startswith(growing[-1]))
    parts = [f"{len(final)} characters"]
    parts.append("response " + ("present" if "response" in response else "absent"))
    parts.append("thinking " + ("kept" if "thinking" in response else "removed"))
    return find("turn: the DONE commit", ok, expected, "; ".join(parts), "§4")


def _usage(turn: ProbeExchange) -> Finding:
    expected = "metadata.modelUsage at DONE: inputTokens and outputTokens as int64 strings"
    done = _done_planners(turn)
    raw = obj(metadata(done[-1]).get("modelUsage")) if done else {}
    usage = parse_model_usage(raw) if raw else None
    if usage is None:
        return Finding("turn: usage", FactVerdict.FAIL, expected, "no modelUsage at DONE", "§5")
    strings = all(isinstance(raw.get(k), str) for k in ("inputTokens", "outputTokens") if k in raw)
    seen = f"input {usage.input_tokens}, output {usage.output_tokens}" + (
        "" if strings else " (numbers, not strings)"
    )
    ok = usage.input_tokens > 0 and usage.output_tokens > 0
    return find("turn: usage", ok, expected, seen, "§5")


def _end(turn: ProbeExchange) -> Finding:
    expected = "a frame with CASCADE_RUN_STATUS_IDLE once every step settled"
    if turn.ended():
        return Finding("turn: the end", FactVerdict.PASS, expected, "IDLE", "§4")
    last = turn.statuses[-1] if turn.statuses else "no status"
    seen = turn.stream_error or f"last status {last} when the probe stopped waiting"
    return Finding("turn: the end", FactVerdict.FAIL, expected, seen, "§4")


def _plugin_read(turn: ProbeExchange) -> Finding:
    """The plugin's reader on the same frames: deltas that add up to the committed text, the
    usage, and the turn's end."""
    expected = "deltas adding up to the committed text, usage, the turn's end"
    shown: dict[StepKey, str] = {}
    for event in turn.events:
        if isinstance(event, TextDelta):
            shown[event.key] = apply_delta(shown.get(event.key, ""), event)
    messages = [e for e in turn.events if isinstance(e, AssistantMessage)]
    problems = []
    if not messages:
        problems.append("no committed message")
    elif any(shown.get(m.key) != m.text for m in messages):
        problems.append("the deltas do not add up to the committed text")
    if not any(isinstance(e, UsageReported) for e in turn.events):
        problems.append("no usage")
    if not turn.ended_by_plugin:
        problems.append("no end of turn")
    seen = "; ".join(problems) or f"{len(messages[-1].text)} characters, usage, end"
    return find("turn: as the plugin reads it", not problems, expected, seen, "§4, §5")


async def check_interrupt(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """Stop while text streams, the plugin's way: refuse open gates, then CancelCascadeSteps
    (docs/wire.md §3); the cascade must go IDLE with every step settled."""
    fact, section = "interrupt: Stop stops the turn", "§3"
    expected = "IDLE with every step settled within 20 s of CancelCascadeSteps"
    conversation = ctx.conversation
    async with conversation.turn(plan.name, plan.prompt) as turn:
        try:
            await turn_wait(turn, lambda t: bool(t.generated()) or t.ended(), ctx.timeout)
        except TimeoutError:
            return [Finding(fact, FactVerdict.FAIL, expected, "no text streamed", section)]
        if turn.ended():
            seen = "the answer ended before it could be stopped"
            return [Finding(fact, FactVerdict.SKIP, expected, seen, section)]
        length = len(turn.generated())
        try:
            await _interrupt(conversation, turn)
        except RpcError as exc:
            return [Finding(fact, FactVerdict.FAIL, expected, str(exc), section)]
        with contextlib.suppress(TimeoutError):
            await turn_wait(turn, ProbeExchange.ended, STOP_DEADLINE)
    statuses = sorted({str(step_status(s)) for _, s in turn.of_type(StepType.PLANNER_RESPONSE)})
    shown = ", ".join(s.removeprefix("CORTEX_STEP_STATUS_") for s in statuses)
    grew = len(turn.generated()) - length
    seen = f"planner step {shown}; {grew} characters after the stop"
    findings = [find(fact, turn.ended(), expected, seen, section)]
    kept = [e for e in turn.events if isinstance(e, AssistantMessage)]
    kept_seen = f"kept as {kept[-1].status}" if kept else "nothing kept"
    findings.append(
        Finding(
            "interrupt: the text so far is kept",
            FactVerdict.PASS if kept else FactVerdict.INFO,
            "the plugin commits what was shown before the stop",
            kept_seen,
            "§4",
        )
    )
    return [*findings, *await after_turn(ctx, turn)]


async def _interrupt(conversation: ProbeCascade, turn: ProbeExchange) -> None:
    """What omnigent's Stop does through the plugin (interactions/bridge.py): every open
    gate refused, then CancelCascadeSteps."""
    for index, step in turn.own_steps():
        for gate in gates_in(step, index, cascade_id=conversation.cascade_id):
            field = ANSWER_FIELDS[gate.request.kind]
            await conversation.client.handle_cascade_user_interaction(
                conversation.cascade_id,
                trajectory_id=gate.key.trajectory_id,
                step_index=index,
                **{field: REFUSALS[gate.request.kind]},
            )
    await conversation.client.cancel_cascade_steps(conversation.cascade_id)
    await asyncio.sleep(0)


def stream_start(conversation: ProbeCascade) -> Finding:
    """Whether agy honours initialStepsPageBounds on a stream opened at a cursor (§4: the
    plugin copes with a full replay too, so this is INFO)."""
    expected = "the first frame with steps of a stream asked to start at N: from N on"
    for asked, lowest in conversation.stream_starts:
        if not asked:
            continue
        how = "bounds ignored" if lowest < asked else "bounds honoured"
        seen = f"asked from {asked}: its first steps from {lowest} ({how})"
        return Finding("stream: initialStepsPageBounds", FactVerdict.INFO, expected, seen, "§4")
    seen = "no stream was opened at a cursor (one turn or none)"
    return Finding("stream: initialStepsPageBounds", FactVerdict.SKIP, expected, seen, "§4")
