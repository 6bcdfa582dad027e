"""Trust is the person's (docs/decisions.md §11), on the real stack.

A cloned repository's ``.agents/mcp_config.json`` names an MCP server that creates a file when
agy starts it (docs/wire.md §9: a trusted workspace's own servers start). Nobody trusts the
folder, so the first message shows agy's own dialog as a card before any agy exists: "No, exit"
ends the turn with a code and starts nothing (no agy, no file); "Yes, I trust this folder"
starts agy, whose server runs, and is remembered for the next conversation there — for what
the folder held then: a hook added later (agy 1.4+, docs/wire.md §9) is asked about again,
naming it, and runs in agy-sim only after a yes; a folder the operator lists is never asked
about.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from omnigent.community.harness.agy.trust_card import NO_EXIT, YES_TRUST
from stack import Conversation, agy_record
from waiting import wait_until

from agy_sim.stack.local_stack import LocalStack
from agy_sim.stack.rest import card_choices
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.trust_store import STORE_FILE

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

MARKER = "started-by-the-workspace"
ECHO = Path(__file__).parents[1] / "_mcp_echo.py"
TURN = 120.0


def hostile(folder: Path) -> Path:
    """A repository whose own MCP server creates ``MARKER`` in it when started."""
    (folder / ".agents").mkdir(parents=True)
    command = f"touch {MARKER}; exec {sys.executable} {ECHO}"
    servers = {"mcpServers": {"tools": {"command": "sh", "args": ["-c", command]}}}
    (folder / ".agents" / "mcp_config.json").write_text(json.dumps(servers))
    (folder / "README.md").write_text("# cloned\n")
    return folder


def started(workspace: Path) -> None:
    """The workspace's own MCP server ran (agy starts them beside its own start-up)."""
    wait_until((workspace / MARKER).exists, timeout=60, what=f"{MARKER} in {workspace}")


def state_of(stack: LocalStack, conversation: Conversation) -> SessionStateDir:
    return SessionStateDir.open(conversation.id, base=stack.main.state_dir)


def error_of(ended: dict[str, object]) -> dict[str, object]:
    """The error of a `response.failed` event, wherever this omnigent version puts it."""
    text = json.dumps(ended)
    assert ended["type"] == "response.failed", text
    response = ended.get("response")
    error = response.get("error") if isinstance(response, dict) else ended.get("error")
    assert isinstance(error, dict), text
    return error


@pytest.fixture
def clone(stack: LocalStack, request: pytest.FixtureRequest) -> Path:
    return hostile(stack.root / "clones" / request.node.name)


def test_no_exit_starts_nothing(stack: LocalStack, clone: Path) -> None:
    with Conversation(stack, workspace=clone) as talk:
        talk.send("hello")
        card = talk.card(timeout=TURN)
        params = card["params"]
        assert params["message"].startswith(
            f"Accessing workspace: {clone} — Do you trust the contents of this project? "
            "Antigravity CLI requires permission to read, edit, and execute files here."
        )
        # What trusting would start: the command first and in full, then the server's name.
        assert f"make agy run: (1) runs \"sh -c 'touch {MARKER}; exec " in params["message"]
        assert f'{ECHO}\'" — MCP server "tools".' in params["message"]
        assert card_choices(params) == [YES_TRUST, NO_EXIT]
        talk.answer(card, NO_EXIT)
        error = error_of(talk.turn_end(timeout=TURN))
        assert error["code"] == "agy_workspace_not_trusted"
        assert "you answered No, exit" in str(error["message"])
        assert "Yes, I trust this folder" in str(error["remediation"])
        # Nothing started: no agy for the conversation, and the workspace's server never ran.
        assert state_of(stack, talk).read_record() is None
        assert not (clone / MARKER).exists()
        # "No" is not remembered: the next message asks again.
        talk.send("hello again")
        again = talk.card(timeout=TURN)
        assert again["params"]["message"] == params["message"]
        talk.answer(again, NO_EXIT)
        assert error_of(talk.turn_end(timeout=TURN))["code"] == "agy_workspace_not_trusted"
    assert not (clone / MARKER).exists()


def test_yes_starts_agy_with_the_workspaces_servers_and_is_remembered(
    stack: LocalStack, clone: Path
) -> None:
    with Conversation(stack, workspace=clone) as talk:
        talk.send("hello")
        talk.answer(talk.card(timeout=TURN), YES_TRUST)
        assert talk.turn_end(timeout=TURN)["type"] == "response.completed"
        started(clone)  # agy started the trusted workspace's own server
        record = agy_record(stack.main, talk.id)
        settings = state_of(stack, talk).gemini_dir / "antigravity-cli" / "settings.json"
        assert json.loads(settings.read_text())["trustedWorkspaces"] == [str(clone)]
        assert record.workspace == str(clone)
    remembered = json.loads((stack.main.state_dir / STORE_FILE).read_text())["workspaces"]
    assert str(clone) in remembered
    # A later conversation on the same folder is not asked again.
    with Conversation(stack, workspace=clone) as later:
        ended = later.say("hello", timeout=TURN)
        assert ended["type"] == "response.completed", ended
        assert later.seen("response.elicitation_request") == []


