"""What a WAITING step asks and how agy wants it answered: pure mapping for the bridge.

- a gate's identity (`Gate`): step index *and* request, since chained commands gate several
  times on one step (docs/wire.md §6), and its `subject` — what the person is asked about, which
  is how agy's retry of a timed-out gate at a higher index is recognised;
- the host-neutral `PermissionRequest` and the cards shown for a gate;
- the answer payloads for HandleCascadeUserInteraction (docs/wire.md §3, §6) and the refusals an
  interrupt or a dismissal sends.

No I/O: `omnigent_agy.interactions.bridge` reads and sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from omnigent_agy.interactions.policy import PermissionRequest, RequestKind
from omnigent_agy.interactions.prompts import (
    ElicitationAction,
    ElicitationAnswer,
    ElicitationCard,
    PermissionCard,
    QuestionAnswers,
    QuestionForm,
)
from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.mapper import MapperState, map_step
from omnigent_agy.reading.steps import (
    InteractionKind,
    JsonObject,
    StepKey,
    StepStatus,
    StepType,
    obj,
    step_status,
)

__all__ = [
    "ANSWER_FIELDS",
    "CONVERSATION_SCOPE",
    "REFUSALS",
    "Gate",
    "GateId",
    "elicitation_card",
    "elicitation_payload",
    "gate_of",
    "gates_in",
    "permission_card",
    "permission_payload",
    "permission_request_for",
    "question_payload",
]

CONVERSATION_SCOPE: Final = "PERMISSION_SCOPE_CONVERSATION"
# An unknown resource keeps its target as a "path" so logs and plugins can still see it.
_PATH_KINDS: Final = frozenset({RequestKind.READ, RequestKind.EDIT, RequestKind.OTHER})


# --- requests and cards ---------------------------------------------------------------------


def permission_request_for(request: InteractionRequested) -> PermissionRequest:
    """The host-neutral `PermissionRequest` for a permission gate.

    A command gate is judged on its `resource.target` — for a chained line, the part agy gates
    now (docs/wire.md §6) — falling back to the whole command line.
    """
    action = (request.wanted.action or "").lower()
    target = request.wanted.target
    kind = RequestKind.OTHER
    if request.step_type == StepType.RUN_COMMAND or "command" in action:
        kind = RequestKind.COMMAND
    elif "mcp" in action:
        kind = RequestKind.MCP
    elif any(word in action for word in ("read", "view", "list")):
        kind = RequestKind.READ
    elif any(word in action for word in ("edit", "write", "create", "delete")):
        kind = RequestKind.EDIT
    return PermissionRequest(
        kind,
        command_line=(target or request.command_line) if kind is RequestKind.COMMAND else None,
        cwd=request.cwd,
        paths=(target,) if target and kind in _PATH_KINDS else (),
        action_description=request.wanted.action_description or "",
        mcp_tool=target if kind is RequestKind.MCP else None,
        raw=obj(request.wanted.raw.get("permission")),
    )


def permission_card(request: InteractionRequested, note: str | None) -> PermissionCard:
    judged = permission_request_for(request)
    wanted = request.wanted
    subject = wanted.target or request.command_line or wanted.action_description or "?"
    return PermissionCard(
        call_id=request.call_id,
        kind=judged.kind,
        subject=subject,
        command_line=request.command_line,
        cwd=request.cwd,
        action_description=wanted.action_description,
        persist_pattern=wanted.suggested_persist_pattern,
        note=note,
        asked_by=request.asked_by,
    )


def permission_payload(*, allow: bool, for_conversation: bool = False) -> dict[str, object]:
    payload: dict[str, object] = {"allow": allow}
    if allow and for_conversation:
        payload["scope"] = CONVERSATION_SCOPE
    return payload


def question_payload(form: QuestionForm, answers: QuestionAnswers) -> dict[str, object]:
    """`askQuestion` for HandleCascadeUserInteraction: one response per question, matched
    by the question's text (docs/wire.md §3); option ids, never their text (docs/wire.md §5)."""
    responses: list[dict[str, object]] = []
    for question, answer in zip(form.questions, answers.answers, strict=True):
        response: dict[str, object] = {"question": question.text}
        if answer.selected:
            response["selectedOptionIds"] = list(answer.selected)
        if answer.write_in and answer.write_in.strip():
            response["writeInResponse"] = answer.write_in
        if answer.skipped and not answer.selected and not response.get("writeInResponse"):
            response["skipped"] = True
        responses.append(response)
    return {"responses": responses}


