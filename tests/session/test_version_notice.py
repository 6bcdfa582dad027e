"""The first-turn notice's bookkeeping (session/version_notice.py): what it says for each thing
`agy --version` may give, and that a conversation is asked once. The whole path, agy-sim and
the harness app included, is tests/adapter/test_untested_agy_turn.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.reading.events import TextDelta
from omnigent_agy.session.version_notice import NOTICE_TRAJECTORY, VersionNotice


class Reader:
    """`agy --version` as a function: what it answers in turn, and how often it was asked."""

    def __init__(self, *answers: str | Exception | None) -> None:
        self.answers = list(answers)
        self.asked = 0

    def __call__(self) -> str | None:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def turn(notice: VersionNotice) -> TextDelta | None:
    async def go() -> TextDelta | None:
        notice.begin()
        return await notice.text("cascade-1")

    return asyncio.run(go())


@pytest.fixture
def state(tmp_path: Path) -> SessionStateDir:
    return SessionStateDir.open("conv_1", base=tmp_path / "state")


def test_an_untested_version_is_said_once_ahead_of_agys_text(state: SessionStateDir) -> None:
    read = Reader("1.6.0")
    notice = VersionNotice(state, read)
    said = turn(notice)
    assert said is not None
    assert said.key.trajectory_id == NOTICE_TRAJECTORY  # never one of agy's steps
    assert (said.offset, said.text.startswith("(omnigent-agy: this agy is 1.6.0")) == (0, True)
    assert turn(notice) is None
    # Another harness process on the same conversation: the record says it was checked.
    assert turn(VersionNotice(state, read)) is None
    assert read.asked == 1


@pytest.mark.parametrize("answer", ["1.5.16", "1.2.14", None, "Antigravity CLI"])
def test_nothing_is_said_of_a_tested_or_unreadable_version(
    state: SessionStateDir, answer: str | None
) -> None:
    read = Reader(answer)
    assert turn(VersionNotice(state, read)) is None
    assert turn(VersionNotice(state, read)) is None
    assert read.asked == 1


def test_a_failed_reading_costs_nothing_and_is_tried_again(state: SessionStateDir) -> None:
    read = Reader(OSError("agy vanished"), "1.6.0")
    notice = VersionNotice(state, read)
    assert turn(notice) is None
    assert turn(notice) is not None
    assert read.asked == 2


def test_a_reading_no_turn_waited_for_is_the_next_turns(state: SessionStateDir) -> None:
    """A turn that failed before it read the version (agy would not start) leaves the reading
    to the next turn, whatever its event loop: it is not read twice."""
    read = Reader("1.6.0")
    notice = VersionNotice(state, read)
    notice.begin()  # then the turn failed: nothing awaited it
    assert turn(notice) is not None
    assert read.asked == 1


def test_without_a_reader_nothing_is_checked(state: SessionStateDir) -> None:
    assert turn(VersionNotice(state, None)) is None
