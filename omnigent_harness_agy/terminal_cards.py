"""The plugin's cards in omnigent's terminal REPL (`omnigent run`, `omnigent attach`), pure.

What the REPL does with a card, read in omnigent 0.19.1 (``repl/_repl.py``,
``tools/_elicitation_schema.py``, ``runner/app.py`` in omnigent's package):

- it prints "⚠ approval required · <phase>", "policy: <policy_name>", "reason: <message>",
  "preview: <content_preview>" (cut at 200 characters) and "y = approve once, a = approve
  always (this session), n = refuse" (`_make_elicitation_prompt`), each through Rich's
  ``Text.from_markup``: a ``[bold]`` in agy's text would be styled away, and an unmatched
  ``[/x]`` raises, which the REPL turns into a silent decline (`_handle_elicitation`);
- ``y`` and ``a`` accept; anything else declines (`_parse_approval_input`). omnigent's runner
  answers every decline by interrupting the turn before it passes the answer on (the
  ``approval`` branch of `post_session_events` in ``runner/app.py``): from the REPL, ``n``
  stops the turn, and Deny, agy's "go on without it", has to come through an accept;
- on accept it fills the answer in itself where the schema lets it: an ``enum`` gets its first
  value (or a value ``"allow"``), a boolean true, a field with a default its default
  (`build_accept_content_from_schema`). Only when some field cannot be filled does it ask for
  every field in turn, printing "   <key> — <description> [<type>]" as plain text and taking
  a string as typed (`_prompt_schema_fields`). The web's question form (``ask_user_question``)
  is not read at all;
- ``a`` remembers the card's ``(policy_name, phase)`` for as long as the REPL runs and accepts
  every later card with the same pair without showing it ("auto-approved · <policy> · <phase>").

So here: a permission's and a single question's choice card start their ``enum`` with an empty
value, `FROM_TERMINAL`, which the web leaves out (it shows only non-empty strings) and the
REPL's accept sends; the plugin then asks the same thing again as a form whose ``requestedSchema``
is text fields the REPL asks for one by one: the choice or option by its number (several for
multi-select), or the person's own words. The web ignores that schema: it renders
``ask_user_question``. Each kind of card has a phase of its own, so ``a`` on one kind never
answers another, and on a permission or a question it only skips the y/a/n step next time (the
number is always asked); a folder's trust card keeps "Yes" first (``y`` trusts it) and has a
phase per folder. agy's text in a message, phase or preview is escaped for Rich (the web then
shows a backslash before a bracket that reads as a tag, and a backslash doubled where it ends
the text or stands before such a bracket, nothing else), and the preview,
which the web does not show on these cards, says what y, a and n do.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Final

from omnigent.server.schemas import ElicitationRequestParams

from omnigent_agy import ElicitationCard, Question, QuestionAnswer, QuestionForm, TrustCard

__all__ = [
    "CHOICE_HINT",
    "FORM_HINT",
    "FROM_TERMINAL",
    "MCP_PHASE",
    "MCP_PREVIEW",
    "PERMISSION_PHASE",
    "QUESTION_HINT",
    "QUESTION_PHASE",
    "TRUST_PHASE",
    "choice_form_answer",
    "choice_form_params",
    "markup_safe",
    "mcp_phase",
    "terminal_answer",
    "terminal_content",
    "terminal_fields",
    "terminal_keys",
    "terminal_schema",
    "trust_phase",
    "visible",
]

# What the REPL's accept sends for a choice card (its enum's first value); the web leaves an
# empty value out of the card's buttons.
FROM_TERMINAL: Final = ""
# One phase per kind of card: ``a`` on one kind never answers another.
QUESTION_PHASE: Final = "agy_ask_question"
PERMISSION_PHASE: Final = "agy_cli_permission"
TRUST_PHASE: Final = "agy_cli_trust"  # then the folder
MCP_PHASE: Final = "agy_mcp_elicitation"  # then the server and a digest of the request
# What y, a and n do, as the REPL's preview line. A choice card's accept leads to a second
# card (the form) with the same phase: `a` on the first answers that one too.
CHOICE_HINT: Final = (
    "a: choose by number in the field below (and from now on straight there) · "
    "y: the same after one more y · n: stop the turn"
)
QUESTION_HINT: Final = (
    "a: answer in the field below, an option's number or your own words (and from now on "
    "straight there) · y: the same after one more y · n: stop the turn"
)
FORM_HINT: Final = (
    "y: answer in the field below (a number, or your own words) · "
    "a: the same, and from now on without this step · n: stop the turn"
)
# The terminal fills in a yes/no field or a list itself (its first value) and asks for the rest.
MCP_PREVIEW: Final = (
    "y: accept (what it cannot fill in itself is asked below) · n: decline, which stops the turn"
)
_CHOICE_KEY: Final = "answer"  # the REPL's field of a choice asked as a form
_CHOICE_ID: Final = "choice"  # the web's field of that form
_SCOPE_MAX: Final = 60  # longer scopes in a phase end in a digest, so two never share one
# Only ASCII digits make a number: `\d` and `str.isdigit` also take "٣", a fullwidth 3 and "²", and
# `int` refuses the last. Such a line is a number the person meant but the plugin cannot read.
# What Rich's markup parser reads as a tag (`rich.markup.RE_TAGS`), with the backslashes before
# it, or the backslashes that end a text.
_TAG_OR_END: Final = re.compile(r"(\\*)(\[[a-z#/@][^[]*?]|\Z)")
# C0 controls but tab and newline, DEL, C1 controls, and the marks and overrides that
# reorder text (a card must read as it is).
_INVISIBLE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_NUMBERS: Final = re.compile(r"^[0-9]+(?:\s*[,\s]\s*[0-9]+)*$")


def _choice_number(text: str, count: int) -> int | None:
    """`text` as a choice's number from 1 to `count`: ASCII digits only."""
    if text.isascii() and text.isdigit() and 1 <= int(text) <= count:
        return int(text)
    return None


