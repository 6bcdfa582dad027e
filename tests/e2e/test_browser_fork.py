"""A forked omnigent session goes on with the conversation in agy too, read in a real browser
(docs/in-omnigent.md, "Forks and imports").

A session tells agy the person's name; omnigent forks it (as the web's "Fork" does, through
its REST API). The fork's agy is a new one that never had the conversation: the plugin carries
the earlier messages to it once, in a block that says what it is, so asked "what did I say"
on the fork's page agy answers with the first session's message, and the next turn does not
carry them again. A screenshot of each step goes to ``.artifacts/browser/``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from stack import Conversation, agy_record, typed_text, user_inputs
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401
from test_browser_meter import off_the_page

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

FIRST = "My name is Ada and I like lighthouses."
MARK = "[omnigent-agy: this conversation began before you had it"


def test_a_forked_session_carries_its_history_into_the_forks_new_agy_once(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    client = stack.client
    stack.wait_ready(stack.main)
    with Conversation(stack) as first:
        assert first.say(FIRST)["type"] == "response.completed"
        first.idle()  # a person forks a conversation that has finished its turn
    source = first.id
    fork = str(client.post(f"/v1/sessions/{source}/fork", {})["id"])
    # Bound to the source's runner, as omnigent's clients do after a fork (routes_core.py).
    client.update(fork, runner_id=client.session(source)["runner_id"])
    page = screen.page
    page.goto(f"{stack.url}/c/{fork}")
    expect(page.get_by_text(FIRST).first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    box = page.get_by_placeholder(re.compile("Send a message"))
    box.fill("What did I say before?")
    box.press("Enter")
    screen.shows(re.compile(r"Earlier you said:"))
    items = page.get_by_role("listitem")  # agy's answer is a list, the web renders it so
    expect(items.filter(has_text=FIRST).last).to_be_visible()
    screen.shot("fork-remembers")
    # The fork shows the first session's answer once: no turn ran again in the fork.
    assert page.inner_text("body").count(f"You said: {FIRST}") == 1, "an answer shown twice"
    box.fill("And what did I say?")
    box.press("Enter")
    expect(items.filter(has_text="What did I say before?").last).to_be_visible(
        timeout=TURN_TIMEOUT_MS
    )
    screen.shot("next-turn")
    # agy's side: a new agy conversation; the block in its first message only.
    assert agy_record(stack.main, fork).cascade_id != agy_record(stack.main, source).cascade_id
    typed = off_the_page(lambda: [typed_text(s) for s in user_inputs(stack.main, fork)])
    assert typed[0].startswith(MARK)
    assert FIRST in typed[0]
    assert typed[1] == "And what did I say?"
