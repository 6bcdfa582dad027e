"""Launching agy in tmux, waiting until it is ready, re-attaching: real tmux, real processes,
real TLS HTTP/2 (tests/_fake_agy.py, and agy-sim where installed)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from waiting import wait_until

from omnigent_agy.agy.launcher import (
    AgyLaunchSpec,
    build_argv,
    ensure_agy,
    launch_agy,
    reattach,
    write_agy_settings,
)
from omnigent_agy.agy.process import AgyProcess, session_name
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.workspace import prepare_workspace
from omnigent_agy.errors import AgyExitedError, LaunchError, PortNeverOpenedError, StateDirError
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.listeners import is_port_owned_by

FAKE_AGY = Path(__file__).resolve().parent.parent / "_fake_agy.py"
CONVERSATION = "conv-1"


# -- pure parts ------------------------------------------------------------------------------


def _spec(tmp_path: Path, *flags: str, **overrides: object) -> AgyLaunchSpec:
    state = SessionStateDir.open(CONVERSATION, base=tmp_path / "state")
    values: dict[str, object] = {
        "command": (sys.executable, str(FAKE_AGY)),
        "workspace": tmp_path,
        "state_dir": state,
        "extra_flags": flags,
        "ready_timeout": 30.0,
    }
    values.update(overrides)
    return AgyLaunchSpec(**values)  # type: ignore[arg-type]


def test_argv_carries_agy_flags(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--mode", "plan", model="Gemini 3 Pro", command=("agy",))
    argv = build_argv(spec, csrf_token="t0k")
    state = spec.state_dir
    assert argv == [
        "agy",
        "--csrf_token=t0k",
        "--log-file",
        str(state.log_file),
        "--gemini_dir",
        str(state.gemini_dir),
        "--model",
        "Gemini 3 Pro",
        "--mode",
        "plan",
    ]


def test_gemini_dir_and_log_are_absolute_whatever_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative state folder must not reach agy's command line: agy ignores a relative
    --gemini_dir and falls back to the person's ~/.gemini (docs/wire.md §9). A relative
    OMNIGENT_AGY_STATE_DIR is refused (another folder in the host than in the harness, issue
    18); a relative base given in code is made absolute."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", "state")
    with pytest.raises(StateDirError, match="relative path"):
        SessionStateDir.open("c")
    state = SessionStateDir.open("c", base=Path("state"))
    spec = AgyLaunchSpec(command=("agy",), workspace=tmp_path, state_dir=state)
    argv = build_argv(spec, csrf_token="t0k")
    gemini_dir = Path(argv[argv.index("--gemini_dir") + 1])
    log_file = Path(argv[argv.index("--log-file") + 1])
    assert gemini_dir == tmp_path / "state" / "c" / "gemini"
    assert log_file == tmp_path / "state" / "c" / "agy.log"


def test_settings_turn_the_survey_off_and_keep_the_rest(tmp_path: Path) -> None:
    settings_file = write_agy_settings(tmp_path / "gemini")
    assert json.loads(settings_file.read_text()) == {"showFeedbackSurvey": False}
    settings_file.write_text(json.dumps({"theme": "dark", "showFeedbackSurvey": True}))
    write_agy_settings(tmp_path / "gemini")
    assert json.loads(settings_file.read_text()) == {"theme": "dark", "showFeedbackSurvey": False}
    settings_file.write_text("[1, 2]")
    with pytest.raises(LaunchError, match="not a JSON object"):
        write_agy_settings(tmp_path / "gemini")


def test_session_names_are_tmux_safe() -> None:
    assert session_name("conv-1") == "agy-conv-1"
    assert ":" not in session_name("a:b.c")
    assert "." not in session_name("a:b.c")


# -- with tmux -------------------------------------------------------------------------------


@pytest.fixture
def tmux_host() -> Iterator[TerminalHost]:
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    yield host
    for name in host.names():
        terminal = host.find(name)
        if terminal is not None:
            terminal.stop(timeout=2)
    host.kill_server()


def _run[T](coro: Callable[[], object]) -> T:
    return asyncio.run(coro())  # type: ignore[arg-type,no-any-return]


async def _heartbeat(agy: AgyProcess) -> str | None:
    async with agy.client() as client:
        await client.heartbeat()
        return client.http_version


@pytest.mark.tmux
def test_launch_waits_until_ready_and_records_it(
    tmux_host: TerminalHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    spec = _spec(tmp_path, "--fake-starting-seconds", "1", model="m1")
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert agy.terminal.pid == agy.pid
    assert is_port_owned_by(agy.port, agy.pid)
    assert _run(lambda: _heartbeat(agy)) == "HTTP/2"
    assert agy.csrf_token not in repr(agy)
    assert len(agy.csrf_token) >= 32
    # Our code and libtmux (which logs every tmux command line) never log the token.
    # (hpack's own DEBUG log prints request headers: a client concern, not checked here.)
    ours = [r for r in caplog.records if r.name.startswith(("omnigent_agy", "libtmux"))]
    assert any(r.name.startswith("libtmux") for r in ours)
    assert not [r for r in ours if agy.csrf_token in r.getMessage() + str(r.__dict__)]
    # The record holds what a respawned harness needs, privately.
    record = spec.state_dir.read_record()
    assert record is not None
    assert (record.pid, record.port, record.csrf_token) == (agy.pid, agy.port, agy.csrf_token)
    assert record.tmux_session == "agy-conv-1"
    assert stat.S_IMODE(spec.state_dir.record_file.stat().st_mode) == 0o600
    # agy saw its settings (survey off) and its flags.
    wait_until(
        lambda: "survey=False" in "\n".join(agy.terminal.capture()),
        timeout=10,
        what="agy-sim's screen to show survey=False",
    )
    screen = "\n".join(agy.terminal.capture())
    assert "model=m1" in screen
    assert agy.csrf_token not in screen
    _run(agy.stop)
    assert spec.state_dir.read_record() is None
    assert tmux_host.find("agy-conv-1") is None


@pytest.mark.tmux
def test_each_launch_gets_a_fresh_token_and_log(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    first: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    first_log = spec.state_dir.log_file.read_text()
    _run(first.stop)
    second: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert second.csrf_token != first.csrf_token
    assert str(second.pid) in spec.state_dir.log_file.read_text()
    assert str(first.pid) not in spec.state_dir.log_file.read_text()
    assert (spec.state_dir.path / "agy.log.1").read_text() == first_log


@pytest.mark.tmux
def test_a_second_launch_is_refused_while_one_runs(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    with pytest.raises(LaunchError, match="already running"):
        _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))


@pytest.mark.tmux
def test_reattach_from_a_fresh_harness(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--fake-conversation", "cascade-1")
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    agy.bind_cascade("cascade-1")
    # A respawned harness process: new host object, state dir re-opened from disk.
    host2 = TerminalHost(socket_name=tmux_host.socket_name)
    state2 = SessionStateDir.open(CONVERSATION, base=tmp_path / "state")
    found = _run(lambda: reattach(host2, state2))
    assert found is not None
    assert (found.pid, found.port, found.csrf_token) == (agy.pid, agy.port, agy.csrf_token)
    assert found.cascade_id == "cascade-1"
    assert _run(lambda: _heartbeat(found)) == "HTTP/2"
    # The pin it checked agy's port with goes to the session, once (docs/performance.md).
    assert agy.take_pin() is not None
    assert agy.take_pin() is None
    pin = found.take_pin()
    assert pin is not None
    assert (pin.port, bool(pin.certificate)) == (found.port, True)


@pytest.mark.tmux
def test_reattach_rediscovers_a_moved_port(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    record = spec.state_dir.read_record()
    assert record is not None
    spec.state_dir.write_record(replace(record, port=1))
    found = _run(lambda: reattach(tmux_host, spec.state_dir))
    assert found is not None
    assert found.port == agy.port
    assert (spec.state_dir.read_record() or record).port == agy.port


@pytest.mark.tmux
@pytest.mark.parametrize(
    "damage",
    ["no-record", "stopped", "other-process", "other-socket", "unknown-cascade", "wrong-token"],
)
def test_reattach_refuses_what_is_not_our_agy(
    tmux_host: TerminalHost, tmp_path: Path, damage: str
) -> None:
    spec = _spec(tmp_path)
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    record = spec.state_dir.read_record()
    assert record is not None
    if damage == "no-record":
        spec.state_dir.clear_record()
    elif damage == "stopped":
        agy.terminal.stop()
    elif damage == "other-process":  # same pid number, different process start: pid reuse
        spec.state_dir.write_record(replace(record, pid_create_time=record.pid_create_time - 60))
    elif damage == "other-socket":
        spec.state_dir.write_record(replace(record, tmux_socket="someone-else"))
    elif damage == "unknown-cascade":
        spec.state_dir.write_record(record.with_cascade("never-heard-of-it"))
    elif damage == "wrong-token":
        spec.state_dir.write_record(replace(record, csrf_token="not-the-token"))
    assert _run(lambda: reattach(tmux_host, spec.state_dir, deadline=0.5)) is None


@pytest.mark.tmux
def test_ensure_agy_launches_once_then_reattaches(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    first: AgyProcess = _run(lambda: ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    second: AgyProcess = _run(lambda: ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert (second.pid, second.port) == (first.pid, first.port)
    assert tmux_host.names() == ["agy-conv-1"]
    # A record that no longer matches (here: a stale token) is replaced by a fresh agy.
    record = spec.state_dir.read_record()
    assert record is not None
    spec.state_dir.write_record(replace(record, csrf_token="stale"))
    third: AgyProcess = _run(lambda: ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert third.pid != first.pid
    assert tmux_host.names() == ["agy-conv-1"]
    assert _run(lambda: _heartbeat(third)) == "HTTP/2"


@pytest.mark.tmux
def test_agy_that_exits_reports_its_screen(tmux_host: TerminalHost, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "--fake-exit", "3")
    with pytest.raises(AgyExitedError) as info:
        _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert "not signed in, run agy" in str(info.value)
    assert "Run `agy` in a terminal" in info.value.remediation
    assert spec.state_dir.read_record() is None


@pytest.mark.tmux
def test_agy_that_never_listens_times_out_and_is_stopped(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, "--fake-never-listen", ready_timeout=0.5)
    with pytest.raises(PortNeverOpenedError):
        _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    terminal = tmux_host.find("agy-conv-1")
    assert terminal is None or not terminal.is_alive()
    assert spec.state_dir.read_record() is None


@pytest.mark.tmux
def test_ready_check_gates_readiness(tmux_host: TerminalHost, tmp_path: Path) -> None:
    calls: list[int] = []

    async def never(client: RpcClient) -> bool:
        await client.heartbeat()
        calls.append(1)
        return False

    # Long enough for the fake agy to open its port on a loaded machine: the check must
    # see the port answer and still refuse, or the error is the other timeout.
    spec = _spec(tmp_path, ready_timeout=5.0)
    with pytest.raises(PortNeverOpenedError, match="readiness check never passed"):
        _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION, ready_check=never))
    assert calls

    async def second_time(client: RpcClient) -> bool:
        calls.append(2)
        return calls.count(2) >= 2

    spec = replace(spec, ready_timeout=30.0)
    agy = _run(lambda: launch_agy(tmux_host, spec, conversation_id="c2", ready_check=second_time))
    assert isinstance(agy, AgyProcess)
    assert calls.count(2) == 2


@pytest.mark.tmux
def test_agy_sim_launches_and_reattaches(tmux_host: TerminalHost, tmp_path: Path) -> None:
    agy_sim = shutil.which("agy-sim") or str(Path(sys.executable).parent / "agy-sim")
    if not os.access(agy_sim, os.X_OK):
        pytest.skip("agy-sim is not installed")
    spec = _spec(tmp_path, "--sim-startup-delay", "0.5", command=(agy_sim,))
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    assert _run(lambda: _heartbeat(agy)) == "HTTP/2"
    found = _run(lambda: reattach(TerminalHost(socket_name=tmux_host.socket_name), spec.state_dir))
    assert found is not None
    assert (found.pid, found.port) == (agy.pid, agy.port)


# -- coming back after a stop -------------------------------------------------------------


def _stopped_record(spec: AgyLaunchSpec, tmux_host: TerminalHost, cascade_id: str) -> None:
    """What a sweep leaves: the record of an agy that is gone, bound to a conversation."""
    agy = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    agy.bind_cascade(cascade_id)
    _run(agy.stop)  # stops it and forgets the record...
    record = replace(_record_of(agy), csrf_token="")  # ...so put back what a sweep keeps
    spec.state_dir.write_record(record.as_stopped("idle 4h01m (limit 4h)", time.time()))


def _record_of(agy: AgyProcess) -> AgyRecord:
    return AgyRecord(
        pid=agy.pid,
        pid_create_time=0.0,
        port=agy.port,
        csrf_token=agy.csrf_token,
        tmux_socket=agy.terminal.host.socket_name,
        tmux_session=agy.terminal.name,
        log_file=str(agy.log_file),
        cascade_id=agy.cascade_id,
    )


def test_argv_resumes_a_conversation(tmp_path: Path) -> None:
    spec = _spec(tmp_path, command=("agy",))
    argv = build_argv(spec, csrf_token="t0k", conversation="c-123")
    assert argv[-2:] == ["--conversation", "c-123"]
    assert "--conversation" not in build_argv(spec, csrf_token="t0k")


@pytest.mark.tmux
def test_ensure_agy_starts_a_stopped_agy_again_on_its_conversation(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, "--fake-conversation", "c-123")
    _stopped_record(spec, tmux_host, "c-123")
    agy = _run(lambda: ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    try:
        assert agy.cascade_id == "c-123"
        assert agy.resumed_after == "idle 4h01m (limit 4h)"
        record = spec.state_dir.read_record()
        assert record is not None
        assert record.pid == agy.pid
        assert record.cascade_id == "c-123"
        assert record.stopped_at is None
        assert record.workspace == str(tmp_path)
        cmdline = " ".join(psutil.Process(agy.pid).cmdline())
        assert "--conversation c-123" in cmdline
    finally:
        _run(agy.stop)


@pytest.mark.tmux
def test_an_agy_that_refuses_the_conversation_flag_starts_on_a_new_one(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    picky = tmp_path / "picky-agy"
    picky.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --conversation "*) echo "unknown flag: --conversation" >&2; exit 2;; '
        "esac\n"
        f'exec {sys.executable} {FAKE_AGY} "$@"\n'
    )
    picky.chmod(0o755)
    spec = _spec(tmp_path, command=(str(picky),))
    _stopped_record(spec, tmux_host, "c-123")
    agy = _run(lambda: ensure_agy(tmux_host, spec, conversation_id=CONVERSATION))
    try:
        assert agy.cascade_id is None, "a new conversation: the session binds one"
        assert agy.resumed_after is not None
        assert "would not start on conversation c-123" in agy.resumed_after
        assert "--conversation" not in " ".join(psutil.Process(agy.pid).cmdline())
    finally:
        _run(agy.stop)


# -- started from inside an agy --------------------------------------------------------------

OUTER_AGY = {
    "ANTIGRAVITY_CSRF_TOKEN": "outer-agy-token-Zq3xP8LwR2vTk9mNcY4bH7",
    "ANTIGRAVITY_LS_ADDRESS": "127.0.0.1:40123",
    "ANTIGRAVITY_AGENT": "1",
    "ANTIGRAVITY_CONVERSATION_ID": "0b1c2d3e-outer",
    "ANTIGRAVITY_TRAJECTORY_ID": "4f5a6b7c-outer",
    "ANTIGRAVITY_SOURCE_METADATA": "{}",
}


def _stop_server(host: TerminalHost) -> None:
    """Every session of a test's own tmux server, then the server."""
    for name in host.names():
        terminal = host.find(name)
        if terminal is not None:
            terminal.stop(timeout=2)
    host.kill_server()


