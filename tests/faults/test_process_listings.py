"""What other users can read of the plugin's processes: no CSRF token, no credential.

A conversation through the real harness on agy-sim, after a turn: agy (agy-sim), the relay
MCP server agy started from its ``mcp_config.json`` (``python -I -m omnigent_agy.relay``),
the tmux server agy runs in and the harness process (here: this process, which serves the
harness app). Any local user can read ``/proc/<pid>/cmdline``; ``/proc/<pid>/environ`` only
the same user (and root). So: no command line and no environment carries the token, and the
environments are unreadable to another user (``nobody`` tries, where the test can switch
uid) — except agy's own command line, which holds ``--csrf_token=<token>`` because that flag
is agy's only way to take it (docs/wire.md §1): docs/reliability.md says what follows; and
the relay's environment, where agy itself puts ``ANTIGRAVITY_CSRF_TOKEN`` beside the other
``ANTIGRAVITY_*`` variables it gives every command and MCP server it starts (docs/wire.md §9;
agy-sim does the same), readable by the same user only.

The relay has no credential of its own: its channel is a 0600 unix socket in a 0700
directory (relay/channel.py); its command line names the socket and the tools file only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from faultmix import HarnessConversation, conversation_after_a_turn
from foreign import foreign_uid
from waiting import wait_until

pytestmark = pytest.mark.tmux


@pytest.fixture
def talk(tmp_path: Path) -> Iterator[HarnessConversation]:
    with conversation_after_a_turn(tmp_path) as conversation:
        yield conversation


def _relay(agy: psutil.Process) -> psutil.Process | None:
    for child in agy.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "omnigent_agy.relay" in child.cmdline():
                return child
    return None


def _tmux_server(socket_name: str) -> psutil.Process:
    def find() -> psutil.Process | None:
        for process in psutil.process_iter(["name", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                line = " ".join(process.info["cmdline"] or [])
                if (process.info["name"] or "").startswith("tmux") and socket_name in line:
                    return process
        return None

    return wait_until(find, timeout=20, what="agy's tmux server")


def _processes(talk: HarnessConversation) -> dict[str, psutil.Process]:
    agy = psutil.Process(talk.record().pid)
    return {
        "agy": agy,
        "relay": wait_until(
            lambda: _relay(agy), timeout=20, what="the relay MCP server agy started"
        ),
        "tmux": _tmux_server(talk.env["OMNIGENT_AGY_TMUX_SOCKET"]),
        "harness": psutil.Process(),
    }


# What agy puts in the environment of what it starts (docs/wire.md §9).
AGY_GIVES = {"ANTIGRAVITY_CSRF_TOKEN"}


def test_no_process_of_ours_shows_the_token_but_agys_own_flag(talk: HarnessConversation) -> None:
    token = talk.record().csrf_token
    for name, process in _processes(talk).items():
        argv = process.cmdline()
        environ = process.environ()
        # Only agy's own doing: the relay is agy's child, and agy gives it the token.
        holds = {key for key, value in environ.items() if token in f"{key}={value}"}
        assert holds == (AGY_GIVES if name == "relay" else set()), name
        shown = [part for part in argv if token in part]
        if name == "agy":
            # agy's only way to take its token (docs/wire.md §1), and nowhere else on the line.
            assert shown == [f"--csrf_token={token}"], argv
        else:
            assert shown == [], (name, argv)


def test_the_relay_gets_what_agy_gives_the_servers_it_starts(talk: HarnessConversation) -> None:
    """agy's variables name this agy (its token, its port), not an outer agy's (wire.md §9)."""
    record = talk.record()
    environ = _processes(talk)["relay"].environ()
    assert environ["ANTIGRAVITY_CSRF_TOKEN"] == record.csrf_token
    assert environ["ANTIGRAVITY_LS_ADDRESS"] == f"127.0.0.1:{record.port}"
    assert {
        "ANTIGRAVITY_AGENT",
        "ANTIGRAVITY_CONVERSATION_ID",
        "ANTIGRAVITY_TRAJECTORY_ID",
        "ANTIGRAVITY_SOURCE_METADATA",
    } <= set(environ)


def test_another_user_cannot_read_their_environments(talk: HarnessConversation) -> None:
    uid, gid = foreign_uid()
    for name, process in _processes(talk).items():
        for what in ("environ", "cmdline"):
            read = subprocess.run(  # as another user: cat, from a path they may run
                ["/bin/cat", f"/proc/{process.pid}/{what}"],
                capture_output=True,
                user=uid,
                group=gid,
                extra_groups=[],
                cwd="/",
                env={"PATH": "/usr/bin:/bin"},
                timeout=30,
                check=False,
            )
            if what == "environ":
                assert read.returncode != 0, f"another user read the environment of {name}"
                assert b"Permission denied" in read.stderr, read.stderr
            else:
                # Everyone reads command lines: the test above keeps the token out of them.
                assert read.returncode == 0, (name, read.stderr)
    assert os.getuid() != uid
