"""`OmnigentPrompts`: the bridge's prompts mapped to omnigent's schema classes and back.

The bridges the adapter installs (omnigent's policy evaluator, the plugin's elicit) are stood
in for by recording coroutines; everything they receive and return is a real
omnigent object (`ElicitationRequestParams`, `ElicitationResult`, `PolicyVerdictPayload`).
Where omnigent already maps agy's questions for its own antigravity harness, that mapping is
used as an oracle, so our form renders and round-trips the same way in the web UI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from omnigent.community.harness.agy.cards import ALLOW_ONCE, DENY, WRITE_IN, conversation_label
from omnigent.community.harness.agy.omnigent_prompts import (
    SHELL_TOOL,
    OmnigentPrompts,
    tool_call_data,
)
from omnigent.policies.builtins._shell import SHELL_TOOLS
from omnigent.runtime.harnesses._executor_adapter import ExecutorAdapter
from omnigent.runtime.harnesses._scaffold import PolicyVerdictPayload
from omnigent.server.routes._antigravity_elicitation import (
    to_elicitation_params,
    to_interaction_payload,
)
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy.errors import PromptUnavailableError
from omnigent_agy.interactions.gates import question_payload
from omnigent_agy.interactions.policy import PermissionRequest, RequestKind
from omnigent_agy.interactions.prompts import (
    ElicitationAction,
    ElicitationAnswer,
    ElicitationCard,
    PermissionAnswer,
    PermissionCard,
    PolicyAction,
    PolicyVerdict,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    answer_problem,
)
from omnigent_agy.reading.steps import Question, QuestionOption


def run[T](coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


@dataclass
class Host:
    """A recording stand-in for the adapter's elicit bridge and omnigent's policy evaluator."""

    verdict: PolicyVerdictPayload = field(
        default_factory=lambda: PolicyVerdictPayload(action="POLICY_ACTION_ALLOW")
    )
    result: ElicitationResult = field(default_factory=lambda: ElicitationResult(action="cancel"))
    # Answers to the first cards, in order; `result` answers every card after them.
    results: list[ElicitationResult] = field(default_factory=list)
    evaluations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    elicited: list[ElicitationRequestParams] = field(default_factory=list)

    async def evaluate(self, phase: str, data: dict[str, Any]) -> PolicyVerdictPayload:
        self.evaluations.append((phase, data))
        return self.verdict

    async def elicit(self, params: ElicitationRequestParams) -> ElicitationResult:
        assert isinstance(params, ElicitationRequestParams)
        self.elicited.append(params)
        return self.results.pop(0) if self.results else self.result

    def prompts(self, **kwargs: Any) -> OmnigentPrompts:
        bridges: dict[str, Callable[..., Any] | None] = {
            "policy_evaluator": self.evaluate,
            "elicit": self.elicit,
        }
        bridges.update(kwargs)
        return OmnigentPrompts(**bridges)  # type: ignore[arg-type]


def picked(label: str | None) -> ElicitationResult:
    """What the web posts when a card's button is clicked (or the card is closed)."""
    if label is None:
        return ElicitationResult(action="cancel")
    return ElicitationResult(action="accept", content={"answer": label})


def card_text(params: ElicitationRequestParams) -> tuple[str, str, list[str]]:
    """(title, body, buttons) as omnigent's web approval card renders a choice card: the
    title "Choose an option · <policy_name>", the message, one button per `answer` value
    (read in the web bundle's approval card, which shows only non-empty strings;
    `content_preview` is not shown on it)."""
    schema = params.requestedSchema or {}
    properties = schema.get("properties", {})
    assert list(properties) == ["answer"], "not a choice card"
    return (
        f"Choose an option · {params.policy_name}",
        params.message,
        [value for value in properties["answer"]["enum"] if isinstance(value, str) and value],
    )


