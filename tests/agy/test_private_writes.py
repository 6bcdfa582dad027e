"""Private files written by many writers at once: threads of one process and several processes.

`write_private_file` is how every private state file is replaced (the agy record, the activity
lease, the relay's tools file, agy's seeded settings). Two writers of one file at once are
normal: a turn's lease and the reader's, a turn and a steer, two harness processes of one
conversation while omnigent replaces one. Each write must be whole and one writer's: a reader
never sees a mix or a half, no writer fails, nothing is left beside the file, and the file ends
as the last write of one of the writers (with one temp name per process, 8 threads
writing 300 times each failed 1,325 of 2,400 writes).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from omnigent_agy.agy.statedir import write_private_file

THREADS = 8
WRITES = 300
PROCESSES = 4
PROCESS_THREADS = 3
PROCESS_WRITES = 150


def payload(writer: str, sequence: int) -> str:
    """A document that tells whether it is whole: its body's digest is inside it, and the
    body's length differs per write so a mix of two writes cannot pass."""
    body = f"{writer}:{sequence}:" * (50 + sequence % 97)
    digest = hashlib.sha256(body.encode()).hexdigest()
    return json.dumps({"writer": writer, "sequence": sequence, "body": body, "digest": digest})


def whole(text: str) -> tuple[str, int]:
    """The writer and sequence of a whole document; AssertionError for anything else."""
    document = json.loads(text)
    assert hashlib.sha256(document["body"].encode()).hexdigest() == document["digest"]
    return str(document["writer"]), int(document["sequence"])


class Reader(threading.Thread):
    """Reads the file over and over while the writers run; keeps the first bad read."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.done = threading.Event()
        self.reads = 0
        self.bad: str | None = None

    def run(self) -> None:
        while not self.done.is_set():
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue  # before the first write
            try:
                whole(text)
            except (AssertionError, ValueError, KeyError) as exc:
                self.bad = f"{type(exc).__name__}: {text[:80]!r}"
                return
            self.reads += 1


def run_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def worker(index: int) -> None:
        start.wait()
        try:
            work(index)
        except BaseException as exc:  # every failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def assert_settled(path: Path, last_writes: set[tuple[str, int]]) -> None:
    """Whole, private, one writer's last write, and no temp file left beside it."""
    assert whole(path.read_text(encoding="utf-8")) in last_writes
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_many_threads_write_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "activity.json"
    reader = Reader(path)
    reader.start()
    failures: list[str] = []

    def write_all(index: int) -> None:
        for sequence in range(WRITES):
            try:
                write_private_file(path, payload(f"t{index}", sequence))
            except OSError as exc:
                failures.append(f"{type(exc).__name__}: {exc}")

    errors = run_threads(THREADS, write_all)
    reader.done.set()
    reader.join()
    assert not errors, errors[:3]
    assert not failures, f"{len(failures)} of {THREADS * WRITES} writes failed: {failures[:3]}"
    assert reader.bad is None, reader.bad
    assert_settled(path, {(f"t{i}", WRITES - 1) for i in range(THREADS)})


WRITER = """
import sys, threading
from pathlib import Path
sys.path.insert(0, {tests!r})
from agy.test_private_writes import payload
from omnigent_agy.agy.statedir import write_private_file
path, name = Path(sys.argv[1]), sys.argv[2]
threads, writes = int(sys.argv[3]), int(sys.argv[4])
start = threading.Barrier(threads)
failed = []
def work(index):
    start.wait()
    for sequence in range(writes):
        try:
            write_private_file(path, payload(f"{{name}}.{{index}}", sequence))
        except OSError as exc:
            failed.append(f"{{type(exc).__name__}}: {{exc}}")
workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
[w.start() for w in workers]
[w.join() for w in workers]
print(len(failed), failed[:3])
sys.exit(1 if failed else 0)
"""


def test_several_processes_and_their_threads_write_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "agy.json"
    script = WRITER.format(tests=str(Path(__file__).parents[1]))
    reader = Reader(path)
    reader.start()
    argv = [str(PROCESS_THREADS), str(PROCESS_WRITES)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), f"p{n}", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    reader.done.set()
    reader.join()
    assert [p.returncode for p in processes] == [0] * PROCESSES, outputs
    assert reader.bad is None, reader.bad
    assert reader.reads > 0
    last = {
        (f"p{n}.{i}", PROCESS_WRITES - 1) for n in range(PROCESSES) for i in range(PROCESS_THREADS)
    }
    assert_settled(path, last)


def test_a_failed_write_leaves_the_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agy.json"
    write_private_file(path, payload("before", 0))

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_private_file(path, payload("after", 0))
    assert_settled(path, {("before", 0)})


def test_a_symlink_in_the_files_place_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    (tmp_path / "state").mkdir()
    path = tmp_path / "state" / "agy.json"
    path.symlink_to(target)
    write_private_file(path, payload("ours", 1))
    assert target.read_text() == "theirs"
    assert not path.is_symlink()
    assert_settled(path, {("ours", 1)})


@pytest.mark.parametrize("durable", [True, False])
def test_a_durable_write_reaches_the_disk_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    """The file's data, then its folder (the rename), are flushed; a lease is not."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_private_file(tmp_path / "agy.json", payload("w", 0), durable=durable)
    assert synced == (["file", "folder"] if durable else [])
    assert_settled(tmp_path / "agy.json", {("w", 0)})
