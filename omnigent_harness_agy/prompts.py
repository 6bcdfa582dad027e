"""`OmnigentPrompts`: the interaction bridge's `HostPrompts` on omnigent's web UI.

The executor hands over the bridges omnigent's `ExecutorAdapter` installs on it:

- ``policy_evaluator(phase, data)`` — omnigent's policy engine; a permission is evaluated as
  ``PHASE_TOOL_CALL`` with ``{"name", "arguments"}`` (the shape every harness sends);
- ``elicit(params)`` — ``TurnContext.elicit`` with a fresh id, for every card and form.

What a person sees is what omnigent's web renders from those params, so they are written for
it (its approval card, read in the bundle's ``index-*.js``): a ``requestedSchema`` whose only
property is an ``answer`` enum is a card titled "Choose an option · <policy_name>" showing
``message`` and one button per value; ``content_preview`` is not shown on such a card. The
adapter's own choice handler fixes that message to "<label> wants to use **<tool>**" and the
policy name to "<label>_sdk_permission", which tells a person nothing about the command, so
permissions and single questions are built here: the message says in words what agy asks
(the command, file or MCP tool; the question) and the policy name is the harness label.
"Deny" stays an answer delivered to agy, never omnigent's "decline", which would cancel the
whole turn (DESIGN-NOTES §1). A single question's card ends with a "Type my own answer…"
button, since a choice card has no text field: it opens the question again as an
``ask_user_question`` form with no options, whose "Type something" field is the answer.

Several questions, multi-select and questions whose options cannot be told apart go to the
web's ``ask_user_question`` form: each question's field is keyed by the question's own text
(the receipt lists the answers under those keys), option *labels* come back, a list for
multi-select, and any text that is not a label is the person's own answer. MCP elicitations
go to a plain MCP form.

omnigent's engine answers ``POLICY_ACTION_ALLOW`` when no policy has an opinion, and a policy
that says ASK is settled by the server itself, which parks the call until a person answers
and then returns ALLOW or DENY. An ALLOW is therefore "no objection" and, unless
``host_allow_decides`` is set, the plugin's own rules and the card still apply; DENY decides.
"""

from __future__ import annotations

import copy
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from omnigent.runtime.harnesses._scaffold import PolicyVerdictPayload
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy.interactions.policy import PermissionRequest, RequestKind
from omnigent_agy.interactions.prompts import (
    ElicitationAction,
    ElicitationAnswer,
    ElicitationCard,
    PermissionAnswer,
    PermissionCard,
    PolicyAction,
    PolicyVerdict,
    PromptUnavailableError,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
)
from omnigent_agy.reading.steps import Question

__all__ = [
    "ALLOW_ONCE",
    "DENY",
    "WRITE_IN",
    "Elicit",
    "OmnigentPrompts",
    "PolicyEvaluator",
    "answer_fields",
    "choice_params",
    "conversation_label",
    "permission_message",
]

_logger = logging.getLogger(__name__)

PolicyEvaluator = Callable[[str, dict[str, Any]], Awaitable[PolicyVerdictPayload]]
Elicit = Callable[[ElicitationRequestParams], Awaitable[ElicitationResult]]

ALLOW_ONCE: Final = "Allow once"
DENY: Final = "Deny"
# The last button of a single question's card: a choice card has no text field, so this one
# opens a form with just the question's text field (agy takes a `writeInResponse`, WIRE.md §3).
WRITE_IN: Final = "Type my own answer…"
TOOL_CALL_PHASE: Final = "PHASE_TOOL_CALL"
_TOOL_NAMES: Final = {
    RequestKind.COMMAND: "run_command",
    RequestKind.READ: "view_file",
    RequestKind.EDIT: "edit_file",
    RequestKind.MCP: "mcp_tool",
    RequestKind.OTHER: "permission",
}
# What each kind of permission asks, in words: "<label> wants to <verb> “<subject>”".
_WANTS_TO: Final = {
    RequestKind.COMMAND: "run",
    RequestKind.READ: "read",
    RequestKind.EDIT: "change",
    RequestKind.MCP: "use the MCP tool",
    RequestKind.OTHER: "go ahead with",
}
# MCP form fields are flat primitives (MCP's restricted schema); anything else is not shown.
_MCP_FIELD_TYPES: Final = frozenset({"string", "number", "integer", "boolean"})


