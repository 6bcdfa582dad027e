"""agy's tmux terminal, with real tmux on a throw-away socket (libtmux)."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from waiting import wait_until

from omnigent_agy.agy.terminal import AgyTerminal, TerminalHost, process_running
from omnigent_agy.errors import TerminalError

pytestmark = pytest.mark.tmux

SECRET = "csrf-" + uuid.uuid4().hex


@pytest.fixture
def tmux_host() -> Iterator[TerminalHost]:
    host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
    yield host
    for name in host.names():
        terminal = host.find(name)
        if terminal is not None:
            terminal.stop(timeout=2)
    host.kill_server()
    assert not host.server.is_alive()
    assert not host.socket_path.exists()


ECHO_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    print("ARGS", json.dumps(sys.argv[1:]))
    print("CWD", os.getcwd())
    print("VAR", os.environ.get("OMNI_TEST_VAR"))
    sys.stdout.flush()
    for line in sys.stdin:
        print("GOT", line.strip(), flush=True)
    """
)


def _screen(terminal: AgyTerminal) -> str:
    return "\n".join(terminal.capture(history=True))


def _start_echo(host: TerminalHost, tmp_path: Path, name: str = "echo") -> AgyTerminal:
    argv = [sys.executable, "-c", ECHO_SCRIPT, "two words", 'it\'s "quoted"', "$HOME;`x`"]
    return host.start(name, argv, cwd=tmp_path, env={"OMNI_TEST_VAR": "v1 v2"})


def test_start_runs_argv_verbatim_in_cwd_with_env(tmux_host: TerminalHost, tmp_path: Path) -> None:
    terminal = _start_echo(tmux_host, tmp_path)
    wait_until(lambda: "VAR" in _screen(terminal), timeout=10, what="the script's output")
    screen = _screen(terminal)
    assert 'ARGS ["two words", "it\'s \\"quoted\\"", "$HOME;`x`"]' in screen
    assert f"CWD {tmp_path}" in screen
    assert "VAR v1 v2" in screen
    assert terminal.is_alive()
    assert terminal.exit_status() is None


