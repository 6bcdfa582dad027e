"""What a scenario script may ask of its turn, and what comes back (``TurnApi``).

The contract between the scripted model (``scenarios``) and the step machinery that
implements it (``turn.ScriptedRun``, ``tool_runs``, ``answers``): every call becomes one or more
agy-shaped steps; a gated call returns the person's decision as an outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agy_sim.steps_factory import ToolCall


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


#: A command's output, or what makes it once the command is allowed (``touch`` really runs).
type CommandOutput = str | Callable[[], str]


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
    @property
    def earlier_messages(self) -> list[str]:
        """What the person said in this conversation before this turn, oldest first."""
        ...

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
        self, call: ToolCall, command: str, *, output: CommandOutput, runtime: float = 0.0
    ) -> CommandOutcome: ...
    async def ask(self, call: ToolCall, questions: Sequence[Question]) -> QuestionOutcome: ...
    async def view_file(self, call: ToolCall, path: Path) -> None: ...
    async def list_directory(self, call: ToolCall, path: Path) -> None: ...
    async def invoke_subagent(
        self, call: ToolCall, *, role: str, task: str, delegate: bool = False
    ) -> str:
        """Run a sub-agent in a child cascade; its report. `delegate`: it does `task` as a
        turn of its own would (gates in its own cascade), else it surveys the workspace."""
        ...

    async def model_error(self, user_message: str, short_error: str) -> None: ...
    async def mcp_tool(
        self, call: ToolCall, server: str, tool: str, arguments: dict[str, Any]
    ) -> McpOutcome: ...
    def compact(self) -> None:
        """agy compacts its context: a CHECKPOINT summarising the conversation so far, which
        later model calls read instead of what it summarises."""
        ...


Script = Callable[[TurnApi], Awaitable[None]]
