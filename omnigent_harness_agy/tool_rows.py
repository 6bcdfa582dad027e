"""agy's tool calls as rows of omnigent's web UI (pure; docs/in-omnigent.md, "Tool rows").

omnigent's web titles a tool row by the tool's name and the arguments it knows for that name
(0.19's web bundle: ``sys_os_shell`` with ``command`` reads as the command itself,
``sys_os_read`` / ``sys_os_edit`` with ``path`` as "Read <path>" / "Edit <path>", ``Grep`` and
``Glob`` with ``pattern`` as "Search: …" / "Find files: …"), and sums a turn's calls up by the
same names ("Ran 2 shell commands, read 1 file, listed 1 directory"; ``list`` is a listing).
Any other name is shown as ``name({json})``: ``run_command({"command_line": …})``.

So each of agy's own tools is shown under the name of omnigent's tool that does the same
thing, its arguments under the keys that tool takes, and agy's own name kept beside them as
``agy_tool``; no argument the plugin read from agy's step is dropped (only renamed where
omnigent's tool calls it otherwise: ``command_line`` → ``command``, ``query`` → ``pattern``).
The output is the same text either way. agy's ``invoke_subagent`` is shown as ``Task``, which
omnigent's web titles "Sub-agent: <description>", the description being each sub-agent's role
and task. An MCP call keeps its ``server/tool`` name, which reads as well as omnigent's own MCP
rows (``mcp__server__tool(…)``); a tool the plugin has no counterpart for keeps agy's name.

omnigent's policies do not read rows: an internally run tool's call is only shown
(``internally_executed``), and what a permission is evaluated as is the prompts' (a command as
``sys_os_shell``, docs/decisions.md §14).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["AGY_TOOL_KEY", "ROWS", "SHELL_TOOL", "SUBAGENT_TOOL", "Row", "row"]

#: omnigent's own shell tool: the name its built-in shell policies gate (``SHELL_TOOLS`` in
#: omnigent's policies/builtins/_shell.py, and the name its docs' CEL examples match), which
#: agy's commands are shown and evaluated as (docs/decisions.md §14).
SHELL_TOOL: Final = "sys_os_shell"

#: The argument that keeps agy's own name for a call shown under omnigent's.
AGY_TOOL_KEY: Final = "agy_tool"

#: The tool omnigent's web titles "Sub-agent: <description>" ("Run sub-agent" without one).
SUBAGENT_TOOL: Final = "Task"


@dataclass(frozen=True, slots=True)
class Row:
    """omnigent's name for one of agy's tools, and the arguments it calls otherwise."""

    name: str
    renamed: Mapping[str, str]
    needs: str | None = None  # an argument without which omnigent's title would be empty


ROWS: Final[Mapping[str, Row]] = {
    "run_command": Row(SHELL_TOOL, {"command_line": "command"}, needs="command"),
    "view_file": Row("sys_os_read", {}, needs="path"),
    "code_action": Row("sys_os_edit", {}, needs="path"),
    "list_directory": Row("list", {}),
    "grep_search": Row("Grep", {"query": "pattern"}, needs="pattern"),
    "find": Row("Glob", {}, needs="pattern"),
}


def row(name: str, arguments: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The name and arguments omnigent shows for agy's call `name(arguments)`."""
    args = dict(arguments or {})
    if name == "invoke_subagent":
        return _subagent_row(args)
    shown = ROWS.get(name)
    if shown is None:
        return name, args
    # A key is renamed only where that leaves no argument of agy's behind.
    renamed = {
        (key if shown.renamed.get(key, key) in args else shown.renamed.get(key, key)): value
        for key, value in args.items()
    }
    if shown.needs is not None and not renamed.get(shown.needs):
        return name, args  # omnigent's title would read as nothing: agy's own reads better
    return shown.name, {**renamed, AGY_TOOL_KEY: name}


def _subagent_row(args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The row reads "Sub-agent: Researcher — <its task>", a part per sub-agent the call starts:
    the role the "Started …" mark names it by (else its type), the task on one line."""
    parts = []
    for spec in args.get("subagents") or []:
        if not isinstance(spec, Mapping):
            continue
        who = _words(spec.get("role")) or _words(spec.get("typeName"))
        task = _words(spec.get("prompt")) or _words(spec.get("task"))
        parts.append(f"{who} — {task}" if who and task else who or task)
    description = "; ".join(part for part in parts if part)
    said = {"description": description} if description and "description" not in args else {}
    return SUBAGENT_TOOL, {**args, **said, AGY_TOOL_KEY: "invoke_subagent"}


def _words(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""
