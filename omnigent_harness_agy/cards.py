"""What omnigent's web shows for the bridge's questions, and how the answers come back (pure).

What a person sees is what omnigent's web renders from the elicitation params, so they are
written for it (its approval card, read in the bundle's ``index-*.js``): a ``requestedSchema``
whose only property is an ``answer`` enum is a card titled "Choose an option · <policy_name>"
showing ``message`` and one button per value; ``content_preview`` is not shown on such a card.
The adapter's own choice handler fixes that message to "<label> wants to use **<tool>**" and the
policy name to "<label>_sdk_permission", which tells a person nothing about the command, so
permissions and single questions are built here: the message says in words what agy asks (the
command, file or MCP tool; the question) and the policy name is the harness label. A single
question's card ends with a "Type my own answer…" button, since a choice card has no text
field: it opens the question again as an ``ask_user_question`` form with no options, whose
"Type something" field is the answer.

Several questions, multi-select and questions whose options cannot be told apart go to the
web's ``ask_user_question`` form: each question's field is keyed by the question's own text
(the receipt lists the answers under those keys), option *labels* come back, a list for
multi-select, and any text that is not a label is the person's own answer. MCP elicitations
go to a plain MCP form.

The same params reach omnigent's terminal REPL, which reads them differently: what is added
for it (a phase per kind of card, the preview, the question form's ``requestedSchema``, the
escaped message) is `terminal_cards`'.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Final

from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy import (
    ElicitationCard,
    PermissionCard,
    Question,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    RequestKind,
)
from omnigent_agy.errors import PromptUnavailableError

from .terminal_cards import (
    FORM_HINT,
    MCP_PREVIEW,
    QUESTION_PHASE,
    markup_safe,
    mcp_phase,
    terminal_answer,
    terminal_content,
    terminal_keys,
    terminal_schema,
)

__all__ = [
    "ALLOW_ONCE",
    "DENY",
    "WRITE_IN",
    "answer_fields",
    "answer_from_labels",
    "choice_params",
    "conversation_label",
    "elicitation_params",
    "fits_choice_card",
    "permission_message",
    "question_answers",
    "question_params",
    "skipped",
    "with_notes",
]

ALLOW_ONCE: Final = "Allow once"
DENY: Final = "Deny"
# The last button of a single question's card: a choice card has no text field, so this one
# opens a form with just the question's text field (agy takes a `writeInResponse`, docs/wire.md §3).
WRITE_IN: Final = "Type my own answer…"
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


def speaker(harness_label: str, asked_by: str | None) -> str:
    """Who asks: agy itself, or one of its sub-agents, named (its gates are its own)."""
    return f"{harness_label}'s sub-agent “{asked_by}”" if asked_by else harness_label


def permission_message(card: PermissionCard, *, harness_label: str) -> str:
    """What the card says: the command (or file, MCP tool) in words, where, and why again.

    One line: the web shows the message as plain text, without markdown.
    """
    who = speaker(harness_label, card.asked_by)
    text = f"{who} wants to {_WANTS_TO[card.kind]} “{card.subject}”"
    if card.command_line and card.command_line != card.subject:
        text += f" (part of “{card.command_line}”)"
    if card.cwd:
        text += f" in {card.cwd}"
    if card.action_description and card.kind is not RequestKind.COMMAND:
        text += f": {card.action_description}"
    return with_notes(text, card.note)


def choice_params(
    message: str,
    options: Sequence[str],
    *,
    phase: str,
    harness_label: str,
    terminal_hint: str | None = None,
) -> ElicitationRequestParams:
    """The web's choice card: "Choose an option · <label>", the message, one button each.

    `terminal_hint` is the ``content_preview``, which only the terminal REPL shows
    (`terminal_cards`); the message is escaped for the REPL's Rich markup.
    """
    return ElicitationRequestParams(
        mode="form",
        message=markup_safe(message),
        requestedSchema={
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"],
        },
        phase=phase,
        policy_name=harness_label,
        content_preview=markup_safe(terminal_hint) if terminal_hint else None,
    )


def with_notes(text: str, note: str | None) -> str:
    """``text`` after its ``note`` (why it is asked again, what was wrong), if any."""
    return f"{note} — {text}" if note else text


def fits_choice_card(form: QuestionForm) -> bool:
    """One single-select question whose option texts tell the options apart."""
    if len(form.questions) != 1:
        return False
    question = form.questions[0]
    texts = [option.text for option in question.options]
    return (
        not question.multi_select
        and bool(texts)
        and all(text.strip() for text in texts)  # an empty one is the terminal's (FROM_TERMINAL)
        and len(set(texts)) == len(texts)
        and WRITE_IN not in texts  # the write-in button must not be mistaken for an option
        # The REPL's accept fills in a value "allow" wherever it is in the list
        # (terminal_cards); it must not pick an option of that name for the person.
        and "allow" not in texts
    )


def question_params(form: QuestionForm, *, harness_label: str) -> ElicitationRequestParams:
    """The web's ``ask_user_question`` form: questions keyed by index, options by label; and
    for the terminal REPL, which does not read that, a ``requestedSchema`` of one text field
    per question (`terminal_cards`), which the web does not show beside the form."""
    questions = [
        {
            "id": field,
            "question": question.text,
            "options": [{"label": option.text} for option in question.options if option.text],
            "multiSelect": question.multi_select,
        }
        for field, question in zip(answer_fields(form), form.questions, strict=True)
    ]
    message = f"{speaker(harness_label, form.asked_by)} needs your input"
    for extra in (form.note, form.error):
        if extra:
            message = f"{extra}\n\n{message}"
    # ``ask_user_question`` is one of the extra keys the params model allows (extra="allow").
    keys = terminal_keys(form, answer_fields(form))
    return ElicitationRequestParams.model_validate(
        {
            "mode": "form",
            "message": markup_safe(message),
            "requestedSchema": terminal_schema(form, keys),
            # The header comes from the phase ("agy_…": "Antigravity needs your input").
            "phase": QUESTION_PHASE,
            # The web shows it after the receipt ("Submitted · <policy_name>").
            "policy_name": harness_label,
            "content_preview": markup_safe(FORM_HINT),
            "ask_user_question": {"questions": questions},
        }
    )


def question_answers(form: QuestionForm, result: ElicitationResult) -> QuestionAnswers | None:
    """The form's reply as answers: declined (the web form's Cancel, the REPL's ``n``) skips
    every question and agy goes on; None when the form was closed unanswered.

    A missing or unreadable answer becomes an empty `QuestionAnswer`, which the bridge
    refuses with a message naming the valid options and asks again.
    """
    if result.action == "decline":
        return skipped(form)
    if result.action != "accept":
        return None
    content = result.content if isinstance(result.content, Mapping) else {}
    keys = terminal_keys(form, answer_fields(form))
    if terminal_content(content, keys):
        return QuestionAnswers(
            tuple(
                terminal_answer(question, content[key])
                for key, question in zip(keys, form.questions, strict=True)
            )
        )
    answers = []
    for index, (field, question) in enumerate(
        zip(answer_fields(form), form.questions, strict=True)
    ):
        # By our field first; by index, as omnigent's own agy mapping keys them, for a client
        # that sends that.
        value = content.get(field, content.get(str(index)))
        answers.append(answer_from_labels(question, _labels(value)))
    return QuestionAnswers(tuple(answers))


def skipped(form: QuestionForm) -> QuestionAnswers:
    """Every question of `form` skipped (agy's ``skipped: true``)."""
    return QuestionAnswers(tuple(QuestionAnswer(skipped=True) for _ in form.questions))


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


def answer_from_labels(question: Question, labels: Sequence[str]) -> QuestionAnswer:
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
        message=markup_safe(f"{server} (through {harness_label}) asks: {card.message}"),
        requestedSchema=copy.deepcopy(dict(schema)),
        phase=mcp_phase(card),
        policy_name=harness_label,  # shown as "· <policy_name>" on the card
        content_preview=markup_safe(MCP_PREVIEW),
    )
