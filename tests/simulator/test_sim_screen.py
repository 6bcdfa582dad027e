"""agy-sim's drawn screen, piece by piece: keys, the composer, the dialogs, OSC 7501.

The OSC reports are read back with omnigent's own OSC 7501 parser (an independent reader of
the Program Status Protocol); the screen itself is read as omnigent's built-in Antigravity
harness reads agy's (tests/simulator/test_sim_screen_tmux.py drives it in tmux).
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from omnigent.harnesses.antigravity_native import bridge as builtin
from omnigent.terminals.program_status import ProgramStatus, ProgramStatusParser

from agy_sim import screen as sc
from agy_sim.dialogs import permission_dialog, question_dialog
from agy_sim.tui_screen import ScreenHooks, TuiScreen, reports_status

PASTE = "\x1b[200~hello\rworld\r\x1b[201~"


@pytest.mark.parametrize("cut", range(len(PASTE) + 1))
def test_a_bracketed_paste_is_one_key_wherever_the_reads_split_it(cut: int) -> None:
    parser = sc.KeyParser()
    keys = parser.feed(PASTE[:cut]) + parser.feed(PASTE[cut:] + "\r")
    assert keys == [sc.Paste("hello\nworld\n"), sc.ENTER]


def test_keys() -> None:
    keys = sc.KeyParser().feed("a\x01\x0b\x1b[A\x1b[B\x7f\t\x03\x1b")
    expected = [sc.HOME, sc.KILL_END, sc.UP, sc.DOWN, sc.BACKSPACE, sc.TAB, sc.INTERRUPT]
    assert keys == ["a", *expected]
    assert parser_flush("\x1b") == [sc.ESCAPE]
    parser = sc.KeyParser()
    assert parser.feed("\x1b[2") == []  # a sequence split across two reads
    assert parser.feed("00~x\x1b[201~") == [sc.Paste("x")]


def parser_flush(text: str) -> list[sc.Key]:
    parser = sc.KeyParser()
    return parser.feed(text) + parser.flush()


def test_the_composer_clears_with_home_and_kill_and_folds_a_long_paste() -> None:
    composer = sc.Composer()
    composer.insert("left over")
    composer.key(sc.HOME)
    composer.key(sc.KILL_END)
    assert composer.text == ""
    composer.paste("one\ntwo\n")
    assert composer.lines() == ["> one", "  two", ""]
    assert composer.take() == "one\ntwo\n"
    long = "\n".join(f"line {i}" for i in range(20))
    composer.paste(long)
    assert composer.lines() == ["> [Pasted text #1 +19 lines]"]
    assert builtin._AGY_PASTE_PLACEHOLDER_RE.search(composer.lines()[0])
    assert composer.take() == long


def permission_step(command: str = "ls") -> dict[str, Any]:
    return {
        "requestedInteraction": {
            "permission": {
                "resource": {"action": "command", "target": command},
                "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
                "suggestedPersistPattern": command,
            }
        }
    }


@pytest.mark.parametrize(
    ("digit", "permission"),
    [
        ("1", {"allow": True}),
        ("2", {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}),
        ("3", {"allow": True, "scope": "PERMISSION_SCOPE_GLOBAL"}),
        ("4", {"allow": False}),
    ],
)
def test_a_digit_answers_the_permission_menu_alone(digit: str, permission: Any) -> None:
    dialog = permission_dialog(permission_step(), 5)
    assert dialog.key(digit) == ("answer", {"permission": permission})


def test_the_permission_menu_reads_as_agy_s() -> None:
    lines = permission_dialog(permission_step("npm test"), 5).lines(80)
    assert lines[:2] == ["Command", "─" * 79]
    assert "Run this command?" in lines
    assert "> 1. Yes, run command" in lines
    assert "  4. No, cancel" in lines
    assert any("commands that start with 'npm test'" in line for line in lines)


def test_escape_interrupts_a_permission_and_enter_takes_the_highlighted_row() -> None:
    assert permission_dialog(permission_step(), 5).key(sc.ESCAPE) == ("interrupt", None)
    dialog = permission_dialog(permission_step(), 5)
    dialog.key(sc.DOWN)
    dialog.key(sc.DOWN)
    dialog.key(sc.DOWN)
    assert dialog.key(sc.ENTER) == ("answer", {"permission": {"allow": False}})


def test_a_typed_command_in_a_dialog_is_passed_on() -> None:
    dialog = permission_dialog(permission_step(), 5)
    for key in "/deny":
        assert dialog.key(key) is None
    assert dialog.key(sc.ENTER) == ("typed", "/deny")


def question_step() -> dict[str, Any]:
    colour = {
        "question": "Colour?",
        "options": [{"id": "1", "text": "Red"}, {"id": "2", "text": "Blue"}],
    }
    pets = {
        "question": "Pets?",
        "isMultiSelect": True,
        "options": [
            {"id": "1", "text": "Cat"},
            {"id": "2", "text": "Dog"},
            {"id": "3", "text": "Eel"},
        ],
    }
    return {
        "requestedInteraction": {
            "askQuestion": {"questions": [colour, pets, {"question": "Why?", "options": []}]}
        }
    }


def test_a_question_form_shows_one_question_at_a_time() -> None:
    dialog = question_step_dialog()
    assert "Question 1/3: Colour?" in dialog.lines(80)
    assert dialog.key("2") is None  # answered and moved on
    assert "Question 2/3: Pets?" in dialog.lines(80)
    assert dialog.key("1") is None  # multi-select: toggles
    assert dialog.key("3") is None
    assert any("[x] Cat" in line for line in dialog.lines(80))
    assert dialog.key(sc.ENTER) is None
    assert dialog.key("1") is None  # "Write-in..." is the only row of the third
    for key in "no reason":
        dialog.key(key)
    assert dialog.key(sc.ENTER) == (
        "answer",
        {
            "askQuestion": {
                "responses": [
                    {"question": "Colour?", "selectedOptionIds": ["2"]},
                    {"question": "Pets?", "selectedOptionIds": ["1", "3"]},
                    {"question": "Why?", "writeInResponse": "no reason"},
                ]
            }
        },
    )


def test_escape_skips_a_question() -> None:
    dialog = question_step_dialog()
    dialog.key(sc.ESCAPE)
    dialog.key(sc.ESCAPE)
    assert dialog.key(sc.ESCAPE) == (
        "answer",
        {
            "askQuestion": {
                "responses": [
                    {"question": q, "skipped": True} for q in ("Colour?", "Pets?", "Why?")
                ]
            }
        },
    )


def question_step_dialog() -> Any:
    return question_dialog(question_step(), 9)


class Engine:
    """What the screen follows, set by each test."""

    def __init__(self) -> None:
        self.waiting: tuple[int, dict[str, Any]] | None = None
        self.busy = False

    def hooks(self, *, osc: bool = True) -> ScreenHooks:
        return ScreenHooks(
            waiting=lambda: self.waiting,
            busy=lambda: self.busy,
            model=lambda: "Gemini 3 Pro (High)",
            osc=osc,
        )


def drawn(engine: Engine, *, osc: bool = True) -> tuple[TuiScreen, io.StringIO]:
    out = io.StringIO()
    screen = TuiScreen(out, engine.hooks(osc=osc))
    screen.drawn = screen.mounted = True
    return screen, out


def reports(raw: str) -> list[ProgramStatus]:
    seen: list[ProgramStatus] = []
    parser = ProgramStatusParser(
        on_report=seen.append, on_query=lambda: None, on_reset=lambda _: None
    )
    passed = parser.feed(raw.encode("utf-8"))
    assert b"7501" not in passed or b"\x1b]7501;" in passed  # reports pass through to tmux
    return seen


def test_osc_7501_reports_follow_agy_s_state() -> None:
    engine = Engine()
    screen, out = drawn(engine)
    screen.sync()
    engine.busy = True
    screen.sync()
    engine.waiting = (5, permission_step("rm -rf build"))
    screen.sync()
    screen.sync()  # unchanged: no second report
    engine.waiting, engine.busy = None, False
    screen.sync()
    seen = reports(out.getvalue())
    assert [(r.state, r.kind, r.app) for r in seen] == [
        ("idle", None, "antigravity"),
        ("working", None, "antigravity"),
        ("blocked", "permission", "antigravity"),
        ("idle", None, "antigravity"),
    ]
    assert "rm -rf build" in (seen[2].message or "")


def test_no_reports_before_agy_1_4() -> None:
    screen, out = drawn(Engine(), osc=False)
    screen.sync()
    assert "7501" not in out.getvalue()
    assert (reports_status("1.2.14"), reports_status("1.4.0"), reports_status("1.5.16")) == (
        False,
        True,
        True,
    )


def last_screen(out: io.StringIO) -> str:
    """What the block shows now: the text after the last erase."""
    return out.getvalue().rsplit("\x1b[J", 1)[-1]


def test_the_footer_says_idle_draft_busy_as_the_built_in_harness_reads_it() -> None:
    engine = Engine()
    screen, out = drawn(engine)
    screen.sync()
    pane = last_screen(out).replace("\r\n", "\n")
    assert builtin._AGY_IDLE_MARKER in pane
    assert builtin._agy_input_region(pane).strip() == ">"
    screen.feed(b"\x1b[200~a draft\r\x1b[201~")
    pane = last_screen(out).replace("\r\n", "\n")
    assert builtin._AGY_IDLE_MARKER not in pane
    assert builtin._draft_in_input_region(pane, "a draft", ">")
    assert screen.feed(b"\r") == [("line", "a draft\n")]
    engine.busy = True
    screen.sync()
    assert builtin._AGY_ACTIVE_MARKER in last_screen(out)


def test_a_dialog_answered_elsewhere_closes_and_the_next_keys_are_the_composer_s() -> None:
    engine = Engine()
    screen, out = drawn(engine)
    engine.waiting = (5, permission_step())
    screen.sync()
    assert "Run this command?" in last_screen(out)
    engine.waiting = None  # answered over RPC
    screen.sync()
    assert "Run this command?" not in last_screen(out)
    assert screen.feed(b"1\r") == [("line", "1")]


def test_a_digit_settles_the_dialog_and_the_enter_after_it_is_the_empty_composer_s() -> None:
    engine = Engine()
    screen, _ = drawn(engine)
    engine.waiting = (5, permission_step())
    screen.sync()
    assert screen.feed(b"2\r") == [
        ("answer", {"permission": {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}})
    ]
    screen.sync()  # the engine has not applied it yet: the dialog stays closed
    assert screen.dialog is None
