"""Builders of protojson step dicts, shaped like the recorded real steps (docs/wire.md §5).

Pure functions over plain dicts: no clocks, ids or I/O (the caller passes timestamps and
ids in). Conventions followed everywhere (docs/wire.md §3, §5):

- int64/uint64 are strings (``modelUsage`` tokens, ``waitMsBeforeAsync``, ``sizeBytes``),
  int32 are numbers (``stepIndex``, ``toolCallOutputTokens``, ``exitCode``);
- zero values are omitted, except ``runCommand.exitCode`` which the recordings show as
  ``0`` (a proto3 ``optional``);
- ``sourceTrajectoryStepInfo.stepIndex`` is absent when 0 and on USER_INPUT;
- enums are their names; timestamps are RFC 3339 in UTC.

The *poll* shape (GetCascadeTrajectorySteps) is what is built here; ``stream_shape``
derives the StreamAgentStateUpdates shape from it (docs/wire.md §4).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

Step = dict[str, Any]

S_PENDING: Final = "CORTEX_STEP_STATUS_PENDING"
S_RUNNING: Final = "CORTEX_STEP_STATUS_RUNNING"
S_GENERATING: Final = "CORTEX_STEP_STATUS_GENERATING"
S_WAITING: Final = "CORTEX_STEP_STATUS_WAITING"
S_DONE: Final = "CORTEX_STEP_STATUS_DONE"
S_ERROR: Final = "CORTEX_STEP_STATUS_ERROR"
S_CANCELED: Final = "CORTEX_STEP_STATUS_CANCELED"

SRC_MODEL: Final = "CORTEX_STEP_SOURCE_MODEL"
SRC_USER_EXPLICIT: Final = "CORTEX_STEP_SOURCE_USER_EXPLICIT"
SRC_SYSTEM: Final = "CORTEX_STEP_SOURCE_SYSTEM"

_TERMINAL: Final = frozenset({S_DONE, S_ERROR, S_CANCELED})


def rfc3339(moment: datetime) -> str:
    """``2026-06-22T23:57:36.256051Z``: the timestamp form agy writes."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class StepIdentity:
    """Where a step sits: its trajectory, index, turn (execution) and model invocation."""

    trajectory_id: str
    cascade_id: str
    step_index: int
    execution_id: str
    metadata_index: int = 0

    def source_info(self, *, user_input: bool = False) -> dict[str, Any]:
        info: dict[str, Any] = {"trajectoryId": self.trajectory_id}
        # stepIndex is omitted when 0 and on USER_INPUT steps (docs/wire.md §5, user_input.json).
        if self.step_index and not user_input:
            info["stepIndex"] = self.step_index
        if self.metadata_index:
            info["metadataIndex"] = self.metadata_index
        info["cascadeId"] = self.cascade_id
        return info


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's tool call; ``arguments`` keep the order agy lists in ``argumentsOrder``."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    thinking_signature: str = ""

    def to_wire(self) -> dict[str, Any]:
        # agy serialises the arguments with sorted keys and no spaces (recorded argumentsJson).
        call: dict[str, Any] = {
            "id": self.call_id,
            "name": self.name,
            "argumentsJson": json.dumps(
                dict(self.arguments), sort_keys=True, separators=(",", ":")
            ),
        }
        if self.thinking_signature:
            call["thinkingSignature"] = self.thinking_signature
        call["originalName"] = self.name
        return call

    @property
    def tool_summary(self) -> str:
        return str(self.arguments.get("toolSummary", ""))

    @property
    def tool_action(self) -> str:
        return str(self.arguments.get("toolAction", ""))


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call; ``outputTokens`` = thinking + response (docs/wire.md §5)."""

    model: str
    input_tokens: int
    thinking_tokens: int
    response_tokens: int
    cache_read_tokens: int = 0
    api_provider: str = "API_PROVIDER_GOOGLE_GEMINI"
    response_id: str = ""
    session_id: str = ""

    def to_wire(self) -> dict[str, Any]:
        usage: dict[str, Any] = {"model": self.model}
        for key, value in (
            ("inputTokens", self.input_tokens),
            ("outputTokens", self.thinking_tokens + self.response_tokens),
            ("thinkingOutputTokens", self.thinking_tokens),
            ("responseOutputTokens", self.response_tokens),
            ("cacheReadTokens", self.cache_read_tokens),
        ):
            if value:
                usage[key] = str(value)  # int64 → string
        usage["apiProvider"] = self.api_provider
        if self.session_id:
            usage["responseHeader"] = {"sessionID": self.session_id}
        if self.response_id:
            usage["responseId"] = self.response_id
        return usage


def set_status(step: Step, status: str, ts: str) -> None:
    """Move a step to ``status`` and record the transition, as agy's internalMetadata does."""
    step["status"] = status
    meta = step["metadata"]
    transitions = meta.setdefault("internalMetadata", {}).setdefault("statusTransitions", [])
    transitions.append({"updatedStatus": status, "timestamp": ts})
    if status in _TERMINAL and status != S_ERROR:
        meta["completedAt"] = ts


