"""The terminal REPL: `omnigent run "$(omnigent-agy agent-path)"` in tmux, cards answered by keys.

A person's shell, as the README has it: a HOME of its own with the plugin enabled and agy-sim
as `agy` on its PATH, then `omnigent run` on the agent folder in a tmux pane, which starts
omnigent's local server and host in that HOME. Keys go in with send-keys and the pane is read
with capture-pane, so every assertion is on what the REPL shows, plus agy's own steps where
the pane cannot tell (was the command run?). omnigent's REPL shows every card as "approval
required" with y / a / n; what the plugin adds for it is omnigent_harness_agy/terminal_cards.py,
and docs/in-omnigent.md, "The terminal REPL", is the person's account of it.

The tests share one REPL and run in order: the `a` test comes last, as it changes what the
REPL asks afterwards. The trust tests run a second REPL in a folder nobody trusts.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from waiting import wait_until

from agy_sim.stack.homes import HostHome
from agy_sim.stack.local_stack import LocalStack
from agy_sim.stack.processes import BIN, kill_tmux, sweep

# One pytest-xdist worker for the file: its REPL is started once (tests/conftest.py).
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.tmux,
    pytest.mark.timeout(900),
    pytest.mark.xdist_group("test_e2e_repl"),
]

READY = re.compile(r"Antigravity CLI · ready")
PROMPT = "\N{HEAVY RIGHT-POINTING ANGLE QUOTATION MARK ORNAMENT}"  # the REPL's input line
ECHO = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # how it echoes an answer
TURN = 120.0  # a turn of agy-sim through omnigent on a busy machine
START = 300.0  # omnigent's local server and host, the first time in a HOME


class Repl:
    """One `omnigent run` in a tmux pane of a server of the test's own."""

    def __init__(self, home: HostHome, folder: Path, capture: Path) -> None:
        self.capture = capture
        self.socket = f"repl-{uuid.uuid4().hex[:10]}"
        self.server = libtmux.Server(socket_name=self.socket, config_file=os.devnull)
        script = home.root / f"{self.socket}.sh"  # the exports stay out of .artifacts
        exports = "".join(
            f"export {name}={shlex.quote(value)}\n"
            for name, value in home.env.items()
            if name.isidentifier()
        )
        script.write_text(
            f"{exports}cd {shlex.quote(str(folder))}\n"
            'exec omnigent run "$(omnigent-agy agent-path)"\n'
        )
        session = self.server.new_session(
            session_name="repl", window_command=f"sh {shlex.quote(str(script))}", x=400, y=50
        )
        self.pane = session.windows[0].panes[0]
        self.mark = 0

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.pane.capture_pane(start=-5000)]

    def since_mark(self) -> str:
        """What the pane showed since the last `send`, lines run together (the REPL wraps)."""
        return " ".join(line.strip() for line in self.lines()[self.mark :] if line.strip())

    def wait(self, pattern: str | re.Pattern[str], timeout: float = TURN) -> str:
        try:
            return wait_until(
                self.since_mark,
                timeout=timeout,
                what=f"the REPL to show {pattern!r}",
                until=lambda text: re.search(pattern, text),
            )
        finally:  # found or not: the pane as it was, for the reader of a failure
            self.capture.write_text("\n".join(self.lines()) + "\n")

    def send(self, keys: str) -> None:
        """Type `keys` and Enter; later waits read what the REPL prints from here on."""
        self.mark = _output_end(self.lines())
        self.pane.send_keys(keys, enter=True)

    def start(self) -> None:
        def started() -> str:
            text = " ".join(self.lines())
            if "Choose your theme" in text and not READY.search(text):
                self.pane.send_keys("", enter=True)  # the first run's theme picker
            return text

        wait_until(started, timeout=START, what="the REPL to start", until=READY.search)

    def turn_over(self, after: str) -> str:
        """What the turn showed, once `after` (a pattern of its last words) is followed by the
        status line saying the REPL is ready again."""
        return self.wait(rf"{after}.*{READY.pattern}.*state: sleeping")

    def close(self) -> None:
        self.capture.write_text("\n".join(self.lines()) + "\n")
        kill_tmux(self.socket, os.environ)


def _chrome(line: str) -> bool:
    """The REPL's frame below its output: blank lines, the rules around the input box and the
    status line (both start with "─"), the empty input line."""
    text = line.strip()
    return not text or text.startswith("\N{BOX DRAWINGS LIGHT HORIZONTAL}") or text == PROMPT


