"""The pure step mapper: one wire step + explicit per-cascade state → events.

`map_step(state, step, absolute_index=...)` mutates `state` in place and returns the new
events for that step; it does no I/O, reads no clock, starts no thread and touches no global.
It never raises on malformed input (docs/decisions.md §7): unknown types become a generic tool call.

Rules (docs/wire.md §4 to §6):

- Steps are cumulative snapshots, re-sent whole while they change. Deltas are the new suffix of
  `plannerResponse.modifiedResponse` / `thinking` against what this state already emitted for
  the step (see `events` for the splice rule when agy rewrites text). A frame that has no text
  field leaves the text as streamed. A step first seen settled still gets its deltas, so the
  deltas of a step always rebuild its committed text.
- A step is *committed* once it settles: its final events are emitted (the one
  `AssistantMessage`, the `ToolCallFinished`, the `UsageReported`, …) and its key is recorded, so
  any later copy of it (stream replay, poll catch-up) maps to nothing.
- Tool calls are built from the tool's own step, never from `metadata.toolCall` (the stream
  omits it, docs/wire.md §4): name and arguments come from the payload and the call id is the step's
  `item_id`, so a streamed and a polled copy give the same call.
- Cost: the work per frame depends only on the step given, never on the conversation's length;
  per-step progress is dropped when the step settles, leaving one int per committed step.

MapperState: everything the step mapper remembers about one cascade.

`mapper.map_step` reads and updates it (its underscored fields are the mapper's bookkeeping,
for no one else); a reader seeds it from its durable cursor (`mark_committed`, `commit_below`)
and saves it (`export_progress`, `restore_progress`), so a restarted reader publishes nothing
twice. Pure data: no I/O, clock, thread or global, like the mapper.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from os.path import commonprefix
from typing import Any

from omnigent_agy.reading.events import (
    AssistantMessage,
    ErrorReported,
    Event,
    InteractionRequested,
    InteractionResolved,
    ModelChanged,
    ReasoningDelta,
    SubAgentEvent,
    SubAgentFinished,
    SubAgentStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnBoundary,
    UnknownStep,
    UsageReported,
)
from omnigent_agy.reading.gate_retries import TIMED_OUT, GateRetries
from omnigent_agy.reading.indexset import IndexSet
from omnigent_agy.reading.steps import (
    KNOWN_STATUSES,
    KNOWN_TOOL_TYPES,
    KNOWN_TYPES,
    SETTLED_STATUSES,
    JsonObject,
    StepKey,
    StepStatus,
    StepType,
    ToolOutcome,
    describe_call,
    describe_result,
    is_settled,
    key_in_metadata,
    last_interaction_response,
    metadata,
    obj,
    parse_model_usage,
    parse_step_status,
    parse_step_type,
    requested_interaction,
    seq,
    step_error_text,
    step_payload,
    subagent_children,
    text,
)

__all__ = ["DEFAULT_OUTPUT_CAP", "MapperState", "StreamedText", "map_step"]


DEFAULT_OUTPUT_CAP = 64 * 1024


@dataclass(slots=True)
class StreamedText:
    """What has been emitted so far for a PLANNER_RESPONSE that has not settled."""

    text: str = ""
    reasoning: str = ""


@dataclass(slots=True, eq=False)
class MapperState:
    """Everything the mapper remembers about one cascade, passed explicitly to `map_step`.

    `model_names` maps Model enum names to display names (from the catalog); `parent_call_id`
    marks the state of a sub-agent's child cascade: its events come wrapped in `SubAgentEvent`.
    """

    cascade_id: str
    model_names: Mapping[str, str] = field(default_factory=dict)
    parent_call_id: str | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP
    model: str | None = None
    _committed: dict[str, IndexSet] = field(default_factory=dict, init=False, repr=False)
    _streams: dict[StepKey, StreamedText] = field(default_factory=dict, init=False, repr=False)
    _open_tools: dict[StepKey, str] = field(default_factory=dict, init=False, repr=False)
    _waiting: dict[StepKey, str] = field(default_factory=dict, init=False, repr=False)
    _children: set[str] = field(default_factory=set, init=False, repr=False)
    _unknown_types: set[str] = field(default_factory=set, init=False, repr=False)
    _retries: GateRetries = field(default_factory=GateRetries, init=False, repr=False)
    _last_key: StepKey | None = field(default=None, init=False, repr=False)
    # The stream of the step that grew last, beside its key: a growing answer's next frame
    # finds it without hashing its key (a StepKey's hash is a call into Python).
    _stream_key: StepKey | None = field(default=None, init=False, repr=False)
    _stream: StreamedText | None = field(default=None, init=False, repr=False)

    def is_committed(self, key: StepKey) -> bool:
        indices = self._committed.get(key.trajectory_id)
        return indices is not None and indices.has(key.step_index)

    def mark_committed(self, key: StepKey) -> None:
        """Record `key` as published (also how a reader seeds the state from its durable cursor)."""
        committed = self._committed.get(key.trajectory_id)
        if committed is None:
            committed = self._committed[key.trajectory_id] = IndexSet()
        committed.add(key.step_index)
        self._streams.pop(key, None)
        self._stream_key = self._stream = None
        self._open_tools.pop(key, None)
        self._waiting.pop(key, None)

    def commit_below(self, trajectory_id: str, end: int) -> None:
        """Record every step of `trajectory_id` below `end` as published, without seeing them
        (the history a reader attaching to a long conversation skips)."""
        committed = self._committed.get(trajectory_id)
        if committed is None:
            committed = self._committed[trajectory_id] = IndexSet()
        committed.add_below(end)

    @property
    def committed_count(self) -> int:
        return sum(len(indices) for indices in self._committed.values())

    def first_uncommitted(self, trajectory_id: str) -> int:
        """The lowest step index of `trajectory_id` not committed yet (where a catch-up starts)."""
        committed = self._committed.get(trajectory_id)
        return 0 if committed is None else committed.watermark

    def export_progress(self) -> dict[str, Any]:
        """What a restarted reader needs to go on without publishing anything twice.

        Committed steps, the text already streamed for steps still generating, and the tool
        calls already started. Open interactions and running sub-agents are deliberately left
        out: a new process has no card on screen for them, so they are announced again.
        """
        return {
            "committed": {t: s.to_json() for t, s in self._committed.items()},
            "streams": [
                {
                    "trajectory_id": k.trajectory_id,
                    "step_index": k.step_index,
                    "text": s.text,
                    "reasoning": s.reasoning,
                }
                for k, s in self._streams.items()
            ],
            "open_tools": [
                {"trajectory_id": k.trajectory_id, "step_index": k.step_index, "name": name}
                for k, name in self._open_tools.items()
            ],
            # Children are left out like open interactions: a child still running when a
            # process died is announced again, so the new process follows it (and its gates).
            "children": [],
            "model": self.model,
            "gate_retries": self._retries.export(),
        }

    def restore_progress(self, data: Mapping[str, Any]) -> None:
        """Load `export_progress` output; raises ValueError (and changes nothing) when malformed."""
        try:
            committed = {str(t): IndexSet.from_json(s) for t, s in data["committed"].items()}
            streams = {
                StepKey(
                    self.cascade_id, str(e["trajectory_id"]), int(e["step_index"])
                ): StreamedText(str(e["text"]), str(e["reasoning"]))
                for e in data["streams"]
            }
            open_tools = {
                StepKey(self.cascade_id, str(e["trajectory_id"]), int(e["step_index"])): str(
                    e["name"]
                )
                for e in data["open_tools"]
            }
            children = {str(c) for c in data["children"]}
            model = data.get("model")
            retries = GateRetries.restore(data.get("gate_retries"), self.cascade_id)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"malformed mapper progress: {exc!r}") from exc
        self._committed = committed
        self._streams = streams
        self._stream_key = self._stream = None
        self._open_tools = open_tools
        self._children = children
        self._retries = retries
        self.model = model if isinstance(model, str) else None

    @property
    def open_count(self) -> int:
        """Steps with progress held in memory: streaming, running tools, open interactions."""
        return len(self._streams) + len(self._open_tools) + len(self._waiting) + len(self._retries)


_DETAIL_CAP = 4096

# Bookkeeping steps agy writes for itself: nothing to show but their model usage.
_QUIET_TYPES = frozenset(
    {
        StepType.CHECKPOINT,
        StepType.CONVERSATION_HISTORY,
        StepType.EPHEMERAL_MESSAGE,
        StepType.SYSTEM_MESSAGE,
    }
)

# A user input or an error ends every gate retry agy did not ask again for (docs/wire.md §6).
_ENDS_RETRIES = frozenset({StepType.USER_INPUT, StepType.ERROR_MESSAGE})


def map_step(state: MapperState, step: object, *, absolute_index: int | None) -> list[Event]:
    """Map one step (a decoded JSON object) to the events it adds; mutates `state`.

    Pass `absolute_index` whenever it is known (`indices[i]` of a stream frame, `stepOffset` +
    position of a poll): USER_INPUT steps carry no `stepIndex` (docs/wire.md §5). Pass it always or
    never for a cascade, so that keys agree.
    """
    # This runs on every frame of a streamed answer: the JSON shapes are tested with
    # `type(x) is dict` first (no call, no ABC check) and the step's metadata read once.
    if type(step) is not dict and not isinstance(step, Mapping):
        return []
    meta = step.get("metadata")
    if type(meta) is not dict:
        meta = obj(meta)
    key = state._last_key = key_in_metadata(meta, absolute_index, state.cascade_id, state._last_key)
    committed = state._committed.get(key.trajectory_id)
    if committed is not None and committed.has(key.step_index):
        return []
    events: list[Event] = []
    kind = step.get("type")  # parse_step_type and parse_step_status, without their calls
    kind = KNOWN_TYPES.get(kind, kind) if type(kind) is str else parse_step_type(kind)
    status = step.get("status")
    status = (
        KNOWN_STATUSES.get(status, status) if type(status) is str else parse_step_status(status)
    )
    if kind in _ENDS_RETRIES:
        _give_up_retries(state, key, events)
    if kind == StepType.USER_INPUT:
        _map_user_input(state, step, key, status, events)
    elif kind == StepType.PLANNER_RESPONSE:
        model = meta.get("generatorModel")
        if model != state.model and model:  # a model said once is not noted again
            _note_model(state, text(model), key, "generator", events)
        _map_planner(state, step, key, status, events)
    elif kind == StepType.ERROR_MESSAGE:
        _map_error_message(step, key, status, events)
    elif kind not in _QUIET_TYPES:
        _note_model(state, text(meta.get("generatorModel")), key, "generator", events)
        _map_tool(state, step, key=key, kind=kind, status=status, events=events)
    if status in SETTLED_STATUSES or (kind == StepType.ERROR_MESSAGE and events):
        usage = parse_model_usage(meta.get("modelUsage"))
        if usage is not None:
            events.append(UsageReported(key=key, usage=usage))
        state.mark_committed(key)
    if state.parent_call_id is not None:
        parent = state.parent_call_id
        return [SubAgentEvent(parent, state.cascade_id, event) for event in events]
    return events


def _note_model(
    state: MapperState, model: str | None, key: StepKey, source: str, events: list[Event]
) -> None:
    if model is None or model == state.model:
        return
    state.model = model
    display = state.model_names.get(model)
    events.append(ModelChanged(model=model, display_name=display, key=key, source=source))


def _map_user_input(
    state: MapperState, step: JsonObject, key: StepKey, status: str, events: list[Event]
) -> None:
    if not is_settled(status):
        return  # a queued message is not a turn yet
    user_input = step_payload(step)
    items = [text(obj(item).get("text")) for item in seq(user_input.get("items"))]
    said = text(user_input.get("userResponse")) or "\n".join(item for item in items if item)
    events.append(
        TurnBoundary(
            key=key,
            text=said,
            execution_id=text(metadata(step).get("executionId")),
            source=text(metadata(step).get("source")),
        )
    )
    # planModel on newer agy, requestedModel.model on older (docs/wire.md §5).
    planner = obj(obj(user_input.get("userConfig")).get("plannerConfig"))
    model = text(planner.get("planModel")) or text(obj(planner.get("requestedModel")).get("model"))
    _note_model(state, model, key, "user_input", events)


def _map_planner(
    state: MapperState, step: JsonObject, key: StepKey, status: str, events: list[Event]
) -> None:
    response = step.get("plannerResponse")  # its step_payload, without working it out
    if type(response) is not dict:
        response = obj(response)
    # The step that grew last is found beside its key, without hashing the key.
    stream = state._stream if state._stream_key is key else state._streams.get(key)
    opened = stream is None
    if stream is None:
        stream = StreamedText()
    # Deltas are built with positional arguments: this runs on every growth frame, and a
    # frozen dataclass built with keywords costs about twice as much.
    thinking = response.get("thinking")
    if thinking and thinking != stream.reasoning and isinstance(thinking, str):
        offset = _splice_offset(stream.reasoning, thinking)
        events.append(ReasoningDelta(key, offset, thinking[offset:]))
        stream.reasoning = thinking
    # modifiedResponse is what the user sees; response appears only at the DONE commit.
    said = response.get("modifiedResponse")
    if not (said and isinstance(said, str)):
        said = text(response.get("response"))
    if said and said != stream.text:
        shown = stream.text  # agy mostly only appends: then no call to work out the splice
        offset = len(shown) if said.startswith(shown) else _splice_offset(shown, said)
        events.append(TextDelta(key, offset, said[offset:]))
        stream.text = said
    if status not in SETTLED_STATUSES:
        if opened:
            state._streams[key] = stream
        state._stream_key, state._stream = key, stream
        return
    if stream.text:
        message_id = text(response.get("messageId"))
        events.append(AssistantMessage(key, stream.text, status, message_id))
    if status == StepStatus.ERROR:
        message, detail = step_error_text(step)
        events.append(
            ErrorReported(key=key, message=message or "agy's model call failed", detail=detail)
        )


def _splice_offset(previous: str, current: str) -> int:
    """Where `current` departs from `previous`: its length when agy only appended."""
    if current.startswith(previous):
        return len(previous)
    return len(commonprefix([previous, current]))  # noqa: RUF071 - text, not paths


def _map_error_message(step: JsonObject, key: StepKey, status: str, events: list[Event]) -> None:
    message, detail = step_error_text(step)
    if message is None and not is_settled(status):
        return  # wait for the text; an ERROR_MESSAGE step is complete once it has one
    error = obj(step_payload(step).get("error")) or obj(step.get("error"))
    events.append(
        ErrorReported(
            key=key,
            message=message or "agy reported an error",
            detail=detail[:_DETAIL_CAP] if detail else None,
            # agy states it in the message: "Encountered retryable error from model provider".
            retryable="retryable" in (message or "").lower(),
            benign=error.get("isBenign") is True,
        )
    )


def _map_tool(
    state: MapperState,
    step: JsonObject,
    *,
    key: StepKey,
    kind: str,
    status: str,
    events: list[Event],
) -> None:
    call_id = state._retries.call_id(key)
    name = state._open_tools.get(key)
    if name is None:
        if status == StepStatus.GENERATING:
            return  # the model is still writing the arguments
        call_id, name = _tool_started(state, step, key=key, kind=kind, status=status, events=events)
        state._open_tools[key] = name
    gate_timed_out = status == StepStatus.ERROR and key in state._waiting
    _map_interaction(state, step, key=key, kind=kind, status=status, events=events)
    if kind == StepType.INVOKE_SUBAGENT:
        _map_subagents(state, step, call_id, status, events)
    if gate_timed_out:
        # Not a finished run: agy asks again at a higher index, which carries this call on.
        state._retries.park(key, kind, describe_call(step, kind).arguments, name)
    elif is_settled(status):
        state._retries.settled(key)
        result = describe_result(step, kind, status, cap=state.output_cap)
        events.append(
            ToolCallFinished(
                call_id=call_id,
                key=key,
                name=name,
                outcome=result.outcome,
                output=result.output,
                exit_code=result.exit_code,
                truncated=result.truncated,
                error=result.error,
                full_bytes=result.full_bytes,
                arguments=describe_call(step, kind).arguments,
            )
        )


def _tool_started(
    state: MapperState,
    step: JsonObject,
    *,
    key: StepKey,
    kind: str,
    status: str,
    events: list[Event],
) -> tuple[str, str]:
    """A tool call seen first: its call id and name, its start published unless it carries on
    a call agy asks again for (docs/wire.md §6)."""
    if kind not in KNOWN_TOOL_TYPES and kind not in state._unknown_types:
        state._unknown_types.add(kind)
        events.append(UnknownStep(key=key, step_type=kind, status=status))
    call = describe_call(step, kind)
    retried = state._retries.take_over(key, kind, call.arguments)
    if retried is not None:  # agy asks again after a gate timed out
        return retried.call_id, retried.name
    call_id = state._retries.call_id(key)
    meta = metadata(step)
    events.append(
        ToolCallStarted(
            call_id=call_id,
            key=key,
            name=call.name,
            arguments=call.arguments,
            step_type=kind,
            title=text(meta.get("toolSummary")) or call.title,
            description=text(meta.get("toolAction")),
            agy_call_id=text(obj(meta.get("toolCall")).get("id")),
        )
    )
    return call_id, call.name


def _give_up_retries(state: MapperState, key: StepKey, events: list[Event]) -> None:
    """Calls whose gate timed out and that agy did not ask again for end as timed out."""
    events.extend(
        ToolCallFinished(
            call_id=parked.call_id,
            key=parked.key,
            name=parked.name,
            outcome=ToolOutcome.ERROR,
            output="",
            error=TIMED_OUT,
        )
        for parked in state._retries.give_up(key.trajectory_id)
    )


def _map_interaction(
    state: MapperState,
    step: JsonObject,
    *,
    key: StepKey,
    kind: str,
    status: str,
    events: list[Event],
) -> None:
    """Announce a WAITING interaction once per waiting episode; report when it ends."""
    if status == StepStatus.WAITING:
        wanted = requested_interaction(step)
        if wanted is None:
            return
        fingerprint = _fingerprint(wanted.raw)
        if state._waiting.get(key) == fingerprint:
            return  # the same gate re-sent: nothing new
        state._waiting[key] = fingerprint
        command = obj(step.get("runCommand"))
        events.append(
            InteractionRequested(
                key=key,
                call_id=key.item_id,
                step_type=kind,
                wanted=wanted,
                command_line=text(command.get("commandLine"))
                or text(command.get("proposedCommandLine")),
                cwd=text(command.get("cwd")),
            )
        )
    elif state._waiting.pop(key, None) is not None:
        response = last_interaction_response(step)
        events.append(InteractionResolved(key, key.item_id, status, response))


def _fingerprint(raw: JsonObject) -> str:
    try:
        return json.dumps(raw, sort_keys=True, default=str)
    except (TypeError, ValueError):  # keys of mixed types: only from a broken producer
        return repr(raw)


def _map_subagents(
    state: MapperState, step: JsonObject, call_id: str, status: str, events: list[Event]
) -> None:
    """Children appear in `invokeSubagent.results[]` (positional with `subagents[]`) as they
    start; the step itself stays RUNNING until every child is done (docs/wire.md §7)."""
    for spec, result, child in subagent_children(step):
        if child not in state._children:
            state._children.add(child)
            role = text(spec.get("role")) or ""
            agent_type = text(spec.get("typeName")) or ""
            events.append(SubAgentStarted(call_id, child, role, agent_type, spec))
        if is_settled(status):
            events.append(SubAgentFinished(call_id, child, status == StepStatus.DONE, result))
