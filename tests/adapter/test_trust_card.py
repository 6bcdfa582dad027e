"""agy's trust dialog as omnigent's choice card (docs/wire.md §9, docs/decisions.md §11).

The card is shown through `OmnigentPrompts` with a recording stand-in for the adapter's elicit
bridge; what it receives and returns are omnigent's own schema classes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from omnigent.community.harness.agy.omnigent_prompts import OmnigentPrompts
from omnigent.community.harness.agy.trust_card import NO_EXIT, YES_TRUST
from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy.errors import PromptUnavailableError
from omnigent_agy.interactions.prompts import TrustAnswer, TrustCard

CARD = TrustCard(
    "/home/me/repo/.worktrees/feature",
    ('runs "sh -c \'touch pwned\'" — MCP server "tools"', 'runs "./lint" — hook "Stop"'),
)


def ask(result: ElicitationResult) -> tuple[TrustAnswer | None, ElicitationRequestParams]:
    shown: list[ElicitationRequestParams] = []

    async def elicit(params: ElicitationRequestParams) -> ElicitationResult:
        shown.append(params)
        return result

    prompts = OmnigentPrompts(policy_evaluator=None, elicit=elicit)
    answer = asyncio.run(prompts.ask_trust(CARD))
    (params,) = shown
    return answer, params


def test_the_card_says_what_agys_dialog_says_with_its_two_answers() -> None:
    _, params = ask(ElicitationResult(action="accept", content={"answer": YES_TRUST}))
    assert params.message == (
        "Accessing workspace: /home/me/repo/.worktrees/feature — Do you trust the contents of "
        "this project? Antigravity CLI requires permission to read, edit, and execute files "
        "here. Trusting it also lets this project make agy run: "
        '(1) runs "sh -c \'touch pwned\'" — MCP server "tools"; (2) runs "./lint" — hook "Stop".'
    )
    assert params.requestedSchema is not None
    assert params.requestedSchema["properties"]["answer"]["enum"] == [
        "Yes, I trust this folder",
        "No, exit",
    ]
    # A phase per folder: the terminal REPL's `a` (approve always) never trusts another one.
    assert (params.phase or "").startswith("agy_cli_trust · /home/me/repo/.worktrees/feature")
    assert params.policy_name == "Antigravity CLI"


def test_without_servers_the_card_is_agys_dialog_alone() -> None:
    async def elicit(params: ElicitationRequestParams) -> ElicitationResult:
        assert params.message.endswith("execute files here.")
        assert "MCP" not in params.message
        return ElicitationResult(action="accept", content={"answer": NO_EXIT})

    prompts = OmnigentPrompts(policy_evaluator=None, elicit=elicit)
    assert asyncio.run(prompts.ask_trust(TrustCard("/w"))) is TrustAnswer.EXIT


@pytest.mark.parametrize(
    ("action", "content", "answer"),
    [
        ("accept", {"answer": YES_TRUST}, TrustAnswer.TRUST),
        ("accept", {"answer": NO_EXIT}, TrustAnswer.EXIT),
        # The form's Cancel and the terminal REPL's `n` send decline: an answer, "No".
        ("decline", None, TrustAnswer.EXIT),
        # Only an explicit yes is consent: anything else answered counts as No.
        ("accept", {"answer": "yes"}, TrustAnswer.EXIT),
        ("accept", {"answer": 1}, TrustAnswer.EXIT),
        ("accept", {}, TrustAnswer.EXIT),
        # Closed without an answer (Stop): a dismissal.
        ("cancel", None, None),
    ],
)
def test_each_reply_reads_as_agys_answer(
    action: str, content: dict[str, Any] | None, answer: TrustAnswer | None
) -> None:
    assert ask(ElicitationResult(action=action, content=content))[0] is answer


def test_without_an_elicitation_bridge_the_card_cannot_be_shown() -> None:
    prompts = OmnigentPrompts(policy_evaluator=None, elicit=None)
    with pytest.raises(PromptUnavailableError):
        asyncio.run(prompts.ask_trust(CARD))