@pytest.fixture
def operator_lists(stack: LocalStack, clone: Path) -> Iterator[Path]:
    """The host's config lists `clone` under harness.agy-cli.trusted_workspaces (each
    conversation's harness process reads it when it starts)."""
    config = stack.main.config_file
    before = config.read_text()
    document = yaml.safe_load(before)
    block = document["harness"]["agy-cli"]
    block["trusted_workspaces"] = [*block.get("trusted_workspaces", []), str(clone)]
    config.write_text(yaml.safe_dump(document))
    try:
        yield clone
    finally:
        config.write_text(before)


def test_a_folder_the_operator_lists_is_not_asked_about(
    stack: LocalStack, operator_lists: Path
) -> None:
    with Conversation(stack, workspace=operator_lists) as talk:
        ended = talk.say("hello", timeout=TURN)
        assert ended["type"] == "response.completed", ended
        assert talk.seen("response.elicitation_request") == []
    started(operator_lists)
    assert (
        not (stack.main.state_dir / STORE_FILE).exists()
        or str(operator_lists) not in (stack.main.state_dir / STORE_FILE).read_text()
    )


@pytest.fixture
def agy_with_hooks(stack: LocalStack) -> Iterator[None]:
    """The host's agy is agy-sim as agy 1.5, which runs hooks (harness.agy-cli.args; each
    conversation's harness process reads the config when it starts)."""
    config = stack.main.config_file
    before = config.read_text()
    document = yaml.safe_load(before)
    block = document["harness"]["agy-cli"]
    block["args"] = [*block.get("args", []), "--sim-version=1.5.16"]
    config.write_text(yaml.safe_dump(document))
    try:
        yield
    finally:
        config.write_text(before)


@pytest.mark.usefixtures("agy_with_hooks")
def test_a_hook_added_after_yes_is_asked_about_and_runs_only_after_yes(
    stack: LocalStack, clone: Path
) -> None:
    with Conversation(stack, workspace=clone) as talk:
        talk.send("hello")
        talk.answer(talk.card(timeout=TURN), YES_TRUST)
        assert talk.turn_end(timeout=TURN)["type"] == "response.completed"
    started(clone)
    # A `git pull` brings a hook that runs when agy starts.
    hook = {"type": "command", "command": "touch started-by-a-hook"}
    (clone / ".agents" / "hooks.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}})
    )
    with Conversation(stack, workspace=clone) as later:
        later.send("hello")
        card = later.card(timeout=TURN)
        message = card["params"]["message"]
        assert message.startswith(
            "Asked again: what this folder makes agy run changed since you trusted it ("
        )
        assert 'added: runs "touch started-by-a-hook" — hook "SessionStart" — Accessing' in message
        assert '(2) runs "touch started-by-a-hook" — hook "SessionStart".' in message
        later.answer(card, NO_EXIT)
        assert error_of(later.turn_end(timeout=TURN))["code"] == "agy_workspace_not_trusted"
        assert not (clone / "started-by-a-hook").exists()
        later.send("hello again")
        later.answer(later.card(timeout=TURN), YES_TRUST)
        assert later.turn_end(timeout=TURN)["type"] == "response.completed"
        assert (clone / "started-by-a-hook").exists()  # agy-sim ran the repository's hook


def test_a_server_added_after_yes_is_asked_about_and_starts_only_after_yes(
    stack: LocalStack, clone: Path
) -> None:
    with Conversation(stack, workspace=clone) as talk:
        talk.send("hello")
        talk.answer(talk.card(timeout=TURN), YES_TRUST)
        assert talk.turn_end(timeout=TURN)["type"] == "response.completed"
    started(clone)
    # A `git pull` adds a server to .agents/mcp_config.json.
    config = clone / ".agents" / "mcp_config.json"
    servers = json.loads(config.read_text())
    command = f"touch pulled-in; exec {sys.executable} {ECHO}"
    servers["mcpServers"]["more"] = {"command": "sh", "args": ["-c", command]}
    config.write_text(json.dumps(servers))
    with Conversation(stack, workspace=clone) as later:
        later.send("hello")
        card = later.card(timeout=TURN)
        message = card["params"]["message"]
        assert message.startswith("Asked again: what this folder makes agy run changed")
        assert f'added: runs "sh -c \'{command}\'" — MCP server "more" — Accessing' in message
        later.answer(card, NO_EXIT)
        assert error_of(later.turn_end(timeout=TURN))["code"] == "agy_workspace_not_trusted"
        assert not (clone / "pulled-in").exists()
        later.send("hello again")
        later.answer(later.card(timeout=TURN), YES_TRUST)
        assert later.turn_end(timeout=TURN)["type"] == "response.completed"
        wait_until((clone / "pulled-in").exists, timeout=60, what="the added server to start")
