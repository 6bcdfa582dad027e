"""`omnigent-agy demo`: omnigent with agy in it, on this machine, shown in the terminal.

The demo starts omnigent's real server and host on 127.0.0.1 with omnigent-agy enabled and its
agent registered, exactly as the README's install steps do (`local_stack.LocalStack`, in a private
folder that is removed afterwards). agy is the real one when it is installed and signed in (or
`OMNIGENT_AGY_CLI_PATH` names one), else the bundled simulator `agy-sim`. Then either

- it plays a short scripted conversation through omnigent's own API, as the web UI sends it,
  and prints what the web UI would show: agy's streamed thinking and answer, its tool calls and
  their output, the cards it asks (with their buttons and the one pressed), the tokens each turn
  used, and the Stop button; or
- with ``--interactive`` it prints the address of omnigent's web UI to open in a browser and
  keeps everything running until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .homes import Agy, tmux_socket_path, write_simulator
from .local_stack import LocalStack, agent_name
from .rest import STREAM_END, EventStream, card_choices, card_questions, choose

#: The simulator paced for reading (tests run it faster).
DEMO_SIMULATOR = {
    "AGY_SIM_STARTUP_DELAY": "1.5",
    "AGY_SIM_TOKEN_DELAY": "0.02",
    "AGY_SIM_LONG_TOKEN_DELAY": "0.05",
}
# Stop shows on the session's stream as `session.interrupted` (omnigent sends no
# response.cancelled for it).
TURN_ENDS = ("response.completed", "response.cancelled", "response.failed", "session.interrupted")


@dataclass(frozen=True, slots=True)
class Step:
    """One turn of the script and what the person does during it."""

    title: str
    text: str
    answer: str | None = None  # the button pressed on a card (None: each question's first)
    stop_after: float | None = None  # press Stop this many seconds after the first text
    expected: str = "response.completed"


SCRIPT = (
    Step("A streamed answer, with agy's thinking", "Say hello to omnigent in one short paragraph."),
    Step("A tool agy runs without asking: listing the files", "List the files here."),
    Step(
        "A command agy must ask about: you allow it",
        "Please run: echo hello from omnigent-agy",
        answer="Allow once",
    ),
    Step(
        "A command you deny: it does not run, and agy carries on",
        "Please run: rm -rf build",
        answer="Deny",
    ),
    Step("agy asks you a question", "Ask me a question about which option to take."),
    Step(
        "The Stop button, pressed during a long answer",
        "Give me a long answer about HTTP/2.",
        stop_after=1.5,
        expected="session.interrupted",
    ),
)


def pick_agy(env: Mapping[str, str], simulator_folder: Path) -> Agy:
    """A real signed-in agy (or the one `OMNIGENT_AGY_CLI_PATH` names), else agy-sim."""
    explicit = env.get("OMNIGENT_AGY_CLI_PATH")
    candidate = explicit or shutil.which("agy", path=env.get("PATH"))
    why = "no agy on PATH"
    if candidate:
        try:
            signed_in = (
                subprocess.run(  # noqa: S603 - the person's own agy, no shell
                    [candidate, "models"], capture_output=True, timeout=30, check=False
                ).returncode
                == 0
            )
        except (OSError, subprocess.TimeoutExpired):
            signed_in = False
        if signed_in or explicit:
            return Agy(Path(candidate), simulator=False, description=f"your agy at {candidate}")
        why = f"{candidate} is not signed in (run `agy` once to sign in)"
    simulated = write_simulator(simulator_folder, DEMO_SIMULATOR)
    return Agy(simulated.path, True, f"agy-sim, the bundled agy simulator ({why})")


def _plain(text: str) -> str:
    """Card text without markdown emphasis (a terminal shows the asterisks)."""
    return re.sub(r"(\*\*|__|`)(.+?)\1", r"\2", text)


def _arguments(item: Mapping[str, Any]) -> str:
    """What a tool call is about, in a few words (the command, the path, ...)."""
    try:
        arguments = json.loads(str(item.get("arguments") or "{}"))
    except json.JSONDecodeError:
        return textwrap.shorten(str(item.get("arguments")), 80)
    if not isinstance(arguments, dict):
        return ""
    questions = arguments.get("questions")
    if isinstance(questions, list):
        return " / ".join(str(q.get("question", "")) for q in questions if isinstance(q, dict))
    for key in ("command_line", "command", "path", "file", "query", "url"):
        if isinstance(arguments.get(key), str):
            return str(arguments[key])
    return textwrap.shorten(json.dumps(arguments), 80)


class Printer:
    """Renders the session's events the way omnigent's chat view shows them."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.mode: str | None = None
        self.calls: dict[str, str] = {}  # call id -> "name: what"
        self.denied: set[str] = set()
        self.stopped = False
        self.last_call: str | None = None

    def line(self, text: str = "") -> None:
        self._switch(None)
        self.out.write(text + "\n")
        self.out.flush()

    def _switch(self, mode: str | None, label: str = "") -> None:
        if mode != self.mode:
            if self.mode is not None:
                self.out.write("\n")
            if label:
                self.out.write(label)
            self.mode = mode

    def _stream(self, mode: str, label: str, text: str) -> None:
        if self.stopped:
            return  # Stop was pressed: what was already on its way is not shown
        self._switch(mode, label)
        # The web renders agy's markdown; a terminal shows bold as bare asterisks.
        text = text.replace("**", "")
        self.out.write(text.replace("\n", "\n" + " " * len(label)))
        self.out.flush()

    def event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.reasoning_text.delta":
            self._stream("thinking", "  (agy thinks) ", str(event.get("delta", "")))
        elif kind == "response.output_text.delta":
            self._stream("text", "  agy: ", str(event.get("delta", "")))
        elif kind == "response.output_item.done":
            self._item(event["item"])
        elif kind == "response.elicitation_request":
            self.card(event["params"])
        elif kind == "response.completed":
            self.line(f"  -- turn done · {_usage(event)}")
        elif kind in ("response.cancelled", "session.interrupted"):
            self.line("  -- stopped: agy stopped answering and the turn ended")
        elif kind == "response.failed":
            error = (event.get("response") or {}).get("error") or {}
            self.line(f"  -- failed: {error.get('message')} ({error.get('code')})")

    def _item(self, item: Mapping[str, Any]) -> None:
        call_id = str(item.get("call_id", ""))
        if item.get("type") == "function_call" and call_id not in self.calls:
            what = f"{item.get('name')}: {_arguments(item)}"
            self.calls[call_id] = what
            self.last_call = call_id
            self.line(f"  [tool call] {what}")
        elif item.get("type") == "function_call_output":
            if call_id in self.denied:
                self.line("  [not run] you denied it; agy was told so")
                return
            output = str(item.get("output") or "").strip()
            shown = textwrap.shorten(output.replace("\n", " | "), 100) if output else "(no output)"
            self.line(f"  [tool output] {shown}")

    def card(self, params: Mapping[str, Any]) -> None:
        self.line(f"  ┌ card: {_plain(str(params.get('message') or 'agy asks'))}")
        for question in card_questions(params):
            self.out.write(f"  │ {_plain(str(question.get('question', '')))}\n")
            box = "[ ]" if question.get("multiSelect") else "( )"
            options = "  ".join(f"{box} {o['label']}" for o in question.get("options") or [])
            self.out.write(f"  │   {options}\n")
        if card_choices(params):
            self.out.write("  │ " + "  ".join(f"[{c}]" for c in card_choices(params)) + "\n")

    def pressed(self, picks: list[str | list[str]], *, denied: bool) -> None:
        if denied and self.last_call is not None:
            self.denied.add(self.last_call)
        shown = "; ".join(", ".join(p) if isinstance(p, list) else p for p in picks)
        self.line(f"  └ you answer: {shown}")


