"""`agy-sim acp` held to the Agent Client Protocol by an independent client.

The client is the protocol's own Python library (`agent-client-protocol`): it validates every
message it receives against the ACP schema, so a malformed update, option or result fails
here. agy-sim runs as a separate process on stdio, as an ACP client starts `agy acp`.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)
from gemini_home import make_person_gemini

AGY_SIM = Path(sys.executable).with_name("agy-sim")
FAST = ["--sim-token-delay", "0.002", "--sim-long-token-delay", "0.05"]
ANSWER = "Hello from the agy simulator ({model}). You said: {text}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Client:
    """An ACP client that records what it is sent and answers permission requests with
    `choose(options) -> optionId | None` (None: the request is cancelled)."""

    choose: Callable[[list[PermissionOption]], str | None] = lambda options: "allow-once"
    updates: list[Any] = field(default_factory=list)
    asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    hold: asyncio.Event | None = None
    """When set, permission requests wait for it (a card a person has not answered yet)."""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    process: Any = None

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        self.arrived.set()
        if self.hold is not None:
            await self.hold.wait()
        chosen = self.choose(options)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self.arrived.set()

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def answer(self) -> str:
        return "".join(u.content.text for u in self.of(AgentMessageChunk))

    def thinking(self) -> str:
        return "".join(u.content.text for u in self.of(AgentThoughtChunk))

    def clear(self) -> None:
        self.updates.clear()
        self.asked.clear()

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(30):
            while not predicate():
                self.arrived.clear()
                await self.arrived.wait()


@dataclass
class Agent:
    conn: Any
    session_id: str
    client: Client
    workspace: Path

    async def say(self, text: str) -> Any:
        return await self.conn.prompt(session_id=self.session_id, prompt=[text_block(text)])


@asynccontextmanager
async def acp_agent(
    tmp_path: Path, client: Client, *, signed_in: bool = True, flags: tuple[str, ...] = ()
) -> AsyncIterator[Agent]:
    gemini = make_person_gemini(tmp_path / "gemini", signed_in=signed_in).path
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "README.md").write_text("# demo\n")
    argv = ["acp", "--gemini_dir", str(gemini), *FAST, *flags]
    async with spawn_agent_process(client, str(AGY_SIM), *argv, cwd=workspace) as (conn, proc):
        client.process = proc
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="acp-test", version="1"),
        )
        assert init.protocol_version == PROTOCOL_VERSION
        if not signed_in:
            yield Agent(conn, "", client, workspace)
        else:
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            yield Agent(conn, session.session_id, client, workspace)
    assert proc.returncode is not None  # the agent ends when its stdin closes


pytestmark = [pytest.mark.anyio]


async def test_initialize_names_antigravity_and_offers_no_mode(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_info is not None
        assert init.agent_info.name == "Antigravity ACP Server"
        assert init.auth_methods == []
        session = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
        assert session.modes is None
        options = {o.id for o in session.config_options or []}
        assert options == {"model", "thought_level"}
        with pytest.raises(RequestError) as refused:
            await agent.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        assert refused.value.code == -32601


async def test_prompt_streams_thinking_then_answer_with_usage(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        result = await agent.say("hello there")
        assert result.stop_reason == "end_turn"
        assert client.answer() == ANSWER.format(model="Gemini 3 Pro (High)", text="hello there")
        assert "Reading the request" in client.thinking()
        kinds = [type(u) for u in client.updates]
        assert kinds.index(AgentThoughtChunk) < kinds.index(AgentMessageChunk)
        assert len(client.of(AgentMessageChunk)) > 1  # streamed, not one block
        assert result.usage is not None
        assert result.usage.total_tokens == result.usage.input_tokens + result.usage.output_tokens
        assert result.usage.thought_tokens
        (usage,) = client.of(UsageUpdate)
        assert usage.size == 1_048_576
        assert 0 < usage.used < usage.size


async def test_allow_once_runs_the_command_and_asks_again(tmp_path: Path) -> None:
    client = Client(choose=lambda options: "allow-once")
    async with acp_agent(tmp_path, client) as agent:
        result = await agent.say("run: echo hi")
        assert result.stop_reason == "end_turn"
        ((tool_call, options),) = client.asked
        assert {o.kind for o in options} == {
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        }
        assert tool_call.raw_input == {"CommandLine": "echo hi", "Cwd": str(agent.workspace)} | {
            "WaitMsBeforeAsync": 2000
        }
        (start,) = client.of(ToolCallStart)
        assert start.kind == "execute"
        assert start.tool_call_id == tool_call.tool_call_id
        progress = client.of(ToolCallProgress)
        assert [p.status for p in progress] == ["in_progress", "completed"]
        assert progress[-1].content[0].content.text == "hi\n"
        assert "`echo hi` finished with exit code 0" in client.answer()
        client.clear()
        await agent.say("run: echo hi")
        assert len(client.asked) == 1  # allowed once: asked again


async def test_reject_once_refuses_and_the_turn_goes_on(tmp_path: Path) -> None:
    client = Client(choose=lambda options: "reject-once")
    async with acp_agent(tmp_path, client) as agent:
        result = await agent.say("run: touch made-by-agy")
        assert result.stop_reason == "end_turn"
        assert "Understood, I did not run `touch made-by-agy`" in client.answer()
        assert client.of(ToolCallProgress)[-1].status == "failed"
        assert not (agent.workspace / "made-by-agy").exists()
        client.clear()
        await agent.say("run: touch made-by-agy")
        assert len(client.asked) == 1  # refused once: asked again


async def test_allow_always_is_not_asked_again(tmp_path: Path) -> None:
    client = Client(choose=lambda options: "allow-always")
    async with acp_agent(tmp_path, client) as agent:
        await agent.say("run: git status")
        assert len(client.asked) == 1
        client.clear()
        await agent.say("run: git status")
        assert client.asked == []
        assert "nothing to commit" in client.answer()


async def test_reject_always_refuses_again_unasked(tmp_path: Path) -> None:
    client = Client(choose=lambda options: "reject-always")
    async with acp_agent(tmp_path, client) as agent:
        await agent.say("run: pytest -q")
        assert len(client.asked) == 1
        client.clear()
        result = await agent.say("run: pytest -q")
        assert result.stop_reason == "end_turn"
        assert client.asked == []
        assert "I did not run `pytest -q`" in client.answer()


async def test_cancel_mid_answer_stops_the_turn(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        prompt = asyncio.ensure_future(agent.say("a long answer please"))
        await client.until(lambda: "Part 2 " in client.answer())
        await agent.conn.cancel(session_id=agent.session_id)
        result = await prompt
        assert result.stop_reason == "cancelled"
        assert "Part 120 " not in client.answer()
        # The session takes the next prompt.
        client.clear()
        assert (await agent.say("hello")).stop_reason == "end_turn"
        assert client.answer().startswith("Hello from the agy simulator")


async def test_sigterm_mid_turn_answers_the_prompt_and_ends(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        prompt = asyncio.ensure_future(agent.say("a long answer please"))
        await client.until(lambda: "Part 2 " in client.answer())
        client.process.send_signal(signal.SIGTERM)
        result = await prompt
        assert result.stop_reason == "cancelled"
        assert await client.process.wait() == 0


async def test_cancel_while_a_permission_is_asked(tmp_path: Path) -> None:
    client = Client(choose=lambda options: None, hold=asyncio.Event())
    async with acp_agent(tmp_path, client) as agent:
        prompt = asyncio.ensure_future(agent.say("run: touch never"))
        await client.until(lambda: bool(client.asked))
        await agent.conn.cancel(session_id=agent.session_id)
        assert client.hold is not None
        client.hold.set()  # the client answers its open request "cancelled", as ACP asks
        result = await prompt
        assert result.stop_reason == "cancelled"
        assert not (agent.workspace / "never").exists()


async def test_model_and_thought_level_switch(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        conn, sid = agent.conn, agent.session_id
        answer = await conn.set_config_option(
            config_id="model", session_id=sid, value="gemini-3-flash"
        )
        current = {o.id: o.current_value for o in answer.config_options}
        assert current == {"model": "gemini-3-flash", "thought_level": "high"}
        await agent.say("hi")
        assert "(Gemini 3 Flash)" in client.answer()
        await conn.set_config_option(config_id="model", session_id=sid, value="gemini-3-pro")
        await conn.set_config_option(config_id="thought_level", session_id=sid, value="low")
        client.clear()
        await agent.say("hi")
        assert "(Gemini 3 Pro (Low))" in client.answer()
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id="model", session_id=sid, value="gpt-9")
        assert refused.value.code == -32602
        assert "gemini-3-flash" in str(refused.value.data or refused.value)


async def test_no_question_or_subagent_tools_on_this_path(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        await agent.say("ask me a question")
        assert client.asked == []
        assert client.of(ToolCallStart) == []
        assert "no question tool" in client.answer()
        client.clear()
        await agent.say("start a sub-agent to survey the workspace")
        assert [s.title for s in client.of(ToolCallStart)] == ["Listing the workspace"]
        assert client.of(ToolCallProgress)[-1].content[0].content.text == "README.md"


async def test_a_model_error_fails_the_prompt(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client) as agent:
        with pytest.raises(RequestError) as failed:
            await agent.say("model error")
        assert "network issue" in str(failed.value)


async def test_signed_out_asks_to_sign_in(tmp_path: Path) -> None:
    client = Client()
    async with acp_agent(tmp_path, client, signed_in=False) as agent:
        init = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert [m.id for m in init.auth_methods] == ["agy-login"]
        with pytest.raises(RequestError) as refused:
            await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
        assert refused.value.code == -32000
        assert "agy acp --login" in str(refused.value.data or refused.value)