def conversation_label(pattern: str | None) -> str:
    """The "for this conversation" button; names what agy will remember when it says."""
    if pattern:
        return f"Allow “{pattern}” for this conversation"
    return "Allow for this conversation"


class _Unreadable(enum.Enum):
    UNREADABLE = "unreadable"


UNREADABLE: Final = _Unreadable.UNREADABLE
_MAX_UNREADABLE: Final = 5  # then the card counts as closed


class OmnigentPrompts:
    """`HostPrompts` through omnigent's policy engine, choice cards and forms."""

    def __init__(
        self,
        *,
        policy_evaluator: PolicyEvaluator | None,
        elicit: Elicit | None,
        harness_label: str = "Antigravity CLI",
        host_allow_decides: bool = False,
    ) -> None:
        self._evaluate = policy_evaluator
        self._elicit = elicit
        self._label = harness_label
        self._allow_decides = host_allow_decides

    # -- policy ----------------------------------------------------------------------------

    async def evaluate_policy(self, request: PermissionRequest) -> PolicyVerdict:
        if self._evaluate is None:
            return PolicyVerdict(PolicyAction.ASK)
        verdict = await self._evaluate(TOOL_CALL_PHASE, tool_call_data(request))
        return policy_verdict(verdict, allow_decides=self._allow_decides)

    # -- permission ------------------------------------------------------------------------

    async def ask_permission(self, card: PermissionCard) -> PermissionAnswer | None:
        labels = {
            ALLOW_ONCE: PermissionAnswer.ALLOW_ONCE,
            conversation_label(card.persist_pattern): PermissionAnswer.ALLOW_CONVERSATION,
        }
        labels[DENY] = PermissionAnswer.DENY
        message = permission_message(card, harness_label=self._label)
        for _ in range(_MAX_UNREADABLE):
            chosen = await self._choose(message, list(labels), phase="agy_cli_permission")
            if chosen is None:
                return None
            answer = labels.get(chosen) if isinstance(chosen, str) else None
            if answer is not None:
                return answer
            # Not a button we offered (a client sending something else): never guess a
            # permission, and never end the turn over it either: ask again, saying why.
            _logger.warning("the permission card answered %r, which it did not offer", chosen)
            message = _with_notes(
                permission_message(card, harness_label=self._label),
                f"That answer was not one of the buttons; choose one of: {', '.join(labels)}.",
            )
        return None

    # -- questions -------------------------------------------------------------------------

    async def ask_questions(self, form: QuestionForm) -> QuestionAnswers | None:
        if _fits_choice_card(form):
            question = form.questions[0]
            message = _with_notes(question.text, form.error or form.note)
            texts = [option.text for option in question.options]
            if form.allow_write_in:
                texts.append(WRITE_IN)
            chosen = await self._choose(message, texts, phase="agy_cli_ask_question")
            if chosen is None:
                return None
            if chosen == WRITE_IN and form.allow_write_in:
                return await self._ask_write_in(form)
            # An unreadable answer is an empty one: the bridge refuses it, naming the valid
            # options, and asks again (it never ends the turn).
            labels = [chosen] if isinstance(chosen, str) else []
            return QuestionAnswers((_answer_from_labels(question, labels),))
        result = await self._ask(question_params(form, harness_label=self._label), "questions")
        return question_answers(form, result)

    async def _ask_write_in(self, form: QuestionForm) -> QuestionAnswers | None:
        """The card's "Type my own answer…": the question again as a form with only its text
        field; whatever is typed is the answer (an option's exact label picks that option).
        An empty answer comes back as an empty write-in, which the bridge refuses with a
        message and asks again."""
        question = form.questions[0]
        only_text = replace(form, questions=(replace(question, options=()),))
        result = await self._ask(question_params(only_text, harness_label=self._label), "questions")
        if result.action != "accept":
            return None
        content = result.content if isinstance(result.content, Mapping) else {}
        field = answer_fields(only_text)[0]
        value = content.get(field, content.get("0"))
        text = value.strip() if isinstance(value, str) else ""
        if not text:
            return QuestionAnswers((QuestionAnswer(write_in=""),))
        return QuestionAnswers((_answer_from_labels(question, [text]),))

    # -- MCP elicitation -------------------------------------------------------------------

    async def ask_elicitation(self, card: ElicitationCard) -> ElicitationAnswer | None:
        result = await self._ask(elicitation_params(card, harness_label=self._label), "forms")
        if result.action == "cancel":
            return None
        if result.action == "decline":
            return ElicitationAnswer(ElicitationAction.DECLINE)
        return ElicitationAnswer(ElicitationAction.ACCEPT, dict(result.content or {}))

    # -- the web's card --------------------------------------------------------------------

    async def _choose(
        self, message: str, options: Sequence[str], *, phase: str
    ) -> str | _Unreadable | None:
        """One button per option; the chosen label, None when the card was closed, or
        `UNREADABLE` when it was accepted with an answer that is no label (a wrong type, an
        empty or missing one)."""
        params = choice_params(message, options, phase=phase, harness_label=self._label)
        result = await self._ask(params, "cards")
        if result.action != "accept":
            return None
        content = result.content if isinstance(result.content, Mapping) else {}
        answer = content.get("answer")
        return answer if isinstance(answer, str) and answer.strip() else UNREADABLE

    async def _ask(self, params: ElicitationRequestParams, what: str) -> ElicitationResult:
        if self._elicit is None:
            raise PromptUnavailableError(f"omnigent installed no elicitation handler for {what}")
        return await self._elicit(params)


