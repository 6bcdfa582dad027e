"""agy-sim as a process: its command line, its text UI, and the real process in tmux.

The unit tests at the top check the parts that need no process (option parsing, the TUI's
rendering and typed-line rules). The tests marked ``tmux`` start ``agy-sim`` as a separate
process in a tmux pane on a private socket and talk to it over real TLS HTTP/2 with
``RpcClient``, as the plugin does.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import os
import re
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from gemini_home import make_person_gemini
from simproc import AGY_SIM, FAST, TOKEN, Sim, SimLauncher, plan_model, sim_launcher, wait_exited
from waiting import await_until, wait_until

from agy_sim.__main__ import list_models
from agy_sim.cascade import TranscriptEvent
from agy_sim.catalog import DEFAULT_MODEL_ENUM, ModelCatalog
from agy_sim.dialogs import typed_interaction
from agy_sim.faults import FaultKind, FaultRule, FaultSource, control_file_for
from agy_sim.options import (
    DEFAULT_STARTUP_DELAY,
    SIM_VERSION,
    SimOptions,
    parse_options,
    version_tuple,
)
from agy_sim.process import resolve_tui_model
from agy_sim.tui import (
    SIGN_IN_HINT,
    Tui,
    TuiActions,
    render,
    survey_enabled,
)
from omnigent_agy.errors import Code, CsrfError, ProtocolError, RpcError, StreamStalled
from omnigent_agy.rpc.client import SERVICE, RpcClient
from omnigent_agy.rpc.discovery import discover_pin

# -- the command line -------------------------------------------------------------------


def test_agy_flags_in_both_spellings(tmp_path: Path) -> None:
    argv = [
        "--csrf_token=abc",
        "--log-file",
        str(tmp_path / "agy.log"),
        "--gemini_dir",
        str(tmp_path / "g"),
        "--model",
        "Gemini 3 Pro (High)",
        "--effort",
        "high",
        "--mode",
        "plan",
        "--dangerously-skip-permissions",
    ]
    options = parse_options(argv, {}, cwd=tmp_path)
    assert options.csrf_token == "abc"
    assert options.log_file == tmp_path / "agy.log"
    assert options.gemini_dir == tmp_path / "g"
    assert (options.model, options.effort, options.mode) == ("Gemini 3 Pro (High)", "high", "plan")
    assert options.skip_permissions
    assert options.workspace == tmp_path
    assert parse_options(["--csrf_token", "xyz"], {}).csrf_token == "xyz"


def test_defaults() -> None:
    options = parse_options([], {})
    assert options.startup_delay == DEFAULT_STARTUP_DELAY
    assert options.version == SIM_VERSION
    assert options.command is None
    assert not options.signed_out
    assert options.enforces_csrf
    assert options.gemini_dir == Path.home() / ".gemini"


def test_sim_switches_from_flags_win_over_environment(tmp_path: Path) -> None:
    env = {
        "AGY_SIM_STARTUP_DELAY": "3",
        "AGY_SIM_WAITING_TIMEOUT": "4",
        "AGY_SIM_TOKEN_DELAY": "0.01",
        "AGY_SIM_FAULTS": str(tmp_path / "env.json"),
        "AGY_SIM_FAULT": "delay:seconds=1;garbage:method=Heartbeat",
        "AGY_SIM_SIGNED_OUT": "1",
        "AGY_SIM_VERSION": "1.2.1",
    }
    from_env = parse_options([], env)
    assert from_env.startup_delay == 3
    assert from_env.waiting_timeout == 4
    assert from_env.token_delay == 0.01
    assert from_env.faults_file == tmp_path / "env.json"
    assert from_env.fault_rules == (
        FaultRule(FaultKind.DELAY, seconds=1),
        FaultRule(FaultKind.GARBAGE, method="Heartbeat"),
    )
    assert from_env.signed_out
    assert not from_env.enforces_csrf  # 1.2.1 predates CSRF
    argv = [
        "--sim-startup-delay=0.5",
        "--sim-faults",
        str(tmp_path / "flag.json"),
        "--sim-fault",
        "stall_stream",
        "--sim-version",
        "1.2.3",
    ]
    from_flags = parse_options(argv, env)
    assert from_flags.startup_delay == 0.5
    assert from_flags.faults_file == tmp_path / "flag.json"
    assert from_flags.fault_rules[-1] == FaultRule(FaultKind.STALL_STREAM)
    assert from_flags.version == "1.2.3"
    assert from_flags.enforces_csrf


def test_a_folder_of_fault_control_files_gives_each_gemini_dir_its_own(tmp_path: Path) -> None:
    """One environment (a host's) for the agys of many conversations: each follows the file
    named after its own --gemini_dir, so a test can upset one conversation and not another."""
    folder = tmp_path / "faults"
    folder.mkdir()
    env = {"AGY_SIM_FAULTS": str(folder)}
    one = parse_options(["--gemini_dir", str(tmp_path / "a" / "gemini")], env)
    two = parse_options(["--gemini_dir", str(tmp_path / "b" / "gemini")], env)
    assert one.faults_file == control_file_for(folder, tmp_path / "a" / "gemini")
    assert two.faults_file == control_file_for(folder, tmp_path / "b" / "gemini")
    assert one.faults_file != two.faults_file
    assert one.faults_file is not None
    assert one.faults_file.parent == folder
    # The same agy started again (its conversation resumed) follows the same file.
    again = parse_options(["--gemini_dir", str(tmp_path / "a" / "gemini")], env)
    assert again.faults_file == one.faults_file
    # Nothing there yet: no fault; written later: followed from the next request on.
    source = FaultSource(control_file=one.faults_file)
    assert source.current().rules == ()
    one.faults_file.write_text(json.dumps({"faults": [{"kind": "garbage"}]}))
    assert source.current().rules == (FaultRule(FaultKind.GARBAGE),)
    assert FaultSource(control_file=two.faults_file).current().rules == ()


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-such-flag"],
        ["chat"],
        ["--sim-startup-delay", "-1"],
        ["--sim-fault", "explode"],
        ["--sim-startup-delay", "soon"],
    ],
)
def test_bad_command_lines_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        parse_options(argv, {})
    assert caught.value.code == 2
    assert "agy-sim" in capsys.readouterr().err


def test_bad_environment_number_exits_2() -> None:
    with pytest.raises(SystemExit):
        parse_options([], {"AGY_SIM_WAITING_TIMEOUT": "forever"})


@pytest.mark.parametrize(
    ("version", "expected"),
    [("1.2.5-sim", (1, 2, 5)), ("1.2.1", (1, 2, 1)), ("2", (2,)), ("dev", None)],
)
def test_version_tuple(version: str, expected: tuple[int, ...] | None) -> None:
    if expected is None:
        assert version_tuple(version) > (99, 0, 0)
    else:
        assert version_tuple(version) == expected


def test_options_repr_hides_the_token() -> None:
    assert "s3cret" not in repr(SimOptions(csrf_token="s3cret"))


def test_models_prints_each_form_agy_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/wire.md §9: a progress line, then `<id>\t<Display Name>[ · description]`; bare
    ids before August 2026; JSON with `--output-format json` ahead of the sub-command."""
    served = [m for m in ModelCatalog().models if not m.disabled]
    assert list_models(SimOptions()) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "Fetching available models..."
    assert table[1:] == [
        f"{m.key}\t{m.display_name}" + (f" · {m.description}" if m.description else "")
        for m in served
    ]
    assert "gemini-3-pro-high\tGemini 3 Pro (High) · Advanced reasoning" in table
    assert list_models(SimOptions(models_format="ids")) == 0
    assert capsys.readouterr().out.splitlines() == [m.key for m in served]
    assert list_models(SimOptions(output_format="json")) == 0
    listed = json.loads(capsys.readouterr().out)["models"]
    assert [(m["id"], m["displayName"]) for m in listed] == [
        (m.key, m.display_name) for m in served
    ]


def test_models_format_from_flag_and_environment() -> None:
    assert parse_options([], {}).models_format == "table"
    assert parse_options([], {"AGY_SIM_MODELS_FORMAT": "ids"}).models_format == "ids"
    assert (
        parse_options(
            ["--sim-models-format", "table"], {"AGY_SIM_MODELS_FORMAT": "ids"}
        ).models_format
        == "table"
    )
    assert parse_options(["--output-format", "json", "models"], {}).output_format == "json"
    for bad in (["models", "--output-format", "json"], ["--sim-models-format", "x"]):
        with pytest.raises(SystemExit):
            parse_options(bad, {})
    with pytest.raises(SystemExit):
        parse_options([], {"AGY_SIM_MODELS_FORMAT": "names"})


def test_a_relative_gemini_dir_is_ignored_as_agy_ignores_it(tmp_path: Path) -> None:
    """agy falls back to its default folder when --gemini_dir is relative (docs/wire.md §9)."""
    options = parse_options(["--gemini_dir", "state/gemini"], {})
    assert options.ignored_gemini_dir == Path("state/gemini")
    assert options.gemini_dir == Path.home() / ".gemini"
    assert not options.keeps_conversations  # the default folder is never written
    given = parse_options(["--gemini_dir", str(tmp_path)], {})
    assert (given.gemini_dir, given.ignored_gemini_dir) == (tmp_path, None)


def test_models_signed_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert list_models(SimOptions(signed_out=True)) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert SIGN_IN_HINT in captured.err


# -- the text UI ------------------------------------------------------------------------


def event(kind: str, text: str = "", index: int | None = None) -> TranscriptEvent:
    return TranscriptEvent(cascade_id="c-1", kind=kind, text=text, step_index=index)


def test_render_every_kind() -> None:
    assert render(event("user", "hi")) == ("\n> hi", True)
    assert render(event("answer_delta", "Hel")) == ("Hel", False)
    assert render(event("tool", "run_command ls")) == ("  [tool] run_command ls", True)
    waiting, ends = render(event("waiting", "permission: run `ls`", 4))
    assert ends
    assert waiting.startswith("  [waiting #4] permission: run `ls`")
    assert "/allow" in waiting
    assert "/answer" in render(event("waiting", "question: pick one", 5))[0]
    assert render(event("cleared")) == ("[cleared] new conversation c-1", True)
    assert render(event("brand_new_kind", "x")) == ("  [brand_new_kind] x", True)


def transcript(*events: TranscriptEvent) -> str:
    out = io.StringIO()
    tui = Tui(out, TuiActions(submit=_never))
    for item in events:
        tui.on_transcript(item)
    return out.getvalue()


async def _never(text: str) -> None:
    raise AssertionError(f"unexpected turn {text!r}")


def test_streamed_answer_grows_on_one_line() -> None:
    shown = transcript(
        event("user", "hi"),
        event("answer_delta", "Hel"),
        event("answer_delta", "lo"),
        event("answer", "Hello"),
        event("status", "idle"),
    )
    assert shown == "\n> hi\nHello\n[idle]\n"


def test_answer_without_deltas_is_printed_whole() -> None:
    assert transcript(event("answer", "Hello")) == "Hello\n"


def test_a_line_interrupted_by_a_tool_step_is_ended_first() -> None:
    shown = transcript(event("answer_delta", "Let me"), event("tool", "ls"))
    assert shown == "Let me\n  [tool] ls\n"


class Typist:
    """A TUI with recorded turns and answers."""

    def __init__(self, *, survey: bool = False, signed_out: bool = False) -> None:
        self.out = io.StringIO()
        self.turns: list[str] = []
        self.answers: list[str] = []
        self.quit = False
        actions = TuiActions(submit=self._submit, answer=self._answer, quit=self._quit)
        self.tui = Tui(self.out, actions, survey=survey, signed_out=signed_out)

    async def _submit(self, text: str) -> None:
        self.turns.append(text)

    async def _answer(self, text: str) -> str:
        self.answers.append(text)
        return "[answered]"

    def _quit(self) -> None:
        self.quit = True

    def type(self, *lines: str) -> None:
        async def typing() -> None:
            for line in lines:
                self.tui.feed_line(line)
            await self.tui.drain()
            await self.tui.aclose()

        asyncio.run(typing())


def test_lines_typed_before_ready_are_lost() -> None:
    typist = Typist()
    typist.type("first", "second")
    assert typist.turns == []
    assert typist.tui.lost_lines == 2
    typist.tui.set_ready()
    typist.type("third")
    assert typist.turns == ["third"]


def test_typed_lines_route_to_turns_answers_and_commands() -> None:
    typist = Typist()
    typist.tui.set_ready()
    typist.type("hello", "   ", "/clear", "/allow", "/answer 1,2", "/help", "/quit")
    assert typist.turns == ["hello", "/clear"]
    assert typist.answers == ["/allow", "/answer 1,2"]
    assert typist.quit


def test_feedback_survey_swallows_the_first_line_after_ready() -> None:
    typist = Typist(survey=True)
    typist.tui.set_ready()
    assert "feedback survey" in typist.out.getvalue()
    typist.type("hello", "again")
    assert typist.turns == ["again"]
    assert "[survey]" in typist.out.getvalue()


def test_signed_out_refuses_typed_turns() -> None:
    typist = Typist(signed_out=True)
    typist.tui.set_ready()
    typist.type("hello")
    assert typist.turns == []
    assert SIGN_IN_HINT in typist.out.getvalue()


@pytest.mark.parametrize(
    ("settings", "enabled"),
    [
        (None, True),
        ({"showFeedbackSurvey": False}, False),
        ({"showFeedbackSurvey": True}, True),
        ({"other": 1}, True),
        ("not json{", True),
    ],
    ids=["absent", "false", "true", "unset", "broken"],
)
def test_survey_setting(tmp_path: Path, settings: Any, enabled: bool) -> None:
    if settings is not None:
        path = tmp_path / "antigravity-cli" / "settings.json"
        path.parent.mkdir()
        text = settings if isinstance(settings, str) else json.dumps(settings)
        path.write_text(text)
    assert survey_enabled(tmp_path) is enabled


def test_tui_without_a_terminal_only_writes() -> None:
    async def attach() -> bool:
        return Typist().tui.attach_input(io.StringIO())

    assert asyncio.run(attach()) is False


def test_a_closed_terminal_does_not_stop_the_tui() -> None:
    out = io.StringIO()
    tui = Tui(out, TuiActions(submit=_never))
    out.close()
    tui.on_transcript(event("answer", "still alive"))


def test_typed_interactions() -> None:
    assert typed_interaction("/allow") == {"permission": {"allow": True}}
    assert typed_interaction("/deny") == {"permission": {"allow": False}}
    assert typed_interaction("/allow-conversation")["permission"]["scope"] == (
        "PERMISSION_SCOPE_CONVERSATION"
    )
    assert typed_interaction("/answer 1, 3; skip; in blue") == {
        "askQuestion": {
            "responses": [
                {"selectedOptionIds": ["1", "3"]},
                {"skipped": True},
                {"writeInResponse": "in blue"},
            ]
        }
    }
    with pytest.raises(ValueError, match="usage"):
        typed_interaction("/answer")


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        (None, None, DEFAULT_MODEL_ENUM),
        ("Gemini 3 Pro (High)", None, "MODEL_PLACEHOLDER_M20"),
        ("gemini-3-pro-high", "low", "MODEL_PLACEHOLDER_M18"),
        ("Gemini 3 Pro", "low", "MODEL_PLACEHOLDER_M18"),
        ("Gemini 3.1 Pro (Low)", "Medium", "MODEL_PLACEHOLDER_M70"),
    ],
)
def test_resolve_tui_model(model: str | None, effort: str | None, expected: str) -> None:
    assert resolve_tui_model(model, effort) == expected