def is_web_form(params: ElicitationRequestParams) -> bool:
    """The web renders `ask_user_question` when present, whatever `requestedSchema` says (the
    terminal REPL's fields), so such params are never a choice card."""
    return bool(params.model_dump().get("ask_user_question"))


COMMAND = PermissionRequest(
    RequestKind.COMMAND,
    command_line="git push --force",
    cwd="/work/project",
    action_description="Running git push",
)


# --- policy ----------------------------------------------------------------------------------


def test_a_permission_is_evaluated_as_a_tool_call() -> None:
    host = Host()
    run(host.prompts().evaluate_policy(COMMAND))
    assert host.evaluations == [
        (
            "PHASE_TOOL_CALL",
            {
                # As omnigent's own shell tool: its shell policies gate it (decisions §14).
                "name": "sys_os_shell",
                "arguments": {
                    "command": "git push --force",
                    "cwd": "/work/project",
                    "description": "Running git push",
                },
            },
        )
    ]


def test_a_command_is_the_shell_tool_omnigents_shell_policies_gate() -> None:
    # Every built-in shell policy of omnigent's (github, working_dir, …) gates these names
    # and reads `command`: agy's command meets them (docs/decisions.md §14).
    assert SHELL_TOOL in SHELL_TOOLS
    assert tool_call_data(COMMAND)["arguments"]["command"] == "git push --force"


@pytest.mark.parametrize(
    ("action", "allow_decides", "expected"),
    [
        ("POLICY_ACTION_DENY", False, PolicyAction.DENY),
        ("POLICY_ACTION_ASK", False, PolicyAction.ASK),
        # omnigent answers ALLOW when no policy objects: it does not skip the card...
        ("POLICY_ACTION_ALLOW", False, PolicyAction.ASK),
        # ...unless the executor says an ALLOW from this host is a decision.
        ("POLICY_ACTION_ALLOW", True, PolicyAction.ALLOW),
        ("POLICY_ACTION_UNSPECIFIED", False, PolicyAction.ASK),
        ("POLICY_ACTION_SOMETHING_NEW", True, PolicyAction.ASK),
    ],
)
def test_omnigent_verdicts_map_to_policy_actions(
    action: str, allow_decides: bool, expected: PolicyAction
) -> None:
    host = Host(verdict=PolicyVerdictPayload(action=action, reason="because"))
    verdict = run(host.prompts(host_allow_decides=allow_decides).evaluate_policy(COMMAND))
    assert verdict.action is expected
    if expected is not PolicyAction.ASK:
        assert verdict.reason == "because"


def test_without_a_policy_evaluator_everything_is_left_to_the_rules() -> None:
    verdict = run(Host().prompts(policy_evaluator=None).evaluate_policy(COMMAND))
    assert verdict == PolicyVerdict(PolicyAction.ASK)


def test_paths_and_mcp_tools_are_named_for_the_policy_engine() -> None:
    host = Host()
    prompts = host.prompts()
    run(prompts.evaluate_policy(PermissionRequest(RequestKind.EDIT, paths=("src/a.py",))))
    run(prompts.evaluate_policy(PermissionRequest(RequestKind.MCP, mcp_tool="github/create_pr")))
    assert host.evaluations[0][1] == {
        "name": "edit_file",
        "arguments": {"path": "src/a.py", "paths": ["src/a.py"]},
    }
    assert host.evaluations[1][1] == {"name": "mcp_tool", "arguments": {"tool": "github/create_pr"}}


# --- permission cards ------------------------------------------------------------------------

