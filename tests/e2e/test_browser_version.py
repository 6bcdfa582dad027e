"""An agy outside the tested versions, in a real browser on the real stack: the first turn's
answer starts with the plugin's notice, once, and the turn goes on (docs/onboarding.md).

The stack is the module's own (the e2e run's shared one runs agy-sim as the default 1.5.16):
its agy is agy-sim run as 1.6.0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES
from playwright.sync_api import expect

# test_browser's fixtures (the module's browser, a page per test, its screenshots folder).
from test_browser import TURN_TIMEOUT_MS, Screen, browser, screen, shots  # noqa: F401

from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import TEST_SIMULATOR, LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]

NOTICE = re.compile(r"omnigent-agy: this agy is 1\.6\.0, and omnigent-agy is tested with agy")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """A stack of this module's whose agy is agy-sim as agy 1.6.0."""
    root = tmp_path_factory.mktemp("stack-1.6")
    agy = write_simulator(root / "agy-bin", {**TEST_SIMULATOR, "AGY_SIM_VERSION": "1.6.0"})
    (root / "stack" / "workspace").mkdir(parents=True)
    (root / "stack" / "workspace" / "README.md").write_text("# a project\n")
    env = {**os.environ, "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR") or str(root / "tmux")}
    Path(env["TMUX_TMPDIR"]).mkdir(exist_ok=True)
    catalogs = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((FIXTURES / "omnigent_catalog").glob("*.json"))
    }
    with LocalStack(root / "stack", agy, base_env=env, model_catalog=catalogs) as running:
        yield running


@pytest.mark.timeout(600)  # omnigent's start, agy's start and two turns
def test_the_first_turn_on_an_untested_agy_says_so_once(
    screen: Screen,  # noqa: F811 - test_browser's fixture, imported above
) -> None:
    screen.open_session()
    screen.send("hello")
    screen.shows(re.compile(r"You said: hello"))
    notice = screen.shows(NOTICE)
    expect(notice).to_contain_text("omnigent-agy probe")
    screen.shot("notice")
    screen.send("hello again")
    screen.shows(re.compile(r"You said: hello again"))
    expect(screen.page.get_by_text(NOTICE)).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    screen.shot("once")
