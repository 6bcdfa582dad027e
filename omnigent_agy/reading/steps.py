"""Small, tolerant parsing helpers for agy's wire steps (plain dicts decoded from JSON).

Identity, type, status and payload of a step; model usage; requested interactions; error text.
What a tool step says about its call (name, arguments, result) is in `tool_steps`.

Nothing here trusts the wire (docs/decisions.md §7): every helper accepts any JSON value, returns a
typed value or a neutral default, and never raises. Unknown step types and statuses stay plain
strings; the enums below name only the values this package acts on (docs/wire.md §5).

What a tool step says about its call: name, arguments and result, from its own payload.

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

JsonObject = Mapping[str, object]

_TYPE_PREFIX = "CORTEX_STEP_TYPE_"
_EMPTY: JsonObject = {}


class StepType(StrEnum):
    """Step types this package maps specially; agy has ~118 more (docs/wire.md §5)."""

    USER_INPUT = "CORTEX_STEP_TYPE_USER_INPUT"
    PLANNER_RESPONSE = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
    RUN_COMMAND = "CORTEX_STEP_TYPE_RUN_COMMAND"
    VIEW_FILE = "CORTEX_STEP_TYPE_VIEW_FILE"
    LIST_DIRECTORY = "CORTEX_STEP_TYPE_LIST_DIRECTORY"
    CODE_ACTION = "CORTEX_STEP_TYPE_CODE_ACTION"
    GREP_SEARCH = "CORTEX_STEP_TYPE_GREP_SEARCH"
    FIND = "CORTEX_STEP_TYPE_FIND"
    MCP_TOOL = "CORTEX_STEP_TYPE_MCP_TOOL"
    GENERIC = "CORTEX_STEP_TYPE_GENERIC"
    ASK_QUESTION = "CORTEX_STEP_TYPE_ASK_QUESTION"
    INVOKE_SUBAGENT = "CORTEX_STEP_TYPE_INVOKE_SUBAGENT"
    ERROR_MESSAGE = "CORTEX_STEP_TYPE_ERROR_MESSAGE"
    CHECKPOINT = "CORTEX_STEP_TYPE_CHECKPOINT"
    CONVERSATION_HISTORY = "CORTEX_STEP_TYPE_CONVERSATION_HISTORY"
    EPHEMERAL_MESSAGE = "CORTEX_STEP_TYPE_EPHEMERAL_MESSAGE"
    SYSTEM_MESSAGE = "CORTEX_STEP_TYPE_SYSTEM_MESSAGE"


class StepStatus(StrEnum):
    """`CORTEX_STEP_STATUS_*` (docs/wire.md §5); CANCELED has one L on the wire."""

    PENDING = "CORTEX_STEP_STATUS_PENDING"
    QUEUED = "CORTEX_STEP_STATUS_QUEUED"
    RUNNING = "CORTEX_STEP_STATUS_RUNNING"
    GENERATING = "CORTEX_STEP_STATUS_GENERATING"
    WAITING = "CORTEX_STEP_STATUS_WAITING"
    DONE = "CORTEX_STEP_STATUS_DONE"
    ERROR = "CORTEX_STEP_STATUS_ERROR"
    CANCELED = "CORTEX_STEP_STATUS_CANCELED"
    INTERRUPTED = "CORTEX_STEP_STATUS_INTERRUPTED"
    CLEARED = "CORTEX_STEP_STATUS_CLEARED"
    INVALID = "CORTEX_STEP_STATUS_INVALID"


# Every status but the open ones (DONE, ERROR, CANCELED, INTERRUPTED, CLEARED, INVALID).
_OPEN = {StepStatus.PENDING, StepStatus.QUEUED, StepStatus.RUNNING, StepStatus.GENERATING}
SETTLED_STATUSES: frozenset[str] = frozenset(StepStatus) - _OPEN - {StepStatus.WAITING}

KNOWN_TYPES: dict[str, StepType] = {member.value: member for member in StepType}
KNOWN_STATUSES: dict[str, StepStatus] = {member.value: member for member in StepStatus}


# --- primitive readers -----------------------------------------------------------------------


def obj(value: object) -> JsonObject:
    """`value` if it is a JSON object, else an empty one."""
    # json.loads gives dicts: checking dict first skips the slower ABC check on every call.
    if isinstance(value, (dict, Mapping)):
        return value
    return _EMPTY


def seq(value: object) -> list[object]:
    """`value` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def text(value: object) -> str | None:
    """`value` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def int64(value: object) -> int | None:
    """An int64/uint64 field: a decimal string on the wire (docs/wire.md §3), an int in some
    shapes."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and len(value) <= 24:
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def flag(value: object) -> bool:
    """A proto bool: absent means False (zero values are omitted, docs/wire.md §3)."""
    return value is True


# --- type, status, payload -------------------------------------------------------------------