def _model_metadata(ident: StepIdentity, ts: str, model: str) -> dict[str, Any]:
    return {
        "stepGenerationVersion": 1,
        "createdAt": ts,
        "source": SRC_MODEL,
        "generatorModel": model,
        "requestedModel": {"model": model},
        "executionId": ident.execution_id,
        "sourceTrajectoryStepInfo": ident.source_info(),
    }


def _system_metadata(ident: StepIdentity, ts: str) -> dict[str, Any]:
    return {
        "createdAt": ts,
        "source": SRC_SYSTEM,
        "executionId": ident.execution_id,
        "sourceTrajectoryStepInfo": ident.source_info(),
    }


def user_input_step(
    ident: StepIdentity,
    ts: str,
    *,
    items: Sequence[Mapping[str, Any]],
    planner_config: Mapping[str, Any],
    source: str = SRC_USER_EXPLICIT,
) -> Step:
    """A committed USER_INPUT (user_input.json): no stepIndex, the turn's plan model echoed."""
    meta: dict[str, Any] = {
        "createdAt": ts,
        "source": source,
        "executionId": ident.execution_id,
        "sourceTrajectoryStepInfo": ident.source_info(user_input=True),
        "internalMetadata": {"statusTransitions": [{"updatedStatus": S_DONE, "timestamp": ts}]},
    }
    text = "\n".join(str(item.get("text", "")) for item in items if item.get("text"))
    return {
        "type": "CORTEX_STEP_TYPE_USER_INPUT",
        "status": S_DONE,
        "metadata": meta,
        "userInput": {
            "items": [dict(item) for item in items],
            "userResponse": text,
            "activeUserState": {},
            "userConfig": {"plannerConfig": dict(planner_config)},
        },
    }


def system_step(
    ident: StepIdentity, ts: str, *, step_type: str, payload_key: str, payload: Mapping[str, Any]
) -> Step:
    """A DONE step the system writes at once (CONVERSATION_HISTORY, SYSTEM_MESSAGE)."""
    meta = _system_metadata(ident, ts)
    meta["startedAt"] = ts
    meta["completedAt"] = ts
    meta["internalMetadata"] = {
        "statusTransitions": [
            {"updatedStatus": s, "timestamp": ts} for s in (S_PENDING, S_RUNNING, S_DONE)
        ]
    }
    return {"type": step_type, "status": S_DONE, "metadata": meta, payload_key: dict(payload)}


def checkpoint_step(
    ident: StepIdentity,
    ts: str,
    *,
    usage: Usage,
    user_requests: Sequence[str],
    included_end: int,
    summary: str | None = None,
) -> Step:
    """The intent summary agy writes after the first turn (checkpoint.json), with its own usage;
    with a `summary`, agy compacting its context (**guess**: ``intentOnly: false``, the summary)."""
    step = system_step(
        ident, ts, step_type="CORTEX_STEP_TYPE_CHECKPOINT", payload_key="checkpoint", payload={}
    )
    wire_usage = usage.to_wire()
    step["metadata"]["modelUsage"] = wire_usage
    step["metadata"]["retryInfos"] = [{"usage": copy.deepcopy(wire_usage)}]
    step["checkpoint"] = {
        "intentOnly": True,
        "includedStepIndexEnd": included_end,
        "userIntent": "Simulated Request",
        "userRequests": list(user_requests),
        "renderLatestCheckpoint": True,
        "renderUserMessageStepIndex": "0",  # int64 → string, even zero here (as recorded)
    }
    if summary is not None:
        step["checkpoint"]["intentOnly"] = False
        step["checkpoint"]["summary"] = summary
    return step


def planner_step(ident: StepIdentity, ts: str, *, model: str, message_id: str) -> Step:
    """A PLANNER_RESPONSE that starts GENERATING; text and thinking are filled in later."""
    meta = _model_metadata(ident, ts, model)
    meta["viewableAt"] = ts
    step: Step = {
        "type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE",
        "status": S_GENERATING,
        "metadata": meta,
        "plannerResponse": {"messageId": message_id},
    }
    set_status(step, S_GENERATING, ts)
    return step


def planner_progress(step: Step, *, thinking: str = "", text: str = "") -> None:
    """While GENERATING: ``thinking`` streams first, then ``modifiedResponse`` grows (§4)."""
    response = step["plannerResponse"]
    if thinking:
        response["thinking"] = thinking
    if text:
        response["modifiedResponse"] = text


