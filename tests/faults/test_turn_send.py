"""A turn's message reaches agy exactly once, also when the call carrying it fails.

SendUserCascadeMessage is not idempotent: sent twice, agy runs the turn twice. When the call
fails on the way, the session reads agy's steps to learn whether the message arrived and
sends it again only if it did not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from faultmix import USER_INPUT, HarnessConversation, conversation_after_a_turn

pytestmark = pytest.mark.tmux

SEND = "SendUserCascadeMessage"


@pytest.fixture
def talk(tmp_path: Path) -> Iterator[HarnessConversation]:
    with conversation_after_a_turn(tmp_path) as conversation:
        yield conversation


def _said(talk: HarnessConversation, text: str) -> int:
    return sum(
        s.get("type") == USER_INPUT and s["userInput"].get("userResponse") == text
        for s in talk.steps()
    )


@pytest.mark.parametrize(
    ("fault", "what"),
    [
        ({"kind": "http_error", "method": SEND, "status": 503, "times": 1}, "never arrived"),
        ({"kind": "drop_stream", "method": SEND, "times": 1}, "arrived, answer lost"),
        ({"kind": "garbage", "method": SEND, "times": 1}, "arrived, answer garbled"),
    ],
    ids=["503", "answer-cut", "garbage"],
)
def test_a_failed_send_delivers_the_message_exactly_once(
    talk: HarnessConversation, fault: dict[str, object], what: str
) -> None:
    talk.set_faults([fault])
    harness = talk.harness
    assert harness is not None
    text = f"the message that {what}"
    turn = harness.turn(text)
    turn.until("response.completed", timeout=30)
    assert "response.failed" not in turn.kinds()
    assert _said(talk, text) == 1
    assert text in turn.text()
