"""`OmnigentPrompts`: the interaction bridge's `HostPrompts` on omnigent's web UI.

The executor hands over the bridges omnigent's `ExecutorAdapter` installs on it:

- ``policy_evaluator(phase, data)`` — omnigent's policy engine; a permission is evaluated as
  ``PHASE_TOOL_CALL`` with ``{"name", "arguments"}`` (the shape every harness sends), a
  command as omnigent's shell tool with its ``command`` (docs/decisions.md §14);
- ``elicit(params)`` — ``TurnContext.elicit`` with a fresh id, for every card and form.

What a person sees on those cards and forms, and how their answers are read back, is `cards`'
(pure); what the terminal REPL makes of them is `terminal_cards`'. "Deny" stays an answer
delivered to agy, never the adapter's approve/deny card, whose "decline" cancels the whole turn
(docs/decisions.md §1). A decline of the plugin's own cards (the REPL's ``n``, the web form's
Cancel) is an answer too: Deny, the question skipped; only a card closed unanswered (Stop) is a
dismissal. An answer that is no button is asked again, never guessed.

omnigent's engine answers ``POLICY_ACTION_ALLOW`` when no policy has an opinion, and a policy
that says ASK is settled by the server itself, which parks the call until a person answers
and then returns ALLOW or DENY. An ALLOW is therefore "no objection" and, unless
``host_allow_decides`` is set, the plugin's own rules and the card still apply; DENY decides.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from omnigent.runtime.harnesses._scaffold import PolicyVerdictPayload
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy import (
    HARNESS_LABEL,
    ElicitationAction,
    ElicitationAnswer,
    ElicitationCard,
    PermissionAnswer,
    PermissionCard,
    PermissionRequest,
    PolicyAction,
    PolicyVerdict,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    RequestKind,
    TrustAnswer,
    TrustCard,
)
from omnigent_agy.errors import PromptUnavailableError

from .cards import (
    ALLOW_ONCE,
    DENY,
    WRITE_IN,
    answer_fields,
    answer_from_labels,
    choice_params,
    conversation_label,
    elicitation_params,
    fits_choice_card,
    permission_message,
    question_answers,
    question_params,
    skipped,
    speaker,
    with_notes,
)
from .terminal_cards import (
    CHOICE_HINT,
    FROM_TERMINAL,
    PERMISSION_PHASE,
    QUESTION_HINT,
    QUESTION_PHASE,
    choice_form_answer,
    choice_form_params,
    terminal_keys,
)
from .tool_rows import SHELL_TOOL
from .trust_card import ask_trust

__all__ = ["Elicit", "OmnigentPrompts", "PolicyEvaluator"]

_logger = logging.getLogger(__name__)

PolicyEvaluator = Callable[[str, dict[str, Any]], Awaitable[PolicyVerdictPayload]]
Elicit = Callable[[ElicitationRequestParams], Awaitable[ElicitationResult]]

TOOL_CALL_PHASE: Final = "PHASE_TOOL_CALL"
_TOOL_NAMES: Final = {
    RequestKind.COMMAND: SHELL_TOOL,
    RequestKind.READ: "view_file",
    RequestKind.EDIT: "edit_file",
    RequestKind.MCP: "mcp_tool",
    RequestKind.OTHER: "permission",
}


class _Reply(enum.Enum):
    UNREADABLE = "unreadable"
    DECLINED = "declined"


UNREADABLE: Final = _Reply.UNREADABLE
DECLINED: Final = _Reply.DECLINED
_MAX_UNREADABLE: Final = 5  # then the card counts as closed


class OmnigentPrompts:
    """`HostPrompts` through omnigent's policy engine, choice cards and forms."""

    def __init__(
        self,
        *,
        policy_evaluator: PolicyEvaluator | None,
        elicit: Elicit | None,
        harness_label: str = HARNESS_LABEL,
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
            chosen = await self._choose(message, list(labels), phase=PERMISSION_PHASE)
            if chosen is DECLINED:
                return PermissionAnswer.DENY  # an answer (docs/decisions.md §1)
            if chosen is None:
                return None
            answer = labels.get(chosen) if isinstance(chosen, str) else None
            if answer is not None:
                return answer
            # Not a button we offered (a client sending something else): never guess a
            # permission, and never end the turn over it either: ask again, saying why.
            _logger.warning("the permission card answered %r, which it did not offer", chosen)
            message = with_notes(
                permission_message(card, harness_label=self._label),
                f"That answer was not one of the choices: type a number from 1 to "
                f"{len(labels)}, or choose one of: {', '.join(labels)}.",
            )
        return None

    # -- questions -------------------------------------------------------------------------

    async def ask_questions(self, form: QuestionForm) -> QuestionAnswers | None:
        if fits_choice_card(form):
            question = form.questions[0]
            asked = question.text
            if form.asked_by:
                asked = f"{speaker(self._label, form.asked_by)} asks: {asked}"
            message = with_notes(asked, form.error or form.note)
            texts = [option.text for option in question.options]
            if form.allow_write_in:
                texts.append(WRITE_IN)
            chosen = await self._choose(message, texts, phase=QUESTION_PHASE, form=form)
            if chosen is DECLINED:
                return skipped(form)  # an answer: agy hears the question was skipped
            if chosen is None:
                return None
            if chosen == WRITE_IN and form.allow_write_in:
                return await self._ask_write_in(form)
            if chosen == FROM_TERMINAL:
                # The terminal REPL accepted (it cannot pick a button): ask the question as a
                # form, whose fields it does ask for.
                return await self._ask_form(form)
            # An unreadable answer is an empty one: the bridge refuses it, naming the valid
            # options, and asks again (it never ends the turn).
            labels = [chosen] if isinstance(chosen, str) else []
            return QuestionAnswers((answer_from_labels(question, labels),))
        return await self._ask_form(form)

    async def _ask_form(self, form: QuestionForm) -> QuestionAnswers | None:
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
        if result.action == "decline":
            return skipped(form)
        if result.action != "accept":
            return None
        content = result.content if isinstance(result.content, Mapping) else {}
        web, terminal = answer_fields(only_text)[0], terminal_keys(only_text, [])[0]
        value = content.get(web, content.get("0", content.get(terminal)))
        text = value.strip() if isinstance(value, str) else ""
        if not text:
            return QuestionAnswers((QuestionAnswer(write_in=""),))
        return QuestionAnswers((answer_from_labels(question, [text]),))

    # -- MCP elicitation -------------------------------------------------------------------

    async def ask_elicitation(self, card: ElicitationCard) -> ElicitationAnswer | None:
        result = await self._ask(elicitation_params(card, harness_label=self._label), "forms")
        if result.action == "cancel":
            return None
        if result.action == "decline":
            return ElicitationAnswer(ElicitationAction.DECLINE)
        return ElicitationAnswer(ElicitationAction.ACCEPT, dict(result.content or {}))

    # -- trust -----------------------------------------------------------------------------

    async def ask_trust(self, card: TrustCard) -> TrustAnswer | None:
        return await ask_trust(self._elicit, card, harness_label=self._label)

    # -- the web's card --------------------------------------------------------------------

    async def _choose(
        self,
        message: str,
        options: Sequence[str],
        *,
        phase: str,
        form: QuestionForm | None = None,
    ) -> str | _Reply | None:
        """One button per option; the chosen label, `DECLINED` for a decline, `UNREADABLE`
        when it was accepted with an answer that is no text, None when the card was closed
        unanswered.

        The card's first value is `FROM_TERMINAL`, which the web does not show and the
        terminal REPL's accept sends (`terminal_cards`). For a question that is returned, and
        the caller asks the question as a form; for anything else the choice is asked again
        as a form whose text field the REPL asks for.
        """
        hint = QUESTION_HINT if form is not None else CHOICE_HINT
        params = choice_params(
            message,
            [FROM_TERMINAL, *options],
            phase=phase,
            harness_label=self._label,
            terminal_hint=hint,
        )
        chosen = self._chosen(await self._ask(params, "cards"))
        if chosen != FROM_TERMINAL or form is not None:
            return chosen
        asked = choice_form_params(message, options, phase=phase, harness_label=self._label)
        result = await self._ask(asked, "forms")
        if result.action != "accept":
            return self._chosen(result)
        content = result.content if isinstance(result.content, Mapping) else {}
        return choice_form_answer(content, options) or UNREADABLE

    @staticmethod
    def _chosen(result: ElicitationResult) -> str | _Reply | None:
        if result.action == "decline":
            return DECLINED
        if result.action != "accept":
            return None
        content = result.content if isinstance(result.content, Mapping) else {}
        answer = content.get("answer")
        return answer if isinstance(answer, str) else UNREADABLE

    async def _ask(self, params: ElicitationRequestParams, what: str) -> ElicitationResult:
        if self._elicit is None:
            raise PromptUnavailableError(f"omnigent installed no elicitation handler for {what}")
        return await self._elicit(params)


# --- omnigent's policy engine (pure) -----------------------------------------------------------


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
