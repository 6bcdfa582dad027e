"""The probe spends a turn only when the person agreed to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from omnigent_agy.probe.consent import RESUME, Choice, choose
from omnigent_agy.probe.turn_checks import PLANS

ALL = tuple(plan.name for plan in PLANS)


def _answers(*given: str) -> Iterator[str]:
    yield from given
    raise EOFError


def _choose(
    *given: str, interactive: bool = True, yes: bool = False, no_turns: bool = False
) -> tuple[Choice, list[str]]:
    asked: list[str] = []
    answers = _answers(*given)

    def ask(question: str) -> str:
        asked.append(question)
        return next(answers)

    choice = choose(
        yes=yes, no_turns=no_turns, interactive=interactive, ask=ask, say=lambda _: None
    )
    return choice, asked


def test_yes_spends_every_turn_without_asking() -> None:
    choice, asked = _choose(yes=True)
    assert choice == Choice(ALL, True, "")
    assert asked == []


def test_no_turns_and_no_terminal_spend_none() -> None:
    choice, asked = _choose(no_turns=True)
    assert (choice.turns, choice.resume, asked) == ((), False, [])
    choice, asked = _choose("y", interactive=False)
    assert (choice.turns, asked) == ((), [])
    assert "--yes" in choice.declined


def test_one_question_per_turn_default_no() -> None:
    choice, asked = _choose("y", "", "n", "yes", "n", "N", "y")
    assert choice.turns == ("plain", "question")
    assert choice.resume is True
    assert len(asked) == len(PLANS) + 1
    assert all(q.rstrip().endswith("[y/N/a=all/q=none]") for q in asked)


@pytest.mark.parametrize(
    ("given", "turns", "resume"),
    [
        (("n", "a"), ALL[1:], True),
        (("y", "q"), ("plain",), False),
        (("y",), ("plain",), False),  # the input ends: no to the rest
        ((), (), False),
    ],
)
def test_all_none_and_end_of_input(
    given: tuple[str, ...], turns: tuple[str, ...], resume: bool
) -> None:
    choice, _ = _choose(*given)
    assert (choice.turns, choice.resume) == (turns, resume)
    assert RESUME not in choice.turns
