"""Small, tolerant parsing helpers for agy's wire steps (plain dicts decoded from JSON).

Identity, type, status and payload of a step; model usage; requested interactions; error text.
What a tool step says about its call (name, arguments, result) is in `tool_steps`.

Nothing here trusts the wire (docs/decisions.md §7): every helper accepts any JSON value, returns a
typed value or a neutral default, and never raises. Unknown step types and statuses stay plain
strings; the enums below name only the values this package acts on (docs/wire.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

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
