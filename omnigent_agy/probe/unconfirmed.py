"""What the person's agy shows about facts nobody has confirmed yet (INFO lines).

Features of the plugin wait on them: which answer carries agy's context estimate
``estimatedTokensUsed`` (docs/wire.md §9, "Context in use"), whether ``inputTokens`` counts
the cached tokens too (pricing), and whether agy gives a conversation a title over RPC. The
probe looks through everything agy answered it (and asks ``GetCascadeTrajectory``, the
likeliest home of a trajectory's ``generatorMetadata``) and says where it saw each.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from omnigent_agy.errors import RpcError
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.reading.steps import (
    ModelUsage,
    StepStatus,
    StepType,
    metadata,
    obj,
    parse_model_usage,
    seq,
    step_status,
    step_type,
)
from omnigent_agy.rpc.client import RpcClient

__all__ = [
    "ask_generator_metadata",
    "ask_trajectory",
    "cached_tokens",
    "context_estimate",
    "title",
    "usages_in",
]

_ESTIMATE: Final = "estimatedTokensUsed"
_TITLE_WORDS: Final = ("title",)


def _walk(value: object, path: str = "") -> Iterator[tuple[str, str, object]]:
    """(path, key, value) of every member of every object in `value`."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            yield where, str(key), item
            yield from _walk(item, where)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, f"{path}[]")


async def ask_trajectory(client: RpcClient, cascade_id: str) -> tuple[str, object] | None:
    """``GetCascadeTrajectory`` for the conversation, when agy has the method."""
    try:
        answer = await client.call("GetCascadeTrajectory", {"cascadeId": cascade_id})
    except RpcError:
        return None
    return "GetCascadeTrajectory", answer


async def ask_generator_metadata(client: RpcClient, cascade_id: str) -> tuple[str, object] | None:
    """``GetCascadeTrajectoryGeneratorMetadata`` for the conversation (where the plugin reads
    agy's context estimate, docs/wire.md §3), when agy has the method."""
    try:
        answer = await client.get_generator_metadata(cascade_id)
    except RpcError:
        return None
    return "GetCascadeTrajectoryGeneratorMetadata", answer


def context_estimate(answers: Sequence[tuple[str, object]]) -> Finding:
    """Where agy's running context estimate travels (§9: a trajectory's generatorMetadata)."""
    expected = f"{_ESTIMATE} in some answer (which one is not known)"
    for label, answer in answers:
        for path, key, value in _walk(answer):
            if key == _ESTIMATE:
                seen = f"{label}: {path} = {value}"
                return Finding(
                    "unconfirmed: context estimate", FactVerdict.INFO, expected, seen, "§9"
                )
    shown = ", ".join(sorted({label for label, _ in answers})) or "nothing"
    seen = f"in no answer (looked at {shown})"
    return Finding("unconfirmed: context estimate", FactVerdict.INFO, expected, seen, "§9")


def usages_in(answer: object) -> list[ModelUsage]:
    """The usage of each model call (a DONE planner step) in a GetCascadeTrajectorySteps
    answer."""
    usages = []
    for raw in seq(obj(answer).get("steps")):
        step = obj(raw)
        if step_type(step) == StepType.PLANNER_RESPONSE and step_status(step) == StepStatus.DONE:
            usage = parse_model_usage(metadata(step).get("modelUsage"))
            if usage is not None:
                usages.append(usage)
    return usages


def cached_tokens(usages: Sequence[ModelUsage]) -> Finding:
    """Whether inputTokens includes cacheReadTokens: a call with more cached than input
    tokens proves it does not; otherwise the figures are shown as they are."""
    expected = "inputTokens next to cacheReadTokens per model call"
    pairs = [(u.input_tokens, u.cache_read_tokens) for u in usages]
    if not pairs:
        seen = "no model call with usage"
    elif any(cached > given for given, cached in pairs):
        seen = f"cached > input in a call: input excludes the cached part {pairs}"
    elif not any(cached for _, cached in pairs):
        seen = f"no cached tokens in {len(pairs)} call(s)"
    else:
        seen = f"cached <= input in every call (not decisive): {pairs}"
    return Finding("unconfirmed: cached tokens", FactVerdict.INFO, expected, seen, "§5")


def title(answers: Sequence[tuple[str, object]]) -> Finding:
    """A conversation title in the listing or the metadata, which could name the session."""
    expected = "a field naming the conversation's title"
    for label, answer in answers:
        for path, key, value in _walk(answer):
            if any(word in key.lower() for word in _TITLE_WORDS) and isinstance(value, str):
                seen = f"{label}: {path} ({len(value)} characters)"
                return Finding("unconfirmed: a title", FactVerdict.INFO, expected, seen, "§7, §9")
    return Finding("unconfirmed: a title", FactVerdict.INFO, expected, "no such field", "§7, §9")
