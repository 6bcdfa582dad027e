"""Many conversations at once on one host: what each costs, how fast its text arrives, and
that nothing is lost, duplicated or crossed between them.

Run: `.venv/bin/python benchmarks/bench_scale.py [--quick]` (`--quick`: 1 and 2
conversations, a faster answer). Starts omnigent's real server and host on loopback with
the plugin (agy_sim.stack.LocalStack, agy-sim as agy) and, for N = 1, 4, 8 and 16, opens N
new sessions as the web UI does, has each say hello in turn (its harness process and agy
start: omnigent's runner gives a new harness process 30 s to answer, which 8 harness processes
starting at once missed on the loaded 2-core machine; the host keeps every agy, `max_kept: 0`,
where its default would stop the idle ones beyond 5), then sends all N at once
"Give me a long answer [cNN], then run: echo done-cNN": agy-sim streams 120 parts naming
the conversation, then asks to run the command; the client answers each card "Allow once"
as the person would, and the turn ends. Then agys of that round are stopped.

Printed per N:

- **delivery**: turn time (send → `response.completed`, p50 and the slowest), and the delta
  latency from agy's frame to the event at the client: agy-sim logs the monotonic time each
  stream frame is handed to its server and the length of the answer in it
  (``--sim-frame-log``, agy_sim/frame_log.py); the client stamps each SSE event as it
  arrives (the same clock); a delta is matched to the first frame whose answer was as long.
  Checked for every conversation (a failure stops the run): the deltas add up to exactly
  that conversation's answer, every event and item names only its own conversation, the
  conversation has one answer item equal to it and one call of its own command.
- **where a delta's time goes**: each harness notes when it hands omnigent each answer chunk
  (`OMNIGENT_AGY_TIMING_LOG`, omnigent_harness_agy/timing.py, the same clock), which splits
  the latency into the plugin's part (agy's frame → handed: agy's TLS stream, decode, map,
  publish, translate) and omnigent's (handed → the client: its adapter, the harness's stream
  to the runner, the server, SSE, and this benchmark's one client process reading every
  stream, whose CPU seconds during the turns are printed beside it).
- **memory and CPU per conversation**: RSS and USS (what a process alone holds) of the
  plugin's own processes — the conversation's harness process, the relay MCP server its agy
  started, its share of the tmux server — and of agy (agy-sim) apart; CPU seconds each used
  during the measured turn (benchmarks/scale_processes.py tells them apart).

Asserts nothing about time. The machine's load average is printed with the tables: on a
shared machine latencies are mostly the scheduler's.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from common import load_average, options, percentile, table
from omnigent.community.harness.agy.timing import TIMING_LOG_ENV
from scale_check import Delta, check_conversation, frame_lines, handed_lines, latencies
from scale_processes import KINDS, Sample, find, sample

from agy_sim.scenarios import long_answer_parts
from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import TEST_SIMULATOR, LocalStack, agent_name
from agy_sim.stack.processes import BIN
from agy_sim.stack.rest import EventStream, OmnigentClient, RestError, choose
from omnigent_agy.config.settings import ENV_MAX_KEPT

TURN_TIMEOUT = 600.0
#: omnigent's server answers slowly with many turns at once on a loaded machine.
REST_TIMEOUT = 180.0
ENDS = ("response.completed", "response.failed", "response.cancelled", "session.interrupted")
PARTS = 120  # agy-sim's long answer (EngineSettings.long_answer_chunks)


def prompt(tag: str) -> str:
    return f"Give me a long answer [{tag}], then run: echo done-{tag}"


def expected_answer(tag: str) -> str:
    return "".join(long_answer_parts(prompt(tag), PARTS))


@dataclass
class TimedTurn:
    session: str
    tag: str
    events: EventStream
    sent_ns: int = 0
    ended_ns: int = 0
    first: int = 0  # the index in events.seen of the first event after the send
    ending: str = ""
    errors: list[str] = field(default_factory=list)


def play(stack: LocalStack, turn: TimedTurn, text: str) -> None:
    """One turn: send, answer every card "Allow once", until the turn ends."""
    turn.first = len(turn.events.seen) + len(turn.events.drain())
    turn.sent_ns = time.monotonic_ns()
    client = OmnigentClient(stack.url, timeout=REST_TIMEOUT)
    try:
        client.send(turn.session, text)
        while True:
            event = turn.events.next(TURN_TIMEOUT)
            kind = str(event.get("type"))
            if kind == "response.elicitation_request":
                content = choose(event["params"], ["Allow once"])
                client.resolve(turn.session, str(event["elicitation_id"]), content)
            elif kind in ENDS or kind == "stream.end":
                turn.ending = kind
                break
    except (TimeoutError, RestError, httpx.HTTPError) as exc:
        turn.errors.append(f"{turn.tag}: {type(exc).__name__}: {exc}")
    turn.ended_ns = time.monotonic_ns()


def all_at_once(stack: LocalStack, turns: Sequence[TimedTurn], texts: Sequence[str]) -> None:
    threads = [
        threading.Thread(target=play, args=(stack, turn, text), daemon=True)
        for turn, text in zip(turns, texts, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TURN_TIMEOUT + 30)
    failed = [f"{t.tag}: ended with {t.ending or 'nothing'}" for t in turns if t.ending != ENDS[0]]
    if failed or any(t.errors for t in turns):
        raise RuntimeError("; ".join([*failed, *(e for t in turns for e in t.errors)]))


def stop_agys(stack: LocalStack) -> None:
    """`omnigent-agy stop --all` in the host's environment: the next round starts afresh."""
    subprocess.run(
        [str(BIN / "omnigent-agy"), "stop", "--all"],
        env=stack.main.env,
        capture_output=True,
        timeout=300,
        check=True,
    )


