"""What a tool step says about its call: name, arguments and result, from its own payload.

The stream strips `metadata.toolCall` (docs/wire.md §4), so everything here reads the tool's payload
(`runCommand`, `viewFile`, …): a streamed and a polled copy of a step describe the same call.
Like `steps`, every function tolerates any JSON and never raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote

from omnigent_agy.reading.steps import (
    JsonObject,
    StepStatus,
    StepType,
    flag,
    int64,
    metadata,
    obj,
    parse_questions,
    seq,
    step_error_text,
    step_payload,
    text,
    tool_name,
)

_EMPTY: JsonObject = {}


class ToolOutcome(StrEnum):
    """How a tool step ended (a StrEnum: hosts may compare plain strings)."""

    SUCCESS = "success"
    ERROR = "error"
    CANCELED = "canceled"
    DENIED = "denied"  # the user refused the permission, or agy recorded userRejected


KNOWN_TOOL_TYPES: frozenset[str] = frozenset(
    {
        StepType.RUN_COMMAND,
        StepType.VIEW_FILE,
        StepType.LIST_DIRECTORY,
        StepType.CODE_ACTION,
        StepType.GREP_SEARCH,
        StepType.FIND,
        StepType.MCP_TOOL,
        StepType.GENERIC,
        StepType.ASK_QUESTION,
        StepType.INVOKE_SUBAGENT,
    }
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: JsonObject
    title: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    outcome: ToolOutcome
    output: str
    exit_code: int | None = None
    truncated: bool = False
    error: str | None = None
    full_bytes: int | None = None
    """The output's size in UTF-8 bytes before the cap, when the cap cut it."""


def uri_path(value: object) -> str | None:
    """`file:///home/user/x` → `/home/user/x`; other strings unchanged."""
    uri = text(value)
    if uri is None:
        return None
    return unquote(uri.removeprefix("file://")) if uri.startswith("file://") else uri