CARD = PermissionCard(
    call_id="agy:t:5",
    kind=RequestKind.COMMAND,
    subject="git log -n 1",
    command_line="git status && git log -n 1",
    cwd="/work/project",
    action_description="Running git log",
    persist_pattern="git log",
)


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        (ALLOW_ONCE, PermissionAnswer.ALLOW_ONCE),
        (conversation_label("git log"), PermissionAnswer.ALLOW_CONVERSATION),
        (DENY, PermissionAnswer.DENY),  # an answer, delivered: the turn goes on (§1)
        (None, None),  # the card was closed: dismissal
    ],
)
def test_the_permission_card_offers_three_choices_and_maps_them_back(
    chosen: str | None, expected: PermissionAnswer | None
) -> None:
    host = Host(result=picked(chosen))
    assert run(host.prompts().ask_permission(CARD)) == expected
    [params] = host.elicited
    assert card_text(params)[2] == [ALLOW_ONCE, "Allow “git log” for this conversation", DENY]


def test_an_answer_that_is_no_button_is_asked_again_and_never_guessed() -> None:
    # A label we did not offer (or no label at all): never guessed as a permission, and not
    # a dismissal either; the card is shown again saying why, a few times, then counts as
    # closed.
    host = Host(result=picked("Allow everything forever"))
    assert run(host.prompts().ask_permission(CARD)) is None
    assert len(host.elicited) == 5
    again = card_text(host.elicited[1])[1]
    assert "not one of the choices: type a number from 1 to 3" in again
    assert card_text(host.elicited[1])[2] == card_text(host.elicited[0])[2]


def test_the_permission_card_says_in_words_which_command_it_asks_about() -> None:
    host = Host()
    run(host.prompts().ask_permission(CARD))
    title, body, _ = card_text(host.elicited[0])
    assert title == "Choose an option · Antigravity CLI"
    assert body == (
        "Antigravity CLI wants to run “git log -n 1” (part of “git status && git log -n 1”)"
        " in /work/project"
    )


@pytest.mark.parametrize(
    ("card", "body"),
    [
        pytest.param(
            PermissionCard("c", RequestKind.READ, "/etc/hosts", action_description="Reading"),
            "Antigravity CLI wants to read “/etc/hosts”: Reading",
            id="file",
        ),
        pytest.param(
            PermissionCard("c", RequestKind.EDIT, "src/a.py"),
            "Antigravity CLI wants to change “src/a.py”",
            id="edit",
        ),
        pytest.param(
            PermissionCard("c", RequestKind.MCP, "github/create_pr"),
            "Antigravity CLI wants to use the MCP tool “github/create_pr”",
            id="mcp",
        ),
        pytest.param(
            PermissionCard("c", RequestKind.COMMAND, "ls", note="The command changed"),
            "The command changed — Antigravity CLI wants to run “ls”",
            id="asked-again",
        ),
    ],
)
def test_every_kind_of_permission_names_its_subject(card: PermissionCard, body: str) -> None:
    host = Host()
    run(host.prompts().ask_permission(card))
    assert card_text(host.elicited[0])[1] == body


def test_no_card_reads_like_the_adapters_internals() -> None:
    """The adapter's own choice card would say "<label> wants to use **run_command**" under
    "<label>_sdk_permission"; ours never does, for a permission or for a question."""
    host = Host()
    prompts = host.prompts()
    run(prompts.ask_permission(CARD))
    run(prompts.ask_questions(QuestionForm("c", (COLOR,))))
    reference = ExecutorAdapter(executor_factory=lambda: None, harness_label="Antigravity CLI")
    internals = reference._permission_card("run_command", {})
    for params in host.elicited:
        title, body, _ = card_text(params)
        assert "**" not in body
        assert internals.message not in body
        assert internals.policy_name not in title
        assert "run_command" not in body
        assert "ask_question" not in body


def test_a_card_asked_again_offers_the_unscoped_conversation_button() -> None:
    host = Host(result=picked(DENY))
    run(host.prompts().ask_permission(PermissionCard("c", RequestKind.COMMAND, "ls")))
    assert card_text(host.elicited[0])[2][1] == "Allow for this conversation"


def test_without_an_elicit_bridge_a_permission_cannot_be_asked() -> None:
    with pytest.raises(PromptUnavailableError, match="cards"):
        run(Host().prompts(elicit=None).ask_permission(CARD))


