"""agy's trust dialog as an omnigent choice card, asked before any agy starts (docs/wire.md §9).

The card says what agy's own dialog says — "Accessing workspace: <path>", "Do you trust the
contents of this project?", "Antigravity CLI requires permission to read, edit, and execute
files here." — with agy's two answers as its buttons, and adds what trusting lets agy run:
the workspace's own MCP servers and hooks (docs/decisions.md §11), each what would run first
and in full, then its name, escaped and quoted (``omnigent_agy.agy.workspace_runs``); nothing
is cut. A folder trusted before whose contents changed says so first, naming what changed. The
path is the person's, never the link a hidden workspace is reached through.

"No, exit" is an answer, and so is the web form's "decline" (the terminal REPL's ``n``): the
turn then ends, and nothing starts. Only a card closed without an answer (Stop) is a
dismissal (docs/decisions.md §1: a decline never means cancel for this plugin's cards).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from omnigent.server.schemas import ElicitationRequestParams, ElicitationResult

from omnigent_agy import TrustAnswer, TrustCard, visible
from omnigent_agy.errors import PromptUnavailableError

from .cards import choice_params, with_notes
from .terminal_cards import TRUST_PHASE, trust_phase

__all__ = ["NO_EXIT", "PHASE", "YES_TRUST", "ask_trust", "trust_message", "trust_params"]

YES_TRUST: Final = "Yes, I trust this folder"
NO_EXIT: Final = "No, exit"
PHASE: Final = TRUST_PHASE  # then the folder (`terminal_cards.trust_phase`)
# The terminal REPL's reading of the buttons (its `y` sends the first one, `n` declines).
TERMINAL_HINT: Final = "y: Yes, I trust this folder · n: No, exit (agy does not start)"

_ANSWERS: Final = {YES_TRUST: TrustAnswer.TRUST, NO_EXIT: TrustAnswer.EXIT}


def trust_message(card: TrustCard, *, harness_label: str) -> str:
    """agy's dialog in its own words, then what trusting would start.

    One line: the web shows a card's message as plain text and runs its lines together, so
    the path is set off from the question by a dash.
    """
    text = (
        f"Accessing workspace: {visible(card.workspace)} — Do you trust the contents of this "
        f"project? {harness_label} requires permission to read, edit, and execute files here."
    )
    if card.runs:
        listed = "; ".join(f"({number}) {line}" for number, line in enumerate(card.runs, 1))
        text += f" Trusting it also lets this project make agy run: {listed}."
    return with_notes(text, card.again)


def trust_params(card: TrustCard, *, harness_label: str) -> ElicitationRequestParams:
    """The web's choice card: "Choose an option · <label>", the dialog, agy's two answers."""
    message = trust_message(card, harness_label=harness_label)
    return choice_params(
        message,
        [YES_TRUST, NO_EXIT],
        phase=trust_phase(card),
        harness_label=harness_label,
        terminal_hint=TERMINAL_HINT,
    )


async def ask_trust(
    elicit: Callable[[ElicitationRequestParams], Awaitable[ElicitationResult]] | None,
    card: TrustCard,
    *,
    harness_label: str,
) -> TrustAnswer | None:
    """The person's answer; None when the card was closed unanswered."""
    if elicit is None:
        raise PromptUnavailableError("omnigent installed no elicitation handler for cards")
    result = await elicit(trust_params(card, harness_label=harness_label))
    if result.action == "decline":
        return TrustAnswer.EXIT  # the form's Cancel, the REPL's `n`: an answer, not a dismissal
    if result.action != "accept":
        return None
    content = result.content if isinstance(result.content, Mapping) else {}
    answer = content.get("answer")
    # Anything but the Yes button is not consent: only an explicit yes trusts a folder.
    return _ANSWERS.get(answer, TrustAnswer.EXIT) if isinstance(answer, str) else TrustAnswer.EXIT
