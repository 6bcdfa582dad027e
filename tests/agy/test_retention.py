"""What a conversation leaves behind (docs/decisions.md §12): its private state goes, its agy
stopped first, when omnigent deleted the session (the deletion marker gone), when its
retention ran out, or by hand; never while a harness holds it. Against real agy-sim processes
launched as a harness launches them; nothing waits a fixed time."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kept import Agys, deletion_watches
from pytest_mock import MockerFixture
from simproc import wait_exited
from waiting import wait_until

from omnigent_agy.agy import deletion_watch
from omnigent_agy.agy.deletion_watch import watch_for_deletion
from omnigent_agy.agy.keep import KeepPolicy, TurnLease
from omnigent_agy.agy.retention import (
    Removal,
    conversations,
    disk_usage,
    forget,
    forget_due,
    record_deletion_marker,
)
from omnigent_agy.agy.running_agys import recorded, stop_running
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.sweep import acquire_sweeper
from omnigent_agy.config.settings import ENV_RETENTION, load_config
from omnigent_agy.errors import ConfigError

pytestmark = pytest.mark.tmux

TOKEN = Path("gemini") / "antigravity-cli" / "antigravity-oauth-token"
KEEP_STATE = KeepPolicy(idle_stop_after=None, max_kept=None, retention=None)


@pytest.fixture
def agys(tmp_path: Path) -> Iterator[Agys]:
    launched = Agys(tmp_path)
    try:
        yield launched
    finally:
        launched.terminals.kill_server()


def assert_gone(agys: Agys, key: str, pid: int) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        wait_exited(psutil.Process(pid))
    assert agys.terminals.find(f"agy-{key}") is None, "its tmux session is gone"
    assert not (agys.base / key).exists(), "its private state is gone"
    # Renamed out of the way, then removed (by another process, for the watcher).
    wait_until(lambda: not list(agys.base.glob(f".{key}*")), timeout=30, what="the removal")


def marker_for(tmp_path: Path, key: str) -> Path:
    """A marker as the host's would be: a file in a folder of its own, in a folder that stays."""
    folder = tmp_path / "host-data" / "attachments" / key
    folder.mkdir(parents=True)
    marker = folder / "omnigent-agy-conversation"
    marker.write_text(key, encoding="utf-8")
    return marker


def make_old(state_dir: Path, age: float) -> None:
    """Every file of the folder's own last changed `age` seconds ago (no lease: none taken)."""
    then = time.time() - age
    for entry in state_dir.iterdir():
        os.utime(entry, (then, then), follow_symlinks=False)


def test_forget_stops_agy_and_removes_its_state_with_the_sign_in_copy(agys: Agys) -> None:
    agy = agys.launch("gone")
    assert (agys.base / "gone" / TOKEN).is_file(), "the seeded folder holds the sign-in copy"
    assert psutil.pid_exists(agy.pid)
    removal = forget(agys.base / "gone", "removed by the test")
    assert removal.refused is None
    assert removal.disk > 0
    assert_gone(agys, "gone", agy.pid)


def test_a_conversation_held_by_a_live_harness_is_not_removed(agys: Agys) -> None:
    agy = agys.launch("held")
    lease = TurnLease(agy.state_dir)
    lease.begin_turn()  # this test process is the harness holding it
    lease.end_turn()
    removal = forget(agys.base / "held", "removed by the test")
    assert removal.refused == "a harness process holds it"
    assert (agys.base / "held" / TOKEN).is_file()
    assert psutil.pid_exists(agy.pid)
    # The same lease left by a harness that has ended holds nothing.
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from omnigent_agy.agy.keep import TurnLease\n"
        "from omnigent_agy.agy.statedir import SessionStateDir\n"
        "lease = TurnLease(SessionStateDir.open('held', base=Path(sys.argv[1])))\n"
        "lease.begin_turn(); lease.end_turn()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(agys.base)], check=True)
    assert forget(agys.base / "held", "removed by the test").refused is None
    assert_gone(agys, "held", agy.pid)


def test_a_deleted_session_is_removed_at_the_next_sweep_and_only_that_one(
    agys: Agys, tmp_path: Path
) -> None:
    deleted, kept = agys.launch("deleted"), agys.launch("kept")
    markers = {key: marker_for(tmp_path, key) for key in ("deleted", "kept")}
    for agy, key in ((deleted, "deleted"), (kept, "kept")):
        record_deletion_marker(agy.state_dir, markers[key])
    assert forget_due(KEEP_STATE, agys.base) == [], "no marker is gone: nothing is due"

    # The host deletes the session: it removes the marker's folder, and only that.
    for entry in markers["deleted"].parent.iterdir():
        entry.unlink()
    markers["deleted"].parent.rmdir()
    removed = forget_due(KEEP_STATE, agys.base)
    assert [(r.key, r.reason) for r in removed] == [
        ("deleted", "omnigent deleted the conversation")
    ]
    assert_gone(agys, "deleted", deleted.pid)
    assert (agys.base / "kept" / TOKEN).is_file()
    assert psutil.pid_exists(kept.pid)