# --- questions -------------------------------------------------------------------------------

COLOR = Question(
    "Which color?", (QuestionOption("1", "Red"), QuestionOption("2", "Blue")), multi_select=False
)
CHECKS = Question(
    "Which checks?",
    (QuestionOption("1", "Lint"), QuestionOption("2", "Types"), QuestionOption("3", "Tests")),
    multi_select=True,
)
SURVEY = QuestionForm("agy:t:7", (COLOR, CHECKS))


def test_one_single_select_question_is_a_choice_card_showing_the_question() -> None:
    host = Host(result=picked("Blue"))
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR,))))
    assert got == QuestionAnswers((QuestionAnswer(selected=("2",)),))
    [params] = host.elicited
    assert card_text(params) == (
        "Choose an option · Antigravity CLI",
        "Which color?",
        ["Red", "Blue", WRITE_IN],
    )


def typed(text: str) -> ElicitationResult:
    """What the web posts from the write-in form: its one question's "Type something" text."""
    return ElicitationResult(action="accept", content={"Which color?": text})


def test_the_write_in_button_asks_the_question_again_with_only_a_text_field() -> None:
    host = Host(results=[picked(WRITE_IN), typed("  teal ")])
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR,))))
    assert got == QuestionAnswers((QuestionAnswer(write_in="teal"),))
    _, form = host.elicited
    # The web's ask_user_question form: a question with no options renders its title and the
    # "Type something" field only (read in the web bundle).
    assert is_web_form(form)
    assert form.model_dump()["ask_user_question"]["questions"] == [
        {"id": "Which color?", "question": "Which color?", "options": [], "multiSelect": False}
    ]


def test_a_write_in_that_is_an_options_label_picks_that_option() -> None:
    host = Host(results=[picked(WRITE_IN), typed("Blue")])
    got = run(host.prompts().ask_questions(QuestionForm("c", (COLOR,))))
    assert got == QuestionAnswers((QuestionAnswer(selected=("2",)),))


def test_an_empty_write_in_is_refused_with_a_message_saying_so() -> None:
    host = Host(results=[picked(WRITE_IN), typed("   ")])
    form = QuestionForm("c", (COLOR,))
    got = run(host.prompts().ask_questions(form))
    assert got == QuestionAnswers((QuestionAnswer(write_in=""),))
    problem = answer_problem(form, got)
    assert problem is not None
    assert "empty written answer" in problem
    assert "1 (Red), 2 (Blue)" in problem


def test_a_closed_write_in_form_is_a_dismissal() -> None:
    host = Host(results=[picked(WRITE_IN), ElicitationResult(action="cancel")])
    assert run(host.prompts().ask_questions(QuestionForm("c", (COLOR,)))) is None


def test_an_option_named_like_the_write_in_button_uses_the_form() -> None:
    odd = Question("Pick", (QuestionOption("1", WRITE_IN), QuestionOption("2", "Other")), False)
    host = Host(result=ElicitationResult(action="accept", content={"Pick": WRITE_IN}))
    got = run(host.prompts().ask_questions(QuestionForm("c", (odd,))))
    assert got == QuestionAnswers((QuestionAnswer(selected=("1",)),))
    [params] = host.elicited
    assert is_web_form(params)


def test_a_choice_card_closed_is_a_dismissal_and_a_refusal_is_shown_as_a_note() -> None:
    host = Host(result=picked(None))
    form = QuestionForm("c", (COLOR,), error="question 1 has no option '7'")
    assert run(host.prompts().ask_questions(form)) is None
    assert card_text(host.elicited[0])[1] == "question 1 has no option '7' — Which color?"


