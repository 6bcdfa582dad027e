"""The plugin's cards as omnigent's terminal REPL answers them, with omnigent's own code.

The REPL's accept fills a card's answer in with omnigent's `build_accept_content_from_schema`
(``tools/_elicitation_schema.py``) and asks for the fields only when that cannot; it prints
the message, phase and preview as Rich markup. Both are used here as oracles, so a card that
the REPL would answer for the person, or print wrongly, fails. The REPL itself, in tmux, is
tests/e2e/test_e2e_repl.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter.test_omnigent_prompts import CHECKS, COLOR, Host, card_text, run
from omnigent.community.harness.agy.cards import ALLOW_ONCE, DENY, WRITE_IN
from omnigent.community.harness.agy.terminal_cards import (
    FROM_TERMINAL,
    terminal_answer,
)
from omnigent.community.harness.agy.trust_card import YES_TRUST, trust_params
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult
from omnigent.tools._elicitation_schema import build_accept_content_from_schema
from rich.text import Text

from omnigent_agy.interactions.policy import RequestKind
from omnigent_agy.interactions.prompts import (
    ElicitationCard,
    PermissionAnswer,
    PermissionCard,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    TrustCard,
)
from omnigent_agy.reading.steps import Question, QuestionOption

CARD = PermissionCard(
    "c", RequestKind.COMMAND, "rm -rf build", cwd="/work/project", persist_pattern="rm"
)


def repl_accepts(params: ElicitationRequestParams) -> dict[str, Any] | None:
    """What the REPL's `y` sends without asking anything (None: it asks for the fields)."""
    return build_accept_content_from_schema(params.requestedSchema or {})


def accept(content: dict[str, Any]) -> ElicitationResult:
    return ElicitationResult(action="accept", content=content)


def printed(markup: str) -> str:
    """A line as the REPL prints it: Rich markup rendered to plain text."""
    return Text.from_markup(markup).plain


# --- permissions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("1", PermissionAnswer.ALLOW_ONCE),
        ("2", PermissionAnswer.ALLOW_CONVERSATION),
        ("3", PermissionAnswer.DENY),  # Deny through an accept: agy goes on
        (" 3 ", PermissionAnswer.DENY),
        (DENY, PermissionAnswer.DENY),
    ],
)
def test_the_repl_chooses_a_permission_by_number_in_a_second_card(
    typed: str, expected: PermissionAnswer
) -> None:
    host = Host(results=[accept({"answer": FROM_TERMINAL}), accept({"answer": typed})])
    assert run(host.prompts().ask_permission(CARD)) == expected
    first, second = host.elicited
    # The REPL's y/a on the choice card sends the empty first value, which the web hides.
    assert repl_accepts(first) == {"answer": FROM_TERMINAL}
    assert card_text(first)[2] == [ALLOW_ONCE, "Allow “rm” for this conversation", DENY]
    assert repl_accepts(second) is None  # the REPL asks for its field
    field = second.requestedSchema["properties"]["answer"]  # type: ignore[index]
    assert field["description"] == (
        "Antigravity CLI wants to run “rm -rf build” in /work/project — "
        "1 = Allow once · 2 = Allow “rm” for this conversation · 3 = Deny"
    )
    # The web, should it show the second card, renders it as a one-question form.
    [question] = second.model_dump()["ask_user_question"]["questions"]
    assert [option["label"] for option in question["options"]] == card_text(first)[2]


def test_the_web_answer_to_the_second_card_is_its_label() -> None:
    host = Host(results=[accept({"answer": ""}), accept({"choice": DENY})])
    assert run(host.prompts().ask_permission(CARD)) == PermissionAnswer.DENY


def test_a_number_that_is_no_choice_asks_again_and_is_never_guessed() -> None:
    host = Host(
        results=[accept({"answer": ""}), accept({"answer": "7"}), accept({"answer": ALLOW_ONCE})]
    )
    assert run(host.prompts().ask_permission(CARD)) == PermissionAnswer.ALLOW_ONCE
    assert "not one of the choices: type a number from 1 to 3" in host.elicited[2].message


@pytest.mark.parametrize("typed", ["²", "٣", "\uff13", "1²", "½", "2\u0663", "Ⅻ"])
def test_a_number_in_other_digits_asks_again_and_never_fails_the_turn(typed: str) -> None:
    # str.isdigit takes "²" and int() then refuses it; "٣" and a fullwidth 3 int() reads,
    # but only ASCII digits are a choice's number in the REPL.
    host = Host(
        results=[accept({"answer": ""}), accept({"answer": typed}), accept({"answer": ALLOW_ONCE})]
    )
    assert run(host.prompts().ask_permission(CARD)) == PermissionAnswer.ALLOW_ONCE
    assert "type a number from 1 to 3" in host.elicited[2].message


def test_a_declined_card_is_deny_and_a_cancelled_one_a_dismissal() -> None:
    host = Host(result=ElicitationResult(action="decline"))
    assert run(host.prompts().ask_permission(CARD)) == PermissionAnswer.DENY
    host = Host(results=[accept({"answer": ""})], result=ElicitationResult(action="cancel"))
    assert run(host.prompts().ask_permission(CARD)) is None


# --- questions --------------------------------------------------------------------------------


def test_the_repl_answers_a_single_question_in_a_form_and_never_with_the_first_option() -> None:
    host = Host(results=[accept({"answer": FROM_TERMINAL}), accept({"1. Which color?": "2"})])
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR,))))
    assert got == QuestionAnswers((QuestionAnswer(selected=("2",)),))
    card, form = host.elicited
    assert repl_accepts(card) == {"answer": FROM_TERMINAL}
    assert card_text(card)[2] == ["Red", "Blue", WRITE_IN]
    assert repl_accepts(form) is None


