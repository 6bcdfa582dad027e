"""GetCascadeTrajectoryGeneratorMetadata: one entry per model call of a cascade, with agy's
running estimate of the context in use (docs/wire.md §3, §9 "Context in use").

The shape is what a public tool for Antigravity's language server reads (a report, [1]):
``{generatorMetadata: [{stepIndices, executionId, chatModel: {model, usage,
chatStartMetadata: {contextWindowMetadata: {estimatedTokensUsed}}}}]}``. The entries are
derived from the cascade's steps when asked, so a resumed cascade has them too.

The estimate is the simulator's own model of "how full the window is when the call starts":
a fixed system prompt plus a quarter of the characters of every step before the call (its
payload, not its metadata), never smaller than the previous call's. It is deliberately not
the call's ``modelUsage.inputTokens`` (a different count: the prompt actually sent, which
agy's caching shrinks), so a client that shows one for the other is caught. A CHECKPOINT's
call (agy's summary, another model) carries usage but no estimate. When agy compacts its
context (a CHECKPOINT that is not only an intent, `turn.ScriptedRun.compact`), the summary stands in
for everything before it: the next call counts the system prompt, the summary and what came
after, so the estimate drops. **guess**: agy's own arithmetic is not known; that the estimate
grows between compactions is reported.
"""

from __future__ import annotations

import json
from typing import Any, Final

from agy_sim.cascade import Cascade

__all__ = ["SYSTEM_PROMPT_TOKENS", "generator_metadata"]

SYSTEM_PROMPT_TOKENS: Final = 2_400
"""What the simulator counts for agy's own instructions and tools before any step."""

_PLANNER: Final = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
_CHECKPOINT: Final = "CORTEX_STEP_TYPE_CHECKPOINT"
_CHARS_PER_TOKEN: Final = 4


def _payload_chars(step: dict[str, Any]) -> int:
    """The characters of a step the model reads back: everything but its metadata."""
    payload = {k: v for k, v in step.items() if k not in ("metadata", "status", "type")}
    return len(json.dumps(payload, separators=(",", ":")))


def generator_metadata(cascade: Cascade) -> dict[str, Any]:
    """The method's answer for `cascade`: its model calls so far, oldest first."""
    entries: list[dict[str, Any]] = []
    chars = 0
    estimate = 0
    for index, step in enumerate(cascade.steps):
        metadata = step.get("metadata", {})
        usage = metadata.get("modelUsage")
        if isinstance(usage, dict):
            chat: dict[str, Any] = {"model": usage.get("model", ""), "usage": dict(usage)}
            if step.get("type") == _PLANNER:
                estimate = max(estimate, SYSTEM_PROMPT_TOKENS + chars // _CHARS_PER_TOKEN)
                chat["chatStartMetadata"] = {
                    "contextWindowMetadata": {"estimatedTokensUsed": estimate}
                }
            entry: dict[str, Any] = {"stepIndices": [index], "chatModel": chat}
            if metadata.get("executionId"):
                entry["executionId"] = metadata["executionId"]
            entries.append(entry)
        if _compacts(step):
            chars, estimate = _payload_chars(step), 0
            continue
        chars += _payload_chars(step)
    return {"generatorMetadata": entries} if entries else {}


def _compacts(step: dict[str, Any]) -> bool:
    """A CHECKPOINT that summarises the conversation for later calls, not only its intent."""
    checkpoint = step.get("checkpoint")
    return (
        step.get("type") == _CHECKPOINT
        and isinstance(checkpoint, dict)
        and checkpoint.get("intentOnly") is False
    )
