"""Through the real harness: no failure, event or log line carries agy's CSRF token.

agy-sim's hostile ``echo_headers`` fault (docs/simulator.md) answers with errors that repeat
the request's headers, the token among them. A turn whose message cannot be sent fails with
a coded failure (errors.py); a turn whose reads fail a few times recovers; the
failure event, every SSE event, the harness's log records at DEBUG and the exceptions logged
with them are searched for the token (and its head, for texts clipped inside it).
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultmix import HarnessConversation, conversation_after_a_turn

pytestmark = pytest.mark.tmux

HEAD = 8
READS = ("GetCascadeTrajectorySteps", "GetAllCascadeTrajectories", "StreamAgentStateUpdates")


@pytest.fixture
def talk(tmp_path: Path) -> Iterator[HarnessConversation]:
    with conversation_after_a_turn(tmp_path) as conversation:
        yield conversation


def _everything(talk: HarnessConversation, events: list[dict[str, object]], log: str) -> list[str]:
    return [*(json.dumps(event) for event in events), *talk.seen, log]


def _assert_no_token(token: str, texts: list[str]) -> None:
    for text in texts:
        assert token not in text, text
        assert token[:HEAD] not in text, text


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    # The records' messages and the exceptions logged with them, chained causes included.
    errors = [r.exc_info[1] for r in caplog.records if r.exc_info and r.exc_info[1]]
    return "\n".join([caplog.text, *("".join(traceback.format_exception(e)) for e in errors)])


def test_a_send_answered_with_echoed_headers_fails_without_the_token(
    talk: HarnessConversation, caplog: pytest.LogCaptureFixture
) -> None:
    token = talk.record().csrf_token
    harness = talk.harness
    assert harness is not None
    talk.set_faults([{"kind": "echo_headers", "method": "SendUserCascadeMessage", "status": 500}])
    with caplog.at_level(logging.DEBUG):
        turn = harness.turn("this message meets a hostile server")
        failed = turn.until("response.failed", timeout=60)
    talk.set_faults([])
    assert "fault echo_headers on SendUserCascadeMessage" in talk.log()
    assert "[redacted]" in _log_text(caplog) + json.dumps(failed)
    _assert_no_token(token, _everything(talk, turn.events, _log_text(caplog)))


def test_reads_answered_with_echoed_headers_recover_without_the_token(
    talk: HarnessConversation, caplog: pytest.LogCaptureFixture
) -> None:
    token = talk.record().csrf_token
    harness = talk.harness
    assert harness is not None
    talk.set_faults(
        [{"kind": "echo_headers", "method": method, "status": 503, "times": 2} for method in READS]
    )
    with caplog.at_level(logging.DEBUG):
        turn = harness.turn("tell me something while the reads fail")
        turn.until("response.completed", timeout=60)
    talk.set_faults([])
    assert "fault echo_headers on" in talk.log()
    _assert_no_token(token, _everything(talk, turn.events, _log_text(caplog)))
