"""The simulator's deterministic "model": the scripts a turn runs.

Each scenario is a short script over ``turn_api.TurnApi`` (implemented by ``turn.ScriptedRun``),
which turns the script's intentions (say this, call that tool, ask this) into agy-shaped
steps. Which script a turn runs is chosen by its text (``triggers``).

Nothing here runs a real command: ``canned_output`` prints a fixed, harmless answer for
the command agy "ran", so approving a gate in the simulator is always safe.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agy_sim.turn_api import (
    CommandOutput,
    Question,
    QuestionOutcome,
    TurnApi,
)
from agy_sim.workspace import touch


def _tool_args(main: dict[str, Any], action: str, summary: str) -> dict[str, Any]:
    return {**main, "toolAction": action, "toolSummary": summary}


def canned_output(command: str, workspace: Path) -> str:
    """A deterministic stand-in for running ``command``; only ``touch`` is really run
    (``workspace.touch``: where agy's writes land, docs/wire.md §9)."""
    outputs = []
    for part in (p.strip() for p in re.split(r"&&|;", command)):
        if part.startswith("sleep "):
            continue
        if part.startswith("echo "):
            outputs.append(part[5:].strip().strip("'\"") + "\n")
        elif part.startswith("touch "):
            outputs.append(touch(part[6:], workspace))
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


def long_answer_parts(text: str, count: int) -> list[str]:
    """The parts of the long answer; a ``[tag]`` in the turn's text is in every part, so an
    answer shows which conversation asked for it (benchmarks/bench_scale.py)."""
    tag = re.search(r"\[([\w.-]+)\]", text)
    about = f" for {tag.group(1)}" if tag else ""
    return [f"Part {n} of a long simulated answer{about}. " for n in range(1, count + 1)]


async def long_answer(turn: TurnApi) -> None:
    chunks = long_answer_parts(turn.text, turn.knobs.long_answer_chunks)
    await turn.say(
        "".join(chunks),
        thinking="**Planning a long answer**",
        chunks=chunks,
        interval=turn.knobs.long_token_interval,
    )


def _command_from(text: str, default: str) -> str:
    """`run: <cmd>`, else the first command in backticks after the word run ("Run the shell
    command `echo hi`…", as omnigent-agy probe asks), else `default`."""
    match = re.search(r"run:\s*(.+)", text, flags=re.IGNORECASE | re.DOTALL)
    if match:
        return match.group(1).strip()
    quoted = re.search(r"\brun\b[^`]*`([^`]+)`", text, flags=re.IGNORECASE)
    return quoted.group(1).strip() if quoted else default


async def _command(
    turn: TurnApi,
    command: str,
    *,
    runtime: float = 0.0,
    output: CommandOutput | None = None,
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
        workspace = turn.workspace
        output = lambda: canned_output(command, workspace)  # noqa: E731 - run once allowed
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
        # Denying one command must not end the turn (docs/decisions.md §1): agy replies.
        await turn.say(
            f"Understood, I did not run `{command}`. Tell me if you want me to try something else."
        )


async def long_answer_then_command(turn: TurnApi) -> None:
    """The long answer, then a gated command (``then run: <cmd>``) and its output."""
    await long_answer(turn)
    await approval_command(turn)


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
    the step whole (docs/wire.md §4), so the last frames carry about N characters each."""
    text = large_text(large_size(turn.text))
    step = -(-len(text) // _LARGE_PARTS)
    chunks = [text[i : i + step] for i in range(0, len(text), step)]
    await turn.say(text, thinking="**Writing a large answer**", chunks=chunks)


async def large_output(turn: TurnApi) -> None:
    """A gated command printing N characters (`combinedOutput.full`, docs/wire.md §5)."""
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


# "use a sub-agent to run: npm test", "have a sub-agent ask me a question": what follows the
# word is the sub-agent's own task (a command it runs, a question it asks, in its cascade).
DELEGATED = re.compile(r"sub-?agent\b\W*(?:to\s+|that\s+)?(?P<task>(?:run|ask)\b.*)", re.I | re.S)


async def subagent(turn: TurnApi) -> None:
    role, task = "Workspace Surveyor", "Survey the workspace and report what is there."
    delegated = DELEGATED.search(turn.text)
    if delegated:
        role, task = "Researcher", delegated["task"].strip()
    call = await turn.call_tool(
        "invoke_subagent",
        _tool_args(
            {"Subagents": [{"prompt": task, "role": role, "typeName": "general"}]},
            "Starting a sub-agent",
            "Start 1 subagent",
        ),
        thinking="**Delegating**\n\nA sub-agent can survey the workspace.",
    )
    report = await turn.invoke_subagent(call, role=role, task=task, delegate=bool(delegated))
    # As agy, the parent's next model call thinks before it writes its reply.
    await turn.say(
        f"The sub-agent reported: {report}",
        thinking="**Reading the report**\n\nThe sub-agent has finished; its report is in.",
    )


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


MCP_CALL = re.compile(r"\buse\s+([\w.-]+)/([\w.-]+)\s*(\{.*\})?", re.IGNORECASE | re.DOTALL)


async def mcp_tool(turn: TurnApi) -> None:
    """`use SERVER/TOOL {json args}`: call a tool of an MCP server from mcp_config.json."""
    match = MCP_CALL.search(turn.text)
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


async def recall(turn: TurnApi) -> None:
    """The person's earlier messages of this conversation, as agy's history has them."""
    earlier = turn.earlier_messages
    said = "\n".join(f"- {text}" for text in earlier)
    await turn.say(f"Earlier you said:\n{said}" if earlier else "You said nothing before this.")


async def compact_context(turn: TurnApi) -> None:
    """agy compacts its context, as it does when the window fills: a summary of the
    conversation so far replaces it, and agy's estimate of the context in use drops."""
    turn.compact()
    await turn.say("I compacted our conversation: what came before is now a short summary.")
