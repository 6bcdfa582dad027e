"""A CascadeReader in a process of its own, so a test can kill it mid-answer (SIGKILL).

    python tests/_reader_proc.py PORT CASCADE_ID CURSOR_DIR

The CSRF token comes from the environment (``AGY_TOKEN``) so it never shows in ``ps``. Every
event the reader publishes is printed as one JSON line (its type, step key and, for deltas,
offset and text) and flushed at once: what a consumer had been shown when the process died.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.reader import CascadeReader, ReaderEvent, ReaderSettings

_lock = threading.Lock()


def describe(event: ReaderEvent) -> dict[str, Any]:
    line: dict[str, Any] = {"type": type(event).__name__}
    key = getattr(event, "key", None) or getattr(event, "boundary", None)
    if key is not None:
        line["key"] = [key.trajectory_id, key.step_index]
    for name in ("offset", "text"):
        value = getattr(event, name, None)
        if isinstance(value, int | str):
            line[name] = value
    return line


class PrintSink:
    def publish(self, event: ReaderEvent) -> None:
        with _lock:
            sys.stdout.write(json.dumps(describe(event)) + "\n")
            sys.stdout.flush()


def main() -> None:
    port, cascade, cursor_dir = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    reader = CascadeReader(
        port=port,
        csrf_token=os.environ.get("AGY_TOKEN", ""),
        cascade_id=cascade,
        sink=PrintSink(),
        cursor=CursorStore(cursor_dir),
        settings=ReaderSettings(idle_timeout=1.0, poll_interval=0.1, reconnect_initial=0.05),
    )
    reader.start()
    reader.wait_ready(20)
    print(json.dumps({"type": "ready"}), flush=True)
    sys.stdin.read()  # until the test closes stdin (or kills us)
    reader.stop()


if __name__ == "__main__":
    main()
