"""A turn with a sub-agent that asks: its gate is in its own cascade (agy 1.5.15+).

The probe asks agy to start one sub-agent that runs a shell command. Since agy 1.5.15 the
sub-agent's own command waits on a permission in the sub-agent's cascade, not the
conversation's (docs/wire.md §7), which is where the plugin looks for it
(`session/subagents.py`). Checked: the INVOKE_SUBAGENT step names its child cascade; the
child's gate is WAITING there while the conversation's own cascade waits on nothing; the
answer (allow once, the bridge's payload) is taken in the child's cascade; the turn ends.
A model that does not delegate, or an older agy whose sub-agent runs without asking, is a
SKIP, not a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from omnigent_agy.errors import RpcError
from omnigent_agy.interactions.gates import Gate, gates_in, permission_payload
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.probe_turns import ProbeExchange, turn_wait
from omnigent_agy.probe.turn_checks import Context, TurnPlan, after_turn, find
from omnigent_agy.reading.steps import StepType, step_type, subagent_children

__all__ = ["check_subagent_gate"]

_FACT = "sub-agent: a gate in its own cascade"
_EXPECTED = "the child's RUN_COMMAND WAITING on a permission; the parent waits on nothing"
_POLL: Final = 0.5  # seconds between reads of the child's steps


def _children(turn: ProbeExchange) -> list[str]:
    return [
        child
        for _, step in turn.own_steps()
        if step_type(step) == StepType.INVOKE_SUBAGENT
        for _, _, child in subagent_children(step)
    ]


async def _child_gate(ctx: Context, turn: ProbeExchange) -> tuple[str, Gate] | None:
    """The first WAITING gate in one of the turn's children, read as the plugin reads it."""
    client = ctx.conversation.client
    deadline = asyncio.get_running_loop().time() + ctx.timeout
    while asyncio.get_running_loop().time() < deadline:
        for child in _children(turn):
            steps = await client.get_cascade_trajectory_steps(child)
            for index, step in enumerate(steps):
                gates = gates_in(step, index, cascade_id=child)
                if gates:
                    return child, gates[0]
        if turn.ended():
            return None
        with contextlib.suppress(TimeoutError):
            await turn_wait(turn, lambda t: t.ended(), _POLL)
    return None


async def check_subagent_gate(ctx: Context, plan: TurnPlan) -> list[Finding]:
    """A sub-agent's gate found in its cascade and answered there; the parent goes on."""
    findings: list[Finding] = []
    async with ctx.conversation.turn(plan.name, plan.prompt) as turn:
        found = await _child_gate(ctx, turn)
        if found is None:
            delegated = bool(_children(turn))
            seen = (
                "the sub-agent ran without asking (an agy before 1.5.15, or your settings)"
                if delegated
                else "the model did not start a sub-agent: no gate to check"
            )
            findings.append(Finding(_FACT, FactVerdict.SKIP, _EXPECTED, seen, "§7"))
        else:
            child, gate = found
            parent_gate = turn.open_gate()
            wanted = gate.request.wanted
            what = f"{wanted.action or '?'} {wanted.target or ''!r}"
            seen = f"{child[:8]} step {gate.key.step_index}: {what}"
            if parent_gate is not None:
                seen += f"; the parent waits too, at step {parent_gate[0]}"
            findings.append(find(_FACT, parent_gate is None, _EXPECTED, seen, "§7"))
            findings.append(await _allow(ctx, child, gate))
            with contextlib.suppress(TimeoutError):
                await turn_wait(turn, lambda t: t.ended(), ctx.timeout)
            findings.append(
                find(
                    "sub-agent: the parent goes on",
                    turn.ended(),
                    "the conversation's turn ends after the sub-agent's answer",
                    "IDLE" if turn.ended() else "still running at the probe's wait",
                    "§7",
                )
            )
    return [*findings, *await after_turn(ctx, turn)]


async def _allow(ctx: Context, child: str, gate: Gate) -> Finding:
    payload: dict[str, Any] = {"permission": permission_payload(allow=True)}
    try:
        await ctx.conversation.client.handle_cascade_user_interaction(
            child,
            trajectory_id=gate.key.trajectory_id,
            step_index=gate.key.step_index,
            **payload,
        )
    except RpcError as exc:
        return find("sub-agent: answered in its cascade", False, "{}", str(exc), "§3")
    return find("sub-agent: answered in its cascade", True, "{}", "{}", "§3")