@pytest.mark.tmux
def test_agy_gets_the_harness_environment_of_now_not_the_tmux_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tmux server keeps the environment of the harness process that started it (an
    earlier one, maybe of another configuration), and outlives it. An agy started later must
    run with the starting harness's environment, what its readiness and pre-flight were
    decided with: a key the host's owner removed, or a setting changed since,
    must not come back from the server's."""
    monkeypatch.setenv("GEMINI_API_KEY", "key-the-owner-removed-since")
    monkeypatch.setenv("OMNIGENT_AGY_TEST_SETTING", "before")
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    try:
        # The first agy starts the tmux server with these in its environment.
        first: AgyProcess = _run(lambda: launch_agy(host, _spec(tmp_path), conversation_id="a"))
        assert psutil.Process(first.pid).environ()["GEMINI_API_KEY"].startswith("key-the")
        monkeypatch.delenv("GEMINI_API_KEY")
        monkeypatch.setenv("OMNIGENT_AGY_TEST_SETTING", "after")
        state = SessionStateDir.open("b", base=tmp_path / "state")
        second: AgyProcess = _run(
            lambda: launch_agy(host, _spec(tmp_path, state_dir=state), conversation_id="b")
        )
        environ = psutil.Process(second.pid).environ()
        assert "GEMINI_API_KEY" not in environ
        assert environ["OMNIGENT_AGY_TEST_SETTING"] == "after"
        assert environ["PATH"] == os.environ["PATH"]
        assert environ.get("TMUX_PANE", "").startswith("%"), "tmux's own variables stay"
        _run(first.stop)
        _run(second.stop)
    finally:
        _stop_server(host)


