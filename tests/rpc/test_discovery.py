"""Port discovery with real processes, real sockets and real TLS HTTP/2 (docs/wire.md §1)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from foreign import foreign_agy
from simproc import end_process
from waiting import wait_until

from omnigent_agy.errors import (
    AgyExitedError,
    AgySignedOutError,
    ConversationNotFoundError,
    CsrfRejectedError,
    ForeignListenerError,
    PortNeverOpenedError,
    failure_for,
)
from omnigent_agy.rpc import listeners
from omnigent_agy.rpc.agy_log import Announcement, LogScanner, LogWatcher
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.discovery import Probe, discover_pin, probe_port, until_announced
from omnigent_agy.rpc.listeners import Listener, is_port_owned_by, port_ownership

TESTS = Path(__file__).resolve().parent.parent
LISTENER = TESTS / "_listener_proc.py"
FAKE_AGY = TESTS / "_fake_agy.py"
TOKEN = "test-token-not-secret"

STARTING = "Starting language server process with pid {}"
LISTENING = "Language server listening on random port at {} for HTTPS (gRPC)"


# -- the log ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{STARTING.format(11)}\n{LISTENING.format(4242)}\n", Announcement(4242, 11)),
        (
            f"2026/01/02 15:04:05 {STARTING.format(11)}\n"
            f"2026/01/02 15:04:13 [INFO] {LISTENING.format(4242)}\n",
            Announcement(4242, 11),
        ),
        (f"I0102 ls.go:88] {LISTENING.format(5000)}\r\n", Announcement(5000, None)),
        (
            f"I1202 05:12:00.123456  4242 server.go:123] {STARTING.format(4242)}\n"
            "I1202 05:12:00.123501  4242 server.go:131] Language server version: 1.2.14\n"
            "W1202 05:12:07.200000  4242 auth.go:57] OAuth: authenticated successfully\n"
            f"I1202 05:12:08.900000  4242 server.go:123] {LISTENING.format(40123)}\n",
            Announcement(40123, 4242),
        ),
        (
            f"{STARTING.format(1)}\n{LISTENING.format(1000)}\nnoise 77\n"
            f"{STARTING.format(2)}\n{LISTENING.format(2000)}\n",
            Announcement(2000, 2),
        ),
        (
            f"{STARTING.format(1)}\n{LISTENING.format(1000)}\n{LISTENING.format(3000)}\n",
            Announcement(3000, 1),
        ),
        (f"{STARTING.format(9)}\n{LISTENING.format(6000)}", Announcement(6000, 9)),
        (f"{STARTING.format(9)}\nLanguage server listening on random port at 60", None),
        (f"{LISTENING.format(0)}\n{LISTENING.format(70000)}\n", None),
        ("Starting language server process with pid\nunrelated 8080 for HTTPS\n", None),
        ("", None),
    ],
    ids=[
        "plain",
        "timestamps",
        "crlf-no-pid",
        "glog",
        "restart-last-wins",
        "second-port-same-pid",
        "partial-port-line",
        "truncated-port-number",
        "out-of-range-ports",
        "near-misses",
        "empty",
    ],
)
def test_log_scanner(text: str, expected: Announcement | None) -> None:
    scanner = LogScanner()
    scanner.feed(text)
    assert scanner.latest == expected


GLOG = "I1202 05:12:00.123456  4242 server.go:123] "


@pytest.mark.parametrize(
    ("lines", "version", "signed_in"),
    [
        pytest.param([], None, None, id="nothing-said"),
        pytest.param(
            ["Language server version: 1.2.14", "OAuth: authenticated successfully"],
            "1.2.14",
            True,
            id="signed-in",
        ),
        pytest.param(["You are not logged into Antigravity"], None, False, id="signed-out"),
        pytest.param(
            ["You are not logged into Antigravity", "OAuth: authenticated successfully"],
            None,
            True,
            id="signed-in-later",
        ),
    ],
)
@pytest.mark.parametrize("prefix", ["", GLOG, "2026/01/02 15:04:05 "], ids=["plain", "glog", "go"])
def test_log_scanner_reads_version_and_sign_in(
    lines: list[str], version: str | None, signed_in: bool | None, prefix: str
) -> None:
    scanner = LogScanner()
    scanner.feed("".join(f"{prefix}{line}\n" for line in lines))
    assert (scanner.version, scanner.signed_in) == (version, signed_in)


def test_log_scanner_split_anywhere_gives_the_same_result() -> None:
    text = (
        f"2026/01/02 15:04:05 {STARTING.format(123)}\nother\n"
        f"2026/01/02 15:04:13 {LISTENING.format(45123)}\n"
        f"{STARTING.format(456)}\n{LISTENING.format(45999)}\n"
    )
    for cut in range(len(text) + 1):
        scanner = LogScanner()
        scanner.feed(text[:cut])
        if scanner.latest is not None:
            # Never a truncated port: whatever was seen mid-way is a real announcement.
            assert scanner.latest in (Announcement(45123, 123), Announcement(45999, 456))
        scanner.feed(text[cut:])
        assert scanner.announcements == [Announcement(45123, 123), Announcement(45999, 456)]


def test_truncated_pid_line_waits_for_its_newline() -> None:
    scanner = LogScanner()
    scanner.feed(f"{STARTING.format(12)}")  # maybe "123" once complete
    scanner.feed("3\n" + LISTENING.format(7000) + "\n")
    assert scanner.latest == Announcement(7000, 123)


def test_log_watcher_follows_appends_and_replacement(tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    watcher = LogWatcher(log)
    assert watcher.poll() is None  # no file yet
    log.write_text(f"{STARTING.format(5)}\n")
    assert watcher.poll() is None
    with log.open("a") as handle:
        handle.write(LISTENING.format(4100)[:30])
    assert watcher.poll() is None
    with log.open("a") as handle:
        handle.write(LISTENING.format(4100)[30:] + "\n")
    assert watcher.poll() == Announcement(4100, 5)
    # agy started again with a fresh log (a new file, as agy-sim's mode "w" does).
    replacement = tmp_path / "new.log"
    replacement.write_text(f"{STARTING.format(6)}\n{LISTENING.format(4200)}\n")
    replacement.replace(log)
    assert watcher.poll() == Announcement(4200, 6)
    # Truncated in place, then rewritten.
    log.write_text(f"{LISTENING.format(4300)}\n")
    assert watcher.poll() == Announcement(4300, None)


def test_log_watcher_tolerates_invalid_utf8(tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    log.write_bytes(b"\xff\xfe garbage\n" + LISTENING.format(4400).encode() + b"\n")
    assert LogWatcher(log).poll() == Announcement(4400, None)


# -- real processes --------------------------------------------------------------------------


class Spawned:
    """A started helper process and the JSON line it printed (if it prints one)."""

    def __init__(self, proc: subprocess.Popen[str], info: dict[str, Any]) -> None:
        self.proc = proc
        self.info = info

    @property
    def pid(self) -> int:
        return self.proc.pid


@pytest.fixture
def spawn() -> Iterator[Callable[..., Spawned]]:
    started: list[subprocess.Popen[str]] = []

    def start(script: Path, *args: str, handshake: bool = True, **kwargs: Any) -> Spawned:
        proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            **kwargs,
        )
        started.append(proc)
        info: dict[str, Any] = {}
        if handshake:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line, f"{script.name} exited early ({proc.wait()})"
            info = json.loads(line)
        return Spawned(proc, info)

    yield start
    for proc in started:
        end_process(proc)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _fake_agy(spawn: Callable[..., Spawned], log: Path, *args: str, token: str = TOKEN) -> Spawned:
    return spawn(FAKE_AGY, f"--csrf_token={token}", "--log-file", str(log), *args, handshake=False)


def _discover(**kwargs: Any) -> int:
    kwargs.setdefault("csrf_token", TOKEN)
    kwargs.setdefault("deadline", 30.0)
    kwargs.setdefault("poll_interval", 0.05)
    return asyncio.run(discover_pin(**kwargs)).port


# -- listeners -------------------------------------------------------------------------------

BACKENDS = [
    pytest.param(listeners._psutil_listeners, id="psutil"),
    pytest.param(listeners._procfs_listeners, id="procfs"),
    pytest.param(listeners._lsof_listeners, id="lsof"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_each_backend_sees_a_real_process_listeners(
    spawn: Callable[..., Spawned], backend: Callable[..., list[Listener] | None], host: str
) -> None:
    if backend is listeners._lsof_listeners and shutil.which("lsof") is None:
        pytest.skip("lsof is not installed")
    if backend is listeners._procfs_listeners and not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp here")
    proc = spawn(LISTENER, "--listen", "2", "--host", host)
    own = backend({proc.pid})
    assert own is not None
    assert sorted(lst.port for lst in own) == sorted(proc.info["ports"])
    assert {lst.pid for lst in own} == {proc.pid}
    assert all(lst.reachable_on_loopback for lst in own)
    everyone = backend(None)
    assert everyone is not None
    mine = [lst for lst in everyone if lst.port in proc.info["ports"]]
    assert {lst.pid for lst in mine} == {proc.pid}


def test_descendants_ports_count_as_ours(spawn: Callable[..., Spawned]) -> None:
    proc = spawn(LISTENER, "--listen", "1", "--child-listen", "1")
    ownership = port_ownership(proc.pid)
    assert proc.info["child_pid"] in ownership.tree
    assert ownership.candidate_ports == proc.info["ports"] + proc.info["child_ports"]
    assert is_port_owned_by(proc.info["child_ports"][0], proc.pid)
    # ...but a child's tree does not own its parent's port.
    assert not is_port_owned_by(proc.info["ports"][0], proc.info["child_pid"])


def test_foreign_process_port_is_not_owned(spawn: Callable[..., Spawned]) -> None:
    ours = spawn(LISTENER, "--listen", "1")
    foreign = spawn(LISTENER, "--listen", "1")
    assert is_port_owned_by(ours.info["ports"][0], ours.pid)
    assert not is_port_owned_by(foreign.info["ports"][0], ours.pid)
    ownership = port_ownership(ours.pid)
    assert ownership.held_by_others(foreign.info["ports"][0])
    assert foreign.info["ports"][0] not in ownership.candidate_ports


def test_a_port_shared_with_a_stranger_is_not_owned(spawn: Callable[..., Spawned]) -> None:
    # Two processes on one port (SO_REUSEPORT): a connection could land on either.
    first = spawn(LISTENER, "--listen", "0", "--reuse-port", "0")
    port = first.info["ports"][0]
    assert is_port_owned_by(port, first.pid)
    spawn(LISTENER, "--listen", "0", "--reuse-port", str(port))
    assert not is_port_owned_by(port, first.pid)


def test_another_users_process_is_never_ours(spawn: Callable[..., Spawned]) -> None:
    if os.getuid() != 0:
        pytest.skip("starting a process as another user needs root")
    other = spawn(LISTENER, "--listen", "1", "--become-uid", "65534")
    assert listeners.psutil.Process(other.pid).uids().real == 65534
    assert not is_port_owned_by(other.info["ports"][0], other.pid)
    assert port_ownership(other.pid).candidate_ports == []


def test_gone_process_owns_nothing(spawn: Callable[..., Spawned]) -> None:
    proc = spawn(LISTENER, "--listen", "1")
    port = proc.info["ports"][0]
    proc.proc.terminate()
    proc.proc.wait(timeout=10)
    assert not is_port_owned_by(port, proc.pid)


# -- probing and discovery against a real TLS HTTP/2 server ----------------------------------


def test_discovers_from_the_log_and_heartbeat_answers(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log)
    port = _discover(pid=agy.pid, log_file=log)
    assert is_port_owned_by(port, agy.pid)
    assert f"port at {port} for HTTPS" in log.read_text()

    async def check() -> str | None:
        async with RpcClient(port=port, csrf_token=TOKEN) as client:
            await client.heartbeat()
            return client.http_version

    assert asyncio.run(check()) == "HTTP/2"


def test_discovers_from_listeners_without_a_log(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-no-log")
    port = _discover(pid=agy.pid, log_file=log)
    assert not log.exists()
    # The plain-HTTP port N+1 is also agy's, but fails the TLS handshake.
    assert port in port_ownership(agy.pid).candidate_ports
    assert asyncio.run(probe_port(port + 1, csrf_token=TOKEN)) is Probe.NOT_RPC


def test_waits_through_start_up(spawn: Callable[..., Spawned], tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-no-log", "--fake-starting-seconds", "1.5")
    port = _discover(pid=agy.pid, log_file=log)
    assert asyncio.run(probe_port(port, csrf_token=TOKEN)) is Probe.OK


def test_starting_server_probes_as_starting(spawn: Callable[..., Spawned], tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-no-log", "--fake-starting-seconds", "120")
    wait_until(
        lambda: port_ownership(agy.pid).candidate_ports,
        timeout=10,
        what="a listener of the fake agy",
    )
    port = port_ownership(agy.pid).candidate_ports[0]
    assert asyncio.run(probe_port(port, csrf_token=TOKEN)) is Probe.STARTING
    with pytest.raises(PortNeverOpenedError, match="still said it was starting"):
        _discover(pid=agy.pid, log_file=log, deadline=0.5)


def test_wrong_token_is_a_distinct_csrf_failure(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, token="the-real-one")
    with pytest.raises(CsrfRejectedError) as info:
        # Fails as soon as agy's own port refuses the token, long before this deadline.
        _discover(pid=agy.pid, log_file=log, deadline=120.0)
    assert "CSRF" in str(info.value)
    assert "the-real-one" not in str(info.value)
    assert TOKEN not in str(info.value)
    assert str(log) in info.value.remediation


def test_conversation_is_confirmed(spawn: Callable[..., Spawned], tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-conversation", "conv-1")
    port = _discover(pid=agy.pid, log_file=log, conversation_id="conv-1")
    assert asyncio.run(probe_port(port, csrf_token=TOKEN, conversation_id="conv-1")) is Probe.OK
    with pytest.raises(ConversationNotFoundError, match="does not know the conversation"):
        _discover(pid=agy.pid, log_file=log, conversation_id="conv-2", deadline=1.0)


def test_never_opened_port_fails_at_the_deadline(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-never-listen")
    wait_until(log.exists, timeout=10, what="agy's log file")
    with pytest.raises(PortNeverOpenedError) as info:
        _discover(pid=agy.pid, log_file=log, deadline=0.5)
    assert info.value.pid == agy.pid
    assert "agy" in info.value.remediation


_SIGNED_OUT_AGY = """
import sys, time
with open(sys.argv[1], "w") as log:
    log.write("I1202 05:12:00.123456  4242 server.go:123] Starting language server process"
              " with pid 4242\\n")
    log.write("E1202 05:12:00.200000  4242 auth.go:88] You are not logged into Antigravity\\n")