def test_duplicate_option_texts_use_the_form_instead_of_buttons() -> None:
    twins = Question("Pick", (QuestionOption("1", "Same"), QuestionOption("2", "Same")), False)
    host = Host(result=ElicitationResult(action="accept", content={"Pick": "Same"}))
    run(host.prompts().ask_questions(QuestionForm("c", (twins,))))
    [params] = host.elicited
    assert is_web_form(params)
    assert params.model_dump()["ask_user_question"]["questions"][0]["question"] == "Pick"


def test_several_questions_go_to_the_ask_user_question_form() -> None:
    host = Host(
        result=ElicitationResult(
            action="accept", content={"Which color?": "Red", "Which checks?": ["Lint", "Tests"]}
        )
    )
    got = run(host.prompts().ask_questions(SURVEY))
    assert got == QuestionAnswers(
        (QuestionAnswer(selected=("1",)), QuestionAnswer(selected=("1", "3")))
    )
    [params] = host.elicited
    dumped = params.model_dump()
    assert dumped["policy_name"] == "Antigravity CLI"  # the receipt's "Submitted · <this>"
    assert dumped["phase"].startswith("agy_")  # the web's header "Antigravity needs your input"
    assert dumped["mode"] == "form"
    # For the terminal REPL, which does not read ask_user_question: a text field per question.
    assert dumped["requestedSchema"] == {
        "type": "object",
        "properties": {
            "1. Which color?": {
                "type": "string",
                "description": "1 = Red · 2 = Blue — one number, or your own words",
            },
            "2. Which checks?": {
                "type": "string",
                "description": (
                    "1 = Lint · 2 = Types · 3 = Tests — numbers, e.g. 1,3, or your own words"
                ),
            },
        },
        "required": ["1. Which color?", "2. Which checks?"],
    }
    assert dumped["ask_user_question"] == {
        "questions": [
            {
                "id": "Which color?",
                "question": "Which color?",
                "options": [{"label": "Red"}, {"label": "Blue"}],
                "multiSelect": False,
            },
            {
                "id": "Which checks?",
                "question": "Which checks?",
                "options": [{"label": "Lint"}, {"label": "Types"}, {"label": "Tests"}],
                "multiSelect": True,
            },
        ]
    }
    # The params survive omnigent's own serialisation round trip (the SSE event body).
    assert ElicitationRequestParams.model_validate(dumped).model_dump() == dumped


def test_the_form_matches_what_omnigent_renders_for_agys_questions() -> None:
    spec = {
        "questions": [
            {
                "question": COLOR.text,
                "options": [{"id": "1", "text": "Red"}, {"id": "2", "text": "Blue"}],
            }
        ]
    }
    oracle = to_elicitation_params(
        {"kind": "ask_question", "trajectory_id": "t", "step_index": 3, "spec": spec}
    )
    host = Host(result=ElicitationResult(action="cancel"))
    form = QuestionForm("c", (COLOR, CHECKS))  # two questions: the form, not buttons
    run(host.prompts().ask_questions(form))
    ours = host.elicited[0].model_dump()["ask_user_question"]["questions"][0]
    theirs = oracle.model_dump()["ask_user_question"]["questions"][0]
    # Only the field differs: omnigent keys it by index, which its receipt then shows ("0  Red").
    assert ours == {**theirs, "id": COLOR.text}


def web_form_reply(params: ElicitationRequestParams, picks: Sequence[Any]) -> dict[str, Any]:
    """The content the web's question form posts, and so its receipt lists ("<key>  <answer>"):
    one entry per question, keyed by the question's `id`, or its text when the id is empty."""
    questions = params.model_dump()["ask_user_question"]["questions"]
    return {(q.get("id") or q["question"]): pick for q, pick in zip(questions, picks, strict=True)}


def test_the_forms_receipt_names_each_question_in_words() -> None:
    host = Host()
    run(host.prompts().ask_questions(SURVEY))
    reply = web_form_reply(host.elicited[0], ["Red", ["Lint", "Tests"]])
    assert reply == {"Which color?": "Red", "Which checks?": ["Lint", "Tests"]}
    host = Host(result=ElicitationResult(action="accept", content=reply))
    answers = run(host.prompts().ask_questions(SURVEY))
    assert answers == QuestionAnswers(
        (QuestionAnswer(selected=("1",)), QuestionAnswer(selected=("1", "3")))
    )


