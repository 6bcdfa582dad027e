"""agy-sim as a process: its command line, its text UI, and the real process in tmux.

The unit tests at the top check the parts that need no process (option parsing, the TUI's
rendering and typed-line rules). The tests marked ``tmux`` start ``agy-sim`` as a separate
process in a tmux pane on a private socket and talk to it over real TLS HTTP/2 with
``RpcClient``, as the plugin does.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from omnigent_agy.simulator.__main__ import (
    DEFAULT_STARTUP_DELAY,
    SIM_VERSION,
    SimOptions,
    list_models,
    parse_options,
    version_tuple,
)
from omnigent_agy.simulator.cascade import TranscriptEvent
from omnigent_agy.simulator.catalog import ModelCatalog
from omnigent_agy.simulator.faults import FaultKind, FaultRule
from omnigent_agy.simulator.tui import SIGN_IN_HINT, Tui, TuiActions, render, survey_enabled

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


def test_models_lists_display_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert list_models(SimOptions()) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed == [m.display_name for m in ModelCatalog().models if not m.disabled]


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