def test_a_missing_host_data_folder_proves_no_deletion(agys: Agys, tmp_path: Path) -> None:
    """The folder above the marker's gone too (a HOME unmounted, the data folder wiped): that
    is not the host deleting one session, and the state stays."""
    agy = agys.launch("unsure")
    marker = marker_for(tmp_path, "unsure")
    record_deletion_marker(agy.state_dir, marker)
    marker.unlink()
    marker.parent.rmdir()
    marker.parent.parent.rmdir()
    assert forget_due(KEEP_STATE, agys.base) == []
    assert (agys.base / "unsure" / TOKEN).is_file()


def test_retention_removes_state_unused_for_its_limit_and_only_that(agys: Agys) -> None:
    running = agys.launch("running")
    agys.launch("old")
    agys.launch("recent")
    # Stopped agys (as the idle limit stops them); their state stays until the retention.
    for key in ("old", "recent"):
        found = recorded(agys.base / key)
        assert found is not None
        stop_running(found, "idle")
    make_old(agys.base / "old", 3 * 86400)
    make_old(agys.base / "running", 3 * 86400)
    policy = KeepPolicy(idle_stop_after=None, max_kept=None, retention=2 * 86400)

    listed = {c.key: c for c in conversations(agys.base)}
    assert set(listed) == {"old", "recent", "running"}
    moment = time.time()
    assert listed["old"].due(policy, moment) == "unused 3d (retention 2d)"
    assert listed["recent"].due(policy, moment) is None
    assert listed["running"].due(policy, moment) is None, "a running agy is the idle limit's"
    assert listed["old"].due(KEEP_STATE, moment) is None, "retention 0 keeps it for ever"

    assert [r.key for r in forget_due(policy, agys.base)] == ["old"]
    assert not (agys.base / "old").exists()
    assert (agys.base / "recent" / TOKEN).is_file()
    assert psutil.pid_exists(running.pid)


def test_what_a_crashed_removal_left_goes_at_the_next_sweep(tmp_path: Path) -> None:
    base = tmp_path / "state"
    SessionStateDir.open("whole", base=base)
    leftover = base / ".half.removing-4242"
    (leftover / "gemini").mkdir(parents=True)
    (leftover / "gemini" / "token").write_text("secret", encoding="utf-8")
    assert forget_due(KEEP_STATE, base) == []
    assert not leftover.exists()
    assert (base / "whole").is_dir()


def test_a_harness_sweeper_removes_a_deleted_session(agys: Agys, tmp_path: Path) -> None:
    agy = agys.launch("swept")
    marker = marker_for(tmp_path, "swept")
    record_deletion_marker(agy.state_dir, marker)
    marker.unlink()
    marker.parent.rmdir()
    lease = acquire_sweeper(KeepPolicy(idle_stop_after=4.0, max_kept=None), agys.base)
    try:
        wait_until(lambda: not (agys.base / "swept").exists(), timeout=30, what="the sweep")
    finally:
        lease.release()
    assert_gone(agys, "swept", agy.pid)


def test_disk_use_counts_the_folder_and_not_what_links_reach(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "log").write_bytes(b"x" * 100_000)
    big = tmp_path / "person-skills"
    big.mkdir()
    (big / "huge").write_bytes(b"y" * 2_000_000)
    (folder / "skills").symlink_to(big)
    used = disk_usage(folder)
    assert 100_000 <= used < 1_000_000


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * 86400.0), ("1d12h", 129600.0), ("0", None)]
)
def test_retention_is_a_duration_in_the_config(
    tmp_path: Path, text: str, seconds: float | None
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"harness:\n  agy-cli:\n    retention: {text}\n", encoding="utf-8")
    assert load_config(path, env={}).keep.retention == seconds


