"""The lifecycle commands never stop, signal or talk to another user's agy.

A real agy-sim runs as another user (``foreign.py``: uid ``nobody``, serving our token, its
command line ``.../bin/agy``). A record of ours names it, with its pid, start time, port and
token, a workspace that is gone and a conversation it does not hold: every reason a sweep
has to stop an agy applies. ``omnigent-agy ps``, ``stop --idle``, ``stop --all`` and
``stop <key>`` must leave it running, on its port, and never send it a request (our token
included). Skipped where this test cannot switch uid (not root).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from foreign import ForeignAgy, foreign_agy

from agy_sim.stack.processes import sweep as stack_sweep
from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.running_agys import list_running, stop_running
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.agy.sweep import survey, sweep

TOKEN = "foreign-test-token-0123456789"
CONVERSATION = "their-conversation"
CLI = str(Path(sys.executable).with_name("omnigent-agy"))
STRICT = KeepPolicy(idle_stop_after=1.0, max_kept=1)


def _record_of(foreign: ForeignAgy, base: Path, tmp_path: Path) -> SessionStateDir:
    state = SessionStateDir.open(CONVERSATION, base=base)
    state.write_record(
        AgyRecord(
            pid=foreign.pid,
            pid_create_time=psutil.Process(foreign.pid).create_time(),
            port=foreign.port,
            csrf_token=TOKEN,
            tmux_socket=f"agy-foreign-{uuid.uuid4().hex[:10]}",
            tmux_session="omnigent-agy-their-conversation",
            log_file=str(foreign.log),
            cascade_id="a-conversation-it-does-not-hold",
            workspace=str(tmp_path / "gone"),
        )
    )
    return state


def _cli(*args: str, base: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OMNIGENT_AGY_STATE_DIR": str(base),
        "OMNIGENT_CONFIG_HOME": str(tmp_path / "omnigent"),
        "OMNIGENT_AGY_CLI_IDLE_STOP_AFTER": "1s",
        "OMNIGENT_AGY_CLI_MAX_KEPT": "1",
    }
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, check=False, timeout=60, env=env
    )


def test_the_sweep_keeps_another_users_agy_without_asking_it(tmp_path: Path) -> None:
    base = tmp_path / "state"
    with foreign_agy(TOKEN) as foreign:
        port = foreign.port
        state = _record_of(foreign, base, tmp_path)
        (status,) = survey(STRICT, base)
        assert status.kept_because == "another user's agy"
        assert status.stop_reason is None
        assert sweep(STRICT, base) == []
        foreign.untouched(port)
        record = state.read_record()
        assert record is not None
        assert record.stopped_at is None


def test_stop_by_hand_refuses_another_users_agy(tmp_path: Path) -> None:
    base = tmp_path / "state"
    with foreign_agy(TOKEN) as foreign:
        port = foreign.port
        state = _record_of(foreign, base, tmp_path)
        (running,) = list_running(base)
        assert running.alive
        assert not stop_running(running, "a test")
        foreign.untouched(port)
        record = state.read_record()
        assert record is not None
        assert record.stopped_at is None
        assert record.csrf_token == TOKEN


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ps"], "kept: another user's agy"),
        (["stop", "--idle"], "no agy is due to stop"),
        (["stop", "--all"], "not stopped: pid {pid} belongs to another user"),
        (["stop", "{key}"], "not stopped: pid {pid} belongs to another user"),
    ],
    ids=["ps", "stop-idle", "stop-all", "stop-key"],
)
def test_the_commands_leave_another_users_agy_alone(
    tmp_path: Path, args: list[str], says: str
) -> None:
    base = tmp_path / "state"
    with foreign_agy(TOKEN) as foreign:
        port = foreign.port
        state = _record_of(foreign, base, tmp_path)
        done = _cli(*(a.format(key=state.key) for a in args), base=base, tmp_path=tmp_path)
        assert says.format(pid=foreign.pid) in done.stdout + done.stderr, done
        assert TOKEN not in done.stdout + done.stderr
        assert done.returncode == (1 if "not stopped" in says else 0), done
        foreign.untouched(port)
        record = state.read_record()
        assert record is not None
        assert record.stopped_at is None


def test_the_local_stacks_clean_up_leaves_another_users_processes(tmp_path: Path) -> None:
    # The demo's and e2e stack's clean-up kills what names its folder on the command line.
    with foreign_agy(TOKEN) as foreign:
        port = foreign.port
        stack_sweep([str(foreign.home)])
        foreign.untouched(port)
