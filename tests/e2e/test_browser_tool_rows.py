"""agy's tool calls as rows of omnigent's web UI, read in a real browser (docs/in-omnigent.md,
"Tool rows").

A command reads as the command, a file read as "Read <path>", a listing as a listing, the way
omnigent's web shows its own tools, where they read as ``run_command({"command_line": …})``
before; the row's parameters still name agy's own tool. Screenshots go to
``.artifacts/browser/``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import Screen, browser, screen, shots  # noqa: F401

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]


def open_folds(view: Screen) -> None:
    """Open every turn's collapsed "Worked for …" group, where its tool rows are."""
    folds = view.page.get_by_test_id("turn-worked-fold")
    for index in range(folds.count()):
        fold = folds.nth(index).get_by_role("button").first
        if fold.get_attribute("aria-expanded") != "true":
            fold.click()
        expect(fold).to_have_attribute("aria-expanded", "true")


@pytest.mark.timeout(600)  # three turns, agy's start among them
def test_agys_commands_reads_and_listings_read_like_omnigents_own_tools(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
) -> None:
    screen.open_session()
    page = screen.page
    screen.send("Please run: echo rows in the browser")
    screen.card().get_by_role("button", name="Allow once").click()
    screen.shows("echo rows in the browser finished with exit code 0")
    screen.send("Please read README.md")
    screen.shows(re.compile(r"I read README\.md"))
    screen.send("list the files")
    screen.shows("Those are the files in the workspace.")
    # The page as it loads a finished conversation (a live turn's end redraws its group).
    page.reload()
    screen.shows("Those are the files in the workspace.")
    open_folds(screen)
    # omnigent sums each turn's calls up by their names, as it does its own tools'.
    for summary in ("Ran 1 shell command", "Read 1 file", "Listed 1 directory"):
        expect(page.get_by_text(summary, exact=True)).to_be_visible()
    screen.shot("summaries")
    readme = stack.workspace / "README.md"
    page.get_by_text("Read 1 file", exact=True).click()
    expect(page.get_by_text(f"Read {readme}", exact=True)).to_be_visible()
    # The command is its row's title, as omnigent's own shell tool's is.
    page.get_by_text("Ran 1 shell command", exact=True).click()
    row = page.get_by_text("echo rows in the browser", exact=True).first
    expect(row).to_be_visible()
    screen.shot("rows")
    body = page.inner_text("body")
    for raw in ("run_command(", "view_file(", "list_directory("):
        assert raw not in body, f"a raw row is still shown: {raw}"
    # The one group omnigent's web leaves unnamed is omnigent's own sys_session_rename, with
    # which the session takes agy's title after its first turn (docs/in-omnigent.md, "Titles").
    assert body.count("Called 1 tool") <= 1, "a raw row is still shown: Called 1 tool"
    # The row's parameters keep agy's own name for the call.
    row.click()
    expect(page.get_by_text(re.compile(r'"agy_tool":\s*"run_command"')).first).to_be_visible()
    screen.shot("parameters")
