"""The demo's script played on the shared stack: what it prints must not mislead a newcomer."""

from __future__ import annotations

import io

import pytest

from agy_sim.stack.demo import play_script
from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def section(text: str, title: str) -> list[str]:
    """The lines of the step titled `title` (up to the next step)."""
    part = text.split(f"== {title}", 1)[1].split("\n== ", 1)[0]
    return part.splitlines()


def test_the_demo_shows_what_the_web_ui_shows(stack: LocalStack) -> None:
    out = io.StringIO()
    assert play_script(stack, out), out.getvalue()
    text = out.getvalue()
    assert "**" not in text, "raw markdown on screen"
    assert "tokens in" in text

    allowed = section(text, "A command agy must ask about: you allow it")
    assert any("you answer: Allow once" in line for line in allowed)
    assert any("[tool output] hello from omnigent-agy" in line for line in allowed)

    denied = section(text, "A command you deny")
    pressed = next(i for i, line in enumerate(denied) if "you answer: Deny" in line)
    after = denied[pressed:]
    assert not [line for line in after if "[tool output]" in line], "reads as if it ran"
    assert any("[not run]" in line for line in after)

    question = section(text, "agy asks you a question")
    card = "\n".join(question)
    assert "Red" in card
    assert "Blue" in card
    assert "Green" in card

    stop = section(text, "The Stop button, pressed during a long answer")
    pressed = next(i for i, line in enumerate(stop) if "[you press] Stop" in line)
    ended = next(i for i, line in enumerate(stop) if "-- stopped" in line)
    assert pressed < ended
    assert not [line for line in stop[pressed + 1 : ended] if line.strip()], "text after Stop"