def _numeric(text: str) -> bool:
    """Numbers meant, not in ASCII digits ("²", "٣", fullwidth, "½"): never the person's words."""
    chars = [char for char in text if not (char.isspace() or char == ",")]
    return bool(chars) and all(char.isnumeric() for char in chars)


def visible(text: str) -> str:
    """`text` with what a terminal would act on or what reorders text shown as its escape
    (``\\x1b``, ``\\u202e``); a CRLF is a newline. Rich prints an ESC as it is, so agy's
    text could otherwise clear the person's screen, retitle it or write their clipboard."""
    return _INVISIBLE.sub(_escape_code, text.replace("\r\n", "\n"))


def _escape_code(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def markup_safe(text: str) -> str:
    """`text` as the REPL's Rich markup shows it verbatim, inside the REPL's own tags
    ("[muted]reason: <text>[/muted]"): `visible`, then a bracket that reads as a tag escaped,
    and every backslash just before one, or at the end (where the REPL's closing tag
    follows), doubled. Rich's own `escape` doubles a lone trailing backslash only, so
    "x\\\\" lost one."""
    return _TAG_OR_END.sub(_escaped, visible(text))


def _escaped(match: re.Match[str]) -> str:
    backslashes, tag = match.groups()
    return backslashes * 2 + (f"\\{tag}" if tag else "")


def _scoped(prefix: str, scope: str) -> str:
    scope = " ".join(scope.split())
    if len(scope) > _SCOPE_MAX:
        digest = hashlib.sha256(scope.encode()).hexdigest()[:10]
        scope = f"{scope[: _SCOPE_MAX - 13]}… #{digest}"
    return markup_safe(f"{prefix} · {scope}")


def trust_phase(card: TrustCard) -> str:
    """One folder holding one set of commands: ``a`` on one folder's trust card never trusts
    another, nor the same folder once what it would run has changed."""
    if not card.runs:
        return _scoped(TRUST_PHASE, card.workspace)
    digest = hashlib.sha256("\n".join(card.runs).encode()).hexdigest()[:10]
    return _scoped(TRUST_PHASE, f"{card.workspace} #{digest}")


def mcp_phase(card: ElicitationCard) -> str:
    """The same server asking the same thing with the same form, and nothing else."""
    schema = json.dumps(card.schema or {}, sort_keys=True, default=str)
    digest = hashlib.sha256(f"{card.server}\n{card.message}\n{schema}".encode()).hexdigest()
    return _scoped(MCP_PHASE, f"{card.server or 'an MCP server'} #{digest[:10]}")


# --- a choice card asked again as a form ---------------------------------------------------------


def choice_form_params(
    message: str, options: Sequence[str], *, phase: str, harness_label: str
) -> ElicitationRequestParams:
    """A choice card's question as a form: one text field "answer" for the REPL, listing the
    choices by number; one single-choice question for the web (``ask_user_question``)."""
    listed = " · ".join(f"{number} = {option}" for number, option in enumerate(options, start=1))
    asked = f"{message} — {listed}"  # the REPL's "reason" line; the web shows the form only
    return ElicitationRequestParams.model_validate(
        {
            "mode": "form",
            "message": markup_safe(asked),
            "requestedSchema": {
                "type": "object",
                # The field says it all again: after an `a` the REPL shows no "reason" line.
                "properties": {_CHOICE_KEY: {"type": "string", "description": visible(asked)}},
                "required": [_CHOICE_KEY],
            },
            "phase": phase,
            "policy_name": harness_label,
            "content_preview": markup_safe(FORM_HINT),
            "ask_user_question": {
                "questions": [
                    {
                        "id": _CHOICE_ID,
                        "question": message,
                        "options": [{"label": option} for option in options],
                        "multiSelect": False,
                    }
                ]
            },
        }
    )


def choice_form_answer(content: Mapping[str, object], options: Sequence[str]) -> str | None:
    """The chosen option of `choice_form_params`: its number or text typed in the REPL, its
    label from the web; None when it is neither."""
    value = content.get(_CHOICE_KEY, content.get(_CHOICE_ID))
    text = value.strip() if isinstance(value, str) else ""
    if text in options:
        return text
    number = _choice_number(text, len(options))
    return None if number is None else options[number - 1]


# --- questions as fields the REPL asks for ---------------------------------------------------


def terminal_keys(form: QuestionForm, taken: Sequence[str]) -> list[str]:
    """Each question's field in the REPL: "1. <question>"; never one of `taken` (the web's
    fields), so an answer tells which of the two sent it."""
    keys: list[str] = []
    for number, question in enumerate(form.questions, start=1):
        text = visible(" ".join(question.text.split())) or "(no text)"
        key = f"{number}. {text}"
        while key in taken or key in keys:
            key += " ·"
        keys.append(key)
    return keys


def terminal_fields(form: QuestionForm) -> list[dict[str, object]]:
    """One required free-text field per question; its description lists the options by number."""
    fields: list[dict[str, object]] = []
    for index, question in enumerate(form.questions):
        options = " · ".join(
            f"{number} = {option.text}" for number, option in enumerate(question.options, start=1)
        )
        how = "numbers, e.g. 1,3" if question.multi_select else "one number"
        if not question.options:
            how = "type your answer"
        elif form.allow_write_in:
            how += ", or your own words"
        parts = [part for part in (options, how) if part]
        if index == 0:
            parts[:0] = [extra for extra in (form.error, form.note) if extra]
        # Printed as it is by the REPL (no markup): only what a terminal acts on is escaped.
        fields.append({"type": "string", "description": visible(" — ".join(parts))})
    return fields


def terminal_schema(form: QuestionForm, keys: Sequence[str]) -> dict[str, object]:
    """The ``requestedSchema`` the REPL renders: `keys` in order, each required."""
    return {
        "type": "object",
        "properties": dict(zip(keys, terminal_fields(form), strict=True)),
        "required": list(keys),
    }


def terminal_content(content: Mapping[str, object], keys: Sequence[str]) -> bool:
    """Whether a form's answer came from the REPL: it names every one of the REPL's fields."""
    return bool(keys) and all(key in content for key in keys)


def terminal_answer(question: Question, value: object) -> QuestionAnswer:
    """A line typed in the REPL as the answer: an option's exact text; option numbers (by
    position, in ASCII digits, separated by commas or spaces); option texts separated by
    commas; else the person's own words. An empty or non-text value is no answer, and numbers
    in other digits no option (the bridge asks again, saying which numbers to type)."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        return QuestionAnswer()
    ids_by_text: dict[str, str] = {}
    for option in question.options:
        ids_by_text.setdefault(option.text, option.id)
    if text in ids_by_text:
        return QuestionAnswer(selected=(ids_by_text[text],))
    if question.options and _NUMBERS.match(text):
        numbers = [int(n) for n in re.split(r"[,\s]+", text)]
        # A number beyond the options goes to agy's checks as is: the bridge refuses it,
        # naming the valid options, and asks again.
        return QuestionAnswer(selected=tuple(_option_id(question, n) for n in numbers))
    if question.options and _numeric(text):
        # Refused by the bridge like a number beyond the options: asked again, with the
        # numbers to type.
        return QuestionAnswer(selected=(text,))
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 1 and all(part in ids_by_text for part in parts):
        return QuestionAnswer(selected=tuple(dict.fromkeys(ids_by_text[p] for p in parts)))
    return QuestionAnswer(write_in=text)


def _option_id(question: Question, number: int) -> str:
    if 1 <= number <= len(question.options):
        return question.options[number - 1].id
    return str(number)
