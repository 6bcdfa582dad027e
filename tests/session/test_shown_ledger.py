"""The shown-text ledger: what one process records, the next one reads (session/shown_ledger.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from omnigent_agy.session.shown_ledger import ShownLedger


def test_a_new_ledger_is_empty(tmp_path: Path) -> None:
    assert ShownLedger(tmp_path / "shown.bin").load() == {}


def test_what_a_sigkilled_process_recorded_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "shown.bin"
    script = textwrap.dedent(
        f"""
        import os, signal
        from omnigent_agy.session.shown_ledger import ShownLedger
        ledger = ShownLedger({str(path)!r})
        for n in range(1, 1001):
            ledger.record("text|c|t|3", n * 7)
        ledger.record("reasoning|c|t|3", 42)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False)
    assert done.returncode == -signal.SIGKILL
    assert ShownLedger(path).load() == {"text|c|t|3": 7000, "reasoning|c|t|3": 42}
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


def test_a_torn_write_falls_back_to_the_slot_before(tmp_path: Path) -> None:
    path = tmp_path / "shown.bin"
    ledger = ShownLedger(path)
    ledger.record("text|k", 10)  # write 1: slot 1
    ledger.record("text|k", 20)  # write 2: slot 0
    ledger.close()
    with path.open("r+b") as handle:  # write 2 torn: its payload half written
        handle.seek(16)
        handle.write(b"\xff\xff")
    assert ShownLedger(path).load() == {"text|k": 10}


def test_clear_and_a_fresh_record(tmp_path: Path) -> None:
    path = tmp_path / "shown.bin"
    ledger = ShownLedger(path)
    ledger.record("text|a", 5)
    ledger.clear()
    assert ShownLedger(path).load() == {}
    ledger.record("text|b", 3)
    assert ShownLedger(path).load() == {"text|b": 3}
