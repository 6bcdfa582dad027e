"""`omnigent-agy demo`: a scripted conversation through the real harness, printed live.

The demo serves omnigent's own ExecutorAdapter around `AgyExecutor` on loopback, exactly as
omnigent's runner would, and talks to it as the web UI does: it streams each turn's events,
answers the approval card and the question card as a person would press the buttons, and
presses Stop on a long answer. agy is the real one when it is installed and signed in (or
`OMNIGENT_AGY_CLI_PATH` names one), else the bundled simulator `agy-sim`. agy runs in a private
tmux server that the demo prints, so you can watch its TUI while the demo talks to it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.terminal import TerminalHost

from .app import create_app
from .local import HarnessServer, Turn
from .stack import simulated_sign_in

SIMULATOR_FLAGS = {
    "AGY_SIM_STARTUP_DELAY": "1.5",
    "AGY_SIM_TOKEN_DELAY": "0.02",
    "AGY_SIM_LONG_TOKEN_DELAY": "0.05",
}


@dataclass(frozen=True, slots=True)
class Step:
    """One turn of the script and what the person does during it."""

    title: str
    text: str
    answer: str | None = None  # the label prefix of the button the person presses
    stop_after: float | None = None  # press Stop this many seconds after the first text


SCRIPT = (
    Step("A streamed answer with thinking", "Say hello to omnigent in one short paragraph."),
    Step("A tool agy runs by itself", "List the files here."),
    Step(
        "An approval card, approved",
        "Please run: echo hello from omnigent-agy",
        answer="Allow once",
    ),
    Step("An approval card, denied (agy carries on)", "Please run: rm -rf build", answer="Deny"),
    Step("A question card", "Ask me a question about which option to take.", answer=""),
    Step("The Stop button", "Give me a long answer about HTTP/2.", stop_after=1.5),
)


def pick_agy(env: Mapping[str, str]) -> tuple[str, str]:
    """(path, description) of the agy to use: a real signed-in one, else the simulator."""
    explicit = env.get("OMNIGENT_AGY_CLI_PATH")
    candidate = explicit or shutil.which("agy")
    if candidate:
        try:
            signed_in = (
                subprocess.run(  # noqa: S603 - the user's own agy, no shell
                    [candidate, "models"], capture_output=True, timeout=30, check=False
                ).returncode
                == 0
            )
        except (OSError, subprocess.TimeoutExpired):
            signed_in = False
        if signed_in or explicit:
            return candidate, f"agy at {candidate}"
    simulator = shutil.which("agy-sim") or str(Path(sys.executable).with_name("agy-sim"))
    why = "no agy on PATH" if not candidate else "agy is not signed in"
    return simulator, f"the bundled simulator agy-sim ({why})"


@contextmanager
def demo_environment(agy: str, *, simulator: bool) -> Iterator[dict[str, str]]:
    """A private workspace, state dir, omnigent config and tmux socket, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="omnigent-agy-demo-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / "README.md").write_text("# demo project\n\nA place for agy to look at.\n")
        (workspace / "AGENTS.md").write_text("Answer briefly.\n")
        values = {
            "OMNIGENT_CONFIG_HOME": str(root / "omnigent"),
            "OMNIGENT_AGY_CLI_PATH": agy,
            "OMNIGENT_AGY_STATE_DIR": str(root / "state"),
            "OMNIGENT_AGY_TMUX_SOCKET": f"omnigent-agy-demo-{uuid.uuid4().hex[:8]}",
            "HARNESS_AGY_CLI_CWD": str(workspace),
        }
        if simulator:
            values.update({k: os.environ.get(k, v) for k, v in SIMULATOR_FLAGS.items()})
            # A person signed in to the simulator: agy's private gemini dir is seeded from it
            # (WIRE.md §1b); a real agy uses the person's own ~/.gemini.
            simulated_sign_in(root / "person" / ".gemini")
            values[GEMINI_HOME_ENV] = str(root / "person" / ".gemini")
        saved = {key: os.environ.get(key) for key in values}
        os.environ.update(values)
        try:
            yield values
        finally:
            TerminalHost(socket_name=values["OMNIGENT_AGY_TMUX_SOCKET"]).kill_server()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


