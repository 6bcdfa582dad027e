"""omnigent's own delivery with no agy at all: the floor under bench_scale.py's delta latency.

Run: `.venv/bin/python benchmarks/bench_floor.py [--quick]` (`--quick`: 1 and 2
conversations, a faster answer). The same real server and host on loopback as bench_scale.py
and the same load (N conversations at once, each a 120-part answer naming it, one part every
0.05 s), but every turn is answered by benchmarks/null_agy.py, an omnigent-agy plugin whose
``agy_run_turn`` hands omnigent the parts itself: no agy or agy-sim runs, nothing is read,
mapped or published by the plugin. What remains between the harness handing a part to
omnigent (the plugin's timing log, ``OMNIGENT_AGY_TIMING_LOG``) and the SSE event at the client
is omnigent's: its adapter, the harness's stream to its runner, the runner to the server, the
server's SSE, and this benchmark's one client process reading every stream. The turns carry
no gate (the gate is agy's).

Printed for N = 1, 4, 8 and 16: turn time, and the delta latency (handed → the client) p50 and
p99 with the p99's ratio to N = 1's: what any harness meets on this machine before its own
part. Checked for every conversation: its deltas add up to exactly its own answer. Asserts
nothing about time; the machine's load average is printed with the table.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from bench_scale import PARTS, all_at_once, expected_answer, open_conversations, prompt
from common import load_average, options, percentile, table
from omnigent.community.harness.agy.timing import TIMING_LOG_ENV
from scale_check import Delta, MismatchError, handed_lines, latencies, reached, streamed

from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import TEST_SIMULATOR, LocalStack

PLUGIN = "null_agy"  # benchmarks/null_agy.py


def plugin_folder(folder: Path, delay: str) -> Path:
    """A folder that, on ``PYTHONPATH``, makes null_agy.py an installed omnigent-agy plugin
    that hands a part every ``delay`` seconds."""
    folder.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name(f"{PLUGIN}.py"), folder)
    (folder / f"{PLUGIN}.delay").write_text(delay, encoding="utf-8")
    info = folder / f"{PLUGIN}-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {PLUGIN}\nVersion: 0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[omnigent_agy]\n{PLUGIN} = {PLUGIN}\n", encoding="utf-8"
    )
    return folder


class Row(NamedTuple):
    """One N's figures, as the table prints them."""

    turn_s_p50: float
    deltas: int
    p50_ms: float
    p99_ms: float


def one_round(stack: LocalStack, count: int, first_tag: int, handed_log: Path) -> Row:
    """N conversations at once, each checked; its turn time and delta latencies."""
    turns = open_conversations(stack, count, first_tag)
    try:
        all_at_once(stack, turns, [prompt(turn.tag) for turn in turns])
        handed = handed_lines(handed_log)
        deltas: list[Delta] = []
        for turn in turns:
            events = turn.events.seen[turn.first :]
            answer = expected_answer(turn.tag)
            if streamed(events, answer) != answer:
                raise MismatchError(f"{turn.tag}: the deltas do not add up to its answer")
            # agy-sim would answer the same text, then ask to run the command: no call here
            # shows that null_agy.py answered, and no agy was in the path.
            if any(i.get("type") == "function_call" for i in stack.client.items(turn.session)):
                raise MismatchError(f"{turn.tag}: a command ran, so agy answered, not null_agy")
            chunks = [h for h in handed.get(turn.session, []) if h[0] >= turn.sent_ns]
            # No agy: the "frame" of each delta is the plugin's hand itself.
            arrivals = turn.events.seen_ns[turn.first :]
            deltas.extend(latencies(events, arrivals, reached(chunks), chunks, answer))
    finally:
        for turn in turns:
            turn.events.close()
    latency = [d.omnigent_ms for d in deltas]
    return Row(
        statistics.median((t.ended_ns - t.sent_ns) / 1e9 for t in turns),
        len(deltas),
        statistics.median(latency),
        percentile(latency, 0.99),
    )


def main() -> None:
    args = options(__doc__ or "")
    counts, delay = ((1, 2), "0.01") if args.quick else ((1, 16, 4, 8), "0.05")
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as name:
        root = Path(name)
        agy = write_simulator(root / "bin", TEST_SIMULATOR)  # the host's readiness wants one
        handed_log = root / "handed.jsonl"
        with LocalStack(
            root / "stack",
            agy,
            progress=lambda m: print(m, file=sys.stderr),
            host_env={
                TIMING_LOG_ENV: str(handed_log),
                "PYTHONPATH": str(plugin_folder(root / "plugin", delay)),
            },
        ) as stack:
            rows: dict[int, Row] = {}
            first = 1
            started = time.monotonic()
            for count in counts:
                print(f"{count} conversations at once…", file=sys.stderr, flush=True)
                rows[count] = one_round(stack, count, first, handed_log)
                first += count
    base = rows[1].p99_ms
    table(
        f"omnigent's delivery alone: N conversations at once, each a {PARTS}-part answer (a"
        f" part every {delay} s) handed to omnigent by a plugin without agy → the event at the"
        f" client; {time.monotonic() - started:.0f} s; {load_average()}",
        ["N", "turn s p50", "deltas", "p50 ms", "p99 ms", "p99 / N = 1"],
        [[n, *rows[n], f"{rows[n].p99_ms / base:.1f}x"] for n in sorted(rows)],
    )


if __name__ == "__main__":
    main()
