"""`OmnigentPrompts`: the interaction bridge's `HostPrompts` on omnigent's web UI.

The executor hands over the bridges omnigent's `ExecutorAdapter` installs on it:

- ``policy_evaluator(phase, data)`` — omnigent's policy engine; a permission is evaluated as
  ``PHASE_TOOL_CALL`` with ``{"name", "arguments"}`` (the shape every harness sends);
- ``choice_handler(tool_name, tool_input, options)`` — a card with one button per option
  that returns the chosen label (None when the card was closed). Permissions use it, so that
  "Deny" is an answer delivered to agy instead of omnigent's plain approve/deny card, whose
  "decline" cancels the whole turn (DESIGN-NOTES §1);
- ``elicit(params)`` — ``TurnContext.elicit`` with a fresh id: questions go to the web's
  ``ask_user_question`` form (one answer per question keyed by its index, option *labels*,
  a list for multi-select, any text that is not a label being the person's own answer), and
  MCP elicitations to a plain MCP form.

omnigent's engine answers ``POLICY_ACTION_ALLOW`` when no policy has an opinion, and a policy
that says ASK is settled by the server itself, which parks the call until a person answers
and then returns ALLOW or DENY. An ALLOW is therefore "no objection" and, unless
``host_allow_decides`` is set, the plugin's own rules and the card still apply; DENY decides.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
    "ChoiceHandler",
    "Elicit",
    "OmnigentPrompts",
    "PolicyEvaluator",
    "conversation_label",
]

_logger = logging.getLogger(__name__)

PolicyEvaluator = Callable[[str, dict[str, Any]], Awaitable[PolicyVerdictPayload]]
ChoiceHandler = Callable[[str, dict[str, Any], Sequence[str]], Awaitable[str | None]]
Elicit = Callable[[ElicitationRequestParams], Awaitable[ElicitationResult]]

ALLOW_ONCE: Final = "Allow once"
DENY: Final = "Deny"
TOOL_CALL_PHASE: Final = "PHASE_TOOL_CALL"
_TOOL_NAMES: Final = {
    RequestKind.COMMAND: "run_command",
    RequestKind.READ: "view_file",
    RequestKind.EDIT: "edit_file",
    RequestKind.MCP: "mcp_tool",
    RequestKind.OTHER: "permission",
}
# MCP form fields are flat primitives (MCP's restricted schema); anything else is not shown.
_MCP_FIELD_TYPES: Final = frozenset({"string", "number", "integer", "boolean"})


def conversation_label(pattern: str | None) -> str:
    """The "for this conversation" button; names what agy will remember when it says."""
    if pattern:
        return f"Allow “{pattern}” for this conversation"
    return "Allow for this conversation"


class OmnigentPrompts:
    """`HostPrompts` through omnigent's policy engine, choice cards and forms."""

    def __init__(
        self,
        *,
        policy_evaluator: PolicyEvaluator | None,
        choice_handler: ChoiceHandler | None,
        elicit: Elicit | None,
        harness_label: str = "Antigravity CLI",
        host_allow_decides: bool = False,
    ) -> None:
        self._evaluate = policy_evaluator
        self._choose = choice_handler
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
        if self._choose is None:
            raise PromptUnavailableError("omnigent installed no choice card handler")
        scoped = conversation_label(card.persist_pattern)
        labels = {
            ALLOW_ONCE: PermissionAnswer.ALLOW_ONCE,
            scoped: PermissionAnswer.ALLOW_CONVERSATION,
        }
        labels[DENY] = PermissionAnswer.DENY
        chosen = await self._choose(_TOOL_NAMES[card.kind], permission_input(card), list(labels))
        if chosen is None:
            return None
        answer = labels.get(chosen)
        if answer is None:  # not a button we offered: never guess a permission
            _logger.warning("the permission card answered %r, which it did not offer", chosen)
        return answer

    # -- questions -------------------------------------------------------------------------

    async def ask_questions(self, form: QuestionForm) -> QuestionAnswers | None:
        if _fits_choice_card(form) and self._choose is not None:
            question = form.questions[0]
            tool_input: dict[str, Any] = {"question": question.text}
            if form.error or form.note:
                tool_input["note"] = form.error or form.note
            texts = [option.text for option in question.options]
            chosen = await self._choose("ask_question", tool_input, texts)
            if chosen is None:
                return None
            return QuestionAnswers((_answer_from_labels(question, [chosen]),))
        if self._elicit is None:
            raise PromptUnavailableError("omnigent installed no form handler for questions")
        result = await self._elicit(question_params(form, harness_label=self._label))
        return question_answers(form, result)

    # -- MCP elicitation -------------------------------------------------------------------

    async def ask_elicitation(self, card: ElicitationCard) -> ElicitationAnswer | None:
        if self._elicit is None:
            raise PromptUnavailableError("omnigent installed no form handler")
        result = await self._elicit(elicitation_params(card, harness_label=self._label))
        if result.action == "cancel":
            return None
        if result.action == "decline":
            return ElicitationAnswer(ElicitationAction.DECLINE)
        return ElicitationAnswer(ElicitationAction.ACCEPT, dict(result.content or {}))


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


def permission_input(card: PermissionCard) -> dict[str, Any]:
    """What the card shows under the tool's name: the gated command, where, and why."""
    shown: dict[str, Any] = {
        "command" if card.kind is RequestKind.COMMAND else "target": card.subject
    }
    if card.command_line and card.command_line != card.subject:
        shown["part_of"] = card.command_line
    if card.cwd:
        shown["cwd"] = card.cwd
    if card.action_description:
        shown["description"] = card.action_description
    if card.note:
        shown["note"] = card.note
    return shown


def _fits_choice_card(form: QuestionForm) -> bool:
    """One single-select question whose option texts tell the options apart."""
    if len(form.questions) != 1:
        return False
    question = form.questions[0]
    texts = [option.text for option in question.options]
    return not question.multi_select and bool(texts) and len(set(texts)) == len(texts)


def question_params(form: QuestionForm, *, harness_label: str) -> ElicitationRequestParams:
    """The web's ``ask_user_question`` form: questions keyed by index, options by label."""
    questions = [
        {
            "id": str(index),
            "question": question.text,
            "options": [{"label": option.text} for option in question.options if option.text],
            "multiSelect": question.multi_select,
        }
        for index, question in enumerate(form.questions)
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
            "policy_name": "agy_cli_ask_question",
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
    for index, question in enumerate(form.questions):
        value = content.get(str(index), content.get(question.text))
        answers.append(_answer_from_labels(question, _labels(value)))
    return QuestionAnswers(tuple(answers))


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
        policy_name="agy_cli_mcp_elicitation",
    )
