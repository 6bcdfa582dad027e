"""agy's own screen in omnigent's web UI, read and typed into in a real browser.

The shipped agent declares one terminal, ``agy`` (``omnigent-agy attach``, docs/in-omnigent.md).
omnigent 0.19's web offers a declared terminal under the right panel's "Open new" menu, where
it reads "Shell (agy)"; the pane shows one line until the conversation's first message starts
agy, then agy's own screen: its ready line and the turn's text. What is typed there reaches
agy: `/model` switches the model of the next web turn, `/clear` moves the session to agy's new
conversation and the next web message is answered there.

xterm.js draws on a canvas, so the pane's text is read from its buffer (tests/e2e/xterm_text.js
walks React's fiber to the terminal the page shows). Screenshots go to ``.artifacts/browser/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401
from waiting import wait_until

from agy_sim.stack.local_stack import LocalStack
from omnigent_agy.agy.tmux_attach import NOT_STARTED

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

#: How omnigent 0.19's "Open new" menu names the agent's declared terminal `agy`.
SHELL_ENTRY = "Shell (agy)"
_READ_PANE = (Path(__file__).with_name("xterm_text.js")).read_text(encoding="utf-8")


class Pane:
    """The browser's terminal pane: its text as xterm.js holds it, and keys typed into it."""

    def __init__(self, page: Page) -> None:
        self.page = page
        # The right panel's pane; the Terminal view's (omnigent's own REPL) is kept hidden.
        self.terminal: Locator = page.locator(".xterm:visible").first

    def text(self) -> str:
        return str(self.terminal.evaluate(_READ_PANE) or "")

    def shows(self, pattern: str, what: str) -> str:
        # The pane wraps long lines at its width: match on the text with the wraps undone.
        return str(
            wait_until(
                lambda: re.search(pattern, self.text().replace("\n", ""), re.MULTILINE),
                timeout=TURN_TIMEOUT_MS / 1000,
                what=f"{what} in the browser's agy pane",
            )
        )

    def type(self, line: str) -> None:
        self.terminal.click()
        self.page.keyboard.type(line)
        self.page.keyboard.press("Enter")


@pytest.mark.timeout(600)  # four turns, agy's start among them
def test_agys_screen_is_in_the_browser_and_what_is_typed_there_reaches_agy(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    screen.open_session()
    page = screen.page
    # Where a person finds it: the right panel's "Open new", the first shell there.
    page.get_by_label("Expand right panel").click()
    page.get_by_label("Open new").click()
    entries = page.get_by_role("menuitem")
    expect(entries.filter(has_text=re.compile(r"^Shell"))).to_have_count(1)
    expect(entries.filter(has_text=re.compile(r"^Shell")).first).to_contain_text(SHELL_ENTRY)
    screen.shot("open-new")
    entries.filter(has_text=SHELL_ENTRY).click()
    pane = Pane(page)
    # Before the first message there is no agy: one line says so.
    pane.shows(re.escape(NOT_STARTED), "the waiting line")
    screen.shot("waiting")

    screen.send("Say hello from the web")
    screen.shows(re.compile(r"Hello from the agy simulator \(Gemini 3 Pro \(High\)\)"))
    # The same turn on agy's own screen: its ready line, the message, the answer.
    pane.shows(r"\[ready\] conversation [0-9a-f-]{36}", "agy-sim's ready line")
    pane.shows(r"> Say hello from the web", "the web's message")
    pane.shows(r"You said: Say hello from the web", "the turn's answer")
    screen.shot("agys-screen")
    # The browser's answer to the tmux client's question is not typed into agy (it showed as
    # `^[[>0;276;0c` on agy's first line: omnigent_agy/agy/own_pty.py).
    assert "^[" not in pane.text(), f"a terminal answer typed into agy: {pane.text()[:200]!r}"

    # /model typed in agy's screen: the next web turn runs on that model.
    pane.type("/model Gemini 3.1 Pro (Low)")
    pane.shows(r"\[model\] Gemini 3\.1 Pro \(Low\)", "agy's model switch")
    screen.send("Which model now?")
    screen.shows(re.compile(r"\(Gemini 3\.1 Pro \(Low\)\)\. You said: Which model now\?"))
    screen.shot("model")

    # /clear typed there: the next web message goes to agy's new conversation.
    before = re.findall(r"conversation ([0-9a-f-]{36})", pane.text().replace("\n", ""))
    pane.type("/clear")
    pane.shows(r"\[cleared\]", "agy's /clear")
    screen.send("After the clear")
    screen.shows(re.compile(r"You said: After the clear"))
    after = re.findall(r"conversation ([0-9a-f-]{36})", pane.text().replace("\n", ""))
    assert after[-1] != before[-1], "agy's screen shows no new conversation after /clear"
    assert "^[" not in pane.text()
    screen.shot("cleared")