# --- mapping, both ways (pure) ---------------------------------------------------------------


def tool_call_data(request: PermissionRequest) -> dict[str, Any]:
    """``{"name", "arguments"}`` for omnigent's PHASE_TOOL_CALL evaluation."""
    arguments: dict[str, Any] = {}
    if request.command_line is not None:
        arguments["command"] = request.command_line
    if request.cwd is not None:
        arguments["cwd"] = request.cwd
    if request.paths:
        arguments["path"] = request.paths[0]
        arguments["paths"] = list(request.paths)
    if request.mcp_tool is not None:
        arguments["tool"] = request.mcp_tool
    if request.action_description:
        arguments["description"] = request.action_description
    return {"name": _TOOL_NAMES[request.kind], "arguments": arguments}


def policy_verdict(verdict: object, *, allow_decides: bool = False) -> PolicyVerdict:
    """omnigent's verdict as a `PolicyVerdict`: DENY decides; ALLOW only if `allow_decides`."""
    action = getattr(verdict, "action", None)
    reason = getattr(verdict, "reason", None)
    reason = reason if isinstance(reason, str) and reason else None
    if action == "POLICY_ACTION_DENY":
        return PolicyVerdict(PolicyAction.DENY, reason or "denied by an omnigent policy")
    if action == "POLICY_ACTION_ALLOW" and allow_decides:
        return PolicyVerdict(PolicyAction.ALLOW, reason or "allowed by an omnigent policy")
    return PolicyVerdict(PolicyAction.ASK, reason)


def permission_message(card: PermissionCard, *, harness_label: str) -> str:
    """What the card says: the command (or file, MCP tool) in words, where, and why again.

    One line: the web shows the message as plain text, without markdown.
    """
    text = f"{harness_label} wants to {_WANTS_TO[card.kind]} “{card.subject}”"
    if card.command_line and card.command_line != card.subject:
        text += f" (part of “{card.command_line}”)"
    if card.cwd:
        text += f" in {card.cwd}"
    if card.action_description and card.kind is not RequestKind.COMMAND:
        text += f": {card.action_description}"
    return _with_notes(text, card.note)


def choice_params(
    message: str, options: Sequence[str], *, phase: str, harness_label: str
) -> ElicitationRequestParams:
    """The web's choice card: "Choose an option · <label>", the message, one button each."""
    return ElicitationRequestParams(
        mode="form",
        message=message,
        requestedSchema={
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"],
        },
        phase=phase,
        policy_name=harness_label,
    )


def _with_notes(text: str, note: str | None) -> str:
    return f"{note} — {text}" if note else text


