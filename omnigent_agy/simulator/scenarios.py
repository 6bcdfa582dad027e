"""The simulator's deterministic "model": what a turn does is chosen by the user's text.

Each scenario is a short script over ``TurnApi`` (implemented by ``turn.Turn``), which
turns the script's intentions (say this, call that tool, ask this) into agy-shaped steps.
Triggers are matched case-insensitively against the turn's text, first match wins; the
table ``TRIGGERS`` is the documentation's source (docs/simulator.md lists it).

Nothing here runs a real command: ``canned_output`` prints a fixed, harmless answer for
the command agy "ran", so approving a gate in the simulator is always safe.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from omnigent_agy.simulator.steps_factory import ToolCall


@dataclass(frozen=True, slots=True)
class ScenarioKnobs:
    """Pacing of the scripted model (EngineSettings carries the values)."""

    long_answer_chunks: int = 120
    long_token_interval: float = 0.1
    slow_command_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    options: tuple[str, ...]
    multi: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "question": self.text,
            "options": [{"id": str(n), "text": t} for n, t in enumerate(self.options, 1)],
        }
        if self.multi:
            wire["isMultiSelect"] = True
        return wire

    def to_arguments(self) -> dict[str, Any]:
        # The model-side tool arguments name options by text (recorded argumentsJson).
        return {"is_multi_select": self.multi, "options": list(self.options), "question": self.text}


@dataclass(frozen=True, slots=True)
class Answer:
    """One delivered answer, with the chosen option ids resolved to their texts."""

    question: str
    selected: tuple[str, ...] = ()
    write_in: str = ""
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    answers: tuple[Answer, ...]
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    allowed: bool
    output: str = ""
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class McpOutcome:
    allowed: bool
    text: str
    error: bool = False


class TurnApi(Protocol):
    """What a scenario may do; every call becomes one or more steps."""

    @property
    def text(self) -> str: ...
    @property
    def model_display_name(self) -> str: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def knobs(self) -> ScenarioKnobs: ...
    @property
    def rules(self) -> str: ...

    async def say(
        self,
        text: str,
        *,
        thinking: str = "",
        chunks: Sequence[str] | None = None,
        interval: float | None = None,
    ) -> None: ...
    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, thinking: str = ""
    ) -> ToolCall: ...
    async def run_command(
        self, call: ToolCall, command: str, *, output: str, runtime: float = 0.0
    ) -> CommandOutcome: ...
    async def ask(self, call: ToolCall, questions: Sequence[Question]) -> QuestionOutcome: ...
    async def view_file(self, call: ToolCall, path: Path) -> None: ...
    async def list_directory(self, call: ToolCall, path: Path) -> None: ...
    async def invoke_subagent(self, call: ToolCall, *, role: str, task: str) -> str: ...
    async def model_error(self, user_message: str, short_error: str) -> None: ...
    async def mcp_tool(
        self, call: ToolCall, server: str, tool: str, arguments: dict[str, Any]
    ) -> McpOutcome: ...


Script = Callable[[TurnApi], Awaitable[None]]


def _tool_args(main: dict[str, Any], action: str, summary: str) -> dict[str, Any]:
    return {**main, "toolAction": action, "toolSummary": summary}


def canned_output(command: str, workspace: Path) -> str:
    """A deterministic stand-in for running ``command``; nothing is executed."""
    outputs = []
    for part in (p.strip() for p in re.split(r"&&|;", command)):
        if part.startswith("sleep "):
            continue
        if part.startswith("echo "):
            outputs.append(part[5:].strip().strip("'\"") + "\n")
        elif part == "pwd":
            outputs.append(f"{workspace}\n")
        elif part.startswith("git status"):
            outputs.append("On branch main\nnothing to commit, working tree clean\n")
        elif part.startswith("git log"):
            outputs.append("5be046c0 Initial commit\n")
        elif part.startswith("pytest"):
            outputs.append("...\n3 passed in 0.01s\n")
        else:
            outputs.append(f"(agy-sim) simulated output of: {part}\n")
    return "".join(outputs)


async def plain_answer(turn: TurnApi) -> None:
    await turn.say(
        f"Hello from the agy simulator ({turn.model_display_name}). You said: {turn.text}",
        thinking=f"**Reading the request**\n\nThe user wrote: {turn.text!r}. "
        "A short, friendly answer fits.",
    )


async def long_answer(turn: TurnApi) -> None:
    count = turn.knobs.long_answer_chunks
    chunks = [f"Part {n} of a long simulated answer. " for n in range(1, count + 1)]
    await turn.say(
        "".join(chunks),
        thinking="**Planning a long answer**",
        chunks=chunks,
        interval=turn.knobs.long_token_interval,
    )


def _command_from(text: str, default: str) -> str:
    match = re.search(r"run:\s*(.+)", text, flags=re.IGNORECASE | re.DOTALL)
    return match.group(1).strip() if match else default


async def _command(
    turn: TurnApi,
    command: str,
    *,
    runtime: float = 0.0,
    output: str | None = None,
    quote: bool = True,
) -> None:
    call = await turn.call_tool(
        "run_command",
        _tool_args(
            {
                "CommandLine": command,
                "Cwd": str(turn.workspace),
                "WaitMsBeforeAsync": 2000,
            },
            f"Running {command}",
            "Run command",
        ),
        thinking=f"**Running a command**\n\nI will run `{command}`.",
    )
    if output is None:
        output = canned_output(command, turn.workspace)
    outcome = await turn.run_command(call, command, output=output, runtime=runtime)
    if outcome.allowed and not quote:
        await turn.say(
            f"`{command}` finished with exit code {outcome.exit_code}"
            f" and printed {len(outcome.output)} characters."
        )
    elif outcome.allowed:
        await turn.say(
            f"`{command}` finished with exit code {outcome.exit_code}:\n\n```\n{outcome.output}```"
        )
    else:
        # Denying one command must not end the turn (DESIGN-NOTES §1): agy replies.
        await turn.say(
            f"Understood, I did not run `{command}`. Tell me if you want me to try something else."
        )


async def approval_command(turn: TurnApi) -> None:
    await _command(turn, _command_from(turn.text, "pytest -q"))


async def chained_command(turn: TurnApi) -> None:
    await _command(turn, _command_from(turn.text, "git status && git log -n 1 --oneline"))


async def slow_command(turn: TurnApi) -> None:
    await _command(turn, "sleep 30; echo done", runtime=turn.knobs.slow_command_seconds)


# --- large text: a turn's answer, a command's output or a question's option of N characters ---

LARGE_DEFAULT = 1024 * 1024
_LARGE_PARTS = 64


def large_size(text: str) -> int:
    """N of "… N characters" in the turn's text, else 1 MiB."""
    match = re.search(r"(\d+)\s*characters", text, flags=re.IGNORECASE)
    return int(match.group(1)) if match else LARGE_DEFAULT