def test_several_questions_are_typed_one_field_each() -> None:
    host = Host(result=accept({"1. Which color?": "Blue", "2. Which checks?": "1, 3"}))
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR, CHECKS))))
    assert got == QuestionAnswers(
        (QuestionAnswer(selected=("2",)), QuestionAnswer(selected=("1", "3")))
    )
    assert repl_accepts(host.elicited[0]) is None


def test_a_write_in_form_answered_in_the_repl_reaches_agy() -> None:
    host = Host(results=[accept({"answer": WRITE_IN}), accept({"1. Which color?": " teal "})])
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR,))))
    assert got == QuestionAnswers((QuestionAnswer(write_in="teal"),))


@pytest.mark.parametrize(
    ("question", "typed", "expected"),
    [
        (COLOR, "2", QuestionAnswer(selected=("2",))),
        (COLOR, "Blue", QuestionAnswer(selected=("2",))),
        (COLOR, "teal", QuestionAnswer(write_in="teal")),
        (COLOR, "9", QuestionAnswer(selected=("9",))),  # the bridge refuses it, naming options
        # Numbers not in ASCII digits are no option either (never the person's words, never
        # read as 2 or 3): the bridge refuses them, saying which numbers to type.
        (COLOR, "²", QuestionAnswer(selected=("²",))),
        (COLOR, "٢", QuestionAnswer(selected=("٢",))),
        (CHECKS, "\uff11, \uff13", QuestionAnswer(selected=("\uff11, \uff13",))),  # fullwidth
        (COLOR, "2nd", QuestionAnswer(write_in="2nd")),
        (COLOR, "1,2", QuestionAnswer(selected=("1", "2"))),  # refused: one option only
        (COLOR, "   ", QuestionAnswer()),  # no answer: asked again
        (CHECKS, "1,3", QuestionAnswer(selected=("1", "3"))),
        (CHECKS, "1 3", QuestionAnswer(selected=("1", "3"))),
        (CHECKS, "Lint, Tests", QuestionAnswer(selected=("1", "3"))),
        (CHECKS, "Lint, and docs", QuestionAnswer(write_in="Lint, and docs")),
        (
            Question("Pick", (QuestionOption("a", "x"), QuestionOption("b", "y")), False),
            "2",
            QuestionAnswer(selected=("b",)),  # by position, whatever agy's ids are
        ),
        (Question("Open", (), False), "42", QuestionAnswer(write_in="42")),
    ],
)
def test_a_typed_line_reads_as_numbers_labels_or_the_persons_words(
    question: Question, typed: str, expected: QuestionAnswer
) -> None:
    assert terminal_answer(question, typed) == expected


def test_an_option_called_allow_is_never_picked_by_the_repls_fill_in() -> None:
    # The REPL's fill-in prefers a value "allow" wherever it is in the list.
    odd = Question("Go?", (QuestionOption("1", "deny"), QuestionOption("2", "allow")), False)
    host = Host()
    run(host.prompts().ask_questions(QuestionForm("c", (odd,))))
    assert repl_accepts(host.elicited[0]) is None


# --- what the REPL prints, and what `a` remembers ----------------------------------------------


def test_rich_markup_in_agys_text_is_printed_as_agy_wrote_it() -> None:
    # Unescaped, the REPL would style the command's words away, and an unmatched closing tag
    # would raise inside it, which it turns into a silent refusal.
    sneaky = PermissionCard("c", RequestKind.COMMAND, "echo [bold]x[/bold] [/]")
    host = Host()
    run(host.prompts().ask_permission(sneaky))
    [params] = host.elicited
    assert printed(params.message) == "Antigravity CLI wants to run “echo [bold]x[/bold] [/]”"
    trust = trust_params(TrustCard("/work/[red]odd[/]"), harness_label="Antigravity CLI")
    assert printed(trust.phase or "").endswith("/work/[red]odd[/]")
    assert printed(trust.message).startswith("Accessing workspace: /work/[red]odd[/] —")


def test_each_kind_of_card_has_a_phase_of_its_own() -> None:
    host = Host()
    prompts = host.prompts()
    run(prompts.ask_permission(CARD))
    run(prompts.ask_questions(QuestionForm("c", (COLOR,))))
    run(prompts.ask_elicitation(ElicitationCard("c", "github", "Which repo?")))
    kinds = [params.phase for params in host.elicited]
    trust = [trust_params(TrustCard(f"/work/{name}"), harness_label="A").phase for name in "ab"]
    assert len({*kinds, *trust}) == 5
    assert all(phase and phase.startswith("agy_") for phase in [*kinds, *trust])


def test_the_repls_approve_always_never_covers_changed_contents() -> None:
    # `a` remembers a card's phase for the REPL's run: a folder asked again because what it
    # would run changed must not be answered by an `a` given for what it ran before.
    before = TrustCard("/work/a", ('runs "./x" — hook "Stop"',))
    after = TrustCard("/work/a", ('runs "./x" — hook "Stop"', 'runs "./y" — hook "Stop"'))
    phases = {trust_params(card, harness_label="A").phase for card in (before, after)}
    assert len(phases) == 2


def test_the_trust_card_is_yes_on_the_repls_y() -> None:
    params = trust_params(TrustCard("/work/a"), harness_label="Antigravity CLI")
    assert repl_accepts(params) == {"answer": YES_TRUST}
    assert "n: No, exit" in printed(params.content_preview or "")