def _fits_choice_card(form: QuestionForm) -> bool:
    """One single-select question whose option texts tell the options apart."""
    if len(form.questions) != 1:
        return False
    question = form.questions[0]
    texts = [option.text for option in question.options]
    return (
        not question.multi_select
        and bool(texts)
        and len(set(texts)) == len(texts)
        and WRITE_IN not in texts  # the write-in button must not be mistaken for an option
    )


def question_params(form: QuestionForm, *, harness_label: str) -> ElicitationRequestParams:
    """The web's ``ask_user_question`` form: questions keyed by index, options by label."""
    questions = [
        {
            "id": field,
            "question": question.text,
            "options": [{"label": option.text} for option in question.options if option.text],
            "multiSelect": question.multi_select,
        }
        for field, question in zip(answer_fields(form), form.questions, strict=True)
    ]
    message = f"{harness_label} needs your input"
    for extra in (form.note, form.error):
        if extra:
            message = f"{extra}\n\n{message}"
    # ``ask_user_question`` is one of the extra keys the params model allows (extra="allow").
    return ElicitationRequestParams.model_validate(
        {
            "mode": "form",
            "message": message,
            "requestedSchema": None,
            "phase": "agy_ask_question",
            # The web shows it after the receipt ("Submitted · <policy_name>"); the header comes
            # from the phase ("agy_…": "Antigravity needs your input").
            "policy_name": harness_label,
            "ask_user_question": {"questions": questions},
        }
    )


def question_answers(form: QuestionForm, result: ElicitationResult) -> QuestionAnswers | None:
    """The form's reply as answers; None when it was declined or cancelled.

    A missing or unreadable answer becomes an empty `QuestionAnswer`, which the bridge
    refuses with a message naming the valid options and asks again.
    """
    if result.action != "accept":
        return None
    content = result.content if isinstance(result.content, Mapping) else {}
    answers = []
    for index, (field, question) in enumerate(
        zip(answer_fields(form), form.questions, strict=True)
    ):
        # By our field first; by index, as omnigent's own agy mapping keys them, for a client
        # that sends that.
        value = content.get(field, content.get(str(index)))
        answers.append(_answer_from_labels(question, _labels(value)))
    return QuestionAnswers(tuple(answers))


def answer_fields(form: QuestionForm) -> list[str]:
    """The form's field per question: its text, so the web's receipt reads "<question>  <answer>";
    "Question N" where the text is empty or shared by another question."""
    texts = [question.text.strip() for question in form.questions]
    return [
        text if text and texts.count(text) == 1 else f"Question {number}"
        for number, text in enumerate(texts, start=1)
    ]


def _labels(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item.strip()]
    return []


def _answer_from_labels(question: Question, labels: Sequence[str]) -> QuestionAnswer:
    """Labels back to option ids by text; a label that is no option is the person's own."""
    ids_by_text: dict[str, str] = {}
    for option in question.options:
        ids_by_text.setdefault(option.text, option.id)
    selected = tuple(dict.fromkeys(ids_by_text[label] for label in labels if label in ids_by_text))
    own = [label for label in labels if label not in ids_by_text]
    return QuestionAnswer(selected=selected, write_in=", ".join(own) if own else None)


def elicitation_params(card: ElicitationCard, *, harness_label: str) -> ElicitationRequestParams:
    """An MCP form for an MCP server's elicitation; PromptUnavailableError when its schema is
    not one a form can show (MCP allows only a flat object of primitive fields)."""
    if card.schema_error is not None:
        raise PromptUnavailableError(card.schema_error)
    schema: Mapping[str, object] = card.schema or {"type": "object", "properties": {}}
    properties = schema.get("properties", {})
    if schema.get("type", "object") != "object" or not isinstance(properties, Mapping):
        raise PromptUnavailableError("the requested schema is not a flat JSON object")
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        if kind not in _MCP_FIELD_TYPES:
            raise PromptUnavailableError(f"field {name!r} of type {kind!r} cannot be shown")
    server = card.server or "an MCP server"
    return ElicitationRequestParams(
        mode="form",
        message=f"{server} (through {harness_label}) asks: {card.message}",
        requestedSchema=copy.deepcopy(dict(schema)),
        phase="agy_mcp_elicitation",
        policy_name=harness_label,  # shown as "· <policy_name>" on the card
    )
