"""The real omnigent harness app driving agy-sim: the issue-6 acceptance tests.

omnigent's own ExecutorAdapter (built by `create_app()`) is served on loopback; agy-sim runs
as a separate process in a private tmux server, started by the executor exactly as a real agy
would be (OMNIGENT_AGY_CLI_PATH points at it). The gate, sub-agent and resume cases run as
each agy version the plugin is tested with (`both_versions`: agy-sim as 1.5.16 and 1.2.14).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from harnessproc import both_versions, runner_env
from list_price import list_price, model_names
from omnigent.community.harness.agy.app import create_app
from simproc import AGY_SIM
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux


@pytest.fixture
def agy_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim_version: str
) -> Iterator[dict[str, str]]:
    """The environment a runner would give the harness, pointed at agy-sim (as agy
    `sim_version`)."""
    with runner_env(tmp_path, monkeypatch, sim_version) as values:
        yield values


@pytest.fixture
def harness(agy_env: dict[str, str]) -> Iterator[HarnessServer]:
    with HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}") as server:
        yield server


def agy_call(env: dict[str, str], conversation_id: str, method: str, body: dict[str, Any]) -> Any:
    """Ask the conversation's agy directly (the simulator side of a check)."""
    state = SessionStateDir.open(conversation_id, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    record = state.read_record()
    assert record is not None, "no agy record: agy was never started"

    async def go() -> Any:
        async with RpcClient(port=record.port, csrf_token=record.csrf_token) as client:
            return await client.call(method, body)

    return asyncio.run(go())


def agy_record(env: dict[str, str], conversation_id: str) -> Any:
    state = SessionStateDir.open(conversation_id, base=Path(env["OMNIGENT_AGY_STATE_DIR"]))
    return state.read_record()


def steps_of(env: dict[str, str], conversation_id: str) -> list[dict[str, Any]]:
    record = agy_record(env, conversation_id)
    reply = agy_call(
        env, conversation_id, "GetCascadeTrajectorySteps", {"cascadeId": record.cascade_id}
    )
    return list(reply.get("steps", []))


def user_inputs(env: dict[str, str], conversation_id: str) -> list[dict[str, Any]]:
    return [s for s in steps_of(env, conversation_id) if s["type"] == "CORTEX_STEP_TYPE_USER_INPUT"]


def test_a_turn_streams_deltas_and_ends_with_usage(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("Say hello in one short sentence.")
    completed = turn.until("response.completed")
    deltas = [e for e in turn.events if e["type"] == "response.output_text.delta"]
    assert len(deltas) > 1, "the answer should arrive in several deltas"
    assert turn.text().strip()
    usage = completed["response"].get("usage") or {}
    assert usage.get("output_tokens", 0) > 0
    assert usage.get("input_tokens", 0) > 0
    calls = [
        s["metadata"]["modelUsage"]
        for s in steps_of(agy_env, harness.conversation_id)
        if "modelUsage" in s.get("metadata", {})
    ]
    assert usage["input_tokens"] == sum(int(c.get("inputTokens", 0)) for c in calls)
    # How full the context window is: agy's own estimate (docs/wire.md §9), not the prompt of
    # a model call (agy-sim makes the two differ).
    record = agy_record(agy_env, harness.conversation_id)
    metadata = agy_call(
        agy_env,
        harness.conversation_id,
        "GetCascadeTrajectoryGeneratorMetadata",
        {"cascadeId": record.cascade_id},
    )
    estimates = [
        int(entry["chatModel"]["chatStartMetadata"]["contextWindowMetadata"]["estimatedTokensUsed"])
        for entry in metadata["generatorMetadata"]
        if "chatStartMetadata" in entry["chatModel"]
    ]
    prompts = [int(c.get("inputTokens", 0)) + int(c.get("cacheReadTokens", 0)) for c in calls]
    assert usage["context_tokens"] == max(estimates) != max(prompts)
    # The model by the id omnigent's model catalog knows it by, and the turn priced at the
    # list price of each call's own model: Gemini 3 Pro's answer and, on a first turn, agy's
    # CHECKPOINT summary on Gemini 3 Flash (USD per million: input, output, cache read).
    assert usage["model"] == "gemini-3-pro-preview"
    names = model_names(agy_call(agy_env, harness.conversation_id, "GetAvailableModels", {}))
    expected = list_price(calls, names)
    assert len({c["model"] for c in calls}) == 2, "a first turn has agy's CHECKPOINT call too"
    assert usage["cost_usd"] == pytest.approx(expected)


def test_the_context_meter_drops_when_agy_compacts_its_context(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    used = []
    for text in ("Say hello", "list the files here", "Say hello again", "compact the context"):
        completed = harness.turn(text).until("response.completed")
        used.append(completed["response"]["usage"]["context_tokens"])
    assert used[0] < used[1] < used[2], "the estimate grows from turn to turn"
    assert used[3] < used[2], "agy made room: the meter shows it, not the largest ever seen"
    record = agy_record(agy_env, harness.conversation_id)
    metadata = agy_call(
        agy_env,
        harness.conversation_id,
        "GetCascadeTrajectoryGeneratorMetadata",
        {"cascadeId": record.cascade_id},
    )
    newest = [
        int(entry["chatModel"]["chatStartMetadata"]["contextWindowMetadata"]["estimatedTokensUsed"])
        for entry in metadata["generatorMetadata"]
        if "chatStartMetadata" in entry["chatModel"]
    ][-1]
    assert used[3] == newest


def test_tool_calls_and_their_output_appear_as_items(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("list the files here")
    turn.until("response.completed")
    calls = turn.items("function_call")
    outputs = turn.items("function_call_output")
    assert calls, turn.kinds()
    call_ids = {c["call_id"] for c in calls}
    assert {o["call_id"] for o in outputs} <= call_ids
    assert any("README.md" in o["output"] for o in outputs)


@both_versions
def test_an_approval_card_round_trips_and_a_denial_does_not_end_the_turn(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("run: echo hello")
    card = turn.until("response.elicitation_request")
    harness.press(card, "allow once")
    turn.until("response.completed")
    steps = steps_of(agy_env, harness.conversation_id)
    commands = [s for s in steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    assert commands[-1]["status"] == "CORTEX_STEP_STATUS_DONE"
    assert commands[-1]["runCommand"].get("userRejected") is not True

    denied = harness.turn("run: echo again")
    card = denied.until("response.elicitation_request")
    harness.press(card, "deny")
    denied.until("response.completed")  # agy carried on after the denial
    assert "response.cancelled" not in denied.kinds()
    commands = [
        s
        for s in steps_of(agy_env, harness.conversation_id)
        if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    ]
    assert commands[-1]["runCommand"].get("userRejected") is True


@both_versions
def test_a_question_round_trips(harness: HarnessServer, agy_env: dict[str, str]) -> None:
    turn = harness.turn("ask me a question")
    card = turn.until("response.elicitation_request")
    params = card["params"]
    schema = (params.get("requestedSchema") or {}).get("properties", {}).get("answer", {})
    # The first button the web shows: it leaves out the empty value, the terminal REPL's.
    buttons = [choice for choice in schema.get("enum") or [] if choice]
    first_label = (buttons or [params["ask_user_question"]["questions"][0]["options"][0]["label"]])[
        0
    ]
    harness.press(card, first_label)
    turn.until("response.completed")
    asked = [
        s
        for s in steps_of(agy_env, harness.conversation_id)
        if s["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION"
    ]
    delivered = asked[-1]["completedInteractions"][-1]["response"]
    assert json.dumps(delivered).count('"1"') >= 1  # option ids, not labels, reached agy


def test_interrupt_yields_cancelled_and_agy_stops(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("give me a long answer")
    turn.until("response.output_text.delta")
    reply = harness.post({"type": "interrupt"})
    assert reply.status_code == 204, reply.text
    turn.until("response.cancelled")
    record = agy_record(agy_env, harness.conversation_id)

    def idle() -> bool:
        summaries = agy_call(agy_env, harness.conversation_id, "GetAllCascadeTrajectories", {})
        return (
            summaries["trajectorySummaries"][record.cascade_id]["status"]
            == "CASCADE_RUN_STATUS_IDLE"
        )

    wait_until(idle, timeout=20, what="agy's cascade to stop")
    planner = [
        s
        for s in steps_of(agy_env, harness.conversation_id)
        if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
    ]
    assert planner[-1]["status"] == "CORTEX_STEP_STATUS_CANCELED"


@both_versions
def test_interrupt_during_a_pending_approval_denies_it(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("run: echo waiting")
    card = turn.until("response.elicitation_request")
    assert harness.post({"type": "interrupt"}).status_code == 204
    turn.until("response.cancelled")
    # The card is withdrawn on the server (its pending_elicitations), not left open.
    closed = [e for e in turn.events if e.get("type") == "response.elicitation_resolved"]
    assert [(e["elicitation_id"], e.get("reason")) for e in closed] == [
        (card["elicitation_id"], "unanswered")
    ]
    commands = [
        s
        for s in steps_of(agy_env, harness.conversation_id)
        if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    ]
    wait_until(
        lambda: (
            steps_of(agy_env, harness.conversation_id)[len(commands) and -1]["status"]
            != "CORTEX_STEP_STATUS_WAITING"
        ),
        timeout=20,
        what="the gate to be answered",
    )


def test_a_model_override_changes_the_plan_model_sent_to_agy(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    models = agy_call_models(agy_env, harness)
    first = harness.turn("hello")
    first.until("response.completed")
    default_model = plan_model_of(user_inputs(agy_env, harness.conversation_id)[-1])
    other = next(m for m in models if m["model"] != default_model)
    second = harness.turn("hello again", model_override=other["displayName"])
    second.until("response.completed")
    assert plan_model_of(user_inputs(agy_env, harness.conversation_id)[-1]) == other["model"]


def agy_call_models(env: dict[str, str], server: HarnessServer) -> list[dict[str, Any]]:
    warm = server.turn("warm up")
    warm.until("response.completed")
    response = agy_call(env, server.conversation_id, "GetAvailableModels", {})["response"]
    return [m for m in response["models"].values() if not m.get("disabled")]


def plan_model_of(step: dict[str, Any]) -> str:
    return str(step["userInput"]["userConfig"]["plannerConfig"]["planModel"])


def test_a_second_turn_sends_only_the_new_message(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    harness.turn("first message").until("response.completed")
    history = [
        {"type": "message", "role": "user", "content": "first message"},
        {"type": "message", "role": "assistant", "content": "an answer"},
        {"type": "message", "role": "user", "content": "second message"},
    ]
    turn = StreamedTurn(harness)
    turn.start({"type": "message", "role": "user", "content": history, "model": "agy"})
    turn.until("response.completed")
    texts = [s["userInput"]["userResponse"] for s in user_inputs(agy_env, harness.conversation_id)]
    assert texts == ["first message", "second message"]


@both_versions
def test_a_respawned_harness_reattaches_without_duplicates(
    agy_env: dict[str, str], sim_version: str
) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as first:
        first.turn("first message").until("response.completed")
        record = agy_record(agy_env, conversation)
    with HarnessServer(create_app(), conversation) as second:
        turn = second.turn("second message")
        turn.until("response.completed")
        again = agy_record(agy_env, conversation)
        assert (again.pid, again.cascade_id) == (record.pid, record.cascade_id), "not re-attached"
        texts = [s["userInput"]["userResponse"] for s in user_inputs(agy_env, conversation)]
        assert texts == ["first message", "second message"]
        # Only the new turn is published: its text is exactly agy's answer to the second message.
        answers = [
            s["plannerResponse"]["response"]
            for s in steps_of(agy_env, conversation)
            if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
            and s["plannerResponse"].get("response")
        ]
        assert len(answers) == 2
        assert turn.text() == answers[-1]
    assert runs_as(agy_env, conversation) == sim_version


def test_a_message_sent_during_a_turn_steers_it(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("give me a long answer")
    turn.until("response.output_text.delta")
    reply = harness.post(
        {"type": "message", "role": "user", "content": "and mention tests too", "model": "agy"}
    )
    assert reply.status_code < 300, reply.text

    def steered() -> bool:
        return any(
            s["userInput"]["userResponse"] == "and mention tests too"
            for s in user_inputs(agy_env, harness.conversation_id)
        )

    wait_until(steered, timeout=20, what="the steering message to reach agy")
    turn.until("response.completed", timeout=120)


def failed_code(turn: StreamedTurn) -> str:
    failed = turn.until("response.failed")
    error = failed["response"].get("error") or {}
    return str(error.get("code"))


def test_agy_missing_is_a_coded_error(
    harness: HarnessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", "/nonexistent/agy")
    assert failed_code(harness.turn("hello")) == "agy_not_installed"


def test_signed_out_is_a_coded_error(
    harness: HarnessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGY_SIM_SIGNED_OUT", "1")
    assert failed_code(harness.turn("hello")) == "agy_signed_out"


def test_too_old_is_a_coded_error(harness: HarnessServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGY_SIM_VERSION", "1.2.1")
    assert failed_code(harness.turn("hello")) == "agy_too_old"


def test_unknown_model_is_a_coded_error_listing_names(harness: HarnessServer) -> None:
    turn = harness.turn("hello", model_override="no-such-model")
    failed = turn.until("response.failed")
    error = failed["response"]["error"]
    assert error["code"] == "agy_model_unknown"
    assert "gemini" in json.dumps(error).lower()


def test_a_model_error_that_ends_the_turn_is_a_coded_error(harness: HarnessServer) -> None:
    # agy ends the turn on an ERROR_MESSAGE step; the failure comes from the catalogue.
    failed = harness.turn("simulate a model error").until("response.failed")
    error = failed["response"]["error"]
    assert error["code"] == "agy_model_error", error
    assert error["title"] == "agy's model call failed"
    assert "omnigent-agy doctor" in error["remediation"]
    assert "retryable error from model provider" in error["message"]
    # The conversation goes on: the next turn runs on the same agy.
    harness.turn("hello again").until("response.completed")


def test_port_never_opened_is_a_coded_error(
    harness: HarnessServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    silent = tmp_path / "silent-agy"
    silent.write_text(
        f"#!{sys.executable}\n"
        "import sys, time\n"
        "if sys.argv[1:2] == ['--version']: print('1.2.5'); sys.exit(0)\n"
        "if sys.argv[1:2] == ['models']: print('Gemini 3 Pro'); sys.exit(0)\n"
        "time.sleep(600)\n"
    )
    silent.chmod(silent.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", str(silent))
    monkeypatch.setenv("OMNIGENT_AGY_READY_TIMEOUT", "3")
    assert failed_code(harness.turn("hello")) == "agy_port_never_opened"


def test_csrf_rejected_is_a_coded_error(
    harness: HarnessServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    liar = tmp_path / "liar-agy"
    liar.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = [a for a in sys.argv[1:] if not a.startswith('--csrf_token')]\n"
        f"os.execv({str(AGY_SIM)!r}, [{str(AGY_SIM)!r}, '--csrf_token=someone-elses', *args])\n"
    )
    liar.chmod(liar.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", str(liar))
    monkeypatch.setenv("OMNIGENT_AGY_READY_TIMEOUT", "10")
    assert failed_code(harness.turn("hello")) == "agy_csrf_rejected"


def test_no_token_in_the_environment_or_logs_of_the_harness(
    harness: HarnessServer, agy_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    harness.turn("hello").until("response.completed")
    token = agy_record(agy_env, harness.conversation_id).csrf_token
    assert token not in caplog.text
    assert token not in json.dumps(dict(os.environ))


def test_the_agents_prompt_is_agys_own_instructions_and_the_message_stays_as_typed(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    prompt = "You are a careful reviewer. Ask before running anything."
    harness.turn("hello there", instructions=prompt).until("response.completed")
    recited = harness.turn("What do your rules say?", instructions=prompt)
    recited.until("response.completed")
    typed = [s["userInput"]["userResponse"] for s in user_inputs(agy_env, harness.conversation_id)]
    assert typed == ["hello there", "What do your rules say?"]
    # agy read it from the GEMINI.md of its private gemini dir, at this turn.
    assert prompt in recited.text()
    base = Path(agy_env["OMNIGENT_AGY_STATE_DIR"])
    state = SessionStateDir.open(harness.conversation_id, base=base)
    assert prompt in (state.gemini_dir / "GEMINI.md").read_text()


def test_ps_lists_the_kept_agy_and_stop_ends_it_until_the_next_turn(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    harness.turn("hello").until("response.completed")
    record = agy_record(agy_env, harness.conversation_id)
    env = {**os.environ, **agy_env}
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    listed = subprocess.run([cli, "ps"], env=env, capture_output=True, text=True, check=True)
    assert harness.conversation_id in listed.stdout
    assert f"pid {record.pid}" in listed.stdout
    assert record.csrf_token not in listed.stdout

    stopped = subprocess.run(
        [cli, "stop", harness.conversation_id], env=env, capture_output=True, text=True, check=True
    )
    assert f"stopped {harness.conversation_id}" in stopped.stdout
    assert not psutil.pid_exists(record.pid) or psutil.Process(record.pid).status() == "zombie"
    kept = agy_record(agy_env, harness.conversation_id)
    assert kept.stopped_reason == "stopped by `omnigent-agy stop`"
    assert kept.csrf_token == ""

    # The next turn starts agy again, on the same conversation with its history.
    harness.turn("hello again").until("response.completed")
    again = agy_record(agy_env, harness.conversation_id)
    assert again.pid != record.pid
    assert again.cascade_id == record.cascade_id
    assert [
        u["userInput"]["userResponse"] for u in user_inputs(agy_env, harness.conversation_id)
    ] == [
        "hello",
        "hello again",
    ]


def test_stop_names_an_unknown_conversation(agy_env: dict[str, str]) -> None:
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    result = subprocess.run(
        [cli, "stop", "conv_nobody"],
        env={**os.environ, **agy_env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "no agy record for 'conv_nobody'" in result.stderr


def agy_terminal(env: dict[str, str], conversation_id: str) -> Any:
    record = agy_record(env, conversation_id)
    terminal = TerminalHost(socket_name=record.tmux_socket).find(record.tmux_session)
    assert terminal is not None
    return terminal


def test_the_conversation_is_the_one_agys_own_tui_shows(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    harness.turn("hello from the web").until("response.completed")
    assert agy_record(agy_env, harness.conversation_id).follows_tui
    terminal = agy_terminal(agy_env, harness.conversation_id)
    # A person attached to agy's tmux session sees this very conversation (no "{id}" prefix,
    # which agy-sim puts on conversations its TUI does not own).
    wait_until(
        lambda: "> hello from the web" in "\n".join(terminal.capture()),
        timeout=20,
        what="the TUI to show it",
    )
    assert "} > hello from the web" not in "\n".join(terminal.capture())


def test_clear_typed_in_agys_tui_moves_the_conversation(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    harness.turn("before the clear").until("response.completed")
    before = agy_record(agy_env, harness.conversation_id).cascade_id
    terminal = agy_terminal(agy_env, harness.conversation_id)
    terminal.send_text("/clear")
    wait_until(
        lambda: "[cleared]" in "\n".join(terminal.capture()), timeout=20, what="agy's TUI to clear"
    )
    # The very next turn goes to the new conversation, without waiting for the stream to stall.
    harness.turn("after the clear").until("response.completed")
    after = agy_record(agy_env, harness.conversation_id).cascade_id
    assert after != before
    texts = [s["userInput"]["userResponse"] for s in user_inputs(agy_env, harness.conversation_id)]
    assert texts == ["after the clear"]


def test_a_model_switched_in_agys_own_screen_holds_until_omnigents_choice_changes(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    models = {m["displayName"]: m["model"] for m in agy_call_models(agy_env, harness)}
    first = plan_model_of(user_inputs(agy_env, harness.conversation_id)[-1])
    assert first == models["Gemini 3 Pro (High)"]  # agy's default: the agent names none
    terminal = agy_terminal(agy_env, harness.conversation_id)
    terminal.send_text("/model gemini-3-1-pro-low")  # as typed in the web's Terminal view
    wait_until(
        lambda: "[model] Gemini 3.1 Pro (Low)" in "\n".join(terminal.capture()),
        timeout=20,
        what="agy's TUI to switch",
    )
    for text in ("on the model agy was switched to", "and the next turn too"):
        harness.turn(text).until("response.completed")
        last = user_inputs(agy_env, harness.conversation_id)[-1]
        assert plan_model_of(last) == models["Gemini 3.1 Pro (Low)"], text
    # omnigent's /model changes: omnigent's choice applies again, and stays.
    harness.turn("omnigent's choice now", model_override="gemini-3-flash").until(
        "response.completed"
    )
    assert (
        plan_model_of(user_inputs(agy_env, harness.conversation_id)[-1])
        == (models["Gemini 3 Flash"])
    )


def runs_as(env: dict[str, str], conversation_id: str) -> str:
    """The version the conversation's agy logged (`Language server version: …`)."""
    text = Path(agy_record(env, conversation_id).log_file).read_text(encoding="utf-8")
    found = re.search(r"Language server version: (\S+)", text)
    assert found, text
    return found.group(1)


@both_versions
def test_a_sub_agent_turn_shows_the_sub_agent_and_the_parents_answer(
    harness: HarnessServer, agy_env: dict[str, str], sim_version: str
) -> None:
    """agy's sub-agent reaches omnigent as a sub-agent that starts, calls its tool and
    completes, and the parent's answer follows (the turn is not held by the child)."""
    turn = harness.turn("Please use a sub-agent.")
    started = turn.until("subagent.started")
    child = started["child_key"]
    completed = turn.until("subagent.completed", lambda e: e.get("child_key") == child)
    turn.until("response.completed")
    assert completed.get("ok") is True, completed
    calls = [e for e in turn.events if e.get("type") == "subagent.tool_call"]
    assert [c["child_key"] for c in calls] == [child], calls
    assert "The sub-agent reported:" in turn.text()
    assert runs_as(agy_env, harness.conversation_id) == sim_version


@both_versions
def test_a_card_open_when_the_harness_restarted_is_asked_again(agy_env: dict[str, str]) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as first:
        first.turn("run: echo left waiting").until("response.elicitation_request")
    # The harness went away with the card on screen; agy still waits for an answer.
    with HarnessServer(create_app(), conversation) as second:
        turn = second.turn("are you still there?")
        card = turn.until("response.elicitation_request")
        second.press(card, "allow once")
        turn.until("response.completed", timeout=120)
    commands = [
        s for s in steps_of(agy_env, conversation) if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    ]
    assert commands[-1]["status"] == "CORTEX_STEP_STATUS_DONE"
    assert "left waiting" in commands[-1]["runCommand"]["commandLine"]
    texts = [s["userInput"]["userResponse"] for s in user_inputs(agy_env, conversation)]
    assert texts == ["run: echo left waiting", "are you still there?"]


@both_versions
def test_a_card_answered_after_agys_gate_timed_out_is_one_call(
    harness: HarnessServer, agy_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the card waits, agy's gate times out and agy asks again at a higher step index
    (docs/wire.md §6): the transcript still shows the one command, run once, with its output."""
    monkeypatch.setenv("AGY_SIM_WAITING_TIMEOUT", "1.0")  # 3 retries: 4 s before agy gives up
    turn = harness.turn("run: echo once")
    card = turn.until("response.elicitation_request")

    def retried() -> bool:
        steps = steps_of(agy_env, harness.conversation_id)
        commands = [s for s in steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
        return any(s["status"] == "CORTEX_STEP_STATUS_ERROR" for s in commands)

    wait_until(retried, timeout=10, what="agy to time the first gate out and ask again")
    harness.press(card, "allow once")
    turn.until("response.completed")
    # A call's item is sent when it starts and again when it completes: one call id.
    calls = {c["call_id"] for c in turn.items("function_call") if c["name"] == "sys_os_shell"}
    assert len(calls) == 1, turn.items("function_call")
    outputs = turn.items("function_call_output")
    assert [(o["call_id"], o["output"]) for o in outputs] == [(*calls, "once\n")]


# -- quota (docs/wire.md §9) ------------------------------------------------------------------

OMNIGENT_AGY = Path(sys.executable).with_name("omnigent-agy")
RESETS = re.compile(
    r"It resets at \d\d:\d\d UTC on \w{3} \d{1,2} \w{3} \(in 2 h (?:9|10) min\)\. "
    r"Pick a model of another group with `/model`, or wait"
)
# "17:00 (in 2 h 10 min)", local time; the day too should the reset fall on another day.
LOCAL_RESET = r"(?:\w{3} \d{1,2} \w{3} )?\d\d:\d\d \(in 2 h (?:9|10) min\)"


def _cli(env: dict[str, str], *args: str) -> str:
    ran = subprocess.run(
        [str(OMNIGENT_AGY), *args],
        env={**os.environ, **env, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode in (0, 1), ran.stderr
    return ran.stdout


def test_a_turn_refused_for_quota_says_when_it_resets(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    """A turn refused for quota ends with a coded failure that says when it resets; `omnigent-agy
    ps` and `doctor` show the plan and each group's quota of the running agy."""
    harness.turn("hello").until("response.completed")
    ps = _cli(agy_env, "ps")
    assert "account (asked the agy of conv_" in ps
    assert "  plan: Pro\n" in ps
    assert re.search(rf"  Gemini: 5 h: 62% left, resets {LOCAL_RESET}; weekly: 90% left", ps), ps
    assert "sim.person@example.com" not in ps  # the account is never shown

    failed = harness.turn("Please use up my quota.").until("response.failed")
    error = failed["response"]["error"]
    assert error["code"] == "agy_quota_exhausted", error
    assert error["title"] == "agy's quota for this model is used up"
    assert RESETS.match(error["remediation"]), error["remediation"]
    assert error["message"].startswith(
        "agy's model call was refused: the quota of Gemini is used up (You have exhausted"
    )

    ps = _cli(agy_env, "ps")
    assert re.search(rf"  Gemini: 5 h: used up, resets {LOCAL_RESET}", ps), ps
    doctor = _cli(agy_env, "doctor")
    assert re.search(
        r"! agy quota +plan: Pro; quota used up for Gemini; asked the agy of conv_", doctor
    ), doctor
    assert re.search(rf"\n +Gemini: 5 h: used up, resets {LOCAL_RESET}; weekly: 90% left", doctor)
    assert re.search(rf"-> Turns on these models fail: Gemini until {LOCAL_RESET}\.", doctor)
    # The conversation goes on, on a model of the other group.
    harness.turn("hello again", model_override="Claude Sonnet 4.5").until("response.completed")
