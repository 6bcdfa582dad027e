"""Question options, question text and typed answers with hostile text, through the cards.

Whatever agy's question says and whatever a person types — tmux formats, shell syntax,
quotes, newlines, control characters, right-to-left marks, Rich markup, 4 KB strings, lone
surrogates — the web's card shows the question and every option whole and as written, the
terminal REPL prints them as written (its Rich markup escaped), the answer that reaches agy is
exactly the option chosen or the text typed (its outer blanks aside), and an answer that
cannot be sent is refused with a message and asked again: never a failed turn, never another
option. The REPL's and the web's own code are the oracles where they are at hand (Rich's
markup parser; omnigent's accept fill-in).
"""

from __future__ import annotations

import json

import pytest
from adapter.test_omnigent_prompts import Host, card_text, picked, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omnigent.community.harness.agy.cards import (
    WRITE_IN,
    answer_fields,
    fits_choice_card,
    question_params,
)
from omnigent.community.harness.agy.terminal_cards import (
    FROM_TERMINAL,
    markup_safe,
    terminal_answer,
    terminal_keys,
    visible,
)
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult
from rich.text import Text

from omnigent_agy.interactions.gates import question_payload
from omnigent_agy.interactions.prompts import (
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    answer_problem,
)
from omnigent_agy.reading.steps import Question, QuestionOption
from omnigent_agy.rpc.wire import encode_envelope

