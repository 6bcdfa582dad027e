"""omnigent's web UI in a real browser, with the plugin in the real stack: what a person sees.

Headless Chromium from the system's packages (scripts/_lib.sh `ensure_chromium` installs it
for the suite), driven by Playwright pointed at it (``executable_path``: Playwright's own
browser download is not used). One browser for the module, on the e2e run's one stack; every
test starts its session from the web's new-session page as a person does, and asserts on the
text the page shows. A screenshot of each step goes to ``.artifacts/browser/``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from omnigent.community.harness.agy.cards import WRITE_IN
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from agy_sim.stack.local_stack import LocalStack, agent_name

# One pytest-xdist worker for the file: its browser is started once (tests/conftest.py).
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.tmux,
    pytest.mark.browser,
    pytest.mark.xdist_group("test_browser"),
]

#: Where the shipped agent is offered on omnigent 0.19's new-session page: Agents → Other…,
#: under its name (README, "Where to find it in the web UI").
AGENT_ENTRY = re.compile(r"^Antigravity-CLI\b")
AGENT_DESCRIPTION = "Google's Antigravity CLI (agy), driven over its local language server."
# Turns on agy-sim take seconds; the first one also starts the harness process and agy.
TURN_TIMEOUT_MS = 90_000


def chromium_path() -> str:
    found = os.environ.get("OMNIGENT_AGY_CHROMIUM") or shutil.which("chromium")
    if found:
        return found
    reason = "no chromium: install it (apt-get install chromium) or set OMNIGENT_AGY_CHROMIUM"
    if os.environ.get("CI"):
        pytest.fail(reason)  # CI's set-up installs it: missing there is a defect, not a skip
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def shots(request: pytest.FixtureRequest) -> Path:
    folder = Path(request.config.rootpath) / ".artifacts" / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Screen:
    """One browser page on the stack's web UI, with a numbered screenshot per step."""

    def __init__(self, page: Page, stack: LocalStack, shots: Path, name: str) -> None:
        self.page = page
        self.stack = stack
        self.shots = shots
        self.name = name
        self.step = 0

    def shot(self, what: str) -> None:
        self.step += 1
        self.page.screenshot(path=self.shots / f"{self.name}-{self.step:02d}-{what}.png")

    def open_picker(self) -> Locator:
        """The new-session page with the agent picker open; the picker's menu."""
        self.page.goto(self.stack.url)
        self.page.get_by_test_id("new-chat-landing-agent-select").click()
        return self.page.get_by_role("menu").first

    def new_session(self, text: str) -> None:
        """Pick the shipped agent, type `text` and start the session, as a person does."""
        self.open_picker()
        self.page.get_by_test_id("new-chat-landing-custom-agents").hover()
        self.page.get_by_role("menuitem", name=AGENT_ENTRY).click()
        self.page.get_by_test_id("new-chat-landing-input").fill(text)
        self.shot("typed")
        self.page.get_by_test_id("new-chat-landing-submit").click()

    def open_session(self) -> str:
        """A session of the shipped agent made through the REST API, open on the page."""
        stack = self.stack
        session = stack.client.create_session(
            agent_name(), stack.wait_ready(stack.main), str(stack.workspace)
        )
        self.page.goto(f"{stack.url}/c/{session}")
        return session

    def send(self, text: str) -> None:
        """Type `text` into the open session's composer and send it."""
        box = self.page.get_by_placeholder(re.compile("Send a message"))
        box.fill(text)
        box.press("Enter")

    def card(self) -> Locator:
        card = self.page.locator('[data-testid="approval-card"][data-state="pending"]')
        expect(card).to_be_visible(timeout=TURN_TIMEOUT_MS)
        return card

    def shows(self, text: str | re.Pattern[str]) -> Locator:
        found = self.page.get_by_text(text).last
        expect(found).to_be_visible(timeout=TURN_TIMEOUT_MS)
        return found


@pytest.fixture
def screen(
    browser: Browser, stack: LocalStack, shots: Path, request: pytest.FixtureRequest
) -> Iterator[Screen]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    name = request.node.name.removeprefix("test_")
    try:
        yield Screen(page, stack, shots, name)
    finally:
        page.screenshot(path=shots / f"{name}-last.png")
        context.close()


