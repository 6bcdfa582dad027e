"""How full agy's context window is, in agy's own words (docs/wire.md §9, "Context in use").

agy keeps a running estimate of the context in use per model call:
``GetCascadeTrajectoryGeneratorMetadata {cascadeId}`` answers ``{generatorMetadata: [{
stepIndices, chatModel: {model, chatStartMetadata: {contextWindowMetadata:
{estimatedTokensUsed}}}}]}`` (docs/wire.md §3). The figure a person wants on a context meter
is the newest one: agy reports that it only grows, so the largest is taken, which also
survives entries arriving out of order. A call without an estimate (agy's CHECKPOINT
summaries, by another model) is passed over.
"""

from __future__ import annotations

from collections.abc import Mapping

from omnigent_agy.reading.steps import int64, obj, seq

__all__ = ["estimated_context"]


def estimated_context(answer: Mapping[str, object]) -> int | None:
    """agy's newest estimate of the tokens in its context window; None when it gave none."""
    newest: int | None = None
    for entry in seq(answer.get("generatorMetadata")):
        chat = obj(obj(entry).get("chatModel"))
        window = obj(obj(chat.get("chatStartMetadata")).get("contextWindowMetadata"))
        # A number in the report; protojson writes an int64 as a string (§3): both are read.
        used = int64(window.get("estimatedTokensUsed"))
        if used is not None and used > 0 and (newest is None or used > newest):
            newest = used
    return newest
