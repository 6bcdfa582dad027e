"""Every other way a host's configuration reaches the harness process: the state
folder, tmux's folder and socket, a relative folder, and GEMINI_API_KEY.

`omnigent host` decides readiness with its own environment; the harness process the host's
runner spawns runs the turn with what omnigent passes it (hostenv forwards the plugin's
variables). For each setting, the turn must use what the host was configured with: the agy
record where the host's `omnigent-agy ps` (and its sweeper) looks, agy's tmux server where the
host's `omnigent-agy attach` looks. The way agy is named (variable, config, PATH, installer's
folder) and the enable flag are in test_e2e_hosts.py.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import libtmux
import pytest
from stack import Conversation, a_turn_works, agy_record, extra_host

from agy_sim.stack.homes import HostHome
from agy_sim.stack.local_stack import LocalStack, agent_name
from agy_sim.stack.processes import kill_tmux
from agy_sim.stack.rest import RestError
from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.statedir import STATE_DIR_ENV, state_key
from omnigent_agy.doctor.gemini_checks import API_KEY_ENV

# Each test starts a host of its own (about 20 s, minutes on a loaded machine), and the first
# also waits for the stack's start.
pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.timeout(480)]

TMUX_SOCKET_ENV = "OMNIGENT_AGY_TMUX_SOCKET"


def on_path(stack: LocalStack, host: HostHome) -> None:
    host.env["PATH"] = os.pathsep.join([str(stack.agy.path.parent), host.env["PATH"]])


def test_the_hosts_state_folder_and_tmux_server_are_the_turns(stack: LocalStack) -> None:
    """OMNIGENT_AGY_STATE_DIR, TMUX_TMPDIR and OMNIGENT_AGY_TMUX_SOCKET where `omnigent host`
    runs, none of them the test process's: the turn's agy record is in the host's state
    folder, its agy in the host's tmux server (named by the variable, not the config's key)
    under the host's tmux folder, and the host's own `omnigent-agy ps` finds it running."""

    # A short folder: a unix socket's path has room for about 100 characters.
    tmux_dir = Path(tempfile.mkdtemp(prefix="oa-tmux-", dir="/tmp"))

    def configure(host: HostHome) -> None:
        on_path(stack, host)
        host.env[STATE_DIR_ENV] = str(host.root / "state-by-variable")
        host.env["TMUX_TMPDIR"] = str(tmux_dir)
        host.env[TMUX_SOCKET_ENV] = f"oa-by-variable-{secrets.token_hex(4)}"
        host.tmux_socket = host.env[TMUX_SOCKET_ENV]  # the stack stops this server

    try:
        check_state_and_tmux(stack, configure)
    finally:
        shutil.rmtree(tmux_dir, ignore_errors=True)


def check_state_and_tmux(stack: LocalStack, configure: Callable[[HostHome], None]) -> None:
    with extra_host(stack, "state-and-tmux", prepare=configure) as host:
        assert os.environ.get("TMUX_TMPDIR") != host.env["TMUX_TMPDIR"]
        session = a_turn_works(stack, host)
        record = agy_record(host, session)  # read from the host's state folder
        assert host.state_dir == host.root / "state-by-variable"
        assert not (Path(host.env["HOME"]) / ".local" / "state" / "omnigent-agy").exists()
        assert record.tmux_socket == host.env[TMUX_SOCKET_ENV]
        socket = Path(host.env["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}" / record.tmux_socket
        assert socket.is_socket(), "agy's tmux server is not under the host's TMUX_TMPDIR"
        assert not (Path("/tmp") / f"tmux-{os.getuid()}" / record.tmux_socket).exists()
        server = libtmux.Server(socket_path=socket)
        panes = [pane for tmux_session in server.sessions for pane in tmux_session.panes]
        assert [int(pane.pane_pid or 0) for pane in panes] == [record.pid]
        listed = stack.run(host, ["omnigent-agy", "ps"])
        assert state_key(session) in listed, listed
        assert "no agy is running" not in listed
        kill_tmux(host.tmux_socket, host.env)  # before its folder goes


@pytest.mark.parametrize("variable", [STATE_DIR_ENV, GEMINI_HOME_ENV])
def test_a_relative_folder_is_refused_where_the_host_starts(
    stack: LocalStack, variable: str
) -> None:
    """A relative state or gemini folder is another folder in `omnigent host` than in the
    harness process (started in the session's workspace): the host refuses the
    configuration, no session starts there, and the host's log says what to set."""

    def configure(host: HostHome) -> None:
        on_path(stack, host)
        host.env[variable] = "relative/folder"

    with extra_host(stack, f"relative-{variable.lower()}", prepare=configure) as host:
        assert host.host_id is not None
        with pytest.raises(RestError) as refused:
            stack.client.create_session(agent_name(), host.host_id, str(stack.workspace))
        assert "agy-cli" in refused.value.body
        said = host.log.read_text(encoding="utf-8")
        assert f"{variable} is 'relative/folder', a relative path" in said
        assert "give an absolute path" in said


def test_gemini_api_key_signs_agy_in_and_is_never_shown(stack: LocalStack) -> None:
    """GEMINI_API_KEY where `omnigent host` runs and no sign-in in the person's gemini dir:
    the key is agy's only way in (with the `modelProvider` the plugin seeds), so the turn
    completes only if the key reached agy through the runner, the harness and tmux. Its
    value is in no log, record, seeded file or item."""
    key = f"AIza-test-{secrets.token_hex(12)}"

    def configure(host: HostHome) -> None:
        on_path(stack, host)
        token = Path(host.env["HOME"]) / ".gemini" / "antigravity-cli" / "antigravity-oauth-token"
        token.unlink()
        host.env[API_KEY_ENV] = key

    with extra_host(stack, "api-key", prepare=configure) as host:
        with Conversation(stack, host=host) as conversation:
            end = conversation.say("hello with an API key")
            assert end["type"] == "response.completed", end.get("response", {}).get("error", end)
            seen = json.dumps(conversation.items())
        record = agy_record(host, conversation.id)
        settings = host.state_dir / state_key(conversation.id) / "gemini" / "antigravity-cli"
        assert json.loads((settings / "settings.json").read_text())["modelProvider"] == "gemini"
        assert not (settings / "antigravity-oauth-token").exists()
        written = [p for p in stack.root.rglob("*") if p.is_file() and not p.is_symlink()]
        leaked = [str(p) for p in written if key.encode() in p.read_bytes()]
        assert leaked == [], "GEMINI_API_KEY's value was written to these files"
        assert key not in seen
        assert record.pid > 0


def test_the_hosts_permission_rules_decide_in_the_harness(stack: LocalStack) -> None:
    """`harness.agy-cli.permissions` in the host's config file (read by the harness through
    OMNIGENT_CONFIG_HOME, as every `harness.agy-cli.*` key): a command the operator allows runs
    and one it denies does not, neither asking the person. Without the keys both would stop
    on a card (test_e2e_cards.py)."""

    def configure(host: HostHome) -> None:
        on_path(stack, host)
        with host.config_file.open("a", encoding="utf-8") as config:
            config.write(
                "    permissions:\n"
                '      allow: ["command(echo *)"]\n'
                '      deny: ["command(rm *)"]\n'
            )

    with (
        extra_host(stack, "permissions", prepare=configure) as host,
        Conversation(stack, host=host) as conversation,
    ):
        allowed = conversation.say("Please run: echo allowed by the operator")
        assert allowed["type"] == "response.completed", allowed
        assert conversation.outputs() == ["allowed by the operator\n"]
        denied = conversation.say("Please run: rm -rf build")
        assert denied["type"] == "response.completed", denied
        assert "simulated output" not in "".join(conversation.outputs())
        assert conversation.seen("response.elicitation_request") == []