PIECES = (
    "#(touch /tmp/pwned)",
    "#{pane_current_path}",
    "$(id)",
    "`id`",
    "; rm -rf ~",
    "'",
    '"',
    "\n",
    "\r\n",
    "\t",
    "\x1b[31m",
    "\x00",
    "\x7f",
    "\u202e",  # right-to-left override
    "\u200f",  # right-to-left mark
    "[bold]",
    "[/x]",
    "[/]",
    "\\[b]",
    "\\",
    "%s",
    "{0}",
    "🙂",
    "…",
)
HOSTILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=6).map("".join),
    st.text(max_size=40),
    # 4 KB and more of one piece.
    st.sampled_from(PIECES).map(lambda piece: piece * (4096 // len(piece) + 1)),
)
# agy's own text never holds a lone surrogate (it is Go: its JSON has none); a person's typed
# answer can (a client's JSON may say "\ud800").
TYPED = st.one_of(HOSTILE, st.tuples(HOSTILE, st.sampled_from("\ud800\udfff")).map("".join))
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def question_of(text: str, options: list[str], *, multi: bool = False) -> Question:
    return Question(text, tuple(QuestionOption(str(n), o) for n, o in enumerate(options, 1)), multi)


def printed(message: str) -> str:
    """A card's message as the REPL prints it: inside its own tags, as Rich markup (an
    unmatched closing tag would raise; `repl/_repl.py`, `_make_elicitation_prompt`)."""
    line = Text.from_markup(f"   [dim]reason: {message}[/dim]").plain
    assert line.startswith("   reason: ")
    return line.removeprefix("   reason: ")


def nothing_a_terminal_acts_on(shown: str) -> bool:
    return not any(
        (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u200f"
        for c in shown
    )


def accept(content: dict[str, object]) -> ElicitationResult:
    return ElicitationResult(action="accept", content=content)


def delivered(form: QuestionForm, answers: QuestionAnswers) -> dict[str, object]:
    """What agy receives: the payload, through the wire's own encoder and back."""
    assert answer_problem(form, answers) is None
    envelope = encode_envelope({"askQuestion": question_payload(form, answers)})
    payload = json.loads(envelope[5:].decode("utf-8"))["askQuestion"]
    assert isinstance(payload, dict)
    return payload


def shows_form_faithfully(params: ElicitationRequestParams, question: Question) -> None:
    """The web's form has the question and its options as written; the REPL prints them."""
    [asked] = params.model_dump()["ask_user_question"]["questions"]
    assert asked["question"] == question.text
    labels = [option["label"] for option in asked["options"]]
    assert labels == [option.text for option in question.options if option.text]
    [(key, schema)] = params.requestedSchema["properties"].items()  # type: ignore[index]
    printed(params.message)
    described = schema["description"]
    assert nothing_a_terminal_acts_on(described + key)
    for number, option in enumerate(question.options, 1):
        assert f"{number} = {visible(option.text)}" in described


OPTIONS = st.lists(HOSTILE.filter(str.strip), min_size=1, max_size=4, unique=True)


@FAST
@given(text=HOSTILE, options=OPTIONS, data=st.data())
def test_the_web_shows_each_option_whole_and_delivers_the_one_clicked(
    text: str, options: list[str], data: st.DataObject
) -> None:
    question = question_of(text, options)
    form = QuestionForm("c", (question,))
    chosen = data.draw(st.integers(0, len(options) - 1))
    host = Host()
    if fits_choice_card(form):
        host.results = [picked(options[chosen])]
        answers = run(host.prompts().ask_questions(form))
        _, body, buttons = card_text(host.elicited[0])
        assert buttons == [*options, WRITE_IN]  # every option, whole, in order
        # The REPL prints the question, every character as itself or as its escape.
        assert printed(body) == visible(text)
        assert nothing_a_terminal_acts_on(printed(body))
    else:
        field = answer_fields(form)[0]
        host.results = [accept({field: options[chosen]})]
        answers = run(host.prompts().ask_questions(form))
        shows_form_faithfully(host.elicited[0], question)
    assert answers == QuestionAnswers((QuestionAnswer(selected=(str(chosen + 1),)),))
    payload = delivered(form, answers)
    assert payload["responses"] == [{"question": text, "selectedOptionIds": [str(chosen + 1)]}]


@FAST
@given(text=HOSTILE, options=OPTIONS, multi=st.booleans(), data=st.data())
def test_the_repl_delivers_the_option_whose_number_is_typed(
    text: str, options: list[str], multi: bool, data: st.DataObject
) -> None:
    question = question_of(text, options, multi=multi)
    form = QuestionForm("c", (question,))
    chosen = data.draw(st.integers(1, len(options)))
    key = terminal_keys(form, answer_fields(form))[0]
    host = Host(results=[accept({key: f" {chosen} "})])
    if fits_choice_card(form):
        host.results.insert(0, accept({"answer": FROM_TERMINAL}))  # the REPL's `y`
    answers = run(host.prompts().ask_questions(form))
    shows_form_faithfully(host.elicited[-1], question)
    assert answers == QuestionAnswers((QuestionAnswer(selected=(str(chosen),)),))
    assert delivered(form, answers)["responses"] == [
        {"question": text, "selectedOptionIds": [str(chosen)]}
    ]


@FAST
@given(text=HOSTILE, options=OPTIONS, typed=TYPED)
def test_a_typed_answer_reaches_agy_as_typed_or_is_asked_again(
    text: str, options: list[str], typed: str
) -> None:
    question = question_of(text, options)
    form = QuestionForm("c", (question,))
    only_text = QuestionForm("c", (Question(text, (), False),))
    field = answer_fields(only_text)[0]
    host = Host()
    if fits_choice_card(form):
        host.results = [picked(WRITE_IN), accept({field: typed})]  # the web's write-in
    else:
        host.results = [accept({answer_fields(form)[0]: typed})]  # the web form's own text
    answers = run(host.prompts().ask_questions(form))
    assert answers is not None
    said = typed.strip()
    problem = answer_problem(form, answers)
    if any(0xD800 <= ord(char) <= 0xDFFF for char in said):
        assert problem is not None
        assert "not text" in problem
        assert "type it again" in problem
        return
    if not said:
        assert problem is not None
        assert "type one or pick an option" in problem
        return
    [response] = delivered(form, answers)["responses"]
    assert isinstance(response, dict)
    if said in options:
        assert response == {"question": text, "selectedOptionIds": [str(options.index(said) + 1)]}
    else:
        assert response == {"question": text, "writeInResponse": said}


@FAST
@given(text=HOSTILE, options=OPTIONS, typed=TYPED)
def test_a_line_typed_in_the_repl_is_an_option_the_persons_words_or_asked_again(
    text: str, options: list[str], typed: str
) -> None:
    question = question_of(text, options)
    form = QuestionForm("c", (question,))
    answer = terminal_answer(question, typed)
    answers = QuestionAnswers((answer,))
    problem = answer_problem(form, answers)
    said = typed.strip()
    if problem is not None:
        # Asked again, saying what to type; never sent.
        assert "valid options" in problem or "type it again" in problem
        if answer.selected and not set(answer.selected) <= {o.id for o in question.options}:
            assert f"type a number from 1 to {len(options)}" in problem or len(options) == 1
        return
    [response] = delivered(form, answers)["responses"]
    assert isinstance(response, dict)
    if answer.write_in is not None:
        assert response == {"question": text, "writeInResponse": said}
        assert said not in options
    else:
        [picked_id] = response["selectedOptionIds"]
        option = options[int(picked_id) - 1]
        assert said in (option, picked_id)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]52;c;cGF5bG9hZA==\x07", "\\x1b]52;c;cGF5bG9hZA==\\x07"),  # a clipboard write
        ("\x1b[2J", "\\x1b[2J"),
        ("a\r\nb\rc", "a\nb\\x0dc"),
        ("\u202eevil\u2066", "\\u202eevil\\u2066"),
        ("tab\tand\nline", "tab\tand\nline"),
        ("\x9b31m", "\\x9b31m"),
    ],
    ids=["osc52", "clear", "carriage-return", "bidi", "kept", "c1-csi"],
)
def test_what_a_terminal_would_act_on_is_shown_as_its_escape(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert printed(markup_safe(text)) == shown


@pytest.mark.parametrize(
    "typed",
    ["\ud800", "fine\udfff", "half \ud83d emoji"],
    ids=["lone-high", "trailing-low", "half-emoji"],
)
def test_a_typed_answer_with_half_a_surrogate_pair_is_asked_again(typed: str) -> None:
    question = question_of("Which color?", ["Red", "Blue"])
    form = QuestionForm("c", (question,))
    problem = answer_problem(form, QuestionAnswers((QuestionAnswer(write_in=typed),)))
    assert problem is not None
    assert "a character that is not text (U+D" in problem
    assert problem.endswith("type it again")


def test_a_question_card_after_a_refusal_still_shows_the_question_whole() -> None:
    # The refusal goes first ("question 1 (…) has no option …"), the question after it.
    text = "Deploy [bold]now[/bold]? $(id) #(touch x)\n\u202eevil"
    question = question_of(text, ["yes [/x]", "no `id`"])
    form = QuestionForm("c", (question,), error="question 1 has no option '9'")
    host = Host(results=[picked("no `id`")])
    run(host.prompts().ask_questions(form))
    _, body, buttons = card_text(host.elicited[0])
    assert printed(body) == f"question 1 has no option '9' — {visible(text)}"
    assert "\\u202eevil" in printed(body)
    assert buttons == ["yes [/x]", "no `id`", WRITE_IN]
    params = question_params(form, harness_label="Antigravity CLI")
    assert "question 1 has no option '9'" in printed(params.message)
