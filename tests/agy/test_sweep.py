"""The sweep against real agy-sim processes in a private tmux server, with short limits.

Each agy is launched by the launcher exactly as a harness would; the sweep is the one every
harness process and `omnigent-agy stop --idle` run. Nothing here waits a fixed time: every
wait is for a condition (the agy reaching its idle limit, a step becoming WAITING).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kept import Agys
from simproc import wait_exited
from waiting import wait_until

from agy_sim.catalog import DEFAULT_MODEL_ENUM
from omnigent_agy.agy.keep import KeepPolicy, TurnLease, read_activity
from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.sweep import acquire_sweeper, survey, sweep
from omnigent_agy.agy.watchers import TERMINAL_SESSION_ENV, Watcher, watchers

pytestmark = pytest.mark.tmux

NO_LIMITS = KeepPolicy(idle_stop_after=None, max_kept=None)


@pytest.fixture
def agys(tmp_path: Path) -> Iterator[Agys]:
    launched = Agys(tmp_path)
    try:
        yield launched
    finally:
        launched.terminals.kill_server()


def send(agy: AgyProcess, text: str) -> None:
    async def go() -> None:
        async with agy.client() as client:
            assert agy.cascade_id is not None
            await client.send_user_cascade_message(
                agy.cascade_id, text, plan_model=DEFAULT_MODEL_ENUM
            )

    asyncio.run(go())


def summary(agy: AgyProcess) -> dict[str, object]:
    async def go() -> dict[str, object]:
        async with agy.client() as client:
            reply = await client.get_all_cascade_trajectories()
        return dict(reply["trajectorySummaries"][agy.cascade_id])

    return asyncio.run(go())


def assert_stopped(agy: AgyProcess, reason_pattern: str) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):  # gone already: the stop waited for it
        wait_exited(psutil.Process(agy.pid))
    assert agy.terminal.host.find(agy.terminal.name) is None, "its tmux session is gone"
    record = agy.state_dir.read_record()
    assert record is not None, "the record stays so the conversation can come back"
    assert record.cascade_id == agy.cascade_id
    assert record.stopped_reason is not None
    assert re.search(reason_pattern, record.stopped_reason), record.stopped_reason
    assert record.csrf_token == ""
    assert agy.state_dir.gemini_dir.is_dir(), "the private state stays"


def test_an_idle_agy_is_stopped_after_its_limit(agys: Agys) -> None:
    agy = agys.launch("idle")
    # Within its limit it is kept: a limit a loaded machine cannot outrun between the launch
    # and these looks (a 5 s one it did, with the test's workers side by side).
    patient = KeepPolicy(idle_stop_after=120.0, max_kept=None)
    fresh = agys.status(patient, "idle")
    assert fresh is not None
    assert fresh.stop_reason is None
    assert fresh.idle_left is not None
    assert 0 < fresh.idle_left <= 120.0
    assert sweep(patient, agys.base) == []
    assert agy.terminal.is_alive()

    policy = KeepPolicy(idle_stop_after=5.0, max_kept=None)

    wait_until(
        lambda: (s := agys.status(policy, "idle")) and s.stop_reason,
        timeout=20,
        what="the idle limit",
    )
    stopped = sweep(policy, agys.base)
    assert [s.running.key for s in stopped] == ["idle"]
    assert_stopped(agy, r"^idle \S+ \(limit 5s\)$")
    assert survey(policy, agys.base) == [], "a stopped agy is not swept again"


def test_a_waiting_card_keeps_agy_past_its_limit(agys: Agys) -> None:
    agy = agys.launch("card")
    send(agy, "run: pytest -q")
    wait_until(lambda: summary(agy).get("waitingSteps"), timeout=20, what="the permission card")
    policy = KeepPolicy(idle_stop_after=1.0, max_kept=None)
    # Long enough past the limit that only the card can keep it.
    status = wait_until(
        lambda: (s := agys.status(policy, "card")) and s.idle is not None and s.idle > 1.5 and s,
        timeout=20,
        what="idleness past the limit",
    )
    assert status.kept_because == "a card is waiting for an answer"
    assert status.stop_reason is None
    assert sweep(policy, agys.base) == []
    assert agy.terminal.is_alive()


def test_a_running_turn_keeps_agy_past_its_limit(agys: Agys) -> None:
    # 120 chunks every 0.5 s: agy stays RUNNING for a minute, changing its steps all along.
    agy = agys.launch("busy", "--sim-long-token-delay", "0.5")
    send(agy, "a long answer please")
    wait_until(
        lambda: summary(agy).get("status") == "CASCADE_RUN_STATUS_RUNNING",
        timeout=20,
        what="the turn",
    )
    status = agys.status(KeepPolicy(idle_stop_after=1.0, max_kept=1), "busy")
    assert status is not None
    assert status.kept_because == "agy is running a turn"
    # Even a limit shorter than any idleness, with no cap room left, does not stop it.
    assert sweep(KeepPolicy(idle_stop_after=1.0, max_kept=1), agys.base) == []
    assert agy.terminal.is_alive()


def test_a_harness_lease_keeps_agy_and_a_crashed_one_does_not(agys: Agys) -> None:
    agy = agys.launch("leased")
    policy = KeepPolicy(idle_stop_after=1.0, max_kept=None)
    lease = TurnLease(agy.state_dir)
    lease.begin_turn()  # this test process is the harness whose turn is starting
    status = wait_until(
        lambda: (s := agys.status(policy, "leased")) and s.idle is not None and s.idle > 1.5 and s,
        timeout=20,
        what="idleness past the limit",
    )
    assert status.kept_because == "a turn is running"
    assert sweep(policy, agys.base) == []

    # A harness that dies mid-turn leaves its lease saying "turn running": it no longer counts.
    script = (
        "import os, sys\n"
        "from omnigent_agy.agy.keep import TurnLease\n"
        "from pathlib import Path\n"
        "from omnigent_agy.agy.statedir import SessionStateDir\n"
        "TurnLease(SessionStateDir.open('leased', base=Path(sys.argv[1]))).begin_turn()\n"
        "os._exit(3)\n"
    )
    crashed = subprocess.run([sys.executable, "-c", script, str(agys.base)], check=False)
    assert crashed.returncode == 3
    assert read_activity(agy.state_dir).holder_pid not in (None, os.getpid())
    assert read_activity(agy.state_dir).turn_running is False
    wait_until(
        lambda: (s := agys.status(policy, "leased")) and s.stop_reason,
        timeout=20,
        what="the idle limit",
    )
    assert [s.running.key for s in sweep(policy, agys.base)] == ["leased"]
    assert_stopped(agy, r"^idle ")


def test_the_cap_stops_the_least_recently_used(agys: Agys) -> None:
    first, second, third = (agys.launch(name) for name in ("first", "second", "third"))
    # Used after they all started, newest last: third is the least recently used, then first.
    for agy in (third, first, second):
        lease = TurnLease(agy.state_dir)
        lease.begin_turn()
        lease.end_turn()
    policy = KeepPolicy(idle_stop_after=None, max_kept=1)
    statuses = {s.running.key: s for s in survey(policy, agys.base)}
    assert statuses["second"].stop_reason is None
    assert "max_kept 1" in str(statuses["first"].stop_reason)
    assert "max_kept 1" in str(statuses["third"].stop_reason)

    assert sorted(s.running.key for s in sweep(policy, agys.base)) == ["first", "third"]
    assert_stopped(first, r"least recently used")
    assert_stopped(third, r"least recently used")
    assert second.terminal.is_alive()
    assert sweep(policy, agys.base) == [], "one kept agy is within the cap"


def test_an_agy_whose_workspace_was_deleted_is_stopped(agys: Agys) -> None:
    workspace = agys.tmp / "doomed"
    workspace.mkdir()
    agy = agys.launch("doomed", workspace=workspace)
    kept = agys.launch("kept")
    assert sweep(NO_LIMITS, agys.base) == []
    shutil.rmtree(workspace)
    assert [s.running.key for s in sweep(NO_LIMITS, agys.base)] == ["doomed"]
    assert_stopped(agy, f"workspace {re.escape(str(workspace))} is gone")
    assert kept.terminal.is_alive()


def test_an_agy_that_lost_its_conversation_is_stopped(agys: Agys) -> None:
    agy = agys.launch("lost")
    assert sweep(NO_LIMITS, agys.base) == []
    # The record now names a conversation this agy does not know (500 "trajectory not found").
    agy.bind_cascade(str(uuid.uuid4()))
    assert [s.running.key for s in sweep(NO_LIMITS, agys.base)] == ["lost"]
    assert_stopped(agy, "no longer knows conversation")


class Person:
    """A tmux client attached to an agy's session, in a pty of its own (script(1)), as a
    person's terminal is; ``env`` is the client's environment."""

    def __init__(self, agys: Agys, agy: AgyProcess, env: dict[str, str] | None = None) -> None:
        attach = f"tmux -L {agys.terminals.socket_name} attach -t {agy.terminal.name}"
        base = {k: v for k, v in os.environ.items() if k not in ("TMUX", TERMINAL_SESSION_ENV)}
        self.agy = agy
        self.process = subprocess.Popen(
            ["script", "-qfc", attach, os.devnull],
            env={**base, **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.watchers, timeout=20, what="the person to attach")

    def watchers(self) -> list[Watcher]:
        return watchers(self.agy.terminal.host, self.agy.terminal.name)

    def press(self, key: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(key)
        self.process.stdin.flush()

    def close(self) -> None:
        """End the client's terminal (as closing a browser tab does)."""
        self.process.kill()
        self.process.wait(10)
        assert self.process.stdin is not None
        self.process.stdin.close()

    def leave(self) -> None:
        self.close()
        wait_until(lambda: not self.watchers(), timeout=20, what="the person to leave")


