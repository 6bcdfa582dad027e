"""The plugin beside what people choose instead: one drive, three harnesses, one stack.

Run: `.venv/bin/python benchmarks/compare.py [--quick] [--write docs/comparison.md]`.
Starts omnigent's real server and host on loopback (agy_sim.stack.LocalStack) with agy-sim
as agy for every route and agy listed as an ACP agent (`acp_agents`), then drives the same
scenarios through the web UI's REST calls in a conversation of each harness:

- **this plugin** (harness `agy-cli`, agent "Antigravity-CLI");
- **omnigent's built-in** (harness `antigravity-native`, agent `antigravity-native-ui`);
- **omnigent's generic ACP harness with `agy acp`** (harness `acp:antigravity`).

Each cell is what a person saw: works, fails (what was seen), impossible (the line of
omnigent that rules it out), or taken from the e2e suite / the code where the drive does not
reach (marked so). Every conversation starts with a hello turn (agy's start; the built-in
binds its reader to agy's conversation at its next look, so its first answer arrives whole).

Figures of the same run: send → first delta and → turn end (a plain answer), Stop → last
delta, CPU seconds per turn and memory (RSS, USS) of every process the conversation runs
(benchmarks/compare_processes.py), with one conversation and with 8 (`--quick`: 2) at once;
each with its ratio to the plugin's. Asserts nothing about time; a peer's misbehaviour is a
cell, only the drive itself breaking fails the run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO, load_average
from compare_browser import AGYS_SCREEN, WebPages
from compare_drive import (
    DRIVE_FAILURES,
    Cell,
    Scenario,
    Timing,
    allow_conversation,
    approve,
    deny,
    effort_per_turn,
    failure_cell,
    model_per_turn,
    multi_question,
    play,
    settle,
    single_question,
    stop_mid_answer,
    stop_on_card,
    streamed,
    subagent_rows,
    tool_rows,
    usage_and_meter,
    write_in,
)
from compare_faults import host_restarted_with_card, idle_resume, kill_mid_turn
from compare_processes import Usage, describe, measure, new_processes, snapshot
from compare_report import HARNESSES, Harness, render
from stack import TURN_ENDS, Conversation

from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import AGY_ACP_AGENT, TEST_SIMULATOR, LocalStack
from agy_sim.stack.processes import BIN
from agy_sim.stack.rest import RestError
from omnigent_agy.config.settings import ENV_MAX_KEPT

#: The conversations of the full drive: scenarios that share one conversation.
FULL: tuple[tuple[tuple[str, Scenario], ...], ...] = (
    (
        ("streamed answer and thinking", streamed),
        ("usage and the context meter", usage_and_meter),
        ("model per turn", model_per_turn),
        ("effort per turn", effort_per_turn),
    ),
    (
        ("tool rows", tool_rows),
        ("approve", approve),
        ("deny, and the turn goes on", deny),
        ("allow for this conversation", allow_conversation),
        ("sub-agent rows", subagent_rows),
    ),
    (
        ("single-select question", single_question),
        ("multi-select question", multi_question),
        ("write-in answer", write_in),
    ),
    (
        ("Stop mid-answer", stop_mid_answer),
        ("Stop on a waiting card", stop_on_card),
    ),
    (
        ("resume after agy was stopped idle", idle_resume),
        ("harness process killed mid-turn", kill_mid_turn),
    ),
)
QUICK = (
    (
        ("streamed answer and thinking", streamed),
        ("approve", approve),
        ("Stop mid-answer", stop_mid_answer),
    ),
)


@dataclass
class Result:
    harness: Harness
    cells: dict[str, Cell] = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)
    one: Usage | None = None  # one conversation, after its turns
    one_cpu_per_turn: float = 0.0
    one_kinds: str = ""
    many: Usage | None = None
    many_cpu_per_turn: float = 0.0
    many_turn_s: list[float] = field(default_factory=list)
    many_count: int = 0
    notes: list[str] = field(default_factory=list)


def greet(conversation: Conversation, text: str = "hello") -> str:
    """The first turn (agy's start); how it ended."""
    try:
        conversation.send(text)
        ending = str(conversation.turn_end(timeout=180)["type"])
    except TimeoutError as exc:
        ending = f"no end ({exc})"[:160]
    settle(conversation)
    # The built-in binds its reader to agy's conversation at its next look, every 3 s
    # (omnigent/harnesses/antigravity_native/reader.py:133): give every harness that long.
    time.sleep(3.5)
    return ending


def drive_group(
    stack: LocalStack,
    result: Result,
    group: tuple[tuple[str, Scenario], ...],
    *,
    measure_one: bool,
    turns: int,
    web: WebPages | None = None,
) -> None:
    """Play `group` on one new conversation of the harness; `web`: then read agy's screen
    off the conversation's page (compare_browser.py)."""
    before = snapshot(stack)
    with Conversation(stack, agent=result.harness.agent()) as conversation:
        ending = greet(conversation)
        if ending != "response.completed":
            result.notes.append(f"a first turn ended with {ending}")
        processes = new_processes(stack, before)
        conversation.before = before  # type: ignore[attr-defined]  # for compare_faults.py
        for name, scenario in group:
            print(f"  {result.harness.key}: {name}", file=sys.stderr, flush=True)
            start = measure(processes) if measure_one and name.startswith("streamed") else None
            result.cells[name] = play(scenario, conversation, result.timing)
            if start is not None:
                for _ in range(turns - 1):  # more plain turns for the figures
                    play(streamed, conversation, result.timing)
                end = measure(processes)
                result.one_cpu_per_turn = max(0.0, end.cpu_s - start.cpu_s) / turns
                result.one, result.one_kinds = end, describe(end)
        if web is not None:
            print(f"  {result.harness.key}: {AGYS_SCREEN}", file=sys.stderr, flush=True)
            result.cells[AGYS_SCREEN] = web.terminal_row(conversation, result.harness.key)


def at_once(stack: LocalStack, result: Result, count: int) -> None:
    """`count` new conversations, greeted one by one, then a plain turn in all at once."""
    before = snapshot(stack)
    conversations = [Conversation(stack, agent=result.harness.agent()) for _ in range(count)]
    for conversation in conversations:
        conversation.__enter__()
    try:
        for conversation in conversations:
            greet(conversation)
        processes = new_processes(stack, before)
        start = measure(processes)
        ended: list[float] = []

        def turn(conversation: Conversation, tag: int) -> None:
            sent = time.monotonic()
            try:
                conversation.send(f"hello [c{tag:02d}]")
                if conversation.turn_end(timeout=180)["type"] in TURN_ENDS:
                    ended.append(time.monotonic() - sent)
            except (TimeoutError, RestError) as exc:
                result.notes.append(f"{count} at once: a turn did not end: {exc}"[:200])

        threads = [
            threading.Thread(target=turn, args=(c, n), daemon=True)
            for n, c in enumerate(conversations)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(200)
        end = measure(processes)
        result.many, result.many_count, result.many_turn_s = end, count, ended
        result.many_cpu_per_turn = max(0.0, end.cpu_s - start.cpu_s) / count
    finally:
        for conversation in conversations:
            conversation.__exit__()


HOST_RESTART = "host restarted with a card waiting"


def host_restart(stack: LocalStack, result: Result) -> Cell:
    """The host-restart row (benchmarks/compare_faults.py), a failing drive as its cell."""
    try:
        return host_restarted_with_card(stack, result.harness.agent(), result.harness.key)
    except DRIVE_FAILURES as exc:
        return failure_cell(exc)


def picker(stack: LocalStack, result: Result) -> Cell:
    harness = result.harness
    listed = [h for h in stack.client.harnesses() if h.get("id") == harness.harness_id]
    names = {a.get("name") for a in stack.client.agents()}
    agent = harness.agent()
    shown = f"agent {agent!r}" if agent in names else f"no agent named {agent!r}"
    if not listed:
        # omnigent's native coding agents are agents, not Harnesses rows
        # (omnigent/harness_plugins.py:1233, `harness_labels`).
        status = "works" if agent in names else "fails"
        return Cell(status, f"not a row of GET /v1/harnesses; {shown}")
    mode = (listed[0].get("capabilities") or {}).get("integration_mode")
    return Cell("works", f"Harnesses: {listed[0].get('label')!r} ({mode}); {shown}")


def stop_plugins_agys(stack: LocalStack) -> None:
    """`omnigent-agy stop --all`: the plugin's idle agys of the scenarios go before the
    figures at N conversations (the peers' stay: nothing stops theirs)."""
    subprocess.run(
        [str(BIN / "omnigent-agy"), "stop", "--all"],
        env=stack.main.env,
        capture_output=True,
        timeout=300,
        check=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one conversation, 2 at once")
    parser.add_argument("--write", type=Path, help="write the Markdown report there")
    args = parser.parse_args()
    groups, count, turns = (QUICK, 2, 1) if args.quick else (FULL, 8, 3)
    results = [Result(h) for h in HARNESSES]
    started = datetime.datetime.now(datetime.UTC)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="compare-") as name:
        root = Path(name)
        flags = {**TEST_SIMULATOR, "AGY_SIM_LONG_TOKEN_DELAY": "0.05"}
        flags.pop("AGY_SIM_DEBUG_RPC", None)
        agy = write_simulator(root / "bin", flags)
        (root / "stack" / "workspace").mkdir(parents=True)
        (root / "stack" / "workspace" / "README.md").write_text("# a project\n")
        env = {**os.environ, "TMUX_TMPDIR": str(root / "tmux")}
        Path(env["TMUX_TMPDIR"]).mkdir()
        with LocalStack(
            root / "stack",
            agy,
            base_env=env,
            acp_agents=[AGY_ACP_AGENT],
            progress=lambda m: print(m, file=sys.stderr),
            # Keep every agy of the plugin (its default keeps the 5 most recently used); given
            # before the host starts: a config rewritten under a starting host can be read
            # half-written, and its runners then know no `agy-cli` (seen under load).
            host_env={ENV_MAX_KEPT: "0"},
        ) as stack:
            stack.wait_ready(stack.main)
            for result in results:
                result.cells["where it sits in the web picker"] = picker(stack, result)
            with WebPages(stack) as web:
                for n, group in enumerate(groups):
                    for result in results:
                        first = n == 0
                        drive_group(
                            stack,
                            result,
                            group,
                            measure_one=first,
                            turns=turns,
                            web=web if first else None,
                        )
            if not args.quick:  # two minutes or more per harness: omnigent's grace period
                for result in results:
                    print(f"  {result.harness.key}: host restart", file=sys.stderr, flush=True)
                    result.cells[HOST_RESTART] = host_restart(stack, result)
            stop_plugins_agys(stack)
            for result in results:
                print(f"  {result.harness.key}: {count} at once", file=sys.stderr, flush=True)
                at_once(stack, result, count)
    report = render(
        results,
        quick=args.quick,
        started=started,
        machine=f"{platform.node()}, {os.cpu_count()} cores, {platform.platform()}",
        load=(load_before, load_average()),
        took=(datetime.datetime.now(datetime.UTC) - started).total_seconds(),
        median=statistics.median,
    )
    print(report)
    if args.write:
        target = args.write if args.write.is_absolute() else REPO / args.write
        target.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
