"""The rows benchmarks/compare.py reads off the web page itself, in headless Chromium.

Debian's chromium, driven by Playwright pointed at it (`OMNIGENT_AGY_CHROMIUM`, else
`chromium` on PATH), as the browser tests drive it (tests/e2e/test_browser.py). One page per
conversation; a screenshot of each step goes to `.artifacts/compare/`. Without a chromium
the rows say so instead of a finding.

"agy's own screen in the Terminal view": what a person finds when they look for agy's
screen on the conversation's page — the header's Terminal view, then the right panel's
"Open new" menu and a shell it offers for agy — and whether agy's screen is there (agy-sim's
ready line, `[ready] conversation <id>`, or agy's idle footer). omnigent 0.19 fills the
Terminal view of a harness that is not one of its own native ones with its REPL, whose
terminal runs in the agent's sandbox (bubblewrap by default: on a machine without `bwrap`
that view has no terminal at all). xterm.js draws on a canvas, so a pane's text is
read from its buffer (tests/e2e/xterm_text.js).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from compare_drive import FAILS, WORKS, Cell
from playwright.sync_api import sync_playwright
from stack import Conversation

from agy_sim.screen import IDLE_FOOTER
from agy_sim.stack.local_stack import LocalStack

REPO = Path(__file__).resolve().parents[1]
SHOTS = REPO / ".artifacts" / "compare"
READ_PANE = (REPO / "tests" / "e2e" / "xterm_text.js").read_text(encoding="utf-8")
READY = re.compile(r"\[ready\] conversation [0-9a-f-]{36}")
#: agy's idle footer under its composer (agy-sim draws it as agy does, docs/simulator.md),
#: for a screen whose ready line has scrolled away.
FOOTER = re.compile(rf"^{re.escape(IDLE_FOOTER)}", re.MULTILINE)
#: What omnigent 0.19's Terminal view says when the session has no terminal to show.
NO_TERMINAL = "The harness is not running."
AGYS_SCREEN = "agy's own screen in the Terminal view"


def chromium() -> str | None:
    return os.environ.get("OMNIGENT_AGY_CHROMIUM") or shutil.which("chromium")


class WebPages:
    """A headless Chromium for the run; `terminal_row` reads one conversation's page."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.missing: str | None = None
        self._playwright: Any = None
        self._browser: Any = None

    def __enter__(self) -> WebPages:
        executable = chromium()
        if executable is None:
            self.missing = "no chromium (apt-get install chromium, or OMNIGENT_AGY_CHROMIUM)"
            return self
        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(executable_path=executable, headless=True)
        SHOTS.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._browser is not None:
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()

    def terminal_row(self, conversation: Conversation, key: str) -> Cell:
        """Where agy's screen is on the page of `conversation` (greeted: agy runs)."""
        if self._browser is None:
            return Cell("not driven", self.missing or "no browser")
        context = self._browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        try:
            page.goto(f"{self.stack.url}/c/{conversation.id}")
            seen = [f"the Terminal view: {_terminal_view(page)}"]
            page.screenshot(path=SHOTS / f"{key}-terminal-view.png")
            entries, shell = _open_new(page)
            page.screenshot(path=SHOTS / f"{key}-open-new.png")
            if shell is None:
                seen.append(f"'Open new' offers {entries or 'nothing'}")
            else:
                shown = _agys_screen(page) or "no agy screen"
                seen.append(f"'Open new' → {shell!r}: {shown}")
                page.screenshot(path=SHOTS / f"{key}-shell.png")
        finally:
            context.close()
        note = "; ".join(seen)
        return Cell(WORKS if "agy's screen" in note else FAILS, note)


def _visible_panes(page: Any) -> list[str]:
    panes = page.locator(".xterm:visible")
    return [str(panes.nth(i).evaluate(READ_PANE) or "") for i in range(panes.count())]


def _agys_screen(page: Any, timeout: float = 30.0) -> str | None:
    """'agy's screen' once a visible pane shows agy-sim's ready line or agy's idle footer;
    else what the panes show."""
    deadline = time.monotonic() + timeout
    texts: list[str] = []
    while time.monotonic() < deadline:
        texts = _visible_panes(page)
        if any(READY.search(t.replace("\n", "")) or FOOTER.search(t) for t in texts):
            return "agy's screen"
        time.sleep(0.5)  # a page's look, not a test's synchronisation
    lines = [line.strip() for text in texts for line in text.splitlines() if line.strip()]
    return f"a terminal showing {' / '.join(lines[:2])[:80]!r}" if lines else None


def _terminal_view(page: Any) -> str:
    toggle = page.get_by_role("button", name=re.compile(r"^Terminal")).first
    deadline = time.monotonic() + 30
    while "starting" in str(toggle.get_attribute("aria-label")) and time.monotonic() < deadline:
        time.sleep(0.5)
    toggle.click()
    shown = _agys_screen(page, timeout=20)
    if shown is not None:
        return shown
    if page.get_by_text(NO_TERMINAL).count():
        return f"{NO_TERMINAL!r} (no terminal in the session)"
    if page.get_by_test_id("terminal-starting-up").count():
        return "'Starting up…', no terminal after 20 s"
    return "nothing"


def _open_new(page: Any) -> tuple[list[str], str | None]:
    """The right panel's "Open new" entries, and the one that opens agy's screen, clicked."""
    page.get_by_role("button", name="Chat view").click()
    page.get_by_label("Expand right panel").click()
    page.get_by_label("Open new").click()
    items = page.get_by_role("menuitem")
    entries = [text.split("\n")[0] for text in items.all_inner_texts()]
    shell = next((entry for entry in entries if "agy" in entry.lower()), None)
    if shell is not None:
        items.filter(has_text=shell).first.click()
    else:
        page.keyboard.press("Escape")
    return entries, shell
