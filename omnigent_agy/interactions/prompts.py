"""What the interaction bridge asks of its host: the `HostPrompts` protocol and its values.

The bridge (`omnigent_agy.interactions.bridge`) turns agy's WAITING steps (docs/wire.md §6) into
calls on a `HostPrompts`: first the host's own policy, then — when nothing decided automatically — a
card or a form for the person. Everything here is host-agnostic; the omnigent implementation
is `omnigent.community.harness.agy.omnigent_prompts.OmnigentPrompts`.

Answers are plain values. A method returning ``None`` means the person closed the prompt
without answering (which ends the turn); a *deny* is an answer, delivered to agy, after which
agy carries on (docs/decisions.md §1). A host that cannot show a prompt at all raises
`PromptUnavailableError`; the bridge then sends agy a refusal so it does not hang.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from omnigent_agy.interactions.policy import PermissionRequest, RequestKind
from omnigent_agy.reading.steps import Question

__all__ = [
    "ElicitationAction",
    "ElicitationAnswer",
    "ElicitationCard",
    "HostPrompts",
    "PermissionAnswer",
    "PermissionCard",
    "PolicyAction",
    "PolicyVerdict",
    "QuestionAnswer",
    "QuestionAnswers",
    "QuestionForm",
    "TrustAnswer",
    "TrustCard",
    "answer_problem",
    "describe_options",
]


# --- policy ----------------------------------------------------------------------------------


class PolicyAction(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"  # no decision: the plugin's own rules and then the person decide


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """The host policy's answer to a permission request; `reason` goes to the log."""

    action: PolicyAction
    reason: str | None = None


# --- permission ------------------------------------------------------------------------------


class PermissionAnswer(enum.StrEnum):
    """What the person chose on a permission card; every value is delivered to agy."""

    ALLOW_ONCE = "allow_once"
    ALLOW_CONVERSATION = "allow_conversation"  # agy's PERMISSION_SCOPE_CONVERSATION (§6)
    DENY = "deny"  # agy gets allow=false and carries on (docs/decisions.md §1)


@dataclass(frozen=True, slots=True)
class PermissionCard:
    """One permission gate as the person should see it.

    `subject` is what agy asks about right now — for a command gate, the part of a chained
    command line being gated (docs/wire.md §6) — and `command_line` the whole line. `note` says why
    the person is asked again (the command changed while they were deciding), else None.
    """

    call_id: str
    kind: RequestKind
    subject: str
    command_line: str | None = None
    cwd: str | None = None
    action_description: str | None = None
    persist_pattern: str | None = None  # what agy suggests "for this conversation" covers
    note: str | None = None
    asked_by: str | None = None  # the sub-agent that asks (its title), None for agy itself


# --- questions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionForm:
    """agy's askQuestion: one or more questions with options ("1".."N", docs/wire.md §5).

    A write-in answer is always allowed. `error` is set when the person's previous answer was
    refused (it names the valid options); `note` when they are asked again because the
    question changed meanwhile.
    """

    call_id: str
    questions: tuple[Question, ...]
    allow_write_in: bool = True
    error: str | None = None
    note: str | None = None
    asked_by: str | None = None  # the sub-agent that asks (its title), None for agy itself


@dataclass(frozen=True, slots=True)
class QuestionAnswer:
    """The answer to one question: chosen option ids and/or a write-in, or skipped."""

    selected: tuple[str, ...] = ()
    write_in: str | None = None
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class QuestionAnswers:
    """One `QuestionAnswer` per question of the form, in the form's order."""

    answers: tuple[QuestionAnswer, ...]


def describe_options(question: Question) -> str:
    """``1 (Red), 2 (Blue), 3 (Green)``: how an error names the valid options."""
    return ", ".join(f"{option.id} ({option.text})" for option in question.options) or "none"