needs_script = pytest.mark.skipif(
    shutil.which("script") is None, reason="needs script(1) to give tmux a pty"
)


@needs_script
def test_a_person_typing_keeps_agy_and_an_attached_client_left_quiet_does_not(
    agys: Agys,
) -> None:
    """A browser tab left open on agy's screen must not keep agy for ever: only a key sent
    within the idle limit keeps it; the idle clock starts again at that key."""
    agy = agys.launch("watched")
    person = Person(agys, agy)
    try:
        # A limit a loaded machine cannot outrun between the key and the sweep below (a 3 s
        # one it did, with the test's workers side by side); the wait for it is no work.
        limit = 15.0
        policy = KeepPolicy(idle_stop_after=limit, max_kept=1)
        # Ctrl-L (redraw) is a key like any other to tmux, and types nothing into agy.
        person.press(b"\x0c")
        typed = wait_until(
            lambda: (s := agys.status(policy, "watched")) and s.kept_because and s,
            timeout=20,
            what="the key to count",
        )
        assert re.fullmatch(r"a person typed in its tmux client \d+s ago", typed.kept_because)
        assert typed.idle is not None
        assert typed.idle < limit
        assert "attached: 1 tmux client (last key " in typed.describe()
        assert sweep(KeepPolicy(idle_stop_after=limit, max_kept=0), agys.base) == []
        # Attached, and quiet past the limit: nothing keeps it.
        quiet = wait_until(
            lambda: (s := agys.status(policy, "watched")) and s.stop_reason and s,
            timeout=40,
            what="the idle limit",
        )
        assert quiet.kept_because is None
        assert re.fullmatch(r"idle \d+s \(limit 15s\)", str(quiet.stop_reason))
        assert [w.web for w in quiet.watchers] == [False]
        assert [s.running.key for s in sweep(policy, agys.base)] == ["watched"]
        assert_stopped(agy, r"^idle ")
        wait_until(lambda: person.process.poll() is not None, timeout=20, what="the client to end")
    finally:
        person.close()


