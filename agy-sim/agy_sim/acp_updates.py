"""A cascade's steps as ACP ``session/update`` payloads (the ACP specification's prompt turn).

``UpdateTracker`` remembers, per step, how much of its thinking and answer a client was sent
and which tool-call status it last saw, so each change of a step becomes only the updates it
adds: ``agent_thought_chunk`` and ``agent_message_chunk`` for a PLANNER_RESPONSE's growth,
``tool_call`` when a tool's own step appears and ``tool_call_update`` as it moves (running,
done, refused, cancelled). The step shapes are the engine's (docs/wire.md §4-§6); how agy's
own ACP server names and titles its tool calls is not recorded (a **guess**: its
``toolAction`` as the title, the call's arguments as ``rawInput``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from agy_sim import steps_factory as sf

Json = dict[str, Any]

PLANNER: Final = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
ERROR_MESSAGE: Final = "CORTEX_STEP_TYPE_ERROR_MESSAGE"
_NOT_TOOLS: Final = frozenset(
    {
        PLANNER,
        ERROR_MESSAGE,
        "CORTEX_STEP_TYPE_USER_INPUT",
        "CORTEX_STEP_TYPE_CONVERSATION_HISTORY",
        "CORTEX_STEP_TYPE_CHECKPOINT",
    }
)
#: ACP's tool kinds, by the agy tool that made the step.
_KINDS: Final = {
    "run_command": "execute",
    "view_file": "read",
    "list_dir": "search",
    "invoke_subagent": "think",
}
_HIDDEN_ARGUMENTS: Final = frozenset({"toolAction", "toolSummary"})


def tool_call_of(step: Json) -> Json:
    """The model's call that made a tool step (``metadata.toolCall``)."""
    call = step.get("metadata", {}).get("toolCall", {})
    return call if isinstance(call, dict) else {}


def tool_call_id(step: Json) -> str:
    return str(tool_call_of(step).get("id", ""))


def raw_input(step: Json) -> Json:
    try:
        arguments = json.loads(tool_call_of(step).get("argumentsJson") or "{}")
    except ValueError:
        return {}
    if not isinstance(arguments, dict):
        return {}
    return {k: v for k, v in arguments.items() if k not in _HIDDEN_ARGUMENTS}


def title_of(step: Json) -> str:
    meta = step.get("metadata", {})
    return str(meta.get("toolAction") or tool_call_of(step).get("name") or "tool")


def is_tool(step: Json) -> bool:
    return step.get("type") not in _NOT_TOOLS and bool(tool_call_of(step))


def _text(text: str) -> Json:
    return {"type": "text", "text": text}


def _tool_status(step: Json) -> str:
    status = step.get("status")
    payload = next((v for k, v in step.items() if isinstance(v, dict) and "userRejected" in v), {})
    if status == sf.S_DONE:
        return "failed" if payload.get("userRejected") else "completed"
    if status in {sf.S_ERROR, sf.S_CANCELED}:
        return "failed"
    if status in {sf.S_RUNNING, sf.S_WAITING}:
        return "in_progress"
    return "pending"


def _text_content(text: str) -> list[Json]:
    return [{"type": "content", "content": _text(text)}] if text else []


def _command_output(command: Json) -> tuple[list[Json], Json]:
    if command.get("userRejected"):
        return _text_content("The person refused this command."), {"userRejected": True}
    output = str((command.get("combinedOutput") or {}).get("full", ""))
    raw: Json = {"output": output}
    if "exitCode" in command:
        raw["exitCode"] = command["exitCode"]
    return _text_content(output), raw


def _tool_output(step: Json) -> tuple[list[Json], Json]:
    """What a finished tool shows: its output as content, and the raw values."""
    if isinstance(command := step.get("runCommand"), dict):
        return _command_output(command)
    content: list[Json] = []
    raw: Json = {}
    if step.get("status") == sf.S_CANCELED:
        content = _text_content("Cancelled.")
    elif isinstance(listing := step.get("listDirectory"), dict):
        names = [str(r.get("name", "")) for r in listing.get("results", [])]
        content = _text_content("\n".join(names))
    elif isinstance(viewed := step.get("viewFile"), dict):
        raw = {"numLines": viewed.get("numLines", 0)}
    elif isinstance(sub := step.get("invokeSubagent"), dict):
        content = _text_content(str((sub.get("results") or [{}])[0].get("summary", "")))
    return content, raw


@dataclass(slots=True)
class _Shown:
    thinking: int = 0
    answer: int = 0
    tool_status: str = ""


@dataclass(slots=True)
class UpdateTracker:
    """What one session's client has been sent of each step."""

    shown: dict[int, _Shown] = field(default_factory=dict)

    def updates(self, index: int, step: Json) -> list[Json]:
        shown = self.shown.setdefault(index, _Shown())
        if step.get("type") == PLANNER:
            return self._planner(shown, step)
        if is_tool(step):
            return self._tool(shown, step)
        return []

    @staticmethod
    def _planner(shown: _Shown, step: Json) -> list[Json]:
        response = step.get("plannerResponse", {})
        updates: list[Json] = []
        thinking = str(response.get("thinking", ""))
        if len(thinking) > shown.thinking:
            piece, shown.thinking = thinking[shown.thinking :], len(thinking)
            updates.append({"sessionUpdate": "agent_thought_chunk", "content": _text(piece)})
        answer = str(response.get("modifiedResponse") or response.get("response") or "")
        if len(answer) > shown.answer:
            piece, shown.answer = answer[shown.answer :], len(answer)
            updates.append({"sessionUpdate": "agent_message_chunk", "content": _text(piece)})
        return updates

    @staticmethod
    def _tool(shown: _Shown, step: Json) -> list[Json]:
        status = _tool_status(step)
        call_id = tool_call_id(step)
        if not shown.tool_status:
            shown.tool_status = "pending"
            updates = [
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": title_of(step),
                    "kind": _KINDS.get(str(tool_call_of(step).get("name", "")), "other"),
                    "status": "pending",
                    "rawInput": raw_input(step),
                }
            ]
        else:
            updates = []
        if status != shown.tool_status:
            shown.tool_status = status
            update: Json = {"sessionUpdate": "tool_call_update", "toolCallId": call_id}
            update["status"] = status
            if status in {"completed", "failed"}:
                content, raw = _tool_output(step)
                if content:
                    update["content"] = content
                if raw:
                    update["rawOutput"] = raw
            updates.append(update)
        return updates

    def permission_tool_call(self, step: Json) -> Json:
        """``toolCall`` of a ``session/request_permission`` for a WAITING tool step."""
        return {
            "toolCallId": tool_call_id(step),
            "title": title_of(step),
            "kind": _KINDS.get(str(tool_call_of(step).get("name", "")), "other"),
            "status": "pending",
            "rawInput": raw_input(step),
        }