@dataclass
class Round:
    count: int
    turn_s: list[float]
    deltas: list[Delta]
    before: Sample
    after: Sample
    client_cpu_s: float  # this benchmark's own process (the client) during the turns


def open_conversations(stack: LocalStack, count: int, first_tag: int) -> list[TimedTurn]:
    """`count` new sessions on the main host, tagged ``cNN`` from `first_tag`, each with its
    event stream open (the caller closes them), each greeted in turn: its harness process
    (and agy) starts one conversation at a time (see the module doc)."""
    host = stack.main
    assert host.host_id is not None
    tags = [f"c{first_tag + n:02d}" for n in range(count)]
    sessions = [
        stack.client.create_session(agent_name(), host.host_id, str(stack.workspace)) for _ in tags
    ]
    turns = [
        TimedTurn(s, t, stack.client.stream(s).__enter__())
        for s, t in zip(sessions, tags, strict=True)
    ]
    try:
        for turn in turns:
            all_at_once(stack, [turn], [f"Hello [{turn.tag}]"])
    except BaseException:
        for turn in turns:
            turn.events.close()
        raise
    return turns


def one_round(
    stack: LocalStack, count: int, first_tag: int, frame_log: Path, handed_log: Path
) -> Round:
    host = stack.main
    assert host.process is not None
    turns = open_conversations(stack, count, first_tag)
    sessions = [turn.session for turn in turns]
    try:
        conversations = find(host.process.pid, str(stack.root), sessions)
        before = sample(conversations)
        client_cpu = time.process_time()
        all_at_once(stack, turns, [prompt(turn.tag) for turn in turns])
        client_cpu = time.process_time() - client_cpu
        after = sample(conversations)
        frames, handed = frame_lines(frame_log), handed_lines(handed_log)
        measured: list[Delta] = []
        for turn, conversation in zip(turns, conversations, strict=True):
            events = turn.events.seen[turn.first :]
            arrivals = turn.events.seen_ns[turn.first :]
            answer = expected_answer(turn.tag)
            check_conversation(turn.tag, events, stack.client.items(turn.session), answer)
            # This turn's frames and chunks only (the hello before it had its own).
            turn_frames = [f for f in frames.get(conversation.agy.pid, []) if f[0] >= turn.sent_ns]
            turn_handed = [h for h in handed.get(turn.session, []) if h[0] >= turn.sent_ns]
            measured.extend(latencies(events, arrivals, turn_frames, turn_handed, answer))
    finally:
        for turn in turns:
            turn.events.close()
    stop_agys(stack)
    turn_s = [(t.ended_ns - t.sent_ns) / 1e9 for t in turns]
    return Round(count, turn_s, measured, before, after, client_cpu)