def _output_end(lines: list[str]) -> int:
    """Where the next output goes: after the last line of output, less two lines, as the
    REPL echoes an answer right under its card ("approved"). Read from the output itself,
    not from the input box, which is not there while the REPL redraws it: a mark taken then
    fell on an earlier turn's line, and a wait matched that turn's card."""
    end = len(lines)
    while end and _chrome(lines[end - 1]):
        end -= 1
    return max(0, end - 2)


@pytest.fixture(scope="module")
def home(stack: LocalStack) -> Iterator[HostHome]:
    """A person's HOME with the plugin enabled; what `omnigent run` starts there is stopped
    after the module (`omnigent stop` for this HOME only, agy's tmux server, leftovers)."""
    person = stack.home_for("repl", agy_on_path=True)
    stack.run(person, ["omnigent-agy", "enable"])
    try:
        yield person
    finally:
        subprocess.run(
            [str(BIN / "omnigent"), "stop", "--force"],
            env=person.env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        kill_tmux(person.tmux_socket, person.env)
        sweep([str(person.root), person.tmux_socket])


def _capture_folder(request: pytest.FixtureRequest) -> Path:
    """Where the panes are written, beside the browser's screenshots, so a failed run's
    REPL can be read after pytest's temporary folders are gone."""
    folder = Path(request.config.rootpath) / ".artifacts" / "repl"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def repl(stack: LocalStack, home: HostHome, request: pytest.FixtureRequest) -> Iterator[Repl]:
    shell = Repl(home, stack.workspace, _capture_folder(request) / "repl.txt")
    try:
        shell.start()
        yield shell
    finally:
        shell.close()


# --- permissions -------------------------------------------------------------------------------


def ask_command(repl: Repl, command: str) -> str:
    """Send "Please run: <command>", say y to its card and y to the second; the field."""
    repl.send(f"Please run: {command}")
    card = repl.wait(r"approval required · agy_cli_permission.*y = approve once")
    assert f"wants to run “{command}”" in card
    assert "y: the same after one more y · n: stop the turn" in card
    repl.send("y")
    # The REPL cannot pick a button: the plugin asks again, with a field the REPL asks for.
    repl.wait(r"approval required · agy_cli_permission .*1 = Allow once.*y = approve once")
    repl.send("y")
    return repl.wait(r"answer — .*3 = Deny \[string\]")


def test_a_command_approved_in_the_repl_runs(repl: Repl) -> None:
    field = ask_command(repl, "echo approved in the terminal")
    assert "1 = Allow once · 2 = Allow “echo approved in the terminal” for this conversation" in (
        field
    )
    repl.send("1")
    # The command's output under its "exit code 0" line: the REPL draws that line first (a
    # loaded machine showed the screen between the two, its status line already ready).
    done = repl.turn_over(r"exit code 0.*approved in the terminal")
    assert "answer: 1" in done
    assert "approved in the terminal" in done.split("exit code 0", 1)[1]


def test_a_command_denied_in_the_repl_does_not_run_and_agy_goes_on(repl: Repl) -> None:
    ask_command(repl, "rm -rf build")
    repl.send("3")
    # agy's own reply to the refusal: the turn went on.
    done = repl.turn_over(r"did not run rm -rf build")
    assert "exit code" not in done


def test_allow_for_this_conversation_in_the_repl_is_not_asked_again(repl: Repl) -> None:
    ask_command(repl, "echo kept for the conversation")
    repl.send("2")
    repl.turn_over(r"exit code 0")
    repl.send("Please run: echo kept for the conversation")
    again = repl.turn_over(r"exit code 0")
    assert "approval required" not in again
    assert "auto-approved" not in again  # agy itself did not ask: not the REPL's memory


# --- questions ---------------------------------------------------------------------------------


def test_a_multi_select_question_is_answered_by_numbers(repl: Repl) -> None:
    repl.send("Ask me a multi-select question")
    card = repl.wait(r"approval required · agy_ask_question.*y = approve once")
    assert "y: answer in the field below" in card
    repl.send("y")
    field = repl.wait(r"1\. Which checks should I run\? — .*\[string\]")
    assert "1 = Lint · 2 = Type check · 3 = Unit tests · 4 = Integration tests" in field
    repl.send("1,3")
    repl.turn_over(r"Which checks should I run\? → Lint, Unit tests")


def ask_single_question(repl: Repl) -> str:
    """Send a single question's prompt, say y to its card and to the form after it."""
    repl.send("Ask me a question")
    card = repl.wait(r"approval required · agy_ask_question.*y = approve once")
    assert "reason: Which color should the button be?" in card
    repl.send("y")  # the choice card: the REPL cannot pick a button, so the form follows
    repl.wait(r"approval required · agy_ask_question .*y: answer in the field below")
    repl.send("y")
    return repl.wait(r"1\. Which color should the button be\? — .*\[string\]")


def test_a_single_question_takes_a_typed_answer_of_the_persons_own(repl: Repl) -> None:
    field = ask_single_question(repl)
    assert "1 = Red · 2 = Blue · 3 = Green — one number, or your own words" in field
    repl.send("teal, like the sea")
    repl.turn_over(r"Which color should the button be\? → “teal, like the sea”")


def test_a_single_question_is_answered_by_its_options_number(repl: Repl) -> None:
    ask_single_question(repl)
    repl.send("2")
    repl.turn_over(r"Which color should the button be\? → Blue")


def test_a_number_in_other_digits_is_asked_again_and_never_fails_the_turn(repl: Repl) -> None:
    ask_single_question(repl)
    repl.send("²")  # str.isdigit says yes, int() says no
    # Asked again, the card saying why and what to type.
    again = repl.wait(r"reason: question 1 .*has no option '²': type a number from 1 to 3")
    assert "valid options: 1 (Red), 2 (Blue), 3 (Green) — Which color" in again
    repl.send("y")
    repl.wait(r"approval required · agy_ask_question .*y: answer in the field below")
    repl.send("y")
    repl.wait(r"has no option '²'.*1 = Red · 2 = Blue · 3 = Green.*\[string\]")
    repl.send("2")
    repl.turn_over(r"Which color should the button be\? → Blue")


def test_approve_always_sends_later_questions_straight_to_their_field(repl: Repl) -> None:
    repl.send("Ask me a multi-select question")
    repl.wait(r"approval required · agy_ask_question.*y = approve once")
    repl.send("a")
    repl.wait(r"1\. Which checks should I run\? — ")
    repl.send("2")
    repl.turn_over(r"Which checks should I run\? → Type check")
    repl.send("Ask me a multi-select question")
    asked = repl.wait(r"1\. Which checks should I run\? — ")
    assert "auto-approved · Antigravity CLI · agy_ask_question" in asked
    assert "y = approve once" not in asked  # no y/a/n; the answer itself is still asked
    repl.send("4")
    repl.turn_over(r"Which checks should I run\? → Integration tests")
    # A command is another kind of card: asked as before.
    ask_command(repl, "echo still asked")
    repl.send("1")
    repl.turn_over(r"exit code 0")


# --- the workspace's trust ----------------------------------------------------------------------


def test_the_trust_card_in_the_repl_n_starts_nothing_and_y_trusts_the_folder(
    stack: LocalStack,
    home: HostHome,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    folder = tmp_path_factory.mktemp("untrusted") / "project"
    (folder / ".agents").mkdir(parents=True)
    # A hook whose command reads as Rich markup: the REPL shows it as written, command first.
    hook = {"type": "command", "command": "echo [bold]hi[/bold] #(id)"}
    (folder / ".agents" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}})
    )
    shell = Repl(home, folder, _capture_folder(request) / "repl-trust.txt")
    try:
        shell.start()
        shell.send("Say hello in one short sentence.")
        card = shell.wait(r"approval required · agy_cli_trust · .*y = approve once")
        assert f"Accessing workspace: {folder} — Do you trust the contents of this project?" in (
            card
        )
        assert "y: Yes, I trust this folder · n: No, exit" in card
        assert 'make agy run: (1) runs "echo [bold]hi[/bold] #(id)" — hook "Stop".' in (
            re.sub(r"\s+", " ", card)
        )
        shell.send("n")
        refused = shell.turn_over(rf"{ECHO} refused")
        assert "Hello from the agy simulator" not in refused
        assert "approval required" not in refused.split("refused", 1)[1]

        shell.send("Say hello in one short sentence.")
        shell.wait(r"approval required · agy_cli_trust · .*y = approve once")
        shell.send("y")
        shell.turn_over(r"Hello from the agy simulator")
    finally:
        shell.close()
    assert str(folder) in stack.run(home, ["omnigent-agy", "trust"])