@pytest.mark.parametrize(("model", "effort"), [("GPT-9", None), ("Gemini 3 Flash", "high")])
def test_resolve_tui_model_rejects(model: str, effort: str | None) -> None:
    with pytest.raises(ValueError, match=r"agy-sim serves|effort variant"):
        resolve_tui_model(model, effort)


# == the real process in tmux ===========================================================
# Sim and SimLauncher (tests/simproc.py, shared with the reader's tests) run agy-sim in panes
# of a private tmux server.


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


@pytest.fixture(scope="module")
def shared_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """One ready agy-sim for the tests that only talk to it; faults reset per test."""
    with sim_launcher(tmp_path_factory.mktemp("shared-sim")) as launcher:
        yield launcher.launch(*FAST, "--sim-debug-rpc")


@pytest.fixture
def sim(shared_sim: Sim) -> Iterator[Sim]:
    restart = max(0, len(shared_sim.ports_logged()) - 1)
    shared_sim.set_faults(restart=restart)
    yield shared_sim
    shared_sim.set_faults(restart=max(0, len(shared_sim.ports_logged()) - 1))


# -- conversation helpers -------------------------------------------------------------


async def wait_steps(
    client: RpcClient,
    cascade_id: str,
    done: Callable[[list[dict[str, Any]]], bool],
    timeout: float = 20.0,
) -> list[dict[str, Any]]:
    """Poll the trajectory until ``done(steps)``."""
    return await await_until(
        lambda: client.get_cascade_trajectory_steps(cascade_id),
        until=done,
        timeout=timeout,
        what=f"the trajectory of {cascade_id} to get there",
    )