def report(rounds: Sequence[Round], delay: str) -> None:
    rounds = sorted(rounds, key=lambda r: r.count)
    table(
        f"Delivery: N conversations at once, each a {PARTS}-part answer (a frame every {delay} s)"
        f" and a gate; nothing lost, duplicated or crossed (checked); {load_average()}",
        ["N", "turn s p50", "turn s max", "deltas", "delta p50 ms", "delta p99 ms"],
        [
            [
                r.count,
                statistics.median(r.turn_s),
                max(r.turn_s),
                len(r.deltas),
                statistics.median(d.total_ms for d in r.deltas),
                percentile([d.total_ms for d in r.deltas], 0.99),
            ]
            for r in rounds
        ],
    )
    table(
        "Where a delta's time goes: agy's frame → the plugin hands omnigent the text (the"
        " plugin's part: agy's TLS stream, decode, map, publish, translate) → the event at the"
        " client (omnigent's part: its adapter, the harness's stream to the runner, the"
        " server, SSE, and the benchmark's one client process reading every stream)",
        [
            "N",
            "plugin p50 ms",
            "plugin p99 ms",
            "omnigent p50 ms",
            "omnigent p99 ms",
            "client CPU s",
        ],
        [
            [
                r.count,
                statistics.median(d.plugin_ms for d in r.deltas),
                percentile([d.plugin_ms for d in r.deltas], 0.99),
                statistics.median(d.omnigent_ms for d in r.deltas),
                percentile([d.omnigent_ms for d in r.deltas], 0.99),
                r.client_cpu_s,
            ]
            for r in rounds
        ],
    )
    rows: list[list[object]] = []
    for r in rounds:
        # The tmux server is shared: its share. The others: one per conversation.
        rows.extend(
            [
                r.count,
                kind if kind != "agy" else "agy (agy-sim, not the plugin's)",
                r.after.rss[kind] / r.count,
                r.after.uss[kind] / r.count,
                (r.after.cpu[kind] - r.before.cpu[kind]) / r.count,
            ]
            for kind in KINDS
        )
        plugin = [k for k in KINDS if k != "agy"]
        rows.append(
            [
                r.count,
                "plugin's own, all",
                sum(r.after.rss[k] for k in plugin) / r.count,
                sum(r.after.uss[k] for k in plugin) / r.count,
                sum(r.after.cpu[k] - r.before.cpu[k] for k in plugin) / r.count,
            ]
        )
    table(
        "Per conversation: memory after the turn, CPU during it",
        ["N", "processes", "RSS MB", "USS MB", "CPU s"],
        rows,
    )


def main() -> None:
    args = options(__doc__ or "")
    # 16 right after 1: the comparison that matters first, on a long run.
    counts, delay = ((1, 2), "0.01") if args.quick else ((1, 16, 4, 8), "0.05")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as name:
        root = Path(name)
        frame_log = root / "frames.jsonl"
        flags = {
            **TEST_SIMULATOR,
            "AGY_SIM_LONG_TOKEN_DELAY": delay,
            "AGY_SIM_FRAME_LOG": str(frame_log),
        }
        flags.pop("AGY_SIM_DEBUG_RPC", None)
        agy = write_simulator(root / "bin", flags)
        handed_log = root / "handed.jsonl"  # the plugin's timing log (the module doc)
        with LocalStack(
            root / "stack",
            agy,
            progress=lambda m: print(m, file=sys.stderr),
            # Keep every agy: by default a host keeps the 5 most recently used (max_kept). In
            # the host's environment, not its config rewritten under a starting host.
            host_env={TIMING_LOG_ENV: str(handed_log), ENV_MAX_KEPT: "0"},
        ) as stack:
            rounds = []
            first = 1
            for count in counts:
                print(f"{count} conversations at once…", file=sys.stderr, flush=True)
                rounds.append(one_round(stack, count, first, frame_log, handed_log))
                first += count
                if count != counts[-1]:  # so far (a long run on a loaded machine)
                    report(rounds, delay)
                    print(flush=True)
    report(rounds, delay)


if __name__ == "__main__":
    main()