def elicitation_payload(answer: ElicitationAnswer) -> dict[str, object]:
    """`elicitation` for HandleCascadeUserInteraction.

    Unverified guess: no recording shows agy receiving an elicitation answer. It mirrors the
    request's naming (`requestedSchemaJson` → `contentJson`) and MCP's ElicitResult actions.
    """
    payload: dict[str, object] = {"action": answer.action.value}
    if answer.action is ElicitationAction.ACCEPT and answer.content is not None:
        content = json.dumps(dict(answer.content), ensure_ascii=False)
        if any(0xD800 <= ord(char) <= 0xDFFF for char in content):
            # Half a surrogate pair typed (a client's JSON "\ud800") cannot travel as UTF-8
            # and failed the whole delivery; as a JSON escape it does.
            content = json.dumps(dict(answer.content))
        payload["contentJson"] = content
    return payload


def elicitation_card(request: InteractionRequested) -> ElicitationCard:
    schema: Mapping[str, object] | None = None
    problem: str | None = None
    wanted = request.wanted
    if wanted.requested_schema_json:
        try:
            parsed = json.loads(wanted.requested_schema_json)
        except ValueError as exc:
            problem = f"requestedSchemaJson is not JSON: {exc}"
        else:
            if isinstance(parsed, Mapping):
                schema = parsed
            else:
                problem = "requestedSchemaJson is not a JSON object"
    return ElicitationCard(
        call_id=request.call_id,
        server=wanted.elicitation_server,
        message=wanted.elicitation_message or "An MCP server asks for input",
        schema=schema,
        schema_error=problem,
    )


REFUSALS: Final[Mapping[str, Mapping[str, object]]] = {
    InteractionKind.PERMISSION: {"allow": False},
    InteractionKind.ASK_QUESTION: {"cancelled": True},
    InteractionKind.ELICITATION: {"action": ElicitationAction.CANCEL.value},
}
ANSWER_FIELDS: Final[Mapping[str, str]] = {
    InteractionKind.PERMISSION: "permission",
    InteractionKind.ASK_QUESTION: "ask_question",
    InteractionKind.ELICITATION: "elicitation",
}


# --- gates as read back from agy -------------------------------------------------------------


type GateId = tuple[str, int, str]


@dataclass(frozen=True, slots=True)
class Gate:
    """One WAITING step's request; `subject` is what the person is asked about."""

    request: InteractionRequested
    fingerprint: str
    subject: tuple[object, ...]

    @property
    def key(self) -> StepKey:
        return self.request.key

    @property
    def id(self) -> GateId:
        # Chained commands gate several times on one step (docs/wire.md §6): the index alone is
        # not a gate's identity, its request is part of it.
        return (self.key.trajectory_id, self.key.step_index, self.fingerprint)

    def same_kind(self, other: Gate) -> bool:
        return (
            self.request.kind == other.request.kind
            and self.key.trajectory_id == other.key.trajectory_id
        )


def gate_of(request: InteractionRequested) -> Gate:
    wanted = request.wanted
    try:
        fingerprint = json.dumps(wanted.raw, sort_keys=True, default=str)
    except (TypeError, ValueError):  # keys of mixed types: only from a broken producer
        fingerprint = repr(wanted.raw)
    subject: tuple[object, ...]
    if request.kind == InteractionKind.PERMISSION:
        subject = (wanted.action, wanted.target, request.command_line)
    elif request.kind == InteractionKind.ASK_QUESTION:
        subject = wanted.questions
    elif request.kind == InteractionKind.ELICITATION:
        subject = (
            wanted.elicitation_server,
            wanted.elicitation_message,
            wanted.requested_schema_json,
        )
    else:
        subject = (fingerprint,)
    return Gate(request, fingerprint, (request.kind, *subject))


def gates_in(step: JsonObject, index: int, *, cascade_id: str) -> list[Gate]:
    """The gate a WAITING step asks (empty otherwise), read by the mapper exactly as the reader
    reads it, so announced and re-read gates compare equal."""
    if step_status(step) != StepStatus.WAITING:
        return []
    events = map_step(MapperState(cascade_id=cascade_id), step, absolute_index=index)
    return [gate_of(event) for event in events if isinstance(event, InteractionRequested)]