@needs_script
def test_a_web_terminal_is_told_apart_and_leaving_it_stops_nothing(agys: Agys) -> None:
    agy = agys.launch("web")
    person = Person(agys, agy, env={TERMINAL_SESSION_ENV: "web"})
    try:
        policy = KeepPolicy(idle_stop_after=3600.0, max_kept=None)
        status = agys.status(policy, "web")
        assert status is not None
        assert [w.web for w in status.watchers] == [True]
        # Attaching is the client's first key, for tmux.
        assert re.fullmatch(
            r"a person typed in its web terminal \d+s ago", str(status.kept_because)
        )
        assert re.search(r"attached: 1 web terminal \(last key \d+s ago\)", status.describe())
    finally:
        person.leave()
    assert agy.terminal.is_alive(), "closing the pane ends only its client"
    status = agys.status(policy, "web")
    assert status is not None
    assert status.watchers == ()
    assert status.kept_because is None


def test_ps_shows_idle_time_memory_and_what_stops_each_agy(
    agys: Agys, monkeypatch: pytest.MonkeyPatch
) -> None:
    agy = agys.launch("shown")
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(agys.base))
    monkeypatch.setenv("OMNIGENT_CONFIG_HOME", str(agys.tmp / "omnigent"))
    monkeypatch.setenv("OMNIGENT_AGY_CLI_IDLE_STOP_AFTER", "2h")
    monkeypatch.setenv("OMNIGENT_AGY_CLI_MAX_KEPT", "3")
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    listed = subprocess.run([cli, "ps"], capture_output=True, text=True, check=True, timeout=60)
    line = next(line for line in listed.stdout.splitlines() if line.startswith("shown "))
    assert f"pid {agy.pid}" in line
    rss = re.search(r"rss (\d+) MB", line)
    assert rss is not None
    tree = [psutil.Process(agy.pid), *psutil.Process(agy.pid).children(recursive=True)]
    actual = sum(p.memory_info().rss for p in tree) / 2**20
    assert 0.5 * actual <= int(rss.group(1)) <= 2 * actual
    idle = re.search(r"idle \d+[sm]  ", line)
    assert idle is not None
    assert re.search(r"stops after 1h5\dm more idle", line)
    assert "limits: idle stop after 2h00m, max kept 3" in listed.stdout
    assert agy.csrf_token not in listed.stdout

    stopped = subprocess.run(
        [cli, "stop", "shown"], capture_output=True, text=True, check=True, timeout=60
    )
    assert "stopped shown" in stopped.stdout
    listed = subprocess.run([cli, "ps"], capture_output=True, text=True, check=True, timeout=60)
    assert re.search(
        rf"shown  stopped \d+s ago: stopped by `omnigent-agy stop`; the next turn resumes "
        rf"conversation {agy.cascade_id}",
        listed.stdout,
    ), listed.stdout


