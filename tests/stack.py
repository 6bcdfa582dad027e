"""The e2e tests' view of the real stack: one conversation at a time, as the web UI has it.

The stack itself (`omnigent server` + `omnigent host` with the plugin installed, enabled and
its agent registered, agy-sim standing in for agy) is the package's `LocalStack`, which the demo
runs too; `tests/conftest.py` starts one for the whole e2e run. `Conversation` is one session on it
with its event stream open: send a message, wait for events or items, answer a card through
the server as the web UI does, press Stop. `agy_steps` reads agy's side (the simulator's
steps) for checks the API cannot show, such as the plan model a turn reached agy with.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

import psutil
from waiting import wait_until

from agy_sim.stack.homes import HostHome
from agy_sim.stack.local_stack import LocalStack, agent_name
from agy_sim.stack.processes import socket_candidates
from agy_sim.stack.rest import EventStream, Json, OmnigentClient, choose
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.rpc.client import RpcClient

# How a turn ends on the session's stream; Stop shows as `session.interrupted` (omnigent sends
# no response.cancelled for it).
TURN_ENDS = ("response.completed", "response.cancelled", "response.failed", "session.interrupted")


class Conversation:
    """One omnigent session of the shipped agent, its event stream open from the start."""

    def __init__(
        self,
        stack: LocalStack,
        host: HostHome | None = None,
        *,
        wait_ready: bool = True,
        workspace: Path | None = None,
        agent: str | None = None,
        **create: Any,
    ) -> None:
        """A new session of `agent` (the shipped one by default) on `host` (the main one by
        default) in `workspace` (the stack's, which its operator trusts, by default), once the
        host reports the harness ready unless `wait_ready` is false; `create` goes into
        ``POST /v1/sessions``."""
        self.stack = stack
        self.host = host or stack.main
        self.client: OmnigentClient = stack.client
        self.workspace = workspace or stack.workspace
        host_id = stack.wait_ready(self.host) if wait_ready else str(self.host.host_id)
        self.id = self.client.create_session(
            agent or agent_name(), host_id, str(self.workspace), **create
        )
        self.events: EventStream = self.client.stream(self.id)

    def __enter__(self) -> Self:
        self.events.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.events.close()

    # -- the person's side -------------------------------------------------------------

    def send(self, text: str) -> None:
        self.client.send(self.id, text)

    def until(self, *kinds: str, timeout: float = 60.0) -> Json:
        return self.events.of_type(*kinds, timeout=timeout)

    def turn_end(self, timeout: float = 60.0) -> Json:
        return self.until(*TURN_ENDS, timeout=timeout)

    def card(self, timeout: float = 60.0) -> Json:
        return self.until("response.elicitation_request", timeout=timeout)

    def answer(self, card: Json, *picks: str | list[str]) -> None:
        """Press a card's button or fill in its questions (`rest.choose`), through the server."""
        self.client.resolve(self.id, card["elicitation_id"], choose(card["params"], list(picks)))

    def stop(self) -> None:
        self.client.interrupt(self.id)

    def say(self, text: str, timeout: float = 60.0) -> Json:
        """Send `text` and wait for the turn to end; the ending event."""
        self.send(text)
        return self.turn_end(timeout)

    # -- what the web UI shows ---------------------------------------------------------

    def items(self) -> list[Json]:
        """The conversation's items as the web UI pages them (flat: no ``data`` wrapper)."""
        return self.client.items(self.id)

    def state(self) -> Json:
        return self.client.session(self.id)

    def idle(self, timeout: float = 60.0) -> Json:
        def settled() -> Json | None:
            state = self.state()
            return state if state["status"] == "idle" else None

        return wait_until(settled, timeout=timeout, what=f"session {self.id} to be idle")

    def seen(self, kind: str) -> list[Json]:
        """The events of `kind` read so far."""
        return [e for e in self.events.seen if e.get("type") == kind]

    def outputs(self) -> list[str]:
        return [str(i["output"]) for i in self.items() if i["type"] == "function_call_output"]

    def assistant_texts(self) -> list[str]:
        """The text of each assistant message item, oldest first."""
        texts = []
        for item in self.items():
            if item["type"] == "message" and item.get("role") == "assistant":
                parts = item.get("content") or []
                texts.append("".join(str(p.get("text", "")) for p in parts))
        return texts


# -- agy's side (the simulator's own records of the conversation) ---------------------------


def agy_record(host: HostHome, session_id: str) -> AgyRecord:
    """The plugin's record of the agy it runs for `session_id` (port, cascade, pid)."""
    state = SessionStateDir.open(session_id, base=host.state_dir)
    record = state.read_record()
    assert record is not None, f"no agy record for {session_id} under {host.state_dir}"
    return record


def agy_call(host: HostHome, session_id: str, method: str, body: Json) -> Any:
    """Ask the conversation's agy (agy-sim) directly."""
    record = agy_record(host, session_id)

    async def go() -> Any:
        async with RpcClient(port=record.port, csrf_token=record.csrf_token) as client:
            return await client.call(method, body)

    return asyncio.run(go())


def agy_steps(host: HostHome, session_id: str) -> list[Json]:
    """Every step of the cascade the conversation is bound to now."""
    record = agy_record(host, session_id)
    reply = agy_call(
        host, session_id, "GetCascadeTrajectorySteps", {"cascadeId": record.cascade_id}
    )
    return list(reply.get("steps", []))


def user_inputs(host: HostHome, session_id: str) -> list[Json]:
    return [s for s in agy_steps(host, session_id) if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"]


def typed_text(step: Json) -> str:
    """What a USER_INPUT step says the person typed, without the agent's instructions that the
    plugin may put in front of a conversation's first message."""
    text = str(step["userInput"]["userResponse"])
    return re.sub(r"\A<instructions>.*?</instructions>\s*", "", text, flags=re.DOTALL)


def typed(conversation: Conversation) -> list[str]:
    """The person's messages as agy's current conversation has them, oldest first."""
    return [typed_text(s) for s in user_inputs(conversation.host, conversation.id)]


def plan_model(step: Json) -> str:
    return str(step["userInput"]["userConfig"]["plannerConfig"]["planModel"])


def leftovers(stack: LocalStack) -> list[str]:
    """What a stopped stack left: processes naming its folder or a tmux socket of its hosts,
    and those sockets, looked for where each host's ``TMUX_TMPDIR`` puts them and at tmux's
    default."""
    markers = [str(stack.root), *(host.tmux_socket for host in stack.hosts)]
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        alive = proc.info.get("status") != psutil.STATUS_ZOMBIE
        if alive and proc.pid != os.getpid() and any(m in cmdline for m in markers):
            found.append(f"process {proc.pid}: {cmdline[:120]}")
    # Each host's own TMUX_TMPDIR: the host passes it to its harness processes (hostenv), so
    # a host with one of its own keeps its agys' tmux sockets there, not where this test
    # process's variable says.
    found.extend(
        f"tmux socket {socket}"
        for host in stack.hosts
        for socket in socket_candidates(host.tmux_socket, host.env)
        if socket.exists()
    )
    return found


def logs(stack: LocalStack) -> list[Path]:
    """The stack's log files, for a failure message."""
    return sorted(stack.root.rglob("*.log"))


# -- hosts of their own ----------------------------------------------------------------


@contextlib.contextmanager
def extra_host(
    stack: LocalStack,
    name: str,
    *,
    prepare: Callable[[HostHome], None],
    enable: bool = True,
) -> Iterator[HostHome]:
    """A host of its own with neither agy on PATH nor `command` in its config; `prepare` names
    agy (or enables the plugin) its own way before `omnigent host` starts."""
    host = stack.home_for(name, agy_on_path=False)
    config = host.config_file.read_text(encoding="utf-8")
    host.config_file.write_text(
        "".join(line for line in config.splitlines(keepends=True) if "command:" not in line),
        encoding="utf-8",
    )
    prepare(host)
    stack.hosts.append(host)
    if enable:
        stack.run(host, ["omnigent-agy", "enable"])
    try:
        # Inside: a host that did not come online in time is stopped too, or it would come
        # online later and pass for the next test's host.
        stack.start_host(host)
        yield host
    finally:
        stack.stop_host(host)


def a_turn_works(stack: LocalStack, host: HostHome) -> str:
    """The host reports agy-cli ready, and a turn on it reaches agy and completes with the
    session's model: what omnigent's runner builds for the harness (the plugin's spawn-env
    builder, the `/model` override over it) reached the harness process too. The session's
    id."""
    with Conversation(stack, host=host, model_override="gemini-3-1-pro-high") as conversation:
        end = conversation.say(f"hello from host {host.name}")
        assert end["type"] == "response.completed", end.get("response", {}).get("error", end)
        assert "Hello from the agy simulator" in conversation.assistant_texts()[-1]
        models = agy_call(host, conversation.id, "GetAvailableModels", {})["response"]["models"]
        by_name = {m["displayName"]: m["model"] for m in models.values()}
        reached = plan_model(user_inputs(host, conversation.id)[-1])
        assert reached == by_name["Gemini 3.1 Pro (High)"], "the /model override was lost"
        return conversation.id
