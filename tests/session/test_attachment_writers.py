"""An attachment saved by several writers at once is never seen half-written.

Two writers of one attachment are normal: omnigent sends a message again to a harness process
that replaced a killed one, a steer repeats a file, two turns of a conversation carry the same
picture. The file is named by its content, so every writer writes the same bytes; agy reads it
as soon as the prompt names it. Each write must land whole and 0600 from the start: a reader
that sees the name sees the whole file, and no writer fails.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import threading
from pathlib import Path

from agy.test_private_writes import run_threads

from omnigent_agy.session.messages import user_message

THREADS = 8
ROUNDS = 12
SIZE = 3 * 1024 * 1024  # a photo: large enough that a write takes many reads to see


class Watcher(threading.Thread):
    """Reads every attachment in the folder over and over; keeps the first bad one."""

    def __init__(self, folder: Path) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.done = threading.Event()
        self.checked = 0
        self.bad: str | None = None

    def run(self) -> None:
        while not self.done.is_set() and self.bad is None:
            try:
                names = [name for name in os.listdir(self.folder) if not name.startswith(".")]
            except FileNotFoundError:
                continue
            for name in names:
                self.check(self.folder / name)

    def check(self, path: Path) -> None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            data = path.read_bytes()
        except FileNotFoundError:
            return
        digest = hashlib.sha256(data).hexdigest()[:16]
        if mode != 0o600:
            self.bad = f"{path.name} was readable as {mode:04o}"
        elif f"-{digest}." not in path.name:
            self.bad = f"{path.name}: {len(data)} of {SIZE} bytes"
        self.checked += 1


def test_writers_of_one_attachment_never_show_half_of_it(tmp_path: Path) -> None:
    folder = tmp_path / "attachments"
    watcher = Watcher(folder)
    watcher.start()
    rounds = [os.urandom(SIZE) for _ in range(ROUNDS)]
    barriers = [threading.Barrier(THREADS) for _ in rounds]
    saved: list[Path] = []

    def send_each(index: int) -> None:
        del index
        for raw, barrier in zip(rounds, barriers, strict=True):
            block = {
                "type": "input_file",
                "filename": "photo.bin",
                "file_data": base64.b64encode(raw).decode(),
            }
            barrier.wait()  # every writer of this attachment at once
            saved.extend(user_message([block], folder).attachments)

    errors = run_threads(THREADS, send_each)
    watcher.done.set()
    watcher.join()
    assert not errors, errors[:3]
    assert watcher.bad is None, watcher.bad
    assert watcher.checked > 0
    assert len(set(saved)) == ROUNDS
    for path in set(saved):
        assert hashlib.sha256(path.read_bytes()).hexdigest()[:16] in path.name
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in set(saved))