class Printer:
    """Renders a turn's events the way a chat window would, on a terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.mode: str | None = None

    def _switch(self, mode: str | None, label: str = "") -> None:
        if mode != self.mode:
            if self.mode is not None:
                self.out.write("\n")
            if label:
                self.out.write(label)
            self.mode = mode

    def event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "response.reasoning_text.delta":
            self._switch("thinking", "  (thinking) ")
            self.out.write(str(event.get("delta", "")))
        elif kind == "response.output_text.delta":
            self._switch("text", "  agy: ")
            self.out.write(str(event.get("delta", "")))
        elif kind == "response.output_item.done":
            self._item(event["item"])
        elif kind == "response.elicitation_request":
            self._switch(None)
            params = event["params"]
            self.out.write(f"  [card] {params.get('message', '')}\n")
            if params.get("content_preview"):
                self.out.write(f"         {textwrap.shorten(params['content_preview'], 110)}\n")
        elif kind in ("response.completed", "response.cancelled", "response.failed"):
            self._switch(None)
            self._end(kind, event)
        self.out.flush()

    def _item(self, item: Mapping[str, Any]) -> None:
        if item.get("type") == "function_call" and item.get("status") == "completed":
            self._switch(None)
            self.out.write(f"  [tool] {item.get('name')} {item.get('arguments', '')[:100]}\n")
        elif item.get("type") == "function_call_output":
            self._switch(None)
            output = textwrap.shorten(str(item.get("output", "")), 100)
            self.out.write(f"  [tool output] {output}\n")

    def _end(self, kind: str, event: Mapping[str, Any]) -> None:
        response = event.get("response") or {}
        usage = response.get("usage") or {}
        if kind == "response.completed":
            tokens = f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out"
            self.out.write(f"  -- done ({tokens} tokens)\n")
        elif kind == "response.cancelled":
            self.out.write("  -- stopped\n")
        else:
            error = response.get("error") or {}
            self.out.write(f"  -- failed: {error.get('code')}: {error.get('message')}\n")


def play(server: HarnessServer, step: Step, out: TextIO) -> str:
    out.write(f"\n== {step.title}\n  you: {step.text}\n")
    printer = Printer(out)
    turn: Turn = server.turn(step.text)
    first_text: float | None = None
    stopped = False
    while True:
        try:
            event = turn.next(timeout=0.2)
        except TimeoutError:
            event = {}
        if event is None:
            return turn.kinds()[-1] if turn.events else "no events"
        if event:
            printer.event(event)
        if event.get("type") == "response.output_text.delta" and first_text is None:
            first_text = time.monotonic()
        if event.get("type") == "response.elicitation_request" and step.answer is not None:
            out.write(f"  [you press] {server.press(event, step.answer)}\n")
        due = first_text is not None and step.stop_after is not None
        if due and not stopped and time.monotonic() - (first_text or 0) > (step.stop_after or 0):
            printer._switch(None)
            out.write("  [you press] Stop\n")
            server.post({"type": "interrupt"})
            stopped = True


def main(argv: list[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="omnigent-agy demo", description=__doc__)
    parser.add_argument("--simulator", action="store_true", help="use agy-sim even if agy exists")
    args = parser.parse_args(argv)
    if args.simulator:
        agy, described = str(Path(sys.executable).with_name("agy-sim")), "the bundled simulator"
    else:
        agy, described = pick_agy(os.environ)
    simulator = "agy-sim" in Path(agy).name
    out.write(f"omnigent-agy demo with {described}\n")
    endings: list[str] = []
    with demo_environment(agy, simulator=simulator) as env:
        conversation = f"conv_demo_{uuid.uuid4().hex[:8]}"
        out.write(
            f"agy runs in tmux: watch it with `tmux -L {env['OMNIGENT_AGY_TMUX_SOCKET']} attach`\n"
            "starting agy (it takes a few seconds, as a real agy does)...\n"
        )
        out.flush()
        with HarnessServer(create_app(), conversation) as server:
            endings.extend(play(server, step, out) for step in SCRIPT)
    expected = ["response.completed"] * (len(SCRIPT) - 1) + ["response.cancelled"]
    ok = endings == expected
    out.write(
        "\n" + ("demo finished: every turn ended as expected\n" if ok else f"demo: {endings}\n")
    )
    return 0 if ok else 1