def test_questions_with_the_same_text_are_told_apart_by_number() -> None:
    same = QuestionForm("c", (CHECKS, CHECKS, Question("", (), multi_select=False)))
    host = Host()
    run(host.prompts().ask_questions(same))
    fields = [q["id"] for q in host.elicited[0].model_dump()["ask_user_question"]["questions"]]
    assert fields == ["Question 1", "Question 2", "Question 3"]


@pytest.mark.parametrize(
    "content",
    [
        {"0": "Blue", "1": ["Lint", "Tests"]},
        {"0": "a colour of my own", "1": ["Types", "and docs"]},
        {"0": ["Red"], "1": "Tests"},
    ],
)
def test_answers_map_back_to_the_ids_omnigent_itself_would_send(content: dict[str, Any]) -> None:
    result = ElicitationResult(action="accept", content=content)
    spec = {
        "questions": [
            {"question": q.text, "options": [{"id": o.id, "text": o.text} for o in q.options]}
            for q in SURVEY.questions
        ]
    }
    oracle = to_interaction_payload("ask_question", result, spec)["askQuestion"]["responses"]
    answers = run(Host(result=result).prompts().ask_questions(SURVEY))
    assert answers is not None
    assert answer_problem(SURVEY, answers) is None
    ours = question_payload(SURVEY, answers)["responses"]
    assert [r.get("selectedOptionIds", []) for r in ours] == [
        r["selectedOptionIds"] for r in oracle
    ]
    assert [r.get("writeInResponse") for r in ours] == [r.get("writeInResponse") for r in oracle]


def test_a_label_that_is_no_option_is_the_persons_own_answer() -> None:
    result = ElicitationResult(action="accept", content={"0": "Blue", "1": ["Lint", "only on CI"]})
    answers = run(Host(result=result).prompts().ask_questions(SURVEY))
    assert answers == QuestionAnswers(
        (QuestionAnswer(selected=("2",)), QuestionAnswer(selected=("1",), write_in="only on CI"))
    )


def test_answers_keyed_by_question_text_are_read_too() -> None:
    result = ElicitationResult(
        action="accept", content={"Which color?": "Red", "Which checks?": ["Types"]}
    )
    answers = run(Host(result=result).prompts().ask_questions(SURVEY))
    assert answers == QuestionAnswers(
        (QuestionAnswer(selected=("1",)), QuestionAnswer(selected=("2",)))
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param({"1": ["Lint"]}, "question 1 ('Which color?') has no answer", id="missing"),
        pytest.param({"0": 5, "1": ["Lint"]}, "has no answer", id="a-number"),
        pytest.param({"0": True, "1": ["Lint"]}, "has no answer", id="a-boolean"),
        pytest.param({"0": "", "1": ["Lint"]}, "has no answer", id="empty"),
        pytest.param({"0": ["Red", "Blue"], "1": ["Lint"]}, "takes one option", id="two-for-one"),
        pytest.param(None, "has no answer", id="no-content"),
    ],
)
def test_unusable_content_becomes_an_answer_the_bridge_refuses(
    content: dict[str, Any] | None, problem: str
) -> None:
    result = ElicitationResult(action="accept", content=content)
    answers = run(Host(result=result).prompts().ask_questions(SURVEY))
    assert answers is not None
    found = answer_problem(SURVEY, answers)
    assert found is not None
    assert problem in found
    assert "valid options: 1 (Red), 2 (Blue)" in found