def test_retention_defaults_to_a_month_and_the_variable_wins(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    assert load_config(path, env={}).keep.retention == 30 * 86400.0
    assert load_config(path, env={ENV_RETENTION: "12h"}).keep.retention == 12 * 3600.0
    with pytest.raises(ConfigError, match=f"{ENV_RETENTION} must be a duration"):
        load_config(path, env={ENV_RETENTION: "a while"})


# A harness process as omnigent runs one: it arms the watch at its first turn (twice here: the
# second does nothing), says so, and runs until it is killed.
HARNESS = """
import sys, time
from pathlib import Path
from omnigent_agy.agy.deletion_watch import arm_deletion_watch
for _ in range(2):
    arm_deletion_watch(Path(sys.argv[1]), Path(sys.argv[2]), within=float(sys.argv[3]))
print("armed", flush=True)
time.sleep(600)
"""

# The host (omnigent's runner or zygote): the harness's parent, which reaps it once it ends.
HOST = """
import subprocess, sys, time
harness = subprocess.Popen([sys.executable, "-c", *sys.argv[1:]], stdout=subprocess.PIPE, text=True)
print(harness.pid, harness.stdout.readline().strip(), flush=True)
harness.wait()
time.sleep(600)
"""


@contextlib.contextmanager
def harness_on_host(
    state: Path, marker: Path, within: float
) -> Iterator[tuple[psutil.Process, psutil.Process]]:
    """(host, harness), the harness having armed the watch of `state`; both killed after."""
    argv = [sys.executable, "-c", HOST, HARNESS, str(state), str(marker), str(within)]
    host = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        pid, said = host.stdout.readline().split()
        assert said == "armed"
        yield psutil.Process(host.pid), psutil.Process(int(pid))
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            for child in psutil.Process(host.pid).children(recursive=True):
                child.kill()
        host.kill()
        host.wait()
        if host.stdout is not None:
            host.stdout.close()


def test_a_harness_killed_before_its_close_still_has_its_deleted_state_removed(
    agys: Agys, tmp_path: Path
) -> None:
    """omnigent ends a harness process with SIGTERM, and SIGKILL to its whole tree 5 s later:
    a busy one dies before its close_session runs, and so did the watch started there (a CI
    run's deletion test found the state left). The watch armed at the first turn starts when
    the process ends, however it ends: a shell blocked on a pipe only that process holds,
    nobody's child, with no interpreter until the marker goes."""
    agy = agys.launch("killed")
    state = agy.state_dir.path.resolve()
    marker = marker_for(tmp_path, "killed")
    record_deletion_marker(agy.state_dir, marker)
    with harness_on_host(state, marker, within=60) as (host, harness):
        waiters = deletion_watches(state)
        assert len(waiters) == 1, "armed once per process and conversation"
        (waiter,) = waiters
        assert waiter.cmdline()[0] == "/bin/sh", "no interpreter waits"
        assert waiter.ppid() not in (harness.pid, host.pid), "ending the harness's tree spares it"
        assert waiter.pid not in {c.pid for c in harness.children(recursive=True)}
        harness.kill()
        wait_exited(harness)
        assert (state / TOKEN).is_file(), "nothing goes while the marker stays"
        shutil.rmtree(marker.parent)  # the host, having ended the harness, deletes
        wait_until(lambda: not state.exists(), timeout=30, what="the removal")
        assert_gone(agys, "killed", agy.pid)
        wait_until(lambda: not deletion_watches(state), timeout=30, what="the watch to end")


@pytest.mark.parametrize("ends", ["the host goes", "its time runs out"])
def test_a_watch_ends_without_removing_when_no_deletion_can_come(
    agys: Agys, tmp_path: Path, ends: str
) -> None:
    """A host stopping ends its harnesses: no deletion comes any more, and the watch ends at
    once instead of outliving the host for its whole window; a host that stays and deletes
    nothing (an idle harness reaped) has the watch end after its window."""
    agy = agys.launch("kept")
    state = agy.state_dir.path.resolve()
    marker = marker_for(tmp_path, "kept")
    record_deletion_marker(agy.state_dir, marker)
    within = 60 if ends == "the host goes" else 1
    with harness_on_host(state, marker, within=within) as (host, harness):
        assert deletion_watches(state)
        harness.kill()
        wait_exited(harness)
        if ends == "the host goes":
            host.kill()
            host.wait()  # reaped, as omnigent's zygote is by the host process
        wait_until(lambda: not deletion_watches(state), timeout=30, what="the watch to end")
    assert (state / TOKEN).is_file()
    assert psutil.pid_exists(agy.pid)
    assert marker.exists()


def test_a_deletion_seen_while_a_harness_still_holds_it_waits_for_that_harness(
    agys: Agys, tmp_path: Path, caplog: pytest.LogCaptureFixture, mocker: MockerFixture
) -> None:
    """The marker gone is a deletion whatever else has gone since: a harness process still
    ending (it holds the lease) is waited for, even once the host is gone; the watch used to
    end on seeing the host gone and leave the state. The wait is logged once, not at each of
    its looks (four a second)."""
    agy = agys.launch("ending")
    marker = marker_for(tmp_path, "ending")
    record_deletion_marker(agy.state_dir, marker)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from omnigent_agy.agy.keep import TurnLease\n"
        "from omnigent_agy.agy.statedir import SessionStateDir\n"
        "TurnLease(SessionStateDir.open('ending', base=Path(sys.argv[1]))).begin_turn()\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    argv = [sys.executable, "-c", script, str(agys.base)]
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    host = subprocess.Popen([sys.executable, "-c", "pass"])
    host.wait()
    shutil.rmtree(marker.parent)
    caplog.set_level(logging.INFO, logger="omnigent_agy.agy.deletion_watch")
    looks = mocker.spy(deletion_watch, "forget")  # the real one, counted
    done: list[Removal | None] = []
    watch = threading.Thread(
        target=lambda: done.append(
            watch_for_deletion(agy.state_dir.path, within=60, host_pid=host.pid)
        )
    )
    watch.start()
    try:
        wait_until(
            lambda: looks.call_count >= 3,
            timeout=30,
            what="the watch to look three times while the harness holds it",
        )
        assert (agys.base / "ending" / TOKEN).is_file()
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
        watch.join(60)
    assert done
    assert done[0] is not None, "the watch ended without removing"
    waits = [r for r in caplog.records if "not removing" in r.getMessage()]
    assert len(waits) == 1, "a wait is logged once, not at every look"
    assert_gone(agys, "ending", agy.pid)


def test_ps_shows_disk_per_conversation_and_prune_shows_before_it_removes(
    agys: Agys, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = agys.launch("running")
    agys.launch("old")
    found = recorded(agys.base / "old")
    assert found is not None
    stop_running(found, "idle")
    make_old(agys.base / "old", 3 * 86400)
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(agys.base))
    monkeypatch.setenv("OMNIGENT_CONFIG_HOME", str(agys.tmp / "omnigent"))
    monkeypatch.setenv(ENV_RETENTION, "2d")
    cli = str(Path(sys.executable).with_name("omnigent-agy"))

    def run(*argv: str, status: int = 0) -> str:
        done = subprocess.run([cli, *argv], check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == status, done.stderr
        assert running.csrf_token not in done.stdout + done.stderr
        return done.stdout

    listed = run("ps")
    line = next(line for line in listed.splitlines() if line.startswith("running "))
    assert re.search(r"rss \d+ MB  disk \d+(\.\d)? [kM]B  ", line), line
    old = next(line for line in listed.splitlines() if line.startswith("old "))
    assert re.search(r"disk \d+(\.\d)? [kM]B  removed at the next sweep: unused 3d", old), old
    assert "private state: 2 conversation(s)" in listed

    shown = run("prune")
    assert re.search(r"^would remove old  disk \S+ [kM]B  unused 3d \(retention 2d\)$", shown, re.M)
    assert "running" not in shown
    assert "run again with --yes" in shown
    assert (agys.base / "old" / TOKEN).is_file(), "showing removes nothing"

    assert "removed old" in run("prune", "--yes")
    assert not (agys.base / "old").exists()
    assert "would remove running" in run("prune", "running")
    assert psutil.pid_exists(running.pid)
    assert "removed running" in run("prune", "running", "--yes")
    assert_gone(agys, "running", running.pid)
    run("prune", "nosuch", status=1)


def test_the_watch_ends_when_the_host_that_ran_the_harness_is_gone(
    agys: Agys, tmp_path: Path
) -> None:
    """A host stopping ends its runners: no deletion can come any more, and the watch ends
    at once instead of outliving the host for its whole window."""
    agy = agys.launch("hostgone")
    record_deletion_marker(agy.state_dir, marker_for(tmp_path, "hostgone"))
    host = subprocess.Popen([sys.executable, "-c", "pass"])
    host.wait()
    started = time.monotonic()
    assert watch_for_deletion(agy.state_dir.path, within=60, host_pid=host.pid) is None
    assert time.monotonic() - started < 30, "it waited out its window"
    assert (agys.base / "hostgone" / TOKEN).is_file()


def test_a_deletion_the_host_made_just_before_it_went_is_seen(agys: Agys, tmp_path: Path) -> None:
    """A host that removed the marker's folder and then went, before the watch looked even
    once: the marker gone still means deleted (the watch used to see only the host gone and
    end, leaving the agy and the copy of the sign-in)."""
    agy = agys.launch("deletedgone")
    marker = marker_for(tmp_path, "deletedgone")
    record_deletion_marker(agy.state_dir, marker)
    remove = f"import shutil; shutil.rmtree({str(marker.parent)!r})"
    host = subprocess.Popen([sys.executable, "-c", remove])
    host.wait()
    assert not marker.exists()
    assert watch_for_deletion(agy.state_dir.path, within=60, host_pid=host.pid) is not None
    assert_gone(agys, "deletedgone", agy.pid)
