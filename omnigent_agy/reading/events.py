"""The host-agnostic events the step mapper emits; the omnigent executor translates them.

Identity (docs/decisions.md §5): every event that becomes an omnigent item carries a stable id built
from the step that produced it (`StepKey.item_id`, `call_id`), never from anything that differs
between a streamed and a polled copy of the step. Events are values: frozen, slotted, compared
by content. Those that carry JSON objects (`raw`, `arguments`, `spec`, …) are not hashable.

Text deltas are *splices* on the step's text: ``text = text[:delta.offset] + delta.text``
(`apply_delta`). While agy only appends, `offset` equals the length streamed so far and this is
plain concatenation; if agy rewrites text already streamed, the mapper emits one delta whose
offset is the length of the common prefix (its text may be empty when agy only cut text).
Either way, applying a step's deltas in order yields its committed `AssistantMessage.text`
exactly; a step first seen already settled (after a reconnect) gets one delta with all of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from omnigent_agy.reading.steps import (
    InteractionKind,
    JsonObject,
    ModelUsage,
    RequestedInteraction,
    StepKey,
    ToolOutcome,
)

__all__ = [
    "AssistantMessage",
    "ErrorReported",
    "Event",
    "InteractionRequested",
    "InteractionResolved",
    "ModelChanged",
    "ReasoningDelta",
    "SubAgentEvent",
    "SubAgentFinished",
    "SubAgentStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolOutcome",
    "TurnBoundary",
    "UnknownStep",
    "UsageReported",
    "apply_delta",
    "turn_usage",
]

# --- assistant output ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """New assistant text of a PLANNER_RESPONSE step (`plannerResponse.modifiedResponse`)."""

    key: StepKey
    offset: int
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """New reasoning text of a PLANNER_RESPONSE step (`plannerResponse.thinking`)."""

    key: StepKey
    offset: int
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """The committed text of a settled PLANNER_RESPONSE: published once, as item `key.item_id`.

    `status` is the step's final status: DONE normally, CANCELED/ERROR/… when agy stopped it
    after some text had been generated (that text is committed so nothing shown is lost).
    """

    key: StepKey
    text: str
    status: str
    message_id: str | None = None


# --- tools -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool step agy is running itself (RUN_COMMAND, VIEW_FILE, …, or an unknown type).

    `call_id` is `key.item_id`; `agy_call_id` is `metadata.toolCall.id` when the step carried it
    (polls do, the stream does not: docs/wire.md §4), for logs only.
    """

    call_id: str
    key: StepKey
    name: str
    arguments: JsonObject
    step_type: str
    title: str | None = None  # metadata.toolSummary, e.g. "Run pwd command"
    description: str | None = None  # metadata.toolAction, e.g. "Running pwd command"
    agy_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """The settled result of a tool step; `output` is capped (`truncated` then True)."""

    call_id: str
    key: StepKey
    name: str
    outcome: ToolOutcome  # defined in tool_steps, re-exported here
    output: str
    exit_code: int | None = None
    truncated: bool = False
    error: str | None = None
    full_bytes: int | None = None
    """The output's size before the cap (UTF-8 bytes) when the cap cut it; else None (a
    `truncated` output then was shortened by agy itself)."""
    arguments: JsonObject | None = None
    """The call's arguments, as its `ToolCallStarted` had them: a harness process that did not
    see the start (its predecessor died mid-turn) shows the call with them."""


# --- turn, model, usage, errors --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnBoundary:
    """A USER_INPUT step: a new turn starts. Never re-emitted as a user message (omnigent has it).

    `text` is `userInput.userResponse`, so a reader can tell its own turn from one typed in the
    TUI; `source` is `metadata.source` (e.g. CORTEX_STEP_SOURCE_USER_EXPLICIT).
    """

    key: StepKey
    text: str
    execution_id: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ModelChanged:
    """The conversation's model changed; `display_name` comes from the catalog when known."""

    model: str  # the Model enum name, e.g. MODEL_PLACEHOLDER_M20; never hard-coded (§5)
    display_name: str | None
    key: StepKey
    source: str  # "user_input" (plannerConfig) or "generator" (metadata.generatorModel)