def parse_step_type(value: object) -> StepType | str:
    """The known `StepType`, the unknown type string as-is, or "" when absent or not a string."""
    if not isinstance(value, str):
        return ""
    return KNOWN_TYPES.get(value, value)


def parse_step_status(value: object) -> StepStatus | str:
    """The known `StepStatus`, the unknown status string as-is, or "" when absent."""
    if not isinstance(value, str):
        return ""
    return KNOWN_STATUSES.get(value, value)


def step_type(step: JsonObject) -> StepType | str:
    return parse_step_type(step.get("type"))


def step_status(step: JsonObject) -> StepStatus | str:
    return parse_step_status(step.get("status"))


def is_settled(status: object) -> bool:
    """True when a step will not change any more (DONE, ERROR, CANCELED, INTERRUPTED, …)."""
    return isinstance(status, str) and status in SETTLED_STATUSES


def type_suffix(type_name: str) -> str:
    """`CORTEX_STEP_TYPE_RUN_COMMAND` → `RUN_COMMAND` (other strings are returned unchanged)."""
    return type_name.removeprefix(_TYPE_PREFIX)


def payload_key(type_name: str) -> str:
    """The payload's key: lowerCamel of the type suffix (`RUN_COMMAND` → `runCommand`, §5)."""
    known = _PAYLOAD_KEYS.get(type_name)
    return known if known is not None else _payload_key(type_name)


def _payload_key(type_name: str) -> str:
    words = [word for word in type_suffix(type_name).lower().split("_") if word]
    if not words:
        return ""
    return words[0] + "".join(word.capitalize() for word in words[1:])


def tool_name(type_name: str) -> str:
    """A stable tool name for a step type: `RUN_COMMAND` → `run_command`."""
    return type_suffix(type_name).lower() or "unknown"


# Every frame of a step asks for its payload: the known types' keys are worked out once.
_PAYLOAD_KEYS: dict[str, str] = {member.value: _payload_key(member.value) for member in StepType}


def step_payload(step: JsonObject) -> JsonObject:
    """The typed body of a step (`runCommand`, `plannerResponse`, …), empty when absent."""
    type_name = step.get("type")
    if not isinstance(type_name, str):
        return _EMPTY
    return obj(step.get(payload_key(type_name)))


def metadata(step: JsonObject) -> JsonObject:
    return obj(step.get("metadata"))


def execution_id(step: JsonObject) -> str | None:
    return text(metadata(step).get("executionId"))


# --- identity --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepKey:
    """The identity of a step: `(cascadeId, trajectoryId, stepIndex)` (docs/wire.md §5)."""

    cascade_id: str
    trajectory_id: str
    step_index: int

    @property
    def item_id(self) -> str:
        """The id of the item this step becomes: the same for a streamed and a polled copy."""
        return f"agy:{self.trajectory_id}:{self.step_index}"


def step_key(
    step: JsonObject,
    *,
    absolute_index: int | None = None,
    cascade_id: str = "",
    previous: StepKey | None = None,
) -> StepKey:
    """The step's key from `metadata.sourceTrajectoryStepInfo`.

    `stepIndex` is omitted when 0 *and on USER_INPUT* (docs/wire.md §5), so a reader that knows the
    absolute index (the stream's `indices[i]`, or `stepOffset` + position in a poll) must always
    pass it: it wins over the field. Without it, a missing `stepIndex` means 0. `cascade_id` is
    the fallback when the step does not name its cascade. `previous` is returned itself when
    the step has that key (a growing step is re-sent in every frame: one key object, hashed once).
    """
    return key_in_metadata(metadata(step), absolute_index, cascade_id, previous)


def key_in_metadata(
    meta: JsonObject, absolute_index: int | None, cascade_id: str, previous: StepKey | None, /
) -> StepKey:
    """`step_key` of the step whose `metadata` is `meta` (the mapper has it in hand); what
    JSON gives takes no call (this runs on every frame of a streamed answer)."""
    info = meta.get("sourceTrajectoryStepInfo")
    info = info if type(info) is dict else obj(info)
    index = (int64(info.get("stepIndex")) or 0) if absolute_index is None else absolute_index
    cascade = info.get("cascadeId")
    cascade = cascade if cascade and isinstance(cascade, str) else cascade_id
    trajectory = info.get("trajectoryId")
    trajectory = trajectory if trajectory and isinstance(trajectory, str) else ""
    if (
        previous is not None
        and previous.step_index == index
        and previous.trajectory_id == trajectory
        and previous.cascade_id == cascade
    ):
        return previous
    return StepKey(cascade_id=cascade, trajectory_id=trajectory, step_index=index)


# --- model usage -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """`metadata.modelUsage` of one model call; output = thinking + response (docs/wire.md §5)."""

    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_output_tokens: int = 0
    response_output_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: ModelUsage) -> ModelUsage:
        """Sum two usages; the model is kept only while both agree."""
        return ModelUsage(
            model=self.model if self.model == other.model else None,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_output_tokens=self.thinking_output_tokens + other.thinking_output_tokens,
            response_output_tokens=self.response_output_tokens + other.response_output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
        )