def to_json(value: object) -> str:
    """Compact, stable JSON for rendering payloads we do not know in detail."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # keys of mixed types: only from a broken producer
        return repr(value)


def cap_output(output: str, limit: int) -> tuple[str, bool]:
    """Cut `output` to at most `limit` UTF-8 bytes (never inside a character)."""
    if len(output) * 4 <= limit:
        return output, False  # fast path: cannot exceed the limit even at 4 bytes a char
    encoded = output.encode("utf-8", errors="replace")
    if len(encoded) <= limit:
        return output, False
    return encoded[: max(limit, 0)].decode("utf-8", errors="ignore"), True


def _parse_arguments_json(value: object) -> JsonObject:
    raw = text(value)
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"arguments_json": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def describe_call(step: JsonObject, kind: str) -> ToolCall:
    """Name and arguments of the tool call a tool step (or a step of unknown type) stands for."""
    payload = step_payload(step)
    builder = _CALL_BUILDERS.get(kind)
    if builder is not None:
        return builder(step, payload)
    return ToolCall(name=tool_name(kind), arguments={})


def _run_command_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    line = text(payload.get("commandLine")) or text(payload.get("proposedCommandLine"))
    return ToolCall("run_command", _present(command_line=line, cwd=text(payload.get("cwd"))))


def _view_file_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    return ToolCall(
        "view_file",
        _present(
            path=uri_path(payload.get("absolutePathUri")),
            start_line=int64(payload.get("startLine")),
            end_line=int64(payload.get("endLine")),
        ),
    )


def _list_directory_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    return ToolCall("list_directory", _present(path=uri_path(payload.get("directoryPathUri"))))


def _code_action_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    spec = obj(payload.get("actionSpec"))
    action = next((name for name in spec if isinstance(name, str)), None)
    target = obj(spec.get(action)) if action else _EMPTY
    path = uri_path(obj(target.get("path")).get("absoluteUri")) or uri_path(
        obj(target.get("file")).get("absoluteUri")
    )
    path = path or uri_path(obj(obj(payload.get("actionResult")).get("edit")).get("absoluteUri"))
    description = text(payload.get("description"))
    return ToolCall("code_action", _present(action=action, path=path, description=description))


def _grep_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    path = uri_path(payload.get("searchPathUri")) or uri_path(payload.get("cwdUri"))
    return ToolCall("grep_search", _present(query=text(payload.get("query")), path=path))


def _find_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    path = uri_path(payload.get("searchDirectory"))
    return ToolCall("find", _present(pattern=text(payload.get("pattern")), path=path))


def _mcp_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    call = obj(payload.get("toolCall"))
    server = text(payload.get("serverName"))
    tool = text(call.get("name")) or "mcp_tool"
    name = f"{server}/{tool}" if server else tool
    return ToolCall(name, _parse_arguments_json(call.get("argumentsJson")), f"{name} (MCP)")


def _generic_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    # GENERIC's own name lives only in metadata.toolCall; the stream kept it there in the
    # recorded stream_generic_done (docs/wire.md §8), and the call id never depends on it.
    name = text(obj(metadata(step).get("toolCall")).get("name")) or "generic"
    return ToolCall(name, obj(payload.get("args")))


def _ask_question_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    questions = [
        {
            "question": question.text,
            "options": [option.text for option in question.options],
            "multi_select": question.multi_select,
        }
        for question in parse_questions(payload.get("questions"))
    ]
    return ToolCall("ask_question", {"questions": questions})


def _invoke_subagent_call(step: JsonObject, payload: JsonObject) -> ToolCall:
    return ToolCall("invoke_subagent", {"subagents": seq(payload.get("subagents"))})


def _present(**fields: object) -> JsonObject:
    return {name: value for name, value in fields.items() if value is not None}


_CALL_BUILDERS: dict[str, Callable[[JsonObject, JsonObject], ToolCall]] = {
    StepType.RUN_COMMAND.value: _run_command_call,
    StepType.VIEW_FILE.value: _view_file_call,
    StepType.LIST_DIRECTORY.value: _list_directory_call,
    StepType.CODE_ACTION.value: _code_action_call,
    StepType.GREP_SEARCH.value: _grep_call,
    StepType.FIND.value: _find_call,
    StepType.MCP_TOOL.value: _mcp_call,
    StepType.GENERIC.value: _generic_call,
    StepType.ASK_QUESTION.value: _ask_question_call,
    StepType.INVOKE_SUBAGENT.value: _invoke_subagent_call,
}


def last_interaction_response(step: JsonObject) -> JsonObject | None:
    """The newest `completedInteractions[].response` (docs/wire.md §6), or None."""
    for completed in reversed(seq(step.get("completedInteractions"))):
        response = obj(completed).get("response")
        if isinstance(response, Mapping):
            return response
    return None


def _denied(step: JsonObject, payload: JsonObject) -> bool:
    if flag(payload.get("userRejected")):
        return True
    response = last_interaction_response(step)
    if response is None:
        return False
    permission = response.get("permission")
    # protojson omits false: `permission: {}` is a refusal.
    return isinstance(permission, Mapping) and permission.get("allow") is not True


def describe_result(step: JsonObject, kind: str, status: str, *, cap: int) -> ToolResult:
    """The result of a settled tool step: outcome, capped output, exit code, error."""
    payload = step_payload(step)
    if _denied(step, payload):
        outcome = ToolOutcome.DENIED
    elif status == StepStatus.DONE:
        outcome = ToolOutcome.SUCCESS
    elif status in (StepStatus.CANCELED, StepStatus.INTERRUPTED, StepStatus.CLEARED):
        outcome = ToolOutcome.CANCELED
    else:
        outcome = ToolOutcome.ERROR
    output, truncated, exit_code = _render_output(step, kind, payload)
    full = output
    output, capped = cap_output(output, cap)
    error = None
    if outcome is not ToolOutcome.SUCCESS:
        error = step_error_text(step)[0]
        if error is None and outcome is ToolOutcome.DENIED:
            error = "denied by the user"
    full_bytes = len(full.encode("utf-8", errors="replace")) if capped else None
    return ToolResult(outcome, output, exit_code, truncated or capped, error, full_bytes)


def _render_output(
    step: JsonObject, kind: str, payload: JsonObject
) -> tuple[str, bool, int | None]:
    """(output, truncated by agy, exit code) for one tool payload."""
    if kind == StepType.RUN_COMMAND:
        return _command_output(payload)
    render = _OUTPUT_RENDERERS.get(kind)
    if render is not None:
        return render(step, payload), False, None
    return (to_json(payload) if payload else ""), False, None


def _mcp_output(step: JsonObject, payload: JsonObject) -> str:
    result = text(payload.get("resultString"))
    return result if result is not None else to_json(payload)


def _generic_output(step: JsonObject, payload: JsonObject) -> str:
    result = obj(payload.get("result"))
    said = text(result.get("result")) or text(obj(result.get("stepRenderInfo")).get("markdown"))
    return said if said is not None else to_json(result)


def _subagent_output(step: JsonObject, payload: JsonObject) -> str:
    return to_json(seq(payload.get("results")))


def _command_output(payload: JsonObject) -> tuple[str, bool, int | None]:
    combined = obj(payload.get("combinedOutput"))
    full = combined.get("full")
    marker = combined.get("truncated")
    # `truncated` is a shortened copy of the output in the engine's schema and a flag in some
    # reports: either way, when it is set the output the user gets is not the whole output.
    if isinstance(full, str):
        output, truncated = full, marker is True
    elif isinstance(marker, str):
        output, truncated = marker, True
    else:
        output, truncated = "", marker is True
    # agy runs commands in a pty: its line ends are \r\n.
    return output.replace("\r\n", "\n"), truncated, int64(payload.get("exitCode"))


def _view_file_output(step: JsonObject, payload: JsonObject) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    lines, size = int64(payload.get("numLines")), int64(payload.get("numBytes"))
    if lines is None and size is None:
        return ""
    return f"read {lines or 0} lines ({size or 0} bytes)"


def _list_directory_output(step: JsonObject, payload: JsonObject) -> str:
    entries = []
    for raw in seq(payload.get("results")):
        entry = obj(raw)
        name = text(entry.get("name"))
        if name is not None:
            entries.append(name + "/" if flag(entry.get("isDir")) else name)
    return "\n".join(entries)


_DIFF_PREFIX = {
    "UNIFIED_DIFF_LINE_TYPE_INSERT": "+",
    "UNIFIED_DIFF_LINE_TYPE_DELETE": "-",
    "UNIFIED_DIFF_LINE_TYPE_UNCHANGED": " ",
}


def _code_action_output(step: JsonObject, payload: JsonObject) -> str:
    diff = obj(
        obj(obj(obj(payload.get("actionResult")).get("edit")).get("diff")).get("unifiedDiff")
    )
    lines = []
    for raw in seq(diff.get("lines")):
        line = obj(raw)
        kind = line.get("type")
        prefix = _DIFF_PREFIX.get(kind, " ") if isinstance(kind, str) else " "
        lines.append(prefix + (text(line.get("text")) or ""))
    return "\n".join(lines) if lines else text(payload.get("description")) or ""


def _answers_output(step: JsonObject, payload: JsonObject) -> str:
    """One line per answered question: the chosen option texts (ids are "1".."N", §5)."""
    response = obj(obj(last_interaction_response(step)).get("askQuestion"))
    if flag(response.get("cancelled")):
        return "cancelled"
    questions = {question.text: question for question in parse_questions(payload.get("questions"))}
    lines = []
    for raw in seq(response.get("responses")):
        answer = obj(raw)
        asked = text(answer.get("question")) or ""
        options = {o.id: o.text for o in questions[asked].options} if asked in questions else {}
        chosen = [options.get(str(i), str(i)) for i in seq(answer.get("selectedOptionIds"))]
        written = text(answer.get("writeInResponse"))
        if written is not None:
            chosen.append(written)
        said = "(skipped)" if flag(answer.get("skipped")) else ", ".join(chosen)
        lines.append(f"{asked}: {said}")
    return "\n".join(lines)


_OUTPUT_RENDERERS: dict[str, Callable[[JsonObject, JsonObject], str]] = {
    StepType.VIEW_FILE.value: _view_file_output,
    StepType.LIST_DIRECTORY.value: _list_directory_output,
    StepType.CODE_ACTION.value: _code_action_output,
    StepType.MCP_TOOL.value: _mcp_output,
    StepType.GENERIC.value: _generic_output,
    StepType.ASK_QUESTION.value: _answers_output,
    StepType.INVOKE_SUBAGENT.value: _subagent_output,
}


def subagent_children(step: JsonObject) -> list[tuple[JsonObject, JsonObject, str]]:
    """(spec, result, child cascade id) of an INVOKE_SUBAGENT step's started children.

    agy fills `results[]` positionally against `subagents[]` and sets a result's
    `conversationId` as soon as that child exists (docs/wire.md §7).
    """
    payload = step_payload(step)
    children = []
    for raw_spec, raw_result in zip(
        seq(payload.get("subagents")), seq(payload.get("results")), strict=False
    ):
        child = text(obj(raw_result).get("conversationId"))
        if child is not None:
            children.append((obj(raw_spec), obj(raw_result), child))
    return children
