"""A conversation a person had with agy in a terminal goes on in omnigent.

agy-sim runs as a person runs agy: in a terminal of its own, outside omnigent, on its own
gemini folder, and the person types a turn into its screen. `omnigent-agy conversations` lists
it; `omnigent-agy conversations open` makes a session on the stack's server and prints its URL;
the page at that URL shows where the conversation stood, and the next message typed there goes
to agy started on a private copy of the conversation (in a folder the person's own agy
trusts, so no card asks): agy answers from the earlier turns, and the person's own store is
not touched, though their agy still runs on it. Screenshots go to ``.artifacts/browser/``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from agy_store import tree_digest
from playwright.sync_api import expect
from simproc import FAST, SimLauncher, sim_launcher
from stack import agy_record, typed_text, user_inputs

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401
from waiting import wait_until

from agy_sim.stack.local_stack import LocalStack
from omnigent_agy.agy.conversation_store import read_conversations
from omnigent_agy.agy.statedir import SessionStateDir

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

CLI = Path(sys.executable).with_name("omnigent-agy")
FIRST = "Remember the word apricot."


def omnigent_agy(stack: LocalStack, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as the person runs it on the host's machine (its HOME, its state)."""
    return subprocess.run(
        [str(CLI), *args],
        env=stack.main.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def person_trusts(stack: LocalStack, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A project the person used agy in: their own agy settings trust it (they answered agy's
    dialog there) and the survey is off; the settings file is put back afterwards."""
    folder = stack.root / "terminal-project" / request.node.name
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("# started in a terminal\n")
    settings = person_gemini(stack) / "antigravity-cli" / "settings.json"
    kept = settings.read_text() if settings.exists() else None
    values = json.loads(kept) if kept else {}
    values["trustedWorkspaces"] = [*values.get("trustedWorkspaces", []), str(folder)]
    values["showFeedbackSurvey"] = False
    settings.write_text(json.dumps(values))
    try:
        yield folder
    finally:
        if kept is None:
            settings.unlink()
        else:
            settings.write_text(kept)


def person_gemini(stack: LocalStack) -> Path:
    return Path(stack.main.env["HOME"]) / ".gemini"


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path, prefix="agy-terminal") as launcher:
        yield launcher


@pytest.mark.timeout(480)  # the stack's start, two agys' and the browser's
def test_a_terminal_conversation_goes_on_in_the_browser(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
    sims: SimLauncher,
    person_trusts: Path,
) -> None:
    folder = person_trusts
    # The person's agy, in their own terminal, on their own agy folder (the one the host's
    # harness seeds from); omnigent's operator does not list the project.
    gemini = person_gemini(stack)
    terminal = sims.launch(*FAST, "--gemini_dir", str(gemini), workspace=folder)
    terminal.type(FIRST)
    terminal.wait_screen(f"You said: {FIRST}", timeout=60)
    listed = wait_until(
        lambda: read_conversations(gemini).conversations,
        timeout=30,
        what="agy's list to name the conversation",
    )
    (conversation,) = listed
    cid = conversation.conversation_id
    store = gemini / "antigravity-cli"
    before = tree_digest(store)

    shown = omnigent_agy(stack, "conversations")
    assert shown.returncode == 0, shown.stderr
    assert cid in shown.stdout
    assert FIRST in shown.stdout
    assert str(folder) in shown.stdout

    host = stack.wait_ready(stack.main)
    opened = omnigent_agy(
        stack, "conversations", "open", cid[:8], "--server", stack.url, "--host", host
    )
    assert opened.returncode == 0, opened.stderr
    url = re.search(rf"{re.escape(stack.url)}/c/(\S+)", opened.stdout)
    assert url is not None, opened.stdout
    session = url.group(1)
    assert f"agy may work in {folder}: trusted by" in opened.stdout  # the person's own agy

    page = screen.page
    page.goto(url.group(0))
    screen.shows(re.compile(f"Continued from your agy conversation “{re.escape(FIRST)}”"))
    screen.shows(re.compile(f"Where it stopped: .*You said: {re.escape(FIRST)}"))
    screen.shot("opened")

    box = page.get_by_placeholder(re.compile("Send a message"))
    box.fill("What did I say before?")
    box.press("Enter")
    screen.shows("Earlier you said:")
    # agy's answer, rendered as a list: the message typed in the terminal, from agy's history.
    recalled = page.get_by_role("listitem").filter(has_text=FIRST).last
    expect(recalled).to_be_visible(timeout=TURN_TIMEOUT_MS)
    screen.shot("continued")

    # agy went on with that very conversation, on the session's own copy of it, and got only
    # the new message (the summary item never reached it).
    record = agy_record(stack.main, session)
    assert record.cascade_id == cid
    # (agy is asked from a thread of its own: Playwright's loop runs in this one.)
    with ThreadPoolExecutor(1) as asker:
        steps = asker.submit(user_inputs, stack.main, session).result(timeout=60)
    said = [typed_text(step) for step in steps]
    assert said == [FIRST, "What did I say before?"]
    # The person's own agy and its store are untouched: another agy never wrote there.
    assert tree_digest(store) == before
    assert terminal.pid != record.pid


@pytest.mark.timeout(480)
def test_a_conversation_agy_no_longer_knows_is_said_in_the_browser(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
    stack: LocalStack,
    sims: SimLauncher,
    person_trusts: Path,
) -> None:
    """The session's copy of the conversation is gone before its first message (agy then
    starts without it): the answer begins with a note saying so and what agy has instead."""
    gemini = person_gemini(stack)
    earlier = {c.conversation_id for c in read_conversations(gemini).conversations}
    terminal = sims.launch(*FAST, "--gemini_dir", str(gemini), workspace=person_trusts)
    terminal.type(FIRST)
    terminal.wait_screen(f"You said: {FIRST}", timeout=60)
    (conversation,) = wait_until(
        lambda: [
            c for c in read_conversations(gemini).conversations if c.conversation_id not in earlier
        ],
        timeout=30,
        what="agy's list to name the new conversation",
    )
    cid = conversation.conversation_id
    host = stack.wait_ready(stack.main)
    opened = omnigent_agy(
        stack, "conversations", "open", cid[:8], "--server", stack.url, "--host", host
    )
    assert opened.returncode == 0, opened.stderr
    url = re.search(rf"{re.escape(stack.url)}/c/(\S+)", opened.stdout)
    assert url is not None, opened.stdout
    copy = SessionStateDir.open(url.group(1), base=stack.main.state_dir).gemini_dir
    gone = [entry for entry in (copy / "antigravity-cli").rglob(f"*{cid}*") if entry.is_dir()]
    assert gone, "the session holds no copy of the conversation"
    for entry in gone:
        shutil.rmtree(entry)

    page = screen.page
    page.goto(url.group(0))
    screen.shows(re.compile("your next message here goes on from it"))
    box = page.get_by_placeholder(re.compile("Send a message"))
    box.fill("Where were we?")
    box.press("Enter")
    screen.shows("A new agy conversation began.")
    screen.shows(re.compile(f"could not go on from its conversation {re.escape(cid)}"))
    screen.shows("omnigent carried this session's 1 earlier message to it")
    screen.shows("You said:")  # agy's own answer, after the note
    screen.shot("resume-refused")
