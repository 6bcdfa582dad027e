"""The agy record's read-modify-write updates exclude each other, in threads and processes.

`omnigent-agy stop` marks a record stopped while a harness may be writing agy's new port into
it; each wrote what it had read before, so the later write undid the earlier one.
Every update now goes through `SessionStateDir.update_record`, under the record's lock.
"""

from __future__ import annotations

import multiprocessing
import threading
from dataclasses import replace
from pathlib import Path

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir

PROCESSES = 4
THREADS = 4
ROUNDS = 40
START_PORT = 20000


def _record() -> AgyRecord:
    return AgyRecord(
        pid=4242,
        pid_create_time=1.0,
        port=START_PORT,
        csrf_token="record-test-token",
        tmux_socket="agy-record-test",
        tmux_session="omnigent-agy-record-test",
        log_file="/dev/null",
    )


def _bump(base: str) -> None:
    """ROUNDS updates of the port by one, from THREADS threads of this process."""
    state = SessionStateDir.open("record-updates", base=Path(base))

    def rounds() -> None:
        for _ in range(ROUNDS):
            state.update_record(lambda record: replace(record, port=record.port + 1))

    threads = [threading.Thread(target=rounds) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_no_update_is_lost_between_threads_and_processes(tmp_path: Path) -> None:
    state = SessionStateDir.open("record-updates", base=tmp_path)
    state.write_record(_record())
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_bump, args=(str(tmp_path),)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    record = state.read_record()
    assert record is not None
    assert record.port == START_PORT + PROCESSES * THREADS * ROUNDS


def test_a_stop_mark_survives_port_updates_made_at_the_same_time(tmp_path: Path) -> None:
    state = SessionStateDir.open("record-updates", base=tmp_path)
    state.write_record(_record())
    go = threading.Barrier(THREADS + 1)

    def moved(record: AgyRecord) -> AgyRecord:
        # As the harness does when agy's port moves: never for a stopped agy.
        if record.stopped_at is not None or record.port is None:
            return record
        return replace(record, port=record.port + 1)

    def moves() -> None:
        go.wait()
        for _ in range(ROUNDS):
            state.update_record(moved)

    threads = [threading.Thread(target=moves) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    go.wait()
    state.update_record(lambda record: record.as_stopped("stopped by a test", 5.0))
    for thread in threads:
        thread.join()
    record = state.read_record()
    assert record is not None
    assert record.stopped_at == 5.0
    assert record.port is None


def test_no_record_no_write(tmp_path: Path) -> None:
    state = SessionStateDir.open("record-updates", base=tmp_path)
    assert state.update_record(lambda record: replace(record, port=1)) is None
    assert state.read_record() is None
