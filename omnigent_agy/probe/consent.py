"""Asking before the probe spends a turn: each turn is one call to agy's model, on the
person's quota.

Interactive (a terminal on stdin): one question per turn, ``[y/N/a/q]`` (a: this and the rest,
q: none of the rest). ``--yes`` agrees to every turn, ``--no-turns`` to none; without a terminal
and without ``--yes`` no turn is spent. Restarting agy on a copy of the conversation costs no
turn but takes as long as agy's start, so it is asked the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from omnigent_agy.probe.turn_checks import PLANS

__all__ = ["RESUME", "Choice", "choose"]

RESUME: Final = "resume"
_RESUME_SHOWS: Final = (
    "agy started again on a copy of the conversation with --conversation (no turn; about "
    "as long as agy's start)"
)


@dataclass(frozen=True, slots=True)
class Choice:
    turns: tuple[str, ...]
    resume: bool
    declined: str
    """What the report says of a turn that was not run."""


def choose(
    *,
    yes: bool,
    no_turns: bool,
    interactive: bool,
    ask: Callable[[str], str],
    say: Callable[[str], None],
) -> Choice:
    """The turns to run; `ask` shows a question and returns the answer (EOFError: no)."""
    names = [plan.name for plan in PLANS]
    if no_turns:
        return Choice((), False, "not run: --no-turns")
    if yes:
        return Choice(tuple(names), True, "")
    if not interactive:
        return Choice((), False, "not run: no terminal to ask (run with --yes to spend turns)")
    say(
        "The probe can also send agy short turns. Each one is a call to agy's model and uses "
        "your quota."
    )
    items = [(plan.name, plan.shows) for plan in PLANS] + [(RESUME, _RESUME_SHOWS)]
    chosen: list[str] = []
    rest: bool | None = None
    for name, shows in items:
        if rest is None:
            answer = _ask(ask, f"  {name}: {shows}? [y/N/a=all/q=none] ")
            if answer in ("a", "all"):
                rest = True
            elif answer in ("q", "none", "quit"):
                rest = False
            if answer in ("y", "yes"):
                chosen.append(name)
                continue
        if rest:
            chosen.append(name)
    turns = tuple(name for name in chosen if name != RESUME)
    return Choice(turns, RESUME in chosen, "not run: you did not agree to spend this turn")


def _ask(ask: Callable[[str], str], question: str) -> str:
    try:
        return ask(question).strip().lower()
    except EOFError:
        return "q"
