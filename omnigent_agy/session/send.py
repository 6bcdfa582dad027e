"""A turn's message to agy, sent exactly once (docs/decisions.md §2).

The send is never repeated blindly (SendUserCascadeMessage is not idempotent): after a failure
agy may have acted on, the cascade's steps since the turn began say whether it arrived.
"""

from __future__ import annotations

import logging

from omnigent_agy.errors import ProtocolError, RpcError
from omnigent_agy.reading.reader import IDLE
from omnigent_agy.reading.steps import JsonObject, StepType, obj
from omnigent_agy.rpc.client import TRANSIENT_CODES
from omnigent_agy.rpc.endpoint import FollowingClient

__all__ = ["cascade_summaries", "send_once", "step_count", "still_on"]

_logger = logging.getLogger(__name__)


def step_count(summary: JsonObject) -> int:
    try:
        return int(str(summary.get("stepCount") or 0))
    except ValueError:
        return 0


async def cascade_summaries(client: FollowingClient) -> JsonObject:
    """Every cascade's summary now, by cascade id (a cascade's step count is where this
    turn's steps will start)."""
    listed = await client.run(lambda c: c.get_all_cascade_trajectories())
    return obj(listed.get("trajectorySummaries"))


async def send_once(
    client: FollowingClient, cascade: str, text: str, model: str, *, since: int
) -> None:
    """Send the turn's message once: exactly once, also when the call fails on the way.

    A failure agy may have acted on (the connection dropped after the request went out,
    the answer came back garbled, agy moved to a new port meanwhile) is not answered by
    sending again blindly, which could start the turn twice: the steps from `since` on
    show whether the message arrived, and it is sent again only if it did not.
    """
    for attempt in range(2):
        try:
            await client.run(
                lambda c: c.send_user_cascade_message(cascade, text, plan_model=model),
                resend_safe=False,
            )
        except RpcError as exc:
            lost = exc.connect_code in TRANSIENT_CODES or isinstance(exc, ProtocolError)
            if attempt or not lost:
                raise  # agy refused the message itself: say so
            if await _arrived(client, cascade, text, since):
                _logger.info("the message reached agy although the call failed (%s)", exc)
                return
            _logger.info("the message did not reach agy (%s); sending it again", exc)
        else:
            return


async def _arrived(client: FollowingClient, cascade: str, text: str, since: int) -> bool:
    steps = await client.run(lambda c: c.get_cascade_trajectory_steps(cascade, step_offset=since))
    return any(_says(step, text) for step in steps)


def _says(step: JsonObject, text: str) -> bool:
    """Whether `step` is the person's message `text`."""
    return (
        step.get("type") == StepType.USER_INPUT
        and obj(step.get("userInput")).get("userResponse") == text
    )


async def still_on(client: FollowingClient, cascade: str, text: str, summary: JsonObject) -> bool:
    """Whether agy is still working on `text` as its latest message (`summary`: the cascade's
    summary): a turn that comes again after its host went away — omnigent runs the turn its
    runner lost once more — is followed where agy is, not sent a second time.

    Only while the cascade runs (a gate open counts: the status stays RUNNING, docs/wire.md
    §4): once agy is idle, the same words again are a new message."""
    if str(summary.get("status") or IDLE) == IDLE:
        return False
    try:
        index = int(str(summary.get("lastUserInputStepIndex") or 0))  # protojson omits 0
    except ValueError:
        return False
    steps = await client.run(lambda c: c.get_cascade_trajectory_steps(cascade, step_offset=index))
    return bool(steps) and _says(steps[0], text)