if sys.argv[2] == "stay":
    time.sleep(60)
"""


@pytest.mark.parametrize("how", ["exits", "stays"])
def test_an_agy_that_logs_it_is_signed_out_fails_as_signed_out(tmp_path: Path, how: str) -> None:
    """A real agy not signed in may never serve; its log says why (docs/wire.md §9)."""
    log = tmp_path / "agy.log"
    mode = "stay" if how == "stays" else "exit"
    agy = subprocess.Popen([sys.executable, "-c", _SIGNED_OUT_AGY, str(log), mode])
    try:
        wait_until(
            lambda: log.exists() and "not logged" in log.read_text(),
            timeout=10,
            what="the sign-in line in agy's log",
        )
        if how == "exits":
            agy.wait(10)
        with pytest.raises(AgySignedOutError) as info:
            _discover(pid=agy.pid, log_file=log, deadline=0.5)
    finally:
        agy.kill()
        agy.wait(10)
    assert "not logged into Antigravity" in str(info.value)
    failure = failure_for(info.value)
    assert failure.code == "agy_signed_out"
    assert "sign in" in failure.remediation


def test_listeners_that_are_not_agy_are_skipped(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    proc = spawn(LISTENER, "--listen", "2")  # accepts TCP, speaks no TLS
    with pytest.raises(PortNeverOpenedError):
        _discover(pid=proc.pid, log_file=tmp_path / "none.log", deadline=0.5)


def test_exited_process_is_reported(spawn: Callable[..., Spawned], tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    agy = _fake_agy(spawn, log, "--fake-exit", "3")
    agy.proc.wait(timeout=10)
    with pytest.raises(AgyExitedError, match="exited"):
        _discover(pid=agy.pid, log_file=log, deadline=5.0)


def test_foreign_agy_named_in_the_log_is_never_chosen(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    # A stranger serving agy's protocol WITH OUR TOKEN (the worst case), named by the log.
    foreign_log = tmp_path / "foreign.log"
    foreign = _fake_agy(spawn, foreign_log)
    foreign_port = _discover(pid=foreign.pid, log_file=foreign_log)
    # Our agy: no log lines of its own; its log file names the stranger's port.
    log = tmp_path / "agy.log"
    log.write_text(f"{STARTING.format(os.getpid())}\n{LISTENING.format(foreign_port)}\n")
    ours = _fake_agy(spawn, log, "--fake-no-log")
    port = _discover(pid=ours.pid, log_file=log)
    assert port != foreign_port
    assert is_port_owned_by(port, ours.pid)


def test_only_a_foreign_listener_is_a_distinct_failure(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    foreign_log = tmp_path / "foreign.log"
    foreign = _fake_agy(spawn, foreign_log)
    foreign_port = _discover(pid=foreign.pid, log_file=foreign_log)
    log = tmp_path / "agy.log"
    # Our process writes the log naming the stranger's port and listens on nothing.
    ours = spawn(LISTENER, "--listen", "0", "--log", str(log), "--announce-port", str(foreign_port))
    with pytest.raises(ForeignListenerError, match=str(foreign_port)) as info:
        _discover(pid=ours.pid, log_file=log, deadline=0.5)
    assert "never talks to a port" in info.value.remediation


# -- another user's agy (a real agy-sim of uid `nobody`, serving OUR token) ------------------


def test_another_users_agy_named_in_our_log_is_never_asked(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    with foreign_agy(TOKEN) as foreign:
        foreign_port = foreign.port
        assert "bin/agy" in " ".join(psutil.Process(foreign.pid).cmdline())
        # Our agy's log names the stranger's pid and port (a reused log, a port taken over).
        log = tmp_path / "agy.log"
        log.write_text(f"{STARTING.format(foreign.pid)}\n{LISTENING.format(foreign_port)}\n")
        ours = _fake_agy(spawn, log, "--fake-no-log")
        port = _discover(pid=ours.pid, log_file=log)
        assert port != foreign_port
        assert is_port_owned_by(port, ours.pid)
        foreign.untouched(foreign_port)


def test_only_another_users_agy_in_sight_is_a_foreign_listener(
    spawn: Callable[..., Spawned], tmp_path: Path
) -> None:
    with foreign_agy(TOKEN) as foreign:
        log = tmp_path / "agy.log"
        ours = spawn(
            LISTENER, "--listen", "0", "--log", str(log), "--announce-port", str(foreign.port)
        )
        with pytest.raises(ForeignListenerError, match=str(foreign.port)):
            _discover(pid=ours.pid, log_file=log, deadline=1.0)
        foreign.untouched(foreign.port)


def test_a_port_line_in_the_log_ends_the_wait_between_two_scans(tmp_path: Path) -> None:
    """Between two scans of the listeners agy's log is read: its port line is followed at
    once, not after the rest of the poll interval (docs/performance.md, "Cold start")."""
    log = tmp_path / "agy.log"
    log.write_text("I starting\n", encoding="utf-8")
    watcher = LogWatcher(log)

    async def go() -> Announcement | None:
        known = watcher.poll()
        waiting = asyncio.ensure_future(until_announced(watcher, known, 3600.0))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # nothing new in the log: still waiting
        with log.open("a", encoding="utf-8") as handle:
            handle.write("I Language server listening on random port at 4242 for HTTPS\n")
        await asyncio.wait_for(waiting, 30)  # not the hour it was given
        return watcher.poll()

    assert asyncio.run(go()) == Announcement(4242, None)
    # With nothing announced it sleeps what it was given, and returns.
    asyncio.run(until_announced(watcher, Announcement(4242, None), 0.05))