def _usage(event: Mapping[str, Any]) -> str:
    usage = (event.get("response") or {}).get("usage") or {}
    if not usage:
        return "no token count reported"
    text = f"{usage.get('input_tokens', 0)} tokens in, {usage.get('output_tokens', 0)} out"
    return f"{text} ({usage['model']})" if usage.get("model") else text


def _picks(step: Step, params: Mapping[str, Any]) -> list[str | list[str]]:
    if card_choices(params):
        return [step.answer or card_choices(params)[0]]
    picks: list[str | list[str]] = []
    for question in card_questions(params):
        first = str((question.get("options") or [{"label": "yes"}])[0]["label"])
        picks.append([first] if question.get("multiSelect") else first)
    return picks


def _stop_due(step: Step, first_text: float | None) -> bool:
    if step.stop_after is None or first_text is None:
        return False
    return time.monotonic() - first_text > step.stop_after


def play(stack: LocalStack, session_id: str, events: EventStream, step: Step, out: TextIO) -> str:
    """One turn of the script through the server; the type of the event that ended it."""
    printer = Printer(out)
    out.write(f"\n== {step.title}\n  you: {step.text}\n")
    stack.client.send(session_id, step.text)
    first_text: float | None = None
    while True:
        try:
            event = events.next(timeout=0.2)
        except TimeoutError:
            event = {}
        if event is STREAM_END:
            printer.line("  -- the event stream closed")
            return "stream closed"
        printer.event(event)
        kind = event.get("type")
        if kind in TURN_ENDS:
            return str(kind)
        if kind == "response.output_text.delta" and first_text is None:
            first_text = time.monotonic()
        if kind == "response.elicitation_request":
            picks = _picks(step, event["params"])
            printer.pressed(picks, denied=picks == ["Deny"])
            content = choose(event["params"], picks)
            stack.client.resolve(session_id, str(event["elicitation_id"]), content)
        due = step.stop_after is not None and first_text is not None
        if (
            due
            and not printer.stopped
            and time.monotonic() - (first_text or 0) > (step.stop_after or 0)
        ):
            printer.line("  [you press] Stop")
            printer.stopped = True
            stack.client.interrupt(session_id)