def answer_problem(form: QuestionForm, answers: QuestionAnswers) -> str | None:
    """Why `answers` cannot be delivered for `form`, or None when they can.

    agy wants option ids it offered, at most one for a single-select question, and something
    (an option, a write-in or a skip) for every question.
    """
    questions = form.questions
    if len(answers.answers) != len(questions):
        return f"expected answers to {len(questions)} question(s), got {len(answers.answers)}"
    for number, (question, answer) in enumerate(
        zip(questions, answers.answers, strict=True), start=1
    ):
        broken = _not_text(answer.write_in or "")
        if broken is not None:
            # Half of a UTF-16 pair cannot be sent to agy as UTF-8, nor delivered as typed.
            problem: str | None = (
                f"got a written answer with a character that is not text ({broken}): type it again"
            )
        else:
            problem = _problem_with(question, answer, allow_write_in=form.allow_write_in)
        if problem is not None:
            return f"question {number} ({question.text!r}) {problem}"
    return None


def _problem_with(
    question: Question, answer: QuestionAnswer, *, allow_write_in: bool
) -> str | None:
    valid = f"valid options: {describe_options(question)}"
    offered = {option.id for option in question.options}
    unknown = [choice for choice in answer.selected if choice not in offered]
    if unknown:
        count = len(question.options)
        how = f"type a number from 1 to {count}" if count > 1 else "type 1"
        return f"has no option {', '.join(map(repr, unknown))}: {how}; {valid}"
    if len(set(answer.selected)) != len(answer.selected):
        return f"got the same option twice; {valid}"
    if len(answer.selected) > 1 and not question.multi_select:
        return f"takes one option, {len(answer.selected)} were chosen; {valid}"
    if answer.write_in is not None and not allow_write_in:
        return f"does not take a written answer; {valid}"
    if not (answer.selected or (answer.write_in or "").strip() or answer.skipped):
        # The person chose to write and wrote nothing: say that, not just "no answer".
        empty = "got an empty written answer: type one or pick an option"
        return f"{empty if answer.write_in is not None else 'has no answer'}; {valid}"
    return None


def _not_text(text: str) -> str | None:
    """The first lone surrogate in `text` (what a client's JSON "\\ud800" gives), as U+XXXX."""
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"U+{ord(char):04X}"
    return None


# --- MCP elicitation -------------------------------------------------------------------------


class ElicitationAction(enum.StrEnum):
    """MCP's ElicitResult actions."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class ElicitationCard:
    """An MCP server asks the person for input through agy (docs/wire.md §6 `elicitation`).

    `schema` is the parsed `requestedSchemaJson` (None when absent or not a JSON object;
    `schema_error` then says what was wrong with it).
    """

    call_id: str
    server: str | None
    message: str
    schema: Mapping[str, object] | None = None
    schema_error: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    action: ElicitationAction
    content: Mapping[str, object] | None = None


# --- trust ------------------------------------------------------------------------------------


class TrustAnswer(enum.StrEnum):
    """agy's own two answers to its trust dialog (docs/wire.md §9)."""

    TRUST = "trust"  # "Yes, I trust this folder"
    EXIT = "exit"  # "No, exit": agy does not start


@dataclass(frozen=True, slots=True)
class TrustCard:
    """agy's trust dialog, asked before any agy starts in a workspace nobody trusts yet.

    `workspace` is the person's own path (never the link a hidden one is reached through);
    `runs` what trusting it would let agy run (its MCP servers and hooks), one line each,
    what would run first and in full, escaped (``agy.workspace_runs``); `again` why a folder
    the person trusted before is asked about again (what changed), if it is.
    """

    workspace: str
    runs: tuple[str, ...] = ()
    again: str | None = None


# --- the protocol ----------------------------------------------------------------------------


class HostPrompts(Protocol):
    """What a host implements so agy's questions reach a person."""

    async def evaluate_policy(self, request: PermissionRequest) -> PolicyVerdict:
        """The host's own policy, asked before the plugin's rules: ALLOW, DENY or ASK."""
        ...

    async def ask_permission(self, card: PermissionCard) -> PermissionAnswer | None:
        """Show the card; None when it was dismissed (that ends the turn)."""
        ...

    async def ask_questions(self, form: QuestionForm) -> QuestionAnswers | None:
        """Show the form; None when it was dismissed."""
        ...

    async def ask_elicitation(self, card: ElicitationCard) -> ElicitationAnswer | None:
        """Show the MCP form; None when dismissed; `PromptUnavailableError` if it cannot."""
        ...

    async def ask_trust(self, card: TrustCard) -> TrustAnswer | None:
        """agy's trust dialog for a workspace; None when dismissed; `PromptUnavailableError`
        if it cannot be shown (agy then does not start)."""
        ...
