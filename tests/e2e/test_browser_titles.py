"""A session's title is agy's title for its conversation, read in a real browser
(docs/in-omnigent.md, "Titles").

agy-sim titles a conversation by the first line of its first message (docs/simulator.md); a
first message of two lines makes a title omnigent's own (the message cut short) cannot be. The
session's header and the sidebar read agy's title once the first turn ends.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

TITLE = "Fix the login form"


@pytest.mark.timeout(600)  # agy's start and one turn
def test_the_session_is_titled_by_agys_title_for_its_conversation(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    session = screen.open_session()
    page = screen.page
    screen.send(f"{TITLE}\nIt rejects passwords that contain a space.")
    screen.shows(re.compile(r"Hello from the agy simulator"))
    expect(page.get_by_test_id("header-title")).to_have_text(TITLE, timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("sidebar-conversation-list")).to_contain_text(TITLE)
    screen.shot("title")
    assert stack.client.session(session)["title"] == TITLE
