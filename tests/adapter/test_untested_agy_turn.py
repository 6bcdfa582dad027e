"""An agy outside the tested versions, through the real harness app: the first turn of a
conversation says so once, ahead of agy's answer, and goes on (session/version_notice.py).

agy-sim runs as the version in question, a separate process started by the executor as a
real agy would be.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harnessproc import runner_env
from omnigent.community.harness.agy.app import create_app

from agy_sim.stack.harness_server import HarnessServer
from agy_sim.versions import DEFAULT_VERSION
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.session.version_notice import NOTICE_FILE

pytestmark = pytest.mark.tmux

NOTICE = (
    "(omnigent-agy: this agy is 1.6.0, and omnigent-agy is tested with agy 1.2.x to 1.5.x "
    "only. It may work; if something looks wrong, run `omnigent-agy probe` to check this agy "
    "against what the plugin relies on, and `pip install -U omnigent-agy`.)"
)


@pytest.fixture
def agy_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim_version: str
) -> Iterator[dict[str, str]]:
    with runner_env(tmp_path, monkeypatch, sim_version) as values:
        yield values


def checked(env: dict[str, str], conversation: str) -> object:
    state = SessionStateDir.open(conversation, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    return json.loads((state.path / NOTICE_FILE).read_text())["version"]


@pytest.mark.parametrize("sim_version", ["1.6.0"])
def test_an_untested_agy_is_said_once_per_conversation(agy_env: dict[str, str]) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as harness:
        first = harness.turn("hello")
        first.until("response.completed")  # a notice, never a refusal
        text = first.text()
        assert text.startswith(NOTICE + "\n\nHello from the agy simulator"), text
        second = harness.turn("hello again")
        second.until("response.completed")
        assert "omnigent-agy:" not in second.text()
    assert checked(agy_env, conversation) == "1.6.0"
    # Another harness process on the same conversation does not say it again.
    with HarnessServer(create_app(), conversation) as respawned:
        third = respawned.turn("and once more")
        third.until("response.completed")
        assert third.text().startswith("Hello from the agy simulator"), third.text()


def test_a_tested_agy_is_not_remarked_on(agy_env: dict[str, str], sim_version: str) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as harness:
        turn = harness.turn("hello")
        turn.until("response.completed")
        assert turn.text().startswith("Hello from the agy simulator"), turn.text()
    assert sim_version == DEFAULT_VERSION
    assert checked(agy_env, conversation) == DEFAULT_VERSION