def test_invalid_limits_are_config_errors_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIGENT_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("OMNIGENT_AGY_CLI_MAX_KEPT", "lots")
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    result = subprocess.run([cli, "ps"], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 2
    assert "OMNIGENT_AGY_CLI_MAX_KEPT must be a whole number" in result.stderr


def test_a_process_sweeper_sweeps_at_once_and_ends_with_its_last_user(agys: Agys) -> None:
    agy = agys.launch("swept")
    policy = KeepPolicy(idle_stop_after=1.0, max_kept=None)
    wait_until(
        lambda: (s := agys.status(policy, "swept")) and s.stop_reason,
        timeout=20,
        what="the idle limit",
    )

    def sweeper_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "omnigent-agy sweep"}

    before = sweeper_threads()
    first = acquire_sweeper(policy, agys.base)
    second = acquire_sweeper(policy, agys.base)  # a second session of the same process
    sweepers = list(sweeper_threads() - before)
    assert len(sweepers) == 1
    # Its first round runs at once (a harness process sweeps when it starts).
    wait_until(
        lambda: (r := agy.state_dir.read_record()) and r.stopped_at,
        timeout=20,
        what="the sweep at start",
    )
    first.release()
    assert sweepers[0].is_alive(), "still used by the second session"
    second.release()
    second.release()  # twice is harmless
    wait_until(
        lambda: not sweepers[0].is_alive(), timeout=20, what="the sweeper to end with its last user"
    )


def test_stop_idle_sweeps_by_hand(agys: Agys, monkeypatch: pytest.MonkeyPatch) -> None:
    agy = agys.launch("by-hand")
    kept = agys.launch("busy-one")
    TurnLease(kept.state_dir).begin_turn()
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(agys.base))
    monkeypatch.setenv("OMNIGENT_CONFIG_HOME", str(agys.tmp / "omnigent"))
    monkeypatch.setenv("OMNIGENT_AGY_CLI_IDLE_STOP_AFTER", "1s")
    policy = KeepPolicy(idle_stop_after=1.0, max_kept=None)
    wait_until(
        lambda: (s := agys.status(policy, "by-hand")) and s.stop_reason,
        timeout=20,
        what="the idle limit",
    )
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    swept = subprocess.run(
        [cli, "stop", "--idle"], capture_output=True, text=True, check=True, timeout=60
    )
    assert re.fullmatch(r"stopped by-hand: idle \S+ \(limit 1s\)\n", swept.stdout), swept.stdout
    assert_stopped(agy, r"^idle ")
    assert kept.terminal.is_alive()
    again = subprocess.run(
        [cli, "stop", "--idle"], capture_output=True, text=True, check=True, timeout=60
    )
    assert again.stdout.startswith("no agy is due to stop")
    misuse = subprocess.run(
        [cli, "stop", "--idle", "--all"], capture_output=True, text=True, check=False, timeout=60
    )
    assert misuse.returncode == 2
