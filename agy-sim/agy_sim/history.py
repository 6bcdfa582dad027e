"""A conversation with a long past: the TUI's cascade seeded with finished turns.

A real agy re-attached after days of work holds thousands of steps, and its first stream
frame replays all of them unless asked for less (``initialStepsPageBounds``, docs/wire.md §4).
``seed_history`` gives the simulator such a conversation at start-up (``--sim-history
STEPS``): turns of a USER_INPUT and a committed PLANNER_RESPONSE, in the shapes a live turn
writes (steps_factory), so the steps are of an ordinary size (about 1.5 KB each as JSON).
Nothing streams for them: they are DONE before the first client connects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agy_sim import steps_factory as sf
from agy_sim.cascade import Cascade

__all__ = ["seed_history"]

_ANSWER = (
    "Here is what I found in the workspace for request {n}: the module reads its settings "
    "once, validates them and hands them to the worker; nothing else needs to change. "
)


def seed_history(
    cascade: Cascade,
    steps: int,
    *,
    model: str,
    now: Callable[[], str],
    new_id: Callable[[], str],
    planner_config: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Append `steps` finished steps (alternating USER_INPUT and PLANNER_RESPONSE)."""
    config = planner_config({"planModel": model})
    execution_id = new_id()
    for _ in range(steps):
        index = len(cascade.steps)
        ts = now()
        turn = index // 2
        if index % 2 == 0:
            execution_id = new_id()
            ident = sf.StepIdentity(cascade.trajectory_id, cascade.cascade_id, index, execution_id)
            step = sf.user_input_step(
                ident, ts, items=[{"text": f"question {turn}"}], planner_config=config
            )
            cascade.last_user_input_time = ts
            cascade.last_user_input_index = index
        else:
            ident = sf.StepIdentity(
                cascade.trajectory_id, cascade.cascade_id, index, execution_id, 1
            )
            step = sf.planner_step(ident, ts, model=model, message_id=new_id())
            text = _ANSWER.format(n=turn) * 3
            sf.planner_progress(step, text=text)
            usage = sf.Usage(model=model, input_tokens=1200, thinking_tokens=0, response_tokens=90)
            sf.planner_done(step, ts, usage=usage)
        cascade.append(step, ts)