async def wait_idle(client: RpcClient, cascade_id: str, timeout: float = 20.0) -> None:
    async def status() -> str:
        summaries = (await client.get_all_cascade_trajectories())["trajectorySummaries"]
        return str(summaries[cascade_id]["status"])

    await await_until(
        status,
        until=lambda status: status == "CASCADE_RUN_STATUS_IDLE",
        timeout=timeout,
        what=f"the cascade {cascade_id} to go idle",
    )


def waiting(kind: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda steps: any(
        s.get("status") == "CORTEX_STEP_STATUS_WAITING"
        and kind in s.get("requestedInteraction", {})
        for s in steps
    )


def freshest_waiting(steps: list[dict[str, Any]], kind: str) -> tuple[int, dict[str, Any]]:
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if step.get("status") == "CORTEX_STEP_STATUS_WAITING" and kind in step.get(
            "requestedInteraction", {}
        ):
            return index, step
    raise AssertionError(f"no {kind} step is waiting")


async def new_turn(client: RpcClient, text: str) -> str:
    cascade_id = await client.start_cascade()
    await client.send_user_cascade_message(cascade_id, text, plan_model=await plan_model(client))
    return cascade_id


async def answer(
    client: RpcClient, cascade_id: str, index: int, step: dict[str, Any], **interaction: Any
) -> None:
    trajectory_id = step["metadata"]["sourceTrajectoryStepInfo"]["trajectoryId"]
    await client.call(
        "HandleCascadeUserInteraction",
        {
            "cascadeId": cascade_id,
            "interaction": {"trajectoryId": trajectory_id, "stepIndex": index, **interaction},
        },
    )


# -- the process: start-up, flags, signals ------------------------------------------------


def run_sim(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AGY_SIM), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_version_prints_agy_style_version() -> None:
    done = run_sim("--version")
    assert (done.returncode, done.stdout.strip()) == (0, SIM_VERSION)
    assert run_sim("--version", "--sim-version", "1.2.1").stdout.strip() == "1.2.1"


def test_models_exit_status_says_signed_in() -> None:
    signed_in = run_sim("models")
    assert signed_in.returncode == 0
    assert "gemini-3-pro-high\tGemini 3 Pro (High) · Advanced reasoning" in (
        signed_in.stdout.splitlines()
    )
    flag = run_sim("models", "--sim-signed-out")
    env = run_sim("models", env={"AGY_SIM_SIGNED_OUT": "1"})
    for signed_out in (flag, env):
        assert signed_out.returncode != 0
        assert signed_out.stdout == ""
        assert "sign in" in signed_out.stderr


def listeners(pid: int) -> set[int]:
    return {
        conn.laddr.port
        for conn in psutil.Process(pid).net_connections(kind="tcp")
        if conn.status == psutil.CONN_LISTEN
    }


@pytest.mark.tmux
def test_startup_sequence(sims: SimLauncher) -> None:
    sim = sims.launch("--sim-startup-delay", "4", wait_ready=False)
    pid = sim.pid  # the first log line comes at once
    assert (
        sim.log_text().splitlines()[0].endswith(f"Starting language server process with pid {pid}")
    )
    ports = wait_until(
        lambda: len(found := listeners(pid)) == 2 and found, timeout=20, what="two listeners"
    )
    tls_port, plain_port = sorted(ports)
    assert plain_port == tls_port + 1
    assert sim.ports_logged() == []  # not ready: no listening line yet

    async def early(client: RpcClient) -> RpcError:
        with pytest.raises(RpcError) as caught:
            await client.call("Heartbeat", {})
        return caught.value

    async def heartbeat(client: RpcClient) -> dict[str, Any]:
        return await client.call("Heartbeat", {})

    async def at(port: int, scenario: Callable[[RpcClient], Awaitable[Any]]) -> Any:
        async with RpcClient(port=port, csrf_token=TOKEN) as client:
            result = await scenario(client)
            assert client.http_version == "HTTP/2"
            return result

    refused = asyncio.run(at(tls_port, early))
    assert (refused.connect_code, refused.http_status) == (Code.UNAVAILABLE, 503)
    assert sim.port == tls_port  # the listening line, once ready
    assert "[ready] conversation" in sim.wait_screen("[ready")
    assert "lastExtensionHeartbeat" in asyncio.run(at(tls_port, heartbeat))
    plain = httpx.post(f"http://127.0.0.1:{plain_port}/{SERVICE}/Heartbeat", json={})
    assert plain.status_code == 404


@pytest.mark.tmux
def test_discovery_finds_the_port_once_ready(sims: SimLauncher) -> None:
    sim = sims.launch("--sim-startup-delay", "1.5", wait_ready=False)
    pid = sim.pid
    port = asyncio.run(discover_pin(pid=pid, log_file=sim.log, csrf_token=TOKEN, deadline=30)).port
    assert port == sim.port  # the port of the listening line
    sim.wait_screen("[ready")
    cascade_id = tui_cascade(sim)
    confirmed = asyncio.run(
        discover_pin(
            pid=pid, log_file=sim.log, csrf_token=TOKEN, conversation_id=cascade_id, deadline=30
        )
    )
    assert confirmed.port == port


@pytest.mark.tmux
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_stop_it_promptly_and_close_both_ports(
    sims: SimLauncher, signum: signal.Signals
) -> None:
    sim = sims.launch(*FAST)
    pid, port = sim.pid, sim.port
    assert listeners(pid) == {port, port + 1}
    process = psutil.Process(pid)
    process.send_signal(signum)
    wait_exited(process)
    for closed in (port, port + 1):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{closed}/")
    log = sim.log_text()
    assert f"got {signum.name}" in log  # a stopped agy-sim says why
    assert "agy-sim stopped" in log


@pytest.mark.tmux
def test_csrf_is_enforced(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)

    async def wrong(client: RpcClient) -> CsrfError:
        with pytest.raises(CsrfError) as caught:
            await client.call("Heartbeat", {})
        return caught.value

    assert sim.rpc(wrong, token="not-the-token").http_status == 403
    missing = httpx.post(
        f"https://127.0.0.1:{sim.port}/{SERVICE}/Heartbeat",
        json={},
        headers={"Connect-Protocol-Version": "1"},
        verify=False,  # agy's certificate is self-signed; loopback only
    )
    assert missing.status_code == 401
    assert missing.json()["code"] == "unauthenticated"


@pytest.mark.tmux
def test_old_version_without_csrf_and_unknown_methods(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-version", "1.2.1", token=None)

    async def calls(client: RpcClient) -> RpcError:
        await client.call("Heartbeat", {})  # any token: 1.2.1 predates CSRF
        with pytest.raises(RpcError) as caught:
            await client.call("GetCascadeStatus", {})
        return caught.value

    assert sim.rpc(calls, token="anything").http_status == 404


@pytest.mark.tmux
def test_signed_out_refuses_turns(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, env={"AGY_SIM_SIGNED_OUT": "1"})
    assert "signed out" in sim.wait_screen("[ready")

    async def turn(client: RpcClient) -> RpcError:
        with pytest.raises(RpcError) as caught:
            await new_turn(client, "hello")
        return caught.value

    assert sim.rpc(turn).connect_code is Code.UNAUTHENTICATED
    sim.type("hello from the terminal")
    wait_until(
        lambda: sim.screen().count(SIGN_IN_HINT) >= 2,
        timeout=20,
        what="the sign-in hint for the typed line",
    )


# -- typed input ------------------------------------------------------------------------


def tui_cascade(sim: Sim) -> str:
    match = re.search(r"\[ready\] conversation (\S+)", sim.screen())
    assert match is not None
    return match.group(1)


@pytest.mark.tmux
def test_input_typed_before_ready_is_lost(sims: SimLauncher) -> None:
    sim = sims.launch("--sim-startup-delay", "3", wait_ready=False)
    sim.wait_screen("checking account eligibility")
    sim.type("typed too early")
    sim.type("half a line", enter=False)
    sim.wait_screen("[ready")
    sim.type("hello after ready")
    sim.wait_screen("> hello after ready")
    cascade_id = tui_cascade(sim)

    async def inputs(client: RpcClient) -> list[str]:
        await wait_idle(client, cascade_id)
        steps = await client.get_cascade_trajectory_steps(cascade_id)
        return [s["userInput"]["userResponse"] for s in steps if "userInput" in s]

    assert sim.rpc(inputs) == ["hello after ready"]
    assert "typed too early" not in sim.screen().split("[ready")[1]


@pytest.mark.tmux
def test_clear_typed_in_the_tui_starts_a_new_cascade(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    first = tui_cascade(sim)
    sim.type("/clear")
    match = wait_until(
        lambda: re.search(r"\[cleared\] new conversation (\S+)", sim.screen()),
        timeout=20,
        what="[cleared]",
    )
    second = match.group(1)
    assert second != first
    sim.type("after clear")

    async def check(client: RpcClient) -> dict[str, Any]:
        await wait_steps(client, second, lambda steps: len(steps) > 0)
        return (await client.get_all_cascade_trajectories())["trajectorySummaries"]

    summaries = sim.rpc(check)
    assert {first, second} <= set(summaries)
    assert "lastUserInputTime" in summaries[second]


@pytest.mark.tmux
def test_feedback_survey_swallows_the_first_typed_line(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, survey=True)
    assert "feedback survey" in sim.screen()
    first = tui_cascade(sim)
    sim.type("/clear")
    sim.wait_screen("[survey] thanks")
    assert "[cleared]" not in sim.screen()
    sim.type("/clear")
    sim.wait_screen("[cleared]")
    assert first in sim.screen()


@pytest.mark.tmux
def test_approval_typed_in_the_tui(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    cascade_id = tui_cascade(sim)
    sim.type("please run: ls")
    sim.wait_screen("[waiting #")
    sim.type("/allow")

    async def done(client: RpcClient) -> list[dict[str, Any]]:
        await wait_idle(client, cascade_id)
        return await client.get_cascade_trajectory_steps(cascade_id)

    steps = sim.rpc(done)
    commands = [s for s in steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"]
    assert commands[-1]["status"] == "CORTEX_STEP_STATUS_DONE"


# -- conversations over RPC (one shared process) ------------------------------------------


def planner_steps(update: dict[str, Any]) -> list[dict[str, Any]]:
    steps = update["update"].get("mainTrajectoryUpdate", {}).get("stepsUpdate", {}).get("steps", [])
    return [s for s in steps if s.get("type") == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"]


@pytest.mark.tmux
def test_streamed_turn(sim: Sim) -> None:
    async def scenario(client: RpcClient) -> tuple[list[str], dict[str, Any], str]:
        cascade_id = await client.start_cascade()
        growth: list[str] = []
        final: dict[str, Any] = {}
        updates = client.stream_agent_state_updates(cascade_id, idle_timeout=20)
        async with contextlib.aclosing(updates):
            first = await anext(updates)  # the snapshot frame comes first
            assert first["update"]["conversationId"] == cascade_id
            await client.send_user_cascade_message(
                cascade_id, "hello there", plan_model=await plan_model(client)
            )
            async for update in updates:
                for step in planner_steps(update):
                    if step["status"] == "CORTEX_STEP_STATUS_GENERATING":
                        growth.append(step["plannerResponse"].get("modifiedResponse", ""))
                    elif step["status"] == "CORTEX_STEP_STATUS_DONE":
                        final = step
                if final and update["update"].get("status") == "CASCADE_RUN_STATUS_IDLE":
                    break
        assert client.http_version == "HTTP/2"
        return growth, final, cascade_id

    growth, final, cascade_id = sim.rpc(scenario)
    texts = [text for text in growth if text]
    assert len(set(texts)) >= 2, "modifiedResponse should grow over several frames"
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    response = final["plannerResponse"]
    assert response["response"] == response["modifiedResponse"]
    assert response["response"].startswith(texts[-1])
    sim.wait_screen(f"{{{cascade_id[:8]}}} > hello there")


@pytest.mark.tmux
def test_approval_over_rpc(sim: Sim) -> None:
    async def scenario(client: RpcClient) -> list[dict[str, Any]]:
        cascade_id = await new_turn(client, "run: ls")
        steps = await wait_steps(client, cascade_id, waiting("permission"))
        index, step = freshest_waiting(steps, "permission")
        assert step["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
        await answer(client, cascade_id, index, step, permission={"allow": True})
        await wait_idle(client, cascade_id)
        return await client.get_cascade_trajectory_steps(cascade_id)

    steps = sim.rpc(scenario)
    command = next(s for s in steps if s["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND")
    assert command["status"] == "CORTEX_STEP_STATUS_DONE"
    assert command["runCommand"]["combinedOutput"]["full"]
    assert "[waiting #" in sim.screen()


@pytest.mark.tmux
def test_question_over_rpc(sim: Sim) -> None:
    async def scenario(client: RpcClient) -> dict[str, Any]:
        cascade_id = await new_turn(client, "ask me a question")
        steps = await wait_steps(client, cascade_id, waiting("askQuestion"))
        index, step = freshest_waiting(steps, "askQuestion")
        question = step["requestedInteraction"]["askQuestion"]["questions"][0]
        response = {"question": question["question"], "selectedOptionIds": ["1"]}
        await answer(client, cascade_id, index, step, askQuestion={"responses": [response]})
        await wait_idle(client, cascade_id)
        return (await client.get_cascade_trajectory_steps(cascade_id))[index]

    answered = sim.rpc(scenario)
    assert answered["status"] == "CORTEX_STEP_STATUS_DONE"
    assert answered["completedInteractions"]


@pytest.mark.tmux
def test_cancel_stops_a_long_answer(sim: Sim) -> None:
    async def scenario(client: RpcClient) -> list[dict[str, Any]]:
        cascade_id = await new_turn(client, "give me a long answer")

        def generating(steps: list[dict[str, Any]]) -> bool:
            return any(
                s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
                and s["status"] == "CORTEX_STEP_STATUS_GENERATING"
                and s["plannerResponse"].get("modifiedResponse")
                for s in steps
            )

        await wait_steps(client, cascade_id, generating)
        await client.cancel_cascade_steps(cascade_id)
        await wait_idle(client, cascade_id)
        return await client.get_cascade_trajectory_steps(cascade_id)

    steps = sim.rpc(scenario)
    planner = [s for s in steps if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"]
    assert planner[-1]["status"] == "CORTEX_STEP_STATUS_CANCELED"
    assert "response" not in planner[-1]["plannerResponse"]


@pytest.mark.tmux
def test_waiting_timeout_then_a_fresh_waiting_step(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-waiting-timeout", "0.5")

    async def scenario(client: RpcClient) -> tuple[int, int, list[dict[str, Any]]]:
        cascade_id = await new_turn(client, "run: ls")
        first, _ = freshest_waiting(
            await wait_steps(client, cascade_id, waiting("permission")), "permission"
        )

        def retried(steps: list[dict[str, Any]]) -> bool:
            return steps[first]["status"] == "CORTEX_STEP_STATUS_ERROR" and waiting("permission")(
                steps[first + 1 :]
            )

        steps = await wait_steps(client, cascade_id, retried)
        fresh, step = freshest_waiting(steps, "permission")
        await answer(client, cascade_id, fresh, step, permission={"allow": True})
        await wait_idle(client, cascade_id)
        return first, fresh, await client.get_cascade_trajectory_steps(cascade_id)

    first, fresh, steps = sim.rpc(scenario)
    assert fresh > first
    assert steps[fresh]["status"] == "CORTEX_STEP_STATUS_DONE"


# -- fault switches on the running process ---------------------------------------------


async def stream_until_error(
    client: RpcClient, cascade_id: str, *, idle: float = 10.0
) -> tuple[int, RpcError]:
    frames = 0
    try:
        async for _ in client.stream_agent_state_updates(cascade_id, idle_timeout=idle):
            frames += 1
    except RpcError as exc:
        return frames, exc
    raise AssertionError("the stream ended cleanly")


@pytest.mark.tmux
@pytest.mark.parametrize("mode", ["eof", "truncate"])
def test_fault_drop_stream_after_k_frames(sim: Sim, mode: str) -> None:
    async def scenario(client: RpcClient) -> tuple[int, RpcError, dict[str, Any]]:
        cascade_id = await client.start_cascade()
        sim.set_faults(
            {"kind": "drop_stream", "method": "StreamAgentStateUpdates", "after_frames": 1,
             "mode": mode, "times": 1}
        )  # fmt: skip
        frames, error = await stream_until_error(client, cascade_id)
        # Only once: the reconnect gets its snapshot.
        updates = client.stream_agent_state_updates(cascade_id)
        async with contextlib.aclosing(updates):
            again = await anext(updates)
        return frames, error, again

    frames, error, again = sim.rpc(scenario)
    assert frames == 1
    assert isinstance(error, ProtocolError)
    assert "update" in again


@pytest.mark.tmux
def test_fault_stall_stream(sim: Sim) -> None:
    async def scenario(client: RpcClient) -> tuple[int, RpcError]:
        cascade_id = await client.start_cascade()
        sim.set_faults({"kind": "stall_stream", "method": "StreamAgentStateUpdates"})
        result = await stream_until_error(client, cascade_id, idle=1.0)
        await client.heartbeat()  # unary calls are unaffected
        return result

    frames, error = sim.rpc(scenario)
    assert frames == 0
    assert isinstance(error, StreamStalled)


@pytest.mark.tmux
def test_fault_http_error_n_times(sim: Sim) -> None:
    sim.set_faults(
        {"kind": "http_error", "method": "GetAllCascadeTrajectories", "status": 503, "times": 2}
    )

    async def scenario(client: RpcClient) -> list[Code]:
        codes: list[Code] = []
        for _ in range(2):
            with pytest.raises(RpcError) as caught:
                await client.call("GetAllCascadeTrajectories", {})
            codes.append(caught.value.connect_code)
        await client.call("GetAllCascadeTrajectories", {})  # the third answers
        return codes

    assert sim.rpc(scenario) == [Code.UNAVAILABLE, Code.UNAVAILABLE]


@pytest.mark.tmux
def test_fault_http_error_always(sim: Sim) -> None:
    sim.set_faults({"kind": "http_error", "method": "GetAvailableModels", "status": 500})

    async def scenario(client: RpcClient) -> int:
        failures = 0
        for _ in range(3):
            with pytest.raises(RpcError):
                await client.call("GetAvailableModels", {})
            failures += 1
        await client.heartbeat()
        return failures

    assert sim.rpc(scenario) == 3


@pytest.mark.tmux
def test_fault_garbage(sim: Sim) -> None:
    sim.set_faults({"kind": "garbage", "method": "GetAvailableModels"})

    async def scenario(client: RpcClient) -> RpcError:
        with pytest.raises(ProtocolError) as caught:
            await client.call("GetAvailableModels", {})
        return caught.value

    assert sim.rpc(scenario).http_status in (None, 200)


@pytest.mark.tmux
def test_fault_delay(sim: Sim) -> None:
    sim.set_faults({"kind": "delay", "method": "GetAvailableModels", "seconds": 30})

    async def scenario(client: RpcClient) -> bool:
        delayed = asyncio.create_task(client.call("GetAvailableModels", {}))
        await client.heartbeat()  # other methods answer meanwhile
        done, _ = await asyncio.wait({delayed}, timeout=0.5)
        delayed.cancel()
        await asyncio.gather(delayed, return_exceptions=True)
        return bool(done)

    assert sim.rpc(scenario) is False


@pytest.mark.tmux
def test_fault_restart_on_a_new_port(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    old_port = sim.port

    async def before(client: RpcClient) -> str:
        return await new_turn(client, "hello")

    cascade_id = sim.rpc(before)
    sim.set_faults(restart=1)
    wait_until(lambda: len(sim.ports_logged()) == 2, timeout=20, what="a second listening line")
    new_port = sim.port
    assert new_port != old_port
    assert listeners(sim.pid) == {new_port, new_port + 1}
    sim.wait_screen(f"restarted on port {new_port}")

    async def on_old_port() -> RpcError:
        async with RpcClient(port=old_port, csrf_token=TOKEN) as client:
            with pytest.raises(RpcError) as caught:
                await client.call("Heartbeat", {})
            return caught.value

    assert asyncio.run(on_old_port()).connect_code is Code.UNAVAILABLE

    async def after(client: RpcClient) -> dict[str, Any]:
        return await client.get_conversation_metadata(cascade_id)

    assert sim.rpc(after)  # the conversation survived the restart
    rediscovered = asyncio.run(
        discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=TOKEN, conversation_id=cascade_id, deadline=30
        )
    )
    assert rediscovered.port == new_port


@pytest.mark.tmux
def test_sigusr1_restarts_too(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    old_port = sim.port
    psutil.Process(sim.pid).send_signal(signal.SIGUSR1)
    wait_until(lambda: len(sim.ports_logged()) == 2, timeout=20, what="a second listening line")
    assert sim.port != old_port
    assert "lastExtensionHeartbeat" in sim.rpc(lambda client: client.heartbeat())


@pytest.mark.tmux
def test_faults_given_on_the_command_line(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-fault", "http_error:method=Heartbeat,status=502,times=1")

    async def scenario(client: RpcClient) -> Code:
        with pytest.raises(RpcError) as caught:
            await client.call("Heartbeat", {})
        await client.call("Heartbeat", {})
        return caught.value.connect_code

    assert sim.rpc(scenario) is Code.UNAVAILABLE


def test_unknown_model_is_a_usage_error() -> None:
    done = run_sim("--model", "GPT-9")
    assert done.returncode == 2
    assert "Gemini 3 Pro (High)" in done.stderr


@pytest.mark.tmux
def test_model_and_effort_flags_choose_the_tui_model(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--model", "Gemini 3 Pro", "--effort", "low")
    cascade_id = tui_cascade(sim)
    sim.type("ask me a question")
    sim.wait_screen("[waiting #")
    sim.type("/answer 2")

    async def scenario(client: RpcClient) -> tuple[str, list[dict[str, Any]]]:
        await wait_idle(client, cascade_id)
        response = (await client.get_available_models())["response"]
        return response["defaultAgentModelId"], await client.get_cascade_trajectory_steps(
            cascade_id
        )

    default_key, steps = sim.rpc(scenario)
    assert default_key == "gemini-3-pro-low"
    user_input = next(s for s in steps if "userInput" in s)
    assert user_input["userInput"]["userConfig"]["plannerConfig"]["planModel"] == (
        "MODEL_PLACEHOLDER_M18"
    )
    question = next(s for s in steps if s["type"] == "CORTEX_STEP_TYPE_ASK_QUESTION")
    assert question["status"] == "CORTEX_STEP_STATUS_DONE"
    assert question["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]


@pytest.mark.tmux
def test_the_process_table_shows_agy_as_omnigent_looks_for_it(sim: Sim) -> None:
    args = psutil.Process(sim.pid).cmdline()
    assert Path(args[0]).name == "agy"
    assert "bin/agy" in " ".join(args)
    assert "--log-file" in args  # agy's own flags still follow
    # omnigent's own agy client finds it: the pid by its command line, then its TLS port.
    from omnigent.harnesses.antigravity_native import rpc as builtin  # noqa: PLC0415

    assert sim.pid in builtin._list_agy_pids()
    assert sim.port in builtin._candidate_agy_rpc_ports()


@pytest.mark.tmux
def test_omnigent_s_own_log_parser_finds_the_port_in_agy_sim_s_log(sim: Sim) -> None:
    """omnigent's live-verified reader of agy's log (glog lines, exactly its prefix, the first
    line the start, within its first 4 KiB) finds agy-sim's port there (docs/wire.md §9)."""
    from omnigent.harnesses.antigravity_native import rpc as builtin  # noqa: PLC0415

    assert builtin._logged_rpc_ports(sim.pid) == [sim.port]
    lines = sim.log_text().splitlines()
    glog = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \w+\.go:\d+\] .")
    assert all(glog.match(line) for line in lines), lines
    messages = [line.split("] ", 1)[1] for line in lines]
    assert messages[:2] == [
        f"Starting language server process with pid {sim.pid}",
        f"Language server version: {SIM_VERSION}",
    ]
    assert "OAuth: authenticated successfully" in messages


@pytest.mark.tmux
def test_a_relative_gemini_dir_is_logged_and_the_default_used(
    sims: SimLauncher, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    make_person_gemini(home / ".gemini", settings={"showFeedbackSurvey": False})
    sim = sims.launch(*FAST, "--gemini_dir", "relative/gemini", env={"HOME": str(home)})
    log = sim.log_text()
    assert (
        "] Failed to resolve GeminiDir 'relative/gemini': must be an absolute path, falling "
        f"back to default {home / '.gemini'}"
    ) in log
    # The person's own folder is read (signed in there), as agy would.
    assert "] OAuth: authenticated successfully" in log


def test_history_steps_from_flag_and_environment() -> None:
    assert parse_options([], {}).history_steps == 0
    assert parse_options([], {"AGY_SIM_HISTORY": "20000"}).history_steps == 20_000
    assert parse_options(["--sim-history", "5"], {"AGY_SIM_HISTORY": "7"}).history_steps == 5
    with pytest.raises(SystemExit):
        parse_options(["--sim-history", "-1"], {})


@pytest.mark.tmux
def test_a_build_refusing_http1_gets_its_calls_and_streams_over_http2(
    sims: SimLauncher, caplog: pytest.LogCaptureFixture
) -> None:
    sim = sims.launch(*FAST, "--sim-http2-only")
    refused = httpx.post(
        f"https://127.0.0.1:{sim.port}/{SERVICE}/Heartbeat",
        json={},
        headers={"x-codeium-csrf-token": TOKEN},
        verify=False,
    )
    assert refused.status_code == 501

    async def first_frames(client: RpcClient) -> list[str | None]:
        await client.heartbeat()  # unary calls speak only HTTP/2: nothing for agy to refuse
        versions = [client.http_version]
        for _ in range(2):
            updates = client.stream_agent_state_updates(tui_cascade(sim), idle_timeout=20)
            async with contextlib.aclosing(updates):
                await anext(updates)
            versions.append(client.stream_http_version)
        return versions

    with caplog.at_level("INFO", logger="omnigent_agy.rpc.connection"):
        assert sim.rpc(first_frames) == ["HTTP/2", "HTTP/2", "HTTP/2"]
    # Refused once, remembered: the second stream went to HTTP/2 at once.
    assert [r.message for r in caplog.records].count(
        "agy refuses HTTP/1.1 (501): streams use HTTP/2 from now on"
    ) == 1


@pytest.mark.tmux
def test_streams_speak_http1_where_agy_offers_it(sim: Sim) -> None:
    async def first_frame(client: RpcClient) -> str | None:
        updates = client.stream_agent_state_updates(tui_cascade(sim), idle_timeout=20)
        async with contextlib.aclosing(updates):
            await anext(updates)
        return client.stream_http_version

    assert sim.rpc(first_frame) == "HTTP/1.1"
