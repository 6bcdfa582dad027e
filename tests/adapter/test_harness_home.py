"""A real agy's home through the real harness app: the private gemini dir seeded from the
person's ~/.gemini (docs/wire.md §1b), their MCP servers per agent, and omnigent's tools relayed
to agy over MCP. agy-sim runs as agy (it reads the same files, agy_sim/gemini.py)."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gemini_home import PersonGemini, make_person_gemini
from harnessproc import harness_server, runner_env
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from omnigent.community.harness.agy.app import create_app
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn
from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost

pytestmark = pytest.mark.tmux

ECHO = {"command": sys.executable, "args": [str(Path(__file__).parents[1] / "_mcp_echo.py")]}
SESSION_LIST = {
    "type": "function",
    "function": {
        "name": "sys_session_list",
        "description": "List omnigent's sessions",
        "parameters": {"type": "object", "properties": {}},
    },
}


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PersonGemini:
    """A person with a skill and two MCP servers of their own (one auto-approves `shout`)."""
    servers = {"echo": ECHO, "loud": {**ECHO, "enabledTools": ["shout"]}}
    made = make_person_gemini(
        tmp_path / "home" / ".gemini",
        settings={"gcp": {"project": "p1", "location": "europe-west4"}},
        skills=("review",),
        mcp_servers=servers,
    )
    monkeypatch.setenv(GEMINI_HOME_ENV, str(made.path))
    return made


@pytest.fixture
def agy_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, person: PersonGemini
) -> Iterator[dict[str, str]]:
    with runner_env(tmp_path, monkeypatch) as values:
        yield values


@pytest.fixture
def harness(agy_env: dict[str, str]) -> Iterator[HarnessServer]:
    with harness_server() as server:
        yield server


def state_of(env: dict[str, str], harness: HarnessServer) -> SessionStateDir:
    return SessionStateDir.open(harness.conversation_id, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))


def agy_screen(env: dict[str, str], harness: HarnessServer) -> str:
    terminal = TerminalHost(socket_name=env["OMNIGENT_AGY_TMUX_SOCKET"]).find(
        session_name(harness.conversation_id)
    )
    assert terminal is not None
    return "\n".join(terminal.capture(history=True))


def mcp_listed(env: dict[str, str], harness: HarnessServer) -> str:
    """agy's screen once it has listed its MCP servers (it starts them beside its start-up)."""
    return wait_until(
        lambda: (screen := agy_screen(env, harness)).count("[mcp] ") >= 2 and screen,
        timeout=60,
        what="agy to list its MCP servers",
    )


def completed(turn: StreamedTurn) -> dict[str, Any]:
    return turn.until("response.completed", timeout=90)


def outputs(turn: StreamedTurn) -> list[str]:
    return [str(item.get("output")) for item in turn.items("function_call_output")]


def test_a_fresh_conversation_is_the_persons_signed_in_trusted_agy(
    harness: HarnessServer, agy_env: dict[str, str], person: PersonGemini
) -> None:
    turn = harness.turn("hello")
    completed(turn)
    assert "You said: hello" in turn.text()  # signed in: the turn was not refused
    screen = mcp_listed(agy_env, harness)
    assert "Do you trust the contents of this project?" not in screen
    assert "[skills] review" in screen
    assert "[mcp] echo: 1 tools (shout)" in screen
    assert "[mcp] loud: 1 tools (shout)" in screen
    gemini = state_of(agy_env, harness).gemini_dir
    settings = json.loads((gemini / "antigravity-cli" / "settings.json").read_text())
    assert settings["gcp"] == {"project": "p1", "location": "europe-west4"}
    token = gemini / "antigravity-cli" / "antigravity-oauth-token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(gemini.stat().st_mode) == 0o700


