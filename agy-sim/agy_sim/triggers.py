"""Which scenario a turn runs: the first trigger whose pattern its text matches.

Triggers are matched case-insensitively anywhere in the turn's text, in the order of
``TRIGGERS``; none matching is the plain answer. The table is the documentation's source
(docs/simulator.md lists it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agy_sim.scenarios import (
    MCP_CALL,
    approval_command,
    chained_command,
    compact_context,
    large_answer,
    large_output,
    large_question,
    list_directory,
    long_answer,
    long_answer_then_command,
    mcp_tool,
    model_error,
    multi_question,
    plain_answer,
    recall,
    recite_rules,
    several_questions,
    single_question,
    slow_command,
    subagent,
    view_file,
    write_in_question,
)
from agy_sim.turn_api import Script


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str
    pattern: str  # a regular expression, matched case-insensitively anywhere in the text
    script: Script
    what: str


TRIGGERS: tuple[Trigger, ...] = (
    Trigger("mcp_tool", MCP_CALL.pattern, mcp_tool, "an MCP_TOOL step calling a real MCP server"),
    Trigger("rules", r"\byour (rules|instructions)\b", recite_rules, "recites GEMINI.md"),
    Trigger("recall", r"\bwhat did i (say|ask)\b", recall, "recites the earlier messages"),
    Trigger("model_error", r"model error", model_error, "an ERROR_MESSAGE step; the turn ends"),
    Trigger(
        "compact",
        r"\bcompact (the |your )?(context|conversation)\b",
        compact_context,
        "a compaction CHECKPOINT; the context estimate drops",
    ),
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
        "long_answer_then_command",
        r"\blong\b.*\bthen run:",
        long_answer_then_command,
        "the long answer, then a gated command (`then run: <cmd>`)",
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
        "a gated run_command (`run: <cmd>`, or a command in backticks after run, picks it)",
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
