"""How full agy's context window is, in agy's own words (docs/wire.md §9, "Context in use").

agy keeps a running estimate of the context in use per model call:
``GetCascadeTrajectoryGeneratorMetadata {cascadeId}`` answers ``{generatorMetadata: [{
stepIndices, chatModel: {model, chatStartMetadata: {contextWindowMetadata:
{estimatedTokensUsed}}}}]}`` (docs/wire.md §3). The figure a person wants on a context meter
is the newest one: that of the call at the highest step (entries arriving out of order are
put back in order by their steps; without steps, the later entry is the newer). The estimate
grows from call to call, but not for ever: when agy compacts its context (a summary stands in
for the conversation so far) it drops, and the meter drops with it; the largest ever seen
would keep the meter full after agy had made room. A call without an estimate (agy's
CHECKPOINT summaries, by another model) is passed over.
"""

from __future__ import annotations

from collections.abc import Mapping

from omnigent_agy.reading.steps import int64, obj, seq

__all__ = ["estimated_context"]


def estimated_context(answer: Mapping[str, object]) -> int | None:
    """agy's newest estimate of the tokens in its context window; None when it gave none."""
    newest: tuple[int, int] | None = None  # (the call's last step, its place in the answer)
    used_then: int | None = None
    for place, entry in enumerate(seq(answer.get("generatorMetadata"))):
        chat = obj(obj(entry).get("chatModel"))
        window = obj(obj(chat.get("chatStartMetadata")).get("contextWindowMetadata"))
        # A number in the report; protojson writes an int64 as a string (§3): both are read.
        used = int64(window.get("estimatedTokensUsed"))
        if used is None or used <= 0:
            continue
        steps = [i for i in map(int64, seq(obj(entry).get("stepIndices"))) if i is not None]
        when = (max(steps, default=-1), place)
        if newest is None or when > newest:
            newest, used_then = when, used
    return used_then