def test_an_agent_restricted_to_one_server_sees_only_that_one(
    harness: HarnessServer, agy_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the spawn-env builder passes for `executor.extra.mcp_servers: {allow: [loud]}`.
    monkeypatch.setenv("HARNESS_AGY_CLI_MCP_SERVERS", json.dumps({"allow": ["loud"]}))
    completed(harness.turn("hello"))
    screen = mcp_listed(agy_env, harness)  # loud and omnigent
    assert "[mcp] loud: 1 tools (shout)" in screen
    assert "[mcp] echo" not in screen
    config = state_of(agy_env, harness).gemini_dir / "config" / "mcp_config.json"
    assert set(json.loads(config.read_text())["mcpServers"]) == {"loud", "omnigent"}


def test_a_persons_mcp_tool_is_gated_unless_auto_approved(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    gated = harness.turn('use echo/shout {"text": "quiet please"}')
    card = gated.until("response.elicitation_request", timeout=90)
    harness.press(card, "Allow once")
    completed(gated)
    assert "echo/shout answered: QUIET PLEASE" in gated.text()
    assert "QUIET PLEASE" in outputs(gated)
    free = harness.turn('use loud/shout {"text": "no card"}')
    completed(free)
    assert "loud/shout answered: NO CARD" in free.text()
    assert not [e for e in free.events if e["type"] == "response.elicitation_request"]


def play_runner(turn: StreamedTurn, harness: HarnessServer, answer: str) -> dict[str, Any]:
    """Resolve the turn's omnigent tool call as omnigent's runner does (`tool_result`)."""
    call = turn.until(
        "response.output_item.done",
        lambda e: (
            e["item"].get("type") == "function_call"
            and e["item"].get("status") == "action_required"
        ),
        timeout=90,
    )["item"]
    reply = harness.post({"type": "tool_result", "call_id": call["call_id"], "output": answer})
    assert reply.status_code < 300, reply.text
    return dict(call)


def test_agy_calls_an_omnigent_tool_through_the_relay(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("use omnigent/sys_session_list {}", tools=[SESSION_LIST])
    call = play_runner(turn, harness, json.dumps({"sessions": [{"id": "s-1"}]}))
    assert call["name"] == "sys_session_list"
    completed(turn)
    assert '"id": "s-1"' in turn.text()  # agy got omnigent's result over MCP
    calls = turn.items("function_call")
    # Once: omnigent's dispatch shows it; agy's own MCP step for it is not shown again.
    assert {c["name"] for c in calls} == {"sys_session_list"}
    assert len(turn.items("function_call_output")) == 1


def test_outside_a_turn_the_relay_answers_an_error_at_once(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    completed(harness.turn("hello", tools=[SESSION_LIST]))
    gemini = state_of(agy_env, harness).gemini_dir
    entry = json.loads((gemini / "config" / "mcp_config.json").read_text())["mcpServers"]
    relay = entry["omnigent"]
    assert relay["enabledTools"] == ["sys_session_list"]

    async def call_between_turns() -> tuple[list[str], types.CallToolResult]:
        # The relay exactly as agy starts it from its mcp_config.json.
        params = StdioServerParameters(command=relay["command"], args=relay["args"])
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = [tool.name for tool in (await session.list_tools()).tools]
            return listed, await asyncio.wait_for(session.call_tool("sys_session_list", {}), 10)

    listed, result = asyncio.run(call_between_turns())
    assert listed == ["sys_session_list"]
    assert result.isError
    assert "only during an omnigent turn" in str(result.content[0])


def test_the_relay_can_be_turned_off(
    harness: HarnessServer, agy_env: dict[str, str], tmp_path: Path
) -> None:
    config_dir = Path(agy_env["OMNIGENT_CONFIG_HOME"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.yaml").write_text("harness:\n  agy-cli:\n    omnigent_tools: false\n")
    turn = harness.turn("use omnigent/sys_session_list {}", tools=[SESSION_LIST])
    completed(turn)
    assert "I have no MCP tool omnigent/sys_session_list" in turn.text()
    screen = mcp_listed(agy_env, harness)  # echo and loud, the person's
    assert "[mcp] omnigent" not in screen


def test_a_respawned_harness_refreshes_a_renewed_sign_in(
    agy_env: dict[str, str], person: PersonGemini
) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as first:
        completed(first.turn("hello"))
    state = SessionStateDir.open(conversation, base=Path(agy_env["OMNIGENT_AGY_STATE_DIR"]))
    before = state.read_record()
    assert before is not None
    renewed = {"token": {"access_token": "ya29.renewed", "refresh_token": "1//renewed"}}
    (person.path / "antigravity-cli" / "antigravity-oauth-token").write_text(json.dumps(renewed))
    with HarnessServer(create_app(), conversation) as second:  # the runner respawned it
        completed(second.turn("hello again"))
    record = state.read_record()
    assert record is not None
    # agy keeps the sign-in it started with: a renewed sign-in restarts it, on the same
    # conversation (the rule of agy/gemini_home's sign-in refresh).
    assert record.pid != before.pid
    assert record.cascade_id == before.cascade_id
    seeded = state.gemini_dir / "antigravity-cli" / "antigravity-oauth-token"
    assert json.loads(seeded.read_text()) == renewed