@dataclass(frozen=True, slots=True)
class UsageReported:
    """Token usage of one settled step's model call (reported once per step)."""

    key: StepKey
    usage: ModelUsage


@dataclass(frozen=True, slots=True)
class ErrorReported:
    """An error the user can read: an ERROR_MESSAGE step, or a model step that ended in ERROR.

    `retryable` is agy's own verdict where it states one ("Encountered retryable error …");
    `benign` is `error.isBenign` (e.g. a tool refused by a hook, after which agy carries on).
    """

    key: StepKey
    message: str
    detail: str | None = None
    retryable: bool = False
    benign: bool = False


# --- interactions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InteractionRequested:
    """A step is WAITING for the user (docs/wire.md §6): everything the interaction bridge needs.

    Answer with HandleCascadeUserInteraction using `key.trajectory_id` and `key.step_index`;
    at delivery time re-read the steps and answer the freshest WAITING step of the same kind.
    `call_id` links the card to the tool call of the same step. What agy asks is `wanted`
    (the step's `requestedInteraction`, parsed once in `steps`); `command_line` and `cwd` come
    from the step's own `runCommand`, for a command gate.
    """

    key: StepKey
    call_id: str
    step_type: str
    wanted: RequestedInteraction
    command_line: str | None = None
    cwd: str | None = None
    asked_by: str | None = None
    """The title of the sub-agent whose cascade waits (its role), None for the conversation's
    own: the card says which sub-agent asks (docs/wire.md §7)."""

    @property
    def kind(self) -> InteractionKind:
        return self.wanted.kind


@dataclass(frozen=True, slots=True)
class InteractionResolved:
    """A step announced as WAITING is no longer waiting (answered here, in the TUI, or timed out).

    `response` is the last `completedInteractions[].response` when agy recorded one.
    """

    key: StepKey
    call_id: str
    status: str
    response: JsonObject | None = None


# --- sub-agents and the unknown --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubAgentStarted:
    """An INVOKE_SUBAGENT step spawned a child cascade (docs/wire.md §7).

    `task` is what the child was asked, from its own first user input, once the session has
    read it; the mapper leaves it empty (the guessed `spec.prompt` stands in)."""

    call_id: str
    child_cascade_id: str
    role: str
    agent_type: str
    spec: JsonObject
    task: str = ""


@dataclass(frozen=True, slots=True)
class SubAgentFinished:
    """The INVOKE_SUBAGENT step that spawned `child_cascade_id` settled."""

    call_id: str
    child_cascade_id: str
    ok: bool
    result: JsonObject
    summary: str = ""  # the child's own last answer, once the session has read it
    title: str = ""  # the sub-agent's title (`SubAgentStarted`'s role), when known


@dataclass(frozen=True, slots=True)
class SubAgentEvent:
    """An event of a child cascade, mapped with that cascade's own `MapperState`."""

    parent_call_id: str
    child_cascade_id: str
    event: Event
    title: str = ""  # the sub-agent's title (its role), when known


@dataclass(frozen=True, slots=True)
class UnknownStep:
    """The first step of a type this package does not know; emitted once per type, to log.

    The step itself is still rendered, as a generic tool call (docs/decisions.md §7).
    """

    key: StepKey
    step_type: str
    status: str


Event = (
    TextDelta
    | ReasoningDelta
    | AssistantMessage
    | ToolCallStarted
    | ToolCallFinished
    | TurnBoundary
    | ModelChanged
    | UsageReported
    | ErrorReported
    | InteractionRequested
    | InteractionResolved
    | SubAgentStarted
    | SubAgentFinished
    | SubAgentEvent
    | UnknownStep
)


def apply_delta(current: str, delta: TextDelta | ReasoningDelta) -> str:
    """Apply one delta to the text streamed so far (see the module docstring)."""
    return current[: delta.offset] + delta.text


def turn_usage(events: Iterable[Event]) -> ModelUsage:
    """The sum of every `UsageReported` among `events` (agy has no usage RPC, docs/wire.md §5)."""
    total: ModelUsage | None = None
    for event in events:
        if isinstance(event, UsageReported):
            total = event.usage if total is None else total + event.usage
    return total if total is not None else ModelUsage()