def test_antigravity_cli_is_offered_where_a_person_picks_the_agent(screen: Screen) -> None:
    screen.open_picker()
    screen.page.get_by_test_id("new-chat-landing-custom-agents").hover()
    entry = screen.page.get_by_role("menuitem", name=AGENT_ENTRY)
    expect(entry).to_be_visible()
    screen.shot("picker")
    # The pointer travels to the entry as a hand does: a jump (`hover()`) can leave the
    # sub-menu's path and close it, as it did on a loaded machine.
    box = entry.bounding_box()
    assert box is not None
    screen.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=20)
    # Its harness, by the label the plugin gives it, is on the entry itself.
    expect(entry).to_contain_text("Antigravity CLI")


def test_the_agent_editor_offers_antigravity_cli_and_shows_the_description(
    screen: Screen,
) -> None:
    # Settings → Custom agents → the agent: omnigent edits only agent folders (config.yaml),
    # which is also the only shape whose description it keeps.
    screen.page.goto(f"{screen.stack.url}/settings/custom-agents")
    screen.page.get_by_text(AGENT_ENTRY).first.click()
    form = screen.page.get_by_role("form", name="Agent configuration")
    expect(form).to_be_visible(timeout=30_000)
    harness = form.get_by_label("Harness")
    expect(harness).to_have_value("agy-cli")
    expect(harness.locator("option:checked")).to_have_text("Antigravity CLI")
    expect(form.get_by_label("Description")).to_have_value(AGENT_DESCRIPTION)
    screen.shot("editor")


def test_a_typed_message_streams_its_answer_onto_the_page(screen: Screen) -> None:
    screen.new_session("Say hello in one short sentence.")
    expect(screen.page.get_by_text("Say hello in one short sentence.").first).to_be_visible()
    screen.shows(re.compile(r"Hello from the agy simulator"))
    screen.shot("answer")


def test_an_approval_card_clicked_runs_the_command_and_shows_its_output(screen: Screen) -> None:
    screen.new_session("Please run: echo hi from the browser")
    card = screen.card()
    # The card itself names the command in words, with agy's three answers as buttons.
    expect(card).to_contain_text("Antigravity CLI wants to run “echo hi from the browser”")
    expect(card).not_to_contain_text("**")
    expect(card).not_to_contain_text("sdk_permission")
    for button in ("Allow once", "for this conversation", "Deny"):
        expect(card.get_by_role("button", name=re.compile(button))).to_be_visible()
    screen.shot("card")
    card.get_by_role("button", name="Allow once").click()
    screen.shows("echo hi from the browser finished with exit code 0")
    screen.shot("output")
    expect(screen.page.get_by_text("hi from the browser", exact=True).last).to_be_visible()


def test_a_question_card_is_answered_by_clicking_an_option(screen: Screen) -> None:
    screen.new_session("Ask me a question")
    card = screen.card()
    expect(card).to_contain_text("Which color should the button be?")
    expect(card).not_to_contain_text("ask_question")
    screen.shot("question")
    card.get_by_role("button", name="Blue").click()
    screen.shows("Which color should the button be? → Blue")
    screen.shot("answered")


def test_a_multi_select_form_is_answered_and_its_receipt_names_the_question(
    screen: Screen,
) -> None:
    screen.new_session("multi-select please")
    card = screen.card()
    expect(card).to_contain_text("Which checks should I run?")
    card.get_by_label("Lint", exact=True).check()
    card.get_by_label("Unit tests", exact=True).check()
    screen.shot("form")
    card.get_by_test_id("ask-user-question-submit").click()
    screen.shows(re.compile(r"Thanks! Your answers"))
    # The answered card sits in the turn's collapsed "Worked for …" group: open it.
    screen.page.get_by_text(re.compile(r"^Worked for")).last.click()
    receipt = screen.page.locator('[data-testid="approval-card"][data-state="responded"]').last
    expect(receipt).to_be_visible()
    screen.shot("receipt")
    # The receipt reads "<question>  <answers>", not a field number.
    expect(receipt).to_contain_text("Which checks should I run?")
    expect(receipt).to_contain_text("Lint, Unit tests")
    expect(receipt).to_contain_text(re.compile(r"Submitted\s*· Antigravity CLI"))