def play_script(stack: LocalStack, out: TextIO, script: tuple[Step, ...] = SCRIPT) -> bool:
    """Every step of `script` in one new session; whether each turn ended as expected."""
    host = stack.main
    assert host.host_id is not None
    session = stack.client.create_session(agent_name(), host.host_id, str(stack.workspace))
    out.write(
        f"\nA new session of the agent {agent_name()!r} is open; each turn below is sent to "
        "omnigent as its web UI sends it, and shown as the web UI shows it.\n"
    )
    with stack.client.stream(session) as events:
        endings = [play(stack, session, events, step, out) for step in script]
    return endings == [step.expected for step in script]


def wait_for_ctrl_c(stack: LocalStack, out: TextIO) -> None:
    """Keep the stack up; say how to watch agy's TUI once agy runs."""
    shown = False
    stop = threading.Event()
    try:
        while not stop.wait(1.0):
            path = None if shown else tmux_socket_path(stack.main)
            if path is not None:
                out.write(
                    "\nagy is running; watch its own TUI in a second terminal with\n"
                    f"    tmux -S {path} attach      (detach with Ctrl-b d)\n"
                )
                out.flush()
                shown = True
    except KeyboardInterrupt:
        out.write("\nstopping omnigent and agy...\n")


@contextlib.contextmanager
def _signals_end_the_demo() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) end the demo as Ctrl-C does, so everything it
    started is stopped on the way out instead of left running."""

    def interrupt(signum: int, frame: object) -> None:
        del signum, frame
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _workspace(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text("# demo project\n\nA place for agy to look at.\n")
    (folder / "AGENTS.md").write_text("Answer briefly.\n")


def _interactive(stack: LocalStack, out: TextIO) -> None:
    out.write(
        f"\nomnigent is running. Open its web UI in a browser:\n    {stack.url}\n"
        "Start a new session from the agent picker: Agents → Other… → "
        f"{agent_name()} (harness Antigravity CLI), workspace\n    {stack.workspace}\n"
        "Press Ctrl-C here to stop everything.\n"
    )
    out.flush()
    wait_for_ctrl_c(stack, out)


def run(*, interactive: bool, simulator: bool, out: TextIO = sys.stdout) -> int:
    with tempfile.TemporaryDirectory(prefix="omnigent-agy-demo-") as tmp:
        root = Path(tmp)
        if simulator:
            agy = write_simulator(root / "agy-sim", DEMO_SIMULATOR)
        else:
            agy = pick_agy(os.environ, root / "agy-sim")
        out.write(
            "omnigent-agy demo: omnigent's own server and host, on this machine only "
            "(127.0.0.1), with agy as one of its harnesses.\n"
            f"agy: {agy.description}\n"
            f"everything lives in {root} and is removed at the end.\n\n"
        )
        out.flush()
        _workspace(root / "stack" / "workspace")

        def progress(message: str) -> None:
            out.write(f"  ... {message}\n")
            out.flush()

        stack = LocalStack(root / "stack", agy, private_home=agy.simulator, progress=progress)
        try:
            with _signals_end_the_demo(), stack:
                stack.wait_ready(stack.main)
                progress("the host reports the Antigravity CLI harness ready")
                if interactive:
                    _interactive(stack, out)
                    return 0
                ok = play_script(stack, out)
        except KeyboardInterrupt:
            out.write("\nstopped: omnigent and agy are stopped, the demo's folder is removed.\n")
            return 130
        out.write(
            "\n"
            + (
                "demo finished: every turn ended as expected; omnigent and agy are stopped.\n"
                if ok
                else "demo finished, but some turn did not end as expected (see above).\n"
            )
            + "Run `scripts/demo --interactive` to try the same stack in your browser.\n"
        )
        return 0 if ok else 1
