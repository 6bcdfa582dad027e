"""The opt-in timing log (omnigent_harness_agy/timing.py): what bench_scale.py splits a
delta's latency with, so it must note every answer chunk the harness hands omnigent and
never fail a turn."""

from __future__ import annotations

import json
import logging
import multiprocessing
import time
from pathlib import Path

import pytest
from harnessproc import harness_server, runner_env
from omnigent.community.harness.agy.timing import TIMING_LOG_ENV, TimingLog
from omnigent.inner.executor import ReasoningChunk, TextChunk


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_unset_notes_nothing(tmp_path: Path) -> None:
    log = TimingLog.from_env({})
    log.handed(lambda: "conv", TextChunk(text="hello"))
    assert list(tmp_path.iterdir()) == []


def test_the_session_is_asked_only_for_a_chunk_that_is_noted(tmp_path: Path) -> None:
    asked: list[str] = []

    def session() -> str:
        asked.append("conv")
        return "conv"

    TimingLog.from_env({}).handed(session, TextChunk(text="hello"))  # the log unset
    log = TimingLog.from_env({TIMING_LOG_ENV: str(tmp_path / "handed.jsonl")})
    log.handed(session, ReasoningChunk(delta="thinking", event_type="reasoning_text"))
    assert asked == []  # the hot path pays nothing for the log it does not keep
    log.handed(session, TextChunk(text="hello"))
    log.close()
    assert asked == ["conv"]


def test_answer_chunks_are_noted_with_the_clock_the_session_and_their_length(
    tmp_path: Path,
) -> None:
    path = tmp_path / "handed.jsonl"
    log = TimingLog.from_env({TIMING_LOG_ENV: str(path)})
    before = time.monotonic_ns()
    log.handed(lambda: "conv-1", TextChunk(text="héllo"))
    log.handed(lambda: "conv-1", ReasoningChunk(delta="thinking", event_type="reasoning_text"))
    log.handed(lambda: "conv-1", TextChunk(text=" there"))
    log.close()
    noted = lines(path)
    assert [(n["session"], n["chars"]) for n in noted] == [("conv-1", 5), ("conv-1", 6)]
    stamps = [int(str(n["ns"])) for n in noted]
    assert before <= stamps[0] <= stamps[1] <= time.monotonic_ns()
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_relative_path_is_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        log = TimingLog.from_env({TIMING_LOG_ENV: "handed.jsonl"})
        log.handed(lambda: "conv", TextChunk(text="hello"))
    assert list(tmp_path.iterdir()) == []
    assert f"ignoring {TIMING_LOG_ENV}='handed.jsonl': not an absolute path" in caplog.text


def test_a_file_that_cannot_be_written_is_warned_about_once_and_the_turn_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "no such folder" / "handed.jsonl"
    log = TimingLog.from_env({TIMING_LOG_ENV: str(path)})
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            log.handed(lambda: "conv", TextChunk(text="hello"))  # raises nothing
    warnings = [r for r in caplog.records if TIMING_LOG_ENV in r.getMessage()]
    assert len(warnings) == 1
    assert "No such file or directory" in warnings[0].getMessage()


def _write_many(path: str, session: str, count: int) -> None:
    log = TimingLog.from_env({TIMING_LOG_ENV: path})
    for index in range(count):
        log.handed(lambda: session, TextChunk(text="x" * (index % 97 + 1)))
    log.close()


def test_many_harness_processes_share_one_file_without_tearing_a_line(tmp_path: Path) -> None:
    path = tmp_path / "handed.jsonl"
    writers = [
        multiprocessing.get_context("spawn").Process(
            target=_write_many, args=(str(path), f"conv-{n}", 2_000)
        )
        for n in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    noted = lines(path)  # a torn line would not parse
    for n in range(4):
        mine = [int(str(x["chars"])) for x in noted if x["session"] == f"conv-{n}"]
        assert mine == [index % 97 + 1 for index in range(2_000)]


@pytest.mark.tmux
def test_a_real_turn_notes_every_chunk_of_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "handed.jsonl"
    with runner_env(tmp_path, monkeypatch):
        monkeypatch.setenv(TIMING_LOG_ENV, str(path))
        with harness_server() as harness:
            turn = harness.turn("Say hello in one short sentence.")
            turn.until("response.completed")
            noted = lines(path)
            assert {n["session"] for n in noted} == {harness.conversation_id}
            assert sum(int(str(n["chars"])) for n in noted) == len(turn.text())
            assert len(noted) > 1, "the answer arrives in several chunks"