def test_a_long_answer_arrives_part_by_part_and_stop_stops_it(screen: Screen) -> None:
    screen.new_session("Give me a long answer")
    screen.shows(re.compile(r"Part 2 of a long simulated answer"))
    # Streamed: its start is on the page while its end (part 120, a minute away) is not.
    last_part = screen.page.get_by_text(re.compile(r"Part 120 of a long"))
    expect(last_part).to_have_count(0)
    screen.shot("streaming")
    # The composer's red square while a turn runs (its title is "Interrupt").
    screen.page.get_by_title("Interrupt").click()
    screen.shows(re.compile(r"Interrupted"))
    screen.shot("stopped")
    expect(last_part).to_have_count(0)


def test_a_written_answer_is_typed_into_the_card_and_reaches_agy(screen: Screen) -> None:
    screen.new_session("Ask me a write-in question")
    card = screen.card()
    expect(card).to_contain_text("What should the new module be called?")
    for option in ("utils", "helpers"):
        expect(card.get_by_role("button", name=option, exact=True)).to_be_visible()
    screen.shot("question")
    card.get_by_role("button", name=WRITE_IN).click()
    # The question again with only a text field: whatever is typed is the answer.
    form = screen.card()
    expect(form).to_contain_text("What should the new module be called?")
    expect(form.get_by_role("button", name="utils", exact=True)).to_have_count(0)
    screen.shot("form")
    form.get_by_role("textbox").first.fill("toolbox")
    screen.shot("typed-answer")
    form.get_by_test_id("ask-user-question-submit").click()
    screen.shows("What should the new module be called? → “toolbox”")
    screen.shot("answered")
    # Nothing is left waiting: the sidebar's "Needs response" goes once the page catches up.
    expect(screen.page.get_by_text("Needs response")).to_have_count(0, timeout=30_000)
    screen.shot("settled")


def test_the_model_and_effort_picked_in_the_composer_reach_agy_on_the_next_turn(
    screen: Screen,
) -> None:
    page = screen.page
    screen.new_session("Say hello in one short sentence.")
    screen.shows("Hello from the agy simulator (Gemini 3 Pro (High))")
    # The composer's menu: the agent's entry opens the effort choices (omnigent 0.19 lists
    # models there only for its own harnesses; `/model <slug>` picks agy's model, README).
    page.get_by_test_id("composer-config-gear").click()
    page.get_by_test_id("composer-agent-edit").hover()
    efforts = page.get_by_test_id("composer-agent-efforts")
    for level in ("Low", "Medium", "High"):
        expect(efforts.get_by_text(level, exact=True)).to_be_visible()
    screen.shot("efforts")
    page.get_by_test_id("composer-agent-effort-low").click()
    box = page.get_by_placeholder(re.compile("Send a message"))
    box.fill("/model gemini-3-1-pro-high")
    box.press("Enter")
    screen.shows("model changed to gemini-3-1-pro-high")
    box.fill("Say hello again.")
    box.press("Enter")
    # The slug's base model at the effort picked: agy's own display name in its answer.
    screen.shows("Hello from the agy simulator (Gemini 3.1 Pro (Low)). You said: Say hello again.")
    expect(page.get_by_test_id("composer-config-gear")).to_contain_text("Low")
    screen.shot("next-turn")


def test_a_turn_refused_for_quota_says_on_its_failure_when_the_quota_resets(
    screen: Screen,
) -> None:
    """Quota shows in the web only where it cannot mislead: the failure of the turn it ended
    (docs/wire.md §9), with the group and when it resets, in UTC and how far away."""
    screen.new_session("Please use up my quota.")
    headline = screen.page.get_by_test_id("error-headline").last
    expect(headline).to_have_text("agy's quota for this model is used up", timeout=TURN_TIMEOUT_MS)
    screen.shot("failed")
    headline.click()  # the disclosure: what happened and what to do
    screen.shows(re.compile(r"the quota of Gemini is used up"))
    screen.shows(
        re.compile(r"It resets at \d\d:\d\d UTC on \w{3} \d{1,2} \w{3} \(in 2 h \d+ min\)")
    )
    screen.shot("details")