def parse_model_usage(value: object) -> ModelUsage | None:
    """A `ModelUsage` from a `modelUsage` object; None when it is absent or not an object."""
    if not isinstance(value, Mapping):
        return None

    def count(name: str) -> int:
        number = int64(value.get(name))
        return number if number is not None and number > 0 else 0

    return ModelUsage(
        model=text(value.get("model")),
        input_tokens=count("inputTokens"),
        output_tokens=count("outputTokens"),
        thinking_output_tokens=count("thinkingOutputTokens"),
        response_output_tokens=count("responseOutputTokens"),
        cache_read_tokens=count("cacheReadTokens"),
    )


# --- requested interactions ------------------------------------------------------------------


class InteractionKind(StrEnum):
    PERMISSION = "permission"
    ASK_QUESTION = "ask_question"
    ELICITATION = "elicitation"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class QuestionOption:
    id: str  # "1".."N", what HandleCascadeUserInteraction expects back (docs/wire.md §5)
    text: str


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    options: tuple[QuestionOption, ...]
    multi_select: bool


@dataclass(frozen=True, slots=True)
class RequestedInteraction:
    """`requestedInteraction` parsed (docs/wire.md §6); `raw` keeps the whole object."""

    kind: InteractionKind
    raw: JsonObject
    action: str | None = None  # permission resource.action, e.g. "command"
    target: str | None = None  # permission resource.target, e.g. the command line
    action_description: str | None = None
    suggested_persist_pattern: str | None = None
    persist_suggestion_type: str | None = None
    questions: tuple[Question, ...] = ()
    elicitation_server: str | None = None
    elicitation_message: str | None = None
    requested_schema_json: str | None = None


def parse_questions(value: object) -> tuple[Question, ...]:
    """`askQuestion.questions[]`; option ids default to their 1-based position."""
    questions: list[Question] = []
    for raw_question in seq(value):
        question = obj(raw_question)
        options: list[QuestionOption] = []
        for position, raw_option in enumerate(seq(question.get("options")), start=1):
            option = obj(raw_option)
            if not option and isinstance(raw_option, str):
                option = {"text": raw_option}  # argumentsJson lists bare strings
            option_id = text(option.get("id")) or str(position)
            options.append(QuestionOption(id=option_id, text=text(option.get("text")) or ""))
        # protojson writes isMultiSelect; the tool's own arguments say is_multi_select.
        multi = flag(question.get("isMultiSelect")) or flag(question.get("is_multi_select"))
        questions.append(
            Question(
                text=text(question.get("question")) or "",
                options=tuple(options),
                multi_select=multi,
            )
        )
    return tuple(questions)


def requested_interaction(step: JsonObject) -> RequestedInteraction | None:
    """The step's `requestedInteraction`, or None when it has none (docs/wire.md §6)."""
    raw = step.get("requestedInteraction")
    if not isinstance(raw, Mapping):
        return None
    permission = raw.get("permission")
    if isinstance(permission, Mapping):
        resource = obj(permission.get("resource"))
        return RequestedInteraction(
            kind=InteractionKind.PERMISSION,
            raw=raw,
            action=text(resource.get("action")),
            target=text(resource.get("target")),
            action_description=text(permission.get("actionDescription")),
            suggested_persist_pattern=text(permission.get("suggestedPersistPattern")),
            persist_suggestion_type=text(permission.get("persistSuggestionType")),
        )
    ask = raw.get("askQuestion")
    if isinstance(ask, Mapping):
        return RequestedInteraction(
            kind=InteractionKind.ASK_QUESTION,
            raw=raw,
            questions=parse_questions(ask.get("questions")),
        )
    elicitation = raw.get("elicitation")
    if isinstance(elicitation, Mapping):
        return RequestedInteraction(
            kind=InteractionKind.ELICITATION,
            raw=raw,
            elicitation_server=text(elicitation.get("serverName")),
            elicitation_message=text(elicitation.get("message")),
            requested_schema_json=text(elicitation.get("requestedSchemaJson")),
        )
    return RequestedInteraction(kind=InteractionKind.UNKNOWN, raw=raw)


def step_error_text(step: JsonObject) -> tuple[str | None, str | None]:
    """(readable message, detail) from `errorMessage.error` or the step's own `error`.

    The readable message prefers `userErrorMessage`, then `shortError`; the detail is the
    `shortError` or `fullError` when it says more than the message (docs/wire.md §5).
    """
    for container in (obj(obj(step.get("errorMessage")).get("error")), obj(step.get("error"))):
        user = text(container.get("userErrorMessage"))
        short = text(container.get("shortError"))
        full = text(container.get("fullError"))
        message = user or short or full
        if message is None:
            continue
        detail = next((d for d in (short, full) if d is not None and d != message), None)
        return message, detail
    return None, None


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