def test_a_workspaces_own_omnigent_agy_does_not_stand_in_for_the_trampoline(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    """The pane starts in the workspace, a cloned repository perhaps: one holding an
    ``omnigent_agy/agy/trampoline.py`` of its own must not run in the plugin's place (it would
    run unasked and read the launch file, agy's token with it)."""
    fake = tmp_path / "omnigent_agy" / "agy"
    fake.mkdir(parents=True)
    for folder in (fake.parent, fake):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    ran = tmp_path / "the-repository-ran"
    (fake / "trampoline.py").write_text(
        f"open({str(ran)!r}, 'w').close()\nprint('FAKE', flush=True)\n", encoding="utf-8"
    )
    terminal = _start_echo(tmux_host, tmp_path)
    wait_until(lambda: "VAR" in _screen(terminal), timeout=10, what="the script's output")
    assert "FAKE" not in _screen(terminal)
    assert not ran.exists(), "the workspace's module ran"


def test_pid_is_the_command_itself(tmux_host: TerminalHost, tmp_path: Path) -> None:
    terminal = _start_echo(tmux_host, tmp_path)
    assert terminal.pid is not None
    assert terminal.pid == terminal.pane_pid
    # The trampoline exec'd the command: same pid, the command's own argv.
    wait_until(
        lambda: "two words" in psutil.Process(terminal.pid).cmdline(), timeout=10, what="exec"
    )
    assert psutil.Process(terminal.pid).cmdline()[:2] == [sys.executable, "-c"]


def test_launch_file_is_removed(tmux_host: TerminalHost, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    tmux_host.start("p", [sys.executable, "-c", ECHO_SCRIPT], cwd=tmp_path, private_dir=private)
    assert list(private.iterdir()) == []


def test_send_text_reaches_the_program(tmux_host: TerminalHost, tmp_path: Path) -> None:
    terminal = _start_echo(tmux_host, tmp_path)
    wait_until(lambda: "VAR" in _screen(terminal), timeout=10, what="start-up")
    terminal.send_text("hello world")
    wait_until(lambda: "GOT hello world" in _screen(terminal), timeout=10, what="the echoed line")


def test_typed_text_cannot_press_keys_or_send_escapes(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    script = "import sys\nprint('READY', flush=True)\nfor line in sys.stdin:\n"
    script += "    print('GOT', repr(line), flush=True)\n"
    terminal = tmux_host.start("raw", [sys.executable, "-c", script], cwd=tmp_path)
    wait_until(lambda: "READY" in _screen(terminal), timeout=10, what="start-up")
    terminal.send_text("one\x03two\x1b[2Jthree\rfour\nfive\x7fsix\x9bseven\tend")
    wait_until(lambda: "GOT" in _screen(terminal), timeout=10, what="the typed line")
    (line,) = [row for row in _screen(terminal).splitlines() if row.startswith("GOT")]
    # One line, every word kept, no control character left; Ctrl-C did not stop the program.
    assert line == "GOT 'one two [2Jthree four five six seven end\\n'"
    assert terminal.is_alive()


def test_typed_text_that_looks_like_tmux_options_is_typed(
    tmux_host: TerminalHost, tmp_path: Path
) -> None:
    """``-H 03`` would send a Ctrl-C as hex, ``-X …`` a copy-mode command: text is text."""
    script = "import sys\nprint('READY', flush=True)\nfor line in sys.stdin:\n"
    script += "    print('GOT', repr(line), flush=True)\n"
    terminal = tmux_host.start("opts", [sys.executable, "-c", script], cwd=tmp_path)
    wait_until(lambda: "READY" in _screen(terminal), timeout=10, what="start-up")
    terminal.send_text("-H 03")
    wait_until(lambda: "GOT" in _screen(terminal), timeout=10, what="the typed line")
    assert "GOT '-H 03\\n'" in _screen(terminal)
    assert terminal.is_alive()


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".", "", "x" * 65, "a b", "#(true)"])
def test_a_socket_name_that_is_no_file_name_is_refused(name: str) -> None:
    """The name is a file in tmux's private folder (and the host removes it when the server
    ends): no path may walk out of it."""
    with pytest.raises(TerminalError, match="no tmux socket name"):
        TerminalHost(socket_name=name)


def test_the_tmux_socket_is_private(tmux_host: TerminalHost, tmp_path: Path) -> None:
    _start_echo(tmux_host, tmp_path)
    assert stat.S_IMODE(tmux_host.socket_path.stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(tmux_host.socket_path.parent.stat().st_mode) & 0o077 == 0


def test_find_re_attaches_by_name(tmux_host: TerminalHost, tmp_path: Path) -> None:
    assert tmux_host.find("echo") is None  # no server yet
    terminal = _start_echo(tmux_host, tmp_path)
    found = tmux_host.find("echo")
    assert found is not None
    assert found.pid == terminal.pid
    assert tmux_host.find("other") is None
    # A fresh host object on the same socket (a respawned harness) finds it too.
    again = TerminalHost(socket_name=tmux_host.socket_name).find("echo")
    assert again is not None
    assert again.pid == terminal.pid
    assert tmux_host.names() == ["echo"]


def test_stop_ends_process_and_session(tmux_host: TerminalHost, tmp_path: Path) -> None:
    terminal = _start_echo(tmux_host, tmp_path)
    pid = terminal.pid
    assert pid is not None
    terminal.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert tmux_host.find("echo") is None
    assert not terminal.is_alive()
    terminal.stop()  # idempotent


STUBBORN_SCRIPT = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    code = "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    print("CHILD", child.pid, flush=True)
    sys.stdin.read()
    """
)


def test_stop_escalates_and_reaches_descendants(tmux_host: TerminalHost, tmp_path: Path) -> None:
    terminal = tmux_host.start("stubborn", [sys.executable, "-c", STUBBORN_SCRIPT], cwd=tmp_path)
    wait_until(lambda: "CHILD" in _screen(terminal), timeout=10, what="the child")
    child_pid = int(_screen(terminal).split("CHILD", 1)[1].split()[0])
    child = psutil.Process(child_pid)
    # The child is in its own session: only the tree walk reaches it.
    assert os.getsid(child_pid) != os.getsid(terminal.pid or 0)
    terminal.stop(timeout=0.5)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert tmux_host.find("stubborn") is None


def test_exited_pane_keeps_its_last_screen(tmux_host: TerminalHost, tmp_path: Path) -> None:
    script = "import sys; print('not signed in, run agy', flush=True); sys.exit(3)"
    terminal = tmux_host.start("dies", [sys.executable, "-c", script], cwd=tmp_path)
    wait_until(lambda: not terminal.is_alive(), timeout=10, what="the exit")
    # tmux 3.3 does not always reap a dead pane's process, so the status may be unknown.
    assert terminal.exit_status() in (3, None)
    assert "not signed in, run agy" in _screen(terminal)


def test_missing_command_is_reported_without_argv(tmux_host: TerminalHost, tmp_path: Path) -> None:
    argv = [str(tmp_path / "no-such-agy"), f"--csrf_token={SECRET}"]
    terminal = tmux_host.start("missing", argv, cwd=tmp_path)
    wait_until(lambda: not terminal.is_alive(), timeout=10, what="the exit")
    assert terminal.exit_status() in (127, None)
    screen = _screen(terminal)
    assert "cannot start" in screen
    assert "no-such-agy" in screen
    assert SECRET not in screen


def test_secret_argv_stays_out_of_tmux_and_logs(
    tmux_host: TerminalHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    argv = [sys.executable, "-c", "import sys; sys.stdin.read()", f"--csrf_token={SECRET}"]
    terminal = tmux_host.start("secret", argv, cwd=tmp_path)
    wait_until(
        lambda: SECRET in " ".join(psutil.Process(terminal.pid).cmdline()), timeout=10, what="exec"
    )
    start_command = tmux_host.server.cmd(
        "display-message", "-p", "-t", "secret", "#{pane_start_command}"
    ).stdout
    assert "omnigent_agy.agy.trampoline" in " ".join(start_command)
    assert SECRET not in " ".join(start_command)
    assert SECRET not in caplog.text
    assert any(r.name.startswith("libtmux") for r in caplog.records)


def test_duplicate_and_invalid_names(tmux_host: TerminalHost, tmp_path: Path) -> None:
    _start_echo(tmux_host, tmp_path)
    with pytest.raises(TerminalError, match="already exists"):
        _start_echo(tmux_host, tmp_path)
    with pytest.raises(ValueError, match="session name"):
        tmux_host.start("a.b", ["true"], cwd=tmp_path)
    with pytest.raises(ValueError, match="argv"):
        tmux_host.start("ok", [], cwd=tmp_path)


def test_works_without_tmux_or_term_env(
    tmux_host: TerminalHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inside another tmux (TMUX set) or under CI with no terminal (no TERM) alike.
    monkeypatch.setenv("TMUX", "/tmp/some-other-tmux,1,0")
    monkeypatch.delenv("TERM", raising=False)
    terminal = _start_echo(tmux_host, tmp_path)
    wait_until(lambda: "VAR" in _screen(terminal), timeout=10, what="start-up")
    monkeypatch.delenv("TMUX")
    terminal2 = _start_echo(tmux_host, tmp_path, name="second")
    wait_until(lambda: "VAR" in _screen(terminal2), timeout=10, what="start-up")


def test_a_process_runs_until_it_exits_and_a_zombie_counts_as_ended() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        process = psutil.Process(child.pid)
        assert process_running(process)
        child.kill()
        wait_until(
            lambda: process.status() == psutil.STATUS_ZOMBIE,
            timeout=10,
            what="the killed child a zombie",
        )
        assert not process_running(process)  # killed, not yet reaped: ended all the same
    finally:
        child.kill()
        child.wait()
    assert not process_running(process)  # reaped: gone