def large_text(size: int) -> str:
    """`size` characters of numbered lines (each line says where it is, so a lost, repeated or
    reordered piece shows), ending in "end of the large text"."""
    tail = "end of the large text\n"
    lines: list[str] = []
    length = 0
    while length < size - len(tail):
        line = f"line {len(lines) + 1:07d} of the large text, at character {length}\n"
        lines.append(line)
        length += len(line)
    if size < len(tail):
        return tail[:size]
    return "".join(lines)[: size - len(tail)] + tail


async def large_answer(turn: TurnApi) -> None:
    """An answer of N characters streamed in 64 parts: as many growth frames, each re-sending
    the step whole (WIRE.md §4), so the last frames carry about N characters each."""
    text = large_text(large_size(turn.text))
    step = -(-len(text) // _LARGE_PARTS)
    chunks = [text[i : i + step] for i in range(0, len(text), step)]
    await turn.say(text, thinking="**Writing a large answer**", chunks=chunks)


async def large_output(turn: TurnApi) -> None:
    """A gated command printing N characters (`combinedOutput.full`, WIRE.md §5)."""
    size = large_size(turn.text)
    # The reply does not quote the output: agy-sim streams a reply word by word.
    await _command(turn, f"print-large-text {size}", output=large_text(size), quote=False)


async def large_question(turn: TurnApi) -> None:
    """A question whose first option is N characters long (one word: agy-sim's reply, which
    names the choice, then streams in one piece instead of word by word)."""
    option = large_text(large_size(turn.text)).replace(" ", "_").replace("\n", "|")
    await _questions(
        turn, [Question("Which text do you choose?", (option, "The short one"))], "Large option"
    )


def _describe(outcome: QuestionOutcome) -> str:
    if outcome.cancelled:
        return "You cancelled the question, so I will stop here."
    lines = []
    for answer in outcome.answers:
        if answer.skipped:
            choice = "(skipped)"
        elif answer.write_in:
            choice = f"“{answer.write_in}”"
        else:
            choice = ", ".join(answer.selected)
        lines.append(f"- {answer.question} → {choice}")
    return "Thanks! Your answers:\n" + "\n".join(lines)


async def _questions(turn: TurnApi, questions: Sequence[Question], summary: str) -> None:
    call = await turn.call_tool(
        "ask_question",
        _tool_args(
            {"questions": [q.to_arguments() for q in questions]}, "Asking the user", summary
        ),
        thinking="**Asking the user**\n\nI need a decision before going on.",
    )
    outcome = await turn.ask(call, questions)
    await turn.say(_describe(outcome))


async def single_question(turn: TurnApi) -> None:
    await _questions(
        turn,
        [Question("Which color should the button be?", ("Red", "Blue", "Green"))],
        "Color choice",
    )


async def multi_question(turn: TurnApi) -> None:
    checks = ("Lint", "Type check", "Unit tests", "Integration tests")
    await _questions(
        turn, [Question("Which checks should I run?", checks, multi=True)], "Checks to run"
    )


async def several_questions(turn: TurnApi) -> None:
    await _questions(
        turn,
        [
            Question("Which language should the tool use?", ("Python", "Go")),
            Question("Which test framework?", ("pytest", "unittest")),
            Question("Which extras do you want?", ("Docs", "CI workflow"), multi=True),
        ],
        "Project set-up",
    )


async def write_in_question(turn: TurnApi) -> None:
    await _questions(
        turn,
        [Question("What should the new module be called?", ("utils", "helpers"))],
        "Module name",
    )


def _pick_file(text: str, workspace: Path) -> Path:
    for token in re.findall(r"[\w./-]+\.\w+", text):
        candidate: Path = (workspace / str(token)).resolve()
        if candidate.is_file() and candidate.is_relative_to(workspace.resolve()):
            return candidate
    files: list[Path] = []
    if workspace.is_dir():
        files = sorted(p for p in workspace.iterdir() if p.is_file())
    return files[0] if files else workspace / "README.md"


async def view_file(turn: TurnApi) -> None:
    path = _pick_file(turn.text, turn.workspace)
    call = await turn.call_tool(
        "view_file",
        _tool_args({"AbsolutePath": str(path)}, f"Reading {path.name}", f"Read {path.name}"),
    )
    await turn.view_file(call, path)
    await turn.say(f"I read `{path.name}`.")


async def list_directory(turn: TurnApi) -> None:
    call = await turn.call_tool(
        "list_dir",
        _tool_args(
            {"DirectoryPath": str(turn.workspace)}, "Listing the workspace", "List workspace"
        ),
    )
    await turn.list_directory(call, turn.workspace)
    await turn.say("Those are the files in the workspace.")


async def model_error(turn: TurnApi) -> None:
    await turn.model_error(
        "Encountered retryable error from model provider: There was a network issue "
        "connecting to the server, please try again.",
        "doRequest: error sending request: simulated model provider failure (agy-sim)",
    )


async def subagent(turn: TurnApi) -> None:
    role, task = "Workspace Surveyor", "Survey the workspace and report what is there."
    call = await turn.call_tool(
        "invoke_subagent",
        _tool_args(
            {"Subagents": [{"prompt": task, "role": role, "typeName": "general"}]},
            "Starting a sub-agent",
            "Start 1 subagent",
        ),
        thinking="**Delegating**\n\nA sub-agent can survey the workspace.",
    )
    report = await turn.invoke_subagent(call, role=role, task=task)
    await turn.say(f"The sub-agent reported: {report}")


async def subagent_worker(turn: TurnApi) -> None:
    """What a child cascade does (never chosen by text)."""
    call = await turn.call_tool(
        "list_dir",
        _tool_args(
            {"DirectoryPath": str(turn.workspace)}, "Listing the workspace", "List workspace"
        ),
    )
    await turn.list_directory(call, turn.workspace)
    await turn.say("The workspace is listed; nothing else to report.")


async def steering_reply(turn: TurnApi) -> None:
    """The answer to a message delivered with MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION."""
    await turn.say(f"Noted your follow-up: {turn.text}")


_MCP_CALL = re.compile(r"\buse\s+([\w.-]+)/([\w.-]+)\s*(\{.*\})?", re.IGNORECASE | re.DOTALL)


async def mcp_tool(turn: TurnApi) -> None:
    """`use SERVER/TOOL {json args}`: call a tool of an MCP server from mcp_config.json."""
    match = _MCP_CALL.search(turn.text)
    assert match is not None
    server, tool, raw = match.groups()
    try:
        arguments = json.loads(raw) if raw else {}
    except ValueError:
        arguments = {}
    # How agy names an MCP tool in its planner's call is not recorded (a guess).
    call = await turn.call_tool(
        f"mcp_{server}_{tool}", arguments if isinstance(arguments, dict) else {}
    )
    outcome = await turn.mcp_tool(
        call, server, tool, arguments if isinstance(arguments, dict) else {}
    )
    if not outcome.allowed:
        await turn.say(f"Understood, I did not call {server}/{tool}.")
    elif outcome.error:
        await turn.say(f"{server}/{tool} failed: {outcome.text}")
    else:
        await turn.say(f"{server}/{tool} answered: {outcome.text}")


async def recite_rules(turn: TurnApi) -> None:
    """What the rules file of the gemini dir says (GEMINI.md, read at this turn)."""
    rules = turn.rules.strip()
    await turn.say(f"My rules say:\n{rules}" if rules else "I have no rules (no GEMINI.md).")


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str
    pattern: str  # a regular expression, matched case-insensitively anywhere in the text
    script: Script
    what: str


TRIGGERS: tuple[Trigger, ...] = (
    Trigger("mcp_tool", _MCP_CALL.pattern, mcp_tool, "an MCP_TOOL step calling a real MCP server"),
    Trigger("rules", r"\byour (rules|instructions)\b", recite_rules, "recites GEMINI.md"),
    Trigger("model_error", r"model error", model_error, "an ERROR_MESSAGE step; the turn ends"),
    Trigger("subagent", r"sub-?agent", subagent, "INVOKE_SUBAGENT + a child cascade"),
    Trigger(
        "slow_command",
        r"slow command",
        slow_command,
        "a gated command that stays RUNNING (for cancel)",
    ),
    Trigger("large_answer", r"\blarge answer\b", large_answer, "an answer of N characters"),
    Trigger(
        "large_output",
        r"\blarge output\b",
        large_output,
        "a gated command printing N characters",
    ),
    Trigger(
        "large_question",
        r"\blarge question\b",
        large_question,
        "a question with an option of N characters",
    ),
    Trigger(
        "chained_command",
        r"&&|\bchain",
        chained_command,
        "`a && b`: one permission gate per part, on the same step",
    ),
    Trigger(
        "approval_command",
        r"\brun\b",
        approval_command,
        "a gated run_command (`run: <cmd>` picks the command)",
    ),
    Trigger("write_in", r"write-?in", write_in_question, "a question meant for a write-in"),
    Trigger("several_questions", r"questions|survey", several_questions, "three questions"),
    Trigger("multi_question", r"multi", multi_question, "a multi-select question"),
    Trigger("single_question", r"question|ask me", single_question, "a single-select question"),
    Trigger("long_answer", r"\blong\b", long_answer, "a long answer streamed slowly"),
    Trigger("list_directory", r"\blist\b|\bls\b", list_directory, "a LIST_DIRECTORY step"),
    Trigger("view_file", r"\bread\b|\bview\b|\bcat\b", view_file, "a VIEW_FILE step"),
)
DEFAULT_SCRIPT: Script = plain_answer


def choose(text: str) -> tuple[str, Script]:
    """The scenario a turn's text selects: first matching trigger, else the plain answer."""
    for trigger in TRIGGERS:
        if re.search(trigger.pattern, text, flags=re.IGNORECASE):
            return trigger.name, trigger.script
    return "plain_answer", DEFAULT_SCRIPT
