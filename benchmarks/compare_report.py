"""benchmarks/compare.py's harnesses, what it cannot drive, and its Markdown report.

Paths of omnigent's source are under its package (``omnigent/``, version 0.19.1), as the
drive's venv has it. A driven cell that fails where a line of omnigent rules the scenario out
becomes "impossible" with that line; a cell the drive does not reach says where it comes
from: the e2e suite (the plugin) or the code (the peers).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agy_sim.stack.local_stack import AGY_ACP_HARNESS, agent_name


@dataclass(frozen=True)
class Harness:
    key: str
    title: str
    harness_id: str
    agent_name: str  # "" for the shipped agent (named by `omnigent-agy agent-path`)

    def agent(self) -> str:
        return self.agent_name or agent_name()


HARNESSES = (
    Harness("plugin", "this plugin (agy-cli)", "agy-cli", ""),
    Harness(
        "built-in", "built-in antigravity-native", "antigravity-native", "antigravity-native-ui"
    ),
    Harness("acp", "generic ACP + `agy acp`", AGY_ACP_HARNESS, AGY_ACP_HARNESS.split(":", 1)[1]),
)

#: Lines of omnigent that rule a driven scenario out for a peer: (row, harness) → why.
RULED_OUT = {
    ("Stop on a waiting card", "built-in"): "Stop is CancelCascadeSteps only "
    "(omnigent/inner/antigravity_native_executor.py:146), a no-op on a WAITING step (:158)",
    ("model per turn", "built-in"): "the model is fixed at launch "
    "(omnigent/runner/native/orchestration.py:6606); a turn's model and effort are "
    "informational (omnigent/inner/antigravity_native_executor.py:47)",
    ("effort per turn", "built-in"): "as the model: fixed at launch "
    "(omnigent/runner/native/orchestration.py:6606, antigravity_native_executor.py:47)",
    ("effort per turn", "acp"): "omnigent's ACP executor switches the model only "
    "(omnigent/inner/acp_executor.py:1645, `session/set_config_option` model); agy's "
    "`thought_level` option is never set",
    ("single-select question", "acp"): "agy's ACP path has no ask_question tool "
    "(docs/wire.md §10); omnigent's ACP bridge has cards for permissions only "
    "(omnigent/inner/acp_executor.py:1118)",
    ("multi-select question", "acp"): "as the single-select question",
    ("write-in answer", "acp"): "as the single-select question",
    ("sub-agent rows", "acp"): "a configured ACP agent gets no extension "
    "(omnigent/inner/acp_extension.py:75), so no sub-agent source "
    "(omnigent/inner/acp_executor.py:1537); agy's ACP path has no invoke_subagent "
    "(docs/wire.md §10)",
    ("agy's own screen in the Terminal view", "acp"): "`agy acp` draws no screen; the ACP "
    "client offers no terminal (`terminal: False`, omnigent/inner/acp_executor.py:831)",
}

#: Rows the drive does not reach: (row) → per harness (status, where from); a row the run
#: drove (`ROWS`) is shown from the run instead.
NOT_DRIVEN: dict[str, dict[str, tuple[str, str]]] = {
    "harness process killed mid-turn": {
        "plugin": (
            "works",
            "from tests/e2e/test_e2e_harness_kill.py: the turn fails, the "
            "next turn brings the conversation back",
        ),
        "built-in": ("not known", "not driven, not read"),
        "acp": (
            "works, history as text",
            "from the code: a fresh ACP session gets the earlier "
            "conversation replayed as text (omnigent/inner/acp_executor.py:1865)",
        ),
    },
    "host restarted with a card waiting": {
        "plugin": (
            "works",
            "from tests/e2e/test_e2e_hosts.py "
            "(test_a_host_restarted_while_a_card_waits_answers_it_or_fails_coded)",
        ),
        "built-in": ("not known", "not driven, not read"),
        "acp": (
            "not known",
            "not driven; `agy acp` is a child of the harness process, so it goes with it",
        ),
    },
    "resume after agy was stopped idle": {
        "plugin": (
            "works",
            "from tests/e2e/test_e2e_conversations.py (a conversation goes "
            "on after its agy is gone)",
        ),
        "built-in": (
            "from the code",
            "resume strategy WARM_REATTACH (omnigent/harness_plugins.py:446); not driven",
        ),
        "acp": (
            "history as text",
            "no session/load: the history is replayed as text into "
            "a new ACP session (omnigent/inner/acp_executor.py:1865)",
        ),
    },
    "attach to a 20,000-step conversation": {
        "plugin": ("measured", "from benchmarks/bench_attach.py (docs/performance.md)"),
        "built-in": (
            "measured in-process",
            "benchmarks/bench_attach.py reads with the built-in's reader too",
        ),
        "acp": (
            "not applicable",
            "no attach: history is replayed as text (omnigent/inner/acp_executor.py:1865)",
        ),
    },
}

ROWS = (
    "where it sits in the web picker",
    "streamed answer and thinking",
    "tool rows",
    "approve",
    "deny, and the turn goes on",
    "allow for this conversation",
    "sub-agent rows",
    "single-select question",
    "multi-select question",
    "write-in answer",
    "Stop mid-answer",
    "Stop on a waiting card",
    "model per turn",
    "effort per turn",
    "usage and the context meter",
    "resume after agy was stopped idle",
    "harness process killed mid-turn",
    "host restarted with a card waiting",
    "agy's own screen in the Terminal view",
)


def _cell(row: str, harness: str, cell: Any) -> str:
    why = RULED_OUT.get((row, harness))
    if why and cell.status == "fails":
        return f"**impossible**: {why} (seen: {cell.note})"
    status = f"**{cell.status}**"
    return f"{status}: {cell.note}" if cell.note else status


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


def _ratio(value: float | None, plugin: float | None) -> str:
    if value is None:
        return "-"
    if not plugin:
        return f"{value:.2f}"
    return f"{value:.2f} ({value / plugin:.2f}x)"


def render(
    results: Sequence[Any],
    *,
    quick: bool,
    started: datetime.datetime,
    machine: str,
    load: tuple[str, str],
    took: float,
    median: Callable[[Sequence[float]], float],
) -> str:
    head = [r.harness.title for r in results]
    out = [
        "# The plugin beside omnigent's built-in and the generic ACP harness",
        "",
        "Generated by `python benchmarks/compare.py --write docs/comparison.md`"
        + (" (**--quick**)" if quick else "")
        + f" on {started:%Y-%m-%d %H:%M} UTC; {machine}; {load[0]} before, {load[1]} after;"
        f" {took / 60:.0f} min. One omnigent server and host on loopback, agy-sim standing in"
        " for agy in every route. How to read it and regenerate it: docs/performance.md,"
        ' "Beside the other harnesses".',
        "",
        "## What a person gets",
        "",
        "Driven through the REST calls of omnigent's web UI, and agy's screen on the web page"
        " itself (headless Chromium), in that run:",
        "",
    ]
    rows = [
        [row, *(_cell(row, r.harness.key, r.cells[row]) for r in results)]
        for row in ROWS
        if all(row in r.cells for r in results)
    ]
    out += _table(["scenario", *head], rows)
    out += ["", "Not driven by the run (marked where each comes from):", ""]
    out += _table(
        ["scenario", *head],
        [
            [row, *(f"**{by[r.harness.key][0]}**: {by[r.harness.key][1]}" for r in results)]
            for row, by in NOT_DRIVEN.items()
            if not all(row in r.cells for r in results)  # (--quick drives fewer)
        ],
    )
    notes = [f"- {r.harness.title}: {n}" for r in results for n in r.notes]
    if notes:
        out += ["", "Seen along the way:", "", *notes]
    out += ["", "## Figures", "", *_figures(results, median)]
    return "\n".join(out) + "\n"


def _figures(results: Sequence[Any], median: Callable[[Sequence[float]], float]) -> list[str]:
    def med(values: Sequence[float]) -> float | None:
        return median(values) if values else None

    plugin = results[0]
    rows: list[list[str]] = []

    def row(name: str, get: Callable[[Any], float | None]) -> None:
        rows.append([name, *(_ratio(get(r), get(plugin)) for r in results)])

    row("send → first delta, ms", lambda r: med(r.timing.first_delta_ms))
    row("send → turn end, ms", lambda r: med(r.timing.turn_end_ms))
    row("Stop → last delta, ms", lambda r: med(r.timing.stop_last_delta_ms))
    row("CPU s per turn, one conversation", lambda r: r.one_cpu_per_turn if r.one else None)
    row("RSS MB, one conversation", lambda r: r.one.rss_mb if r.one else None)
    row("USS MB, one conversation", lambda r: r.one.uss_mb if r.one else None)
    count = max(r.many_count for r in results)
    row(f"turn s p50, {count} at once", lambda r: med(r.many_turn_s))
    row(f"CPU s per turn, {count} at once", lambda r: r.many_cpu_per_turn if r.many else None)
    row(
        f"RSS MB per conversation, {count} at once",
        lambda r: r.many.rss_mb / r.many_count if r.many else None,
    )
    row(
        f"USS MB per conversation, {count} at once",
        lambda r: r.many.uss_mb / r.many_count if r.many else None,
    )
    lines = [
        "Each figure with its ratio to the plugin's (x). Latencies are medians over the run's"
        " plain turns (each a short answer); CPU and memory are of every process that"
        " appeared for the conversation (psutil; benchmarks/compare_processes.py) plus the"
        " tmux server its agy runs in, so agy-sim's own share is in every column.",
        "",
        *_table(["figure", *[r.harness.title for r in results]], rows),
        "",
        "What was counted for one conversation:",
        "",
    ]
    lines += [f"- {r.harness.title}: {r.one_kinds or 'nothing measured'}" for r in results]
    return lines
