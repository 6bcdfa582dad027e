"""agy's sub-agents in omnigent's web UI, read in a real browser (docs/in-omnigent.md,
"Sub-agents").

agy-sim's sub-agent turn starts one child cascade that lists the workspace and reports. The
session's page lists the sub-agent as a child row under its role; opening it shows what it
was asked (the task), the tool call it made (read as the parent's own calls read) and what it
reported (the summary). A screenshot
of each step goes to ``.artifacts/browser/``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

ROLE = "Workspace Surveyor"
TASK = "Survey the workspace and report what is there."
SUMMARY = "The workspace is listed; nothing else to report."


def test_a_sub_agent_shows_its_task_its_tool_calls_and_its_summary(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    screen.open_session()
    page = screen.page
    screen.send("Please use a sub-agent to look around.")
    screen.shows(f"The sub-agent reported: {SUMMARY}")
    # The transcript marks the sub-agent's start with a link to its child session, named by
    # the child's key: the sub-agent's role and the start of its cascade id, never the bare id.
    started = page.get_by_role("link", name=re.compile(rf"^{ROLE} · [0-9a-f]{{8}}$")).first
    expect(started).to_be_visible(timeout=TURN_TIMEOUT_MS)
    # The parent's own call that started it reads as omnigent's sub-agent row (tool_rows),
    # naming the role and the task, not as `invoke_subagent({"subagents": …})`.
    worked = page.get_by_test_id("turn-worked-fold").first
    worked.get_by_role("button").first.click()
    worked.get_by_role("button", name="Called 1 tool").click()  # how the web sums a `Task` up
    expect(worked).to_contain_text(re.compile(rf"Sub-agent:\s*{ROLE} — {re.escape(TASK)}"))
    assert "invoke_subagent(" not in page.inner_text("body"), "the parent's call is shown raw"
    screen.shot("row")
    started.click()
    expect(page.get_by_text(ROLE).first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    # The child session: the task it was given, the call it made, what it reported.
    expect(page.get_by_text(TASK).first).to_be_visible(timeout=TURN_TIMEOUT_MS)
    fold = page.get_by_test_id("turn-worked-fold").first.get_by_role("button").first
    fold.click()  # the turn's tool calls
    expect(fold).to_have_attribute("aria-expanded", "true")
    # The call reads as the parent's own listing would (tool_rows), not as a raw row.
    page.get_by_text("Listed 1 directory", exact=True).first.click()
    expect(page.get_by_text(SUMMARY).first).to_be_visible()
    screen.shot("child")
    body = page.inner_text("body")
    for raw in ("List workspace(", "list_directory(", "Called 1 tool"):
        assert raw not in body, f"the sub-agent's call is shown raw: {raw}"


def test_a_sub_agent_that_asks_gets_a_card_naming_it_and_the_parent_answers(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    """agy 1.5.15+ (agy-sim from `--sim-version 1.5.15`): the sub-agent's own command waits on
    its own cascade; the card says which sub-agent asks, the command's output reaches the
    sub-agent's row, and the parent's answer follows."""
    screen.open_session()
    page = screen.page
    screen.send("Please use a sub-agent to run: echo hello from the researcher")
    card = screen.card()
    expect(card).to_contain_text(
        "Antigravity CLI's sub-agent “Researcher” wants to run “echo hello from the researcher”"
    )
    screen.shot("card")
    card.get_by_role("button", name="Allow once").click()
    answer = "The sub-agent reported:"  # then the command, its exit code and its output
    screen.shows(answer)
    # The chat's marks name the sub-agent by its role, not by agy's cascade id.
    started = page.get_by_role("link", name=re.compile(r"^Researcher · [0-9a-f]{8}$")).first
    expect(started).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("subagent-activity").last).to_contain_text("Completed Researcher")
    screen.shot("answered")
    body = page.inner_text("body")
    assert not re.search(r"Started [0-9a-f]{8}-", body), "a mark names the cascade id"
    # One render of the answer: the sub-agent's end is said after the answer is closed
    # (docs/in-omnigent.md, "Sub-agents"), so the "Completed" mark lands after it.
    assert body.count(answer) == 1, "the parent's answer is shown more than once"
    assert body.index(answer) < body.index("Completed Researcher")
    started.click()
    # The child session: what it was asked (its own first input), the command, its report.
    task = page.get_by_text("run: echo hello from the researcher", exact=True).first
    expect(task).to_be_visible(timeout=TURN_TIMEOUT_MS)
    # Its summary (its own last answer) carries the command's output.
    expect(page.get_by_text(re.compile("finished with exit code 0")).last).to_be_visible()
    expect(page.get_by_text("hello from the researcher", exact=True).last).to_be_visible()
    screen.shot("child")