def test_a_declined_form_skips_the_questions_and_a_cancelled_one_is_a_dismissal() -> None:
    # A decline is an answer (docs/decisions.md §1), though omnigent's runner stops the turn
    # on any decline before the harness hears it (docs/in-omnigent.md, "The terminal REPL").
    host = Host(result=ElicitationResult(action="decline"))
    skipped = QuestionAnswers((QuestionAnswer(skipped=True), QuestionAnswer(skipped=True)))
    assert run(host.prompts().ask_questions(SURVEY)) == skipped
    host = Host(result=ElicitationResult(action="cancel"))
    assert run(host.prompts().ask_questions(SURVEY)) is None


def test_the_form_message_carries_the_refusal_and_the_note() -> None:
    host = Host()
    form = QuestionForm("c", SURVEY.questions, error="question 2 has no option '9'", note="changed")
    run(host.prompts(harness_label="Antigravity CLI").ask_questions(form))
    message = host.elicited[0].message
    assert message.startswith("question 2 has no option '9'")
    assert "changed" in message
    assert message.endswith("Antigravity CLI needs your input")


def test_questions_without_an_elicit_bridge_cannot_be_asked() -> None:
    with pytest.raises(PromptUnavailableError, match="questions"):
        run(Host().prompts(elicit=None).ask_questions(SURVEY))


# --- MCP elicitations ------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"repo": {"type": "string"}, "private": {"type": "boolean"}},
    "required": ["repo"],
}
MCP_CARD = ElicitationCard("agy:t:9", "github", "Which repository?", schema=SCHEMA)


def test_an_mcp_elicitation_is_an_mcp_form() -> None:
    host = Host(result=ElicitationResult(action="accept", content={"repo": "a/b", "private": True}))
    answer = run(host.prompts().ask_elicitation(MCP_CARD))
    assert answer == ElicitationAnswer(ElicitationAction.ACCEPT, {"repo": "a/b", "private": True})
    [params] = host.elicited
    assert params.mode == "form"
    assert params.policy_name == "Antigravity CLI"
    assert params.requestedSchema == SCHEMA
    assert "github" in params.message
    assert "Which repository?" in params.message


@pytest.mark.parametrize(
    ("action", "expected"),
    [("decline", ElicitationAnswer(ElicitationAction.DECLINE)), ("cancel", None)],
)
def test_a_declined_mcp_form_is_an_answer_and_a_cancelled_one_a_dismissal(
    action: str, expected: ElicitationAnswer | None
) -> None:
    host = Host(result=ElicitationResult.model_validate({"action": action}))
    assert run(host.prompts().ask_elicitation(MCP_CARD)) == expected


@pytest.mark.parametrize(
    ("card", "why"),
    [
        pytest.param(
            ElicitationCard(
                "c", "s", "m", schema={"type": "object", "properties": {"a": {"type": "object"}}}
            ),
            "field 'a'",
            id="nested-field",
        ),
        pytest.param(
            ElicitationCard("c", "s", "m", schema={"type": "array"}), "flat", id="not-an-object"
        ),
        pytest.param(
            ElicitationCard("c", "s", "m", schema_error="not JSON"), "not JSON", id="bad-json"
        ),
    ],
)
def test_an_mcp_form_that_cannot_be_shown_is_refused_clearly(
    card: ElicitationCard, why: str
) -> None:
    host = Host()
    with pytest.raises(PromptUnavailableError, match=why):
        run(host.prompts().ask_elicitation(card))
    assert not host.elicited


def test_an_mcp_elicitation_without_a_schema_is_a_confirmation() -> None:
    host = Host(result=ElicitationResult(action="accept"))
    answer = run(host.prompts().ask_elicitation(ElicitationCard("c", None, "Proceed?")))
    assert answer == ElicitationAnswer(ElicitationAction.ACCEPT, {})
    assert host.elicited[0].requestedSchema == {"type": "object", "properties": {}}


def test_without_a_form_handler_an_mcp_elicitation_is_refused() -> None:
    with pytest.raises(PromptUnavailableError):
        run(Host().prompts(elicit=None).ask_elicitation(MCP_CARD))
