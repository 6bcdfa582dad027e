"""agy's tool calls as omnigent's web titles them (tool_rows): names omnigent knows, arguments
under its keys, nothing agy sent dropped, agy's name kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omnigent.community.harness.agy.tool_rows import AGY_TOOL_KEY, ROWS, SUBAGENT_TOOL, row
from omnigent.policies.builtins._shell import SHELL_TOOLS

from omnigent_agy.reading.steps import StepType, describe_call

CODE_ACTION = Path(__file__).parents[2] / "fixtures" / "recorded_steps" / "code_action_done.json"


def _step(kind: str, payload_key: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, payload_key: payload}


@pytest.mark.parametrize(
    ("step", "kind", "name", "arguments"),
    [
        (
            _step(
                "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand", {"commandLine": "ls -la", "cwd": "/w"}
            ),
            StepType.RUN_COMMAND,
            "sys_os_shell",
            {"command": "ls -la", "cwd": "/w", AGY_TOOL_KEY: "run_command"},
        ),
        (
            _step(
                "CORTEX_STEP_TYPE_VIEW_FILE",
                "viewFile",
                {"absolutePathUri": "file:///w/a.py", "startLine": "2", "endLine": "9"},
            ),
            StepType.VIEW_FILE,
            "sys_os_read",
            {"path": "/w/a.py", "start_line": 2, "end_line": 9, AGY_TOOL_KEY: "view_file"},
        ),
        (
            _step(
                "CORTEX_STEP_TYPE_LIST_DIRECTORY",
                "listDirectory",
                {"directoryPathUri": "file:///w"},
            ),
            StepType.LIST_DIRECTORY,
            "list",
            {"path": "/w", AGY_TOOL_KEY: "list_directory"},
        ),
        (
            _step(
                "CORTEX_STEP_TYPE_GREP_SEARCH",
                "grepSearch",
                {"query": "TODO", "searchPathUri": "file:///w"},
            ),
            StepType.GREP_SEARCH,
            "Grep",
            {"pattern": "TODO", "path": "/w", AGY_TOOL_KEY: "grep_search"},
        ),
    ],
)
def test_agys_calls_take_the_names_and_keys_omnigents_web_titles(
    step: dict[str, Any], kind: str, name: str, arguments: dict[str, Any]
) -> None:
    call = describe_call(step, kind)
    assert row(call.name, call.arguments) == (name, arguments)


def test_an_edit_reads_as_omnigents_edit_of_its_file() -> None:
    call = describe_call(json.loads(CODE_ACTION.read_text()), StepType.CODE_ACTION)
    name, arguments = row(call.name, call.arguments)
    assert name == "sys_os_edit"
    assert arguments["path"] == "/home/user/project/src/app.py"
    assert arguments[AGY_TOOL_KEY] == "code_action"
    # Nothing agy's step gave the plugin is dropped.
    assert {k: v for k, v in arguments.items() if k != AGY_TOOL_KEY} == call.arguments


def test_nothing_is_dropped_and_only_the_keys_omnigent_calls_otherwise_are_renamed() -> None:
    for agy_name, shown in ROWS.items():
        sent = {"command_line": "x", "query": "q", "path": "/p", "pattern": "*", "extra": 1}
        _, arguments = row(agy_name, sent)
        assert arguments.pop(AGY_TOOL_KEY) == agy_name
        assert sorted(map(str, arguments.values())) == sorted(map(str, sent.values()))
        # `pattern` was there already: `query` keeps its name rather than replace it.
        assert set(arguments) == {
            key if shown.renamed.get(key, key) in sent else shown.renamed.get(key, key)
            for key in sent
        }


def test_a_command_row_is_a_shell_tool_of_omnigents() -> None:
    assert row("run_command", {"command_line": "git status"})[0] in SHELL_TOOLS


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("github/create_issue", {"title": "t"}),  # MCP: server/tool, as agy named it
        ("ask_question", {"questions": []}),
        ("some_new_tool", {"a": 1}),
        ("run_command", {}),  # nothing for omnigent's title: agy's own name reads better
        ("view_file", {"start_line": 1}),
    ],
)
def test_calls_without_a_counterpart_keep_agys_name_and_arguments(
    name: str, arguments: dict[str, Any]
) -> None:
    assert row(name, arguments) == (name, arguments)


def test_a_sub_agent_call_reads_as_omnigents_sub_agent_row_naming_its_role_and_task() -> None:
    """Not `invoke_subagent({"subagents": …})`: omnigent's web titles a `Task` call
    "Sub-agent: <description>", and the description names the sub-agent as its marks do."""
    spec = {"role": "Researcher", "typeName": "general", "prompt": "Find the bug.\n Then report."}
    step = _step("CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "invokeSubagent", {"subagents": [spec]})
    call = describe_call(step, StepType.INVOKE_SUBAGENT)
    name, arguments = row(call.name, call.arguments)
    assert name == SUBAGENT_TOOL == "Task"
    assert arguments == {
        "subagents": [spec],  # nothing agy sent is dropped
        "description": "Researcher — Find the bug. Then report.",
        AGY_TOOL_KEY: "invoke_subagent",
    }


@pytest.mark.parametrize(
    ("subagents", "description"),
    [
        ([{"typeName": "general", "prompt": "Look."}], "general — Look."),  # no role: its type
        ([{"role": "Researcher"}], "Researcher"),  # no task
        ([{"role": "A", "prompt": "x"}, {"role": "B", "prompt": "y"}], "A — x; B — y"),
        ([{}, "junk", 3], None),  # nothing to say: the web's own "Run sub-agent"
        ([], None),
    ],
)
def test_a_sub_agent_rows_description_says_what_agy_sent(
    subagents: list[Any], description: str | None
) -> None:
    name, arguments = row("invoke_subagent", {"subagents": subagents})
    assert name == SUBAGENT_TOOL
    assert arguments.get("description") == description
    assert arguments["subagents"] == subagents