@pytest.mark.tmux
def test_an_agy_started_from_inside_an_agy_gets_none_of_its_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """omnigent run from an agy's terminal (docs/wire.md §9): the harness, and the tmux server
    it starts, have the outer agy's variables; the agy we start must not see them."""
    for name, value in OUTER_AGY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OMNIGENT_AGY_TEST_KEPT", "yes")
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    try:
        # The tmux server starts here, with the outer variables in its environment.
        agy: AgyProcess = _run(
            lambda: launch_agy(host, _spec(tmp_path), conversation_id=CONVERSATION)
        )
        environ = psutil.Process(agy.pid).environ()
        assert not {name for name in environ if name.startswith("ANTIGRAVITY_")}
        assert environ["OMNIGENT_AGY_TEST_KEPT"] == "yes"  # the rest is passed on
        _run(agy.stop)
    finally:
        _stop_server(host)


@pytest.mark.tmux
def test_agy_starts_in_the_link_of_a_hidden_workspace_and_the_link_goes_with_it(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    """agy tests the spelling of its workspace (docs/wire.md §9): it runs in the dot-free link,
    with PWD naming the link (its real cwd is the person's folder); the record keeps the
    person's path, and stopping agy removes the link."""
    hidden = tmp_path / "repo" / ".worktrees" / "feature"
    hidden.mkdir(parents=True)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    state = SessionStateDir.open(CONVERSATION, base=tmp_path / "state")
    where = prepare_workspace(hidden, state.key, state.path, {"XDG_RUNTIME_DIR": str(runtime)})
    spec = _spec(tmp_path, workspace=hidden, cwd=where.agy)
    agy: AgyProcess = _run(lambda: launch_agy(tmux_host, spec, conversation_id=CONVERSATION))
    process = psutil.Process(agy.pid)
    assert process.environ()["PWD"] == str(where.agy)
    assert Path(process.cwd()) == hidden
    record = state.read_record()
    assert record is not None
    assert record.workspace == str(hidden)
    _run(agy.stop)
    assert not where.agy.is_symlink()
    assert hidden.is_dir()