def planner_done(
    step: Step,
    ts: str,
    *,
    usage: Usage,
    thinking_signature: str = "",
    tool_calls: Sequence[ToolCall] = (),
) -> None:
    """Commit: ``response`` appears (== ``modifiedResponse``) with ``metadata.modelUsage``."""
    response = step["plannerResponse"]
    # The recorded DONE steps (poll and stream) carry no `thinking`, only its signature.
    response.pop("thinking", None)
    text = response.pop("modifiedResponse", "")
    committed: dict[str, Any] = {}
    if text:
        committed["response"] = text
        committed["modifiedResponse"] = text
    if thinking_signature:
        committed["thinkingSignature"] = thinking_signature
    committed["messageId"] = response["messageId"]
    if tool_calls:
        committed["toolCalls"] = [call.to_wire() for call in tool_calls]
    committed["stopReason"] = "STOP_REASON_STOP_PATTERN"
    step["plannerResponse"] = committed
    meta = step["metadata"]
    meta["finishedGeneratingAt"] = ts
    meta["startedAt"] = ts
    meta["modelUsage"] = usage.to_wire()
    set_status(step, S_DONE, ts)


def tool_step(
    ident: StepIdentity,
    ts: str,
    *,
    model: str,
    step_type: str,
    payload_key: str,
    payload: Mapping[str, Any],
    call: ToolCall,
    output_tokens: int,
) -> Step:
    """A tool's own step (RUN_COMMAND, VIEW_FILE, …), PENDING, with the call in metadata."""
    meta = _model_metadata(ident, ts, model)
    meta.update(
        viewableAt=ts,
        finishedGeneratingAt=ts,
        lastCompletedChunkAt=ts,
        startedAt=ts,
        toolCall=call.to_wire(),
        argumentsOrder=list(call.arguments),
        toolCallOutputTokens=output_tokens,
        toolSummary=call.tool_summary,
        toolAction=call.tool_action,
    )
    step: Step = {
        "type": step_type,
        "status": S_PENDING,
        "metadata": meta,
        payload_key: dict(payload),
    }
    set_status(step, S_PENDING, ts)
    return step


def permission_request(*, target: str, description: str) -> dict[str, Any]:
    """``requestedInteraction.permission`` for a command (run_command_waiting.json)."""
    return {
        "permission": {
            "resource": {"action": "command", "target": target},
            "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
            "suggestedPersistPattern": target,
            "actionDescription": description,
        }
    }


def question_request(questions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``requestedInteraction.askQuestion``; option ids are "1".."N" (docs/wire.md §5)."""
    return {"askQuestion": {"questions": [copy.deepcopy(dict(q)) for q in questions]}}


def record_interaction(step: Step, *, response: Mapping[str, Any]) -> None:
    """Echo a delivered answer in ``completedInteractions`` (docs/wire.md §6, *_done.json)."""
    step.setdefault("completedInteractions", []).append(
        {"request": copy.deepcopy(step["requestedInteraction"]), "response": dict(response)}
    )


def error_message_step(
    ident: StepIdentity,
    ts: str,
    *,
    model: str,
    user_message: str,
    short_error: str,
    error_code: int = 0,
    status: str = S_DONE,
    full_error: str | None = None,
) -> Step:
    """An ERROR_MESSAGE written by the system (model_network_error_steps.json)."""
    meta = _system_metadata(ident, ts)
    meta["stepGenerationVersion"] = 1
    meta["generatorModel"] = model
    meta["requestedModel"] = {"model": model}
    meta["internalMetadata"] = {"statusTransitions": [{"updatedStatus": status, "timestamp": ts}]}
    error: dict[str, Any] = {
        "userErrorMessage": user_message,
        "shortError": short_error,
        "fullError": full_error or short_error,
        "errorId": f"{ident.execution_id}-{ident.step_index}",
    }
    if error_code:
        error["errorCode"] = error_code
    error["modelErrorMessage"] = short_error
    return {
        "type": "CORTEX_STEP_TYPE_ERROR_MESSAGE",
        "status": status,
        "metadata": meta,
        "errorMessage": {"error": error},
    }


def stream_shape(step: Step) -> Step:
    """The StreamAgentStateUpdates form of a step (docs/wire.md §4, recorded stream_*.json).

    The stream omits ``metadata.toolCall`` and ``plannerResponse.toolCalls`` (tool calls must
    be rebuilt from the tool's own step or polled), and the recorded stream steps carry no
    ``metadata.internalMetadata`` either, so neither does the simulator's stream.
    """
    shaped = copy.deepcopy(step)
    meta = shaped.get("metadata", {})
    meta.pop("toolCall", None)
    meta.pop("internalMetadata", None)
    planner = shaped.get("plannerResponse")
    if isinstance(planner, dict):
        planner.pop("toolCalls", None)
    return shaped
