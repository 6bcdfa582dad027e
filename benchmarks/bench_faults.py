"""Load with faults through the real host: 8 conversations at once on one
`omnigent host`, 30 seeded trials each (a trial is a turn, or two when the person sends again
the moment the answer is complete), every turn under the seeded fault suite's mix (stream
drops, stalls, 5xx bursts, garbage, agy's port moving, the harness process killed and replaced
between turns; tests/loadmix.py). Counted as the seeded suite counts: a turn is lost when it
does not complete or what the client received falls short of what agy committed, duplicated
when anything of it reached agy or the client twice; a turn omnigent ended failed (shown so to
the person, with its code) is counted apart as failed, and so is a turn that completed and
that omnigent then also reported failed because the harness was killed before its stream to
omnigent's runner had ended ("completed, then failed": tests/loadmix.py, `late_failure`). A
gate omnigent's runner denied itself (its policy call to the server failed: it fails closed)
shows no card and is not counted lost; how many is printed.

    python benchmarks/bench_faults.py [--quick] [--seed N] [--keep]

Prints the counts per conversation, the faults agy-sim fired, the wall time and the machine's
load average; exits 1 when a turn was lost or duplicated. Asserts nothing about time.
`--quick` (the test suite's run): 1 conversation, 1 trial.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from common import load_average, table
from loadmix import Counted, run_load, summary

from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import TEST_SIMULATOR, LocalStack


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 conversation, 1 trial")
    parser.add_argument("--seed", type=int, default=None, help="repeat a run")
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--trials", type=int, default=30, help="per conversation")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the run's folder (the logs of omnigent, each harness and each agy-sim) "
        "and print where it is, to read a failure",
    )
    return parser.parse_args()


def report(counted: list[Counted], seed: int, seconds: float) -> dict[str, object]:
    totals = summary(counted)
    rows = [
        [
            f"c{n:02d}",
            one.tally.trials,
            one.turns,
            one.lost,
            one.duplicated,
            one.failed_turns,
            one.late_failures,
            sum(one.tally.fired.values()),
            one.seconds,
        ]
        for n, one in enumerate(counted, start=1)
    ]
    rows.append(
        [
            "all",
            totals["trials"],
            totals["turns"],
            totals["lost"],
            totals["duplicated"],
            totals["failed_turns"],
            totals["late_failures"],
            sum(Counter(totals["fired"]).values()),  # type: ignore[arg-type]
            seconds,
        ]
    )
    table(
        f"Load with faults through the real host: {len(counted)} conversations at once, seed "
        f"{seed}, {seconds:.0f} s in all; {load_average()}",
        [
            "conversation",
            "trials",
            "turns",
            "lost",
            "duplicated",
            "failed",
            "completed, then failed",
            "faults fired",
            "seconds",
        ],
        rows,
    )
    print(
        f"Gates omnigent's runner denied itself, its policy call having failed (no card shown, "
        f"not counted lost): {totals['denied_by_omnigent']}"
    )
    fired = Counter(totals["fired"])  # type: ignore[arg-type]
    planned = Counter(totals["planned"])  # type: ignore[arg-type]
    kinds = sorted(set(fired) | {k.split(":")[0] for k in planned})
    table(
        "Faults: planned (per trial's draw) and fired (agy-sim's log; the harness kills counted "
        "by the benchmark)",
        ["fault", "planned", "fired"],
        [
            [
                kind,
                sum(v for k, v in planned.items() if k.split(":")[0] == kind),
                "— (the person's)" if kind == "back_to_back" else fired[kind],
            ]
            for kind in kinds
        ],
    )
    return totals


def main() -> int:
    args = arguments()
    conversations, trials = (1, 1) if args.quick else (args.conversations, args.trials)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    with contextlib.ExitStack() as kept:
        if args.keep:
            name = tempfile.mkdtemp(prefix="bench-faults-")
            print(f"the run's folder, kept: {name}", file=sys.stderr)
        else:
            name = kept.enter_context(tempfile.TemporaryDirectory(prefix="bench-faults-"))
        root = Path(name)
        agy = write_simulator(root / "bin", TEST_SIMULATOR)
        progress = lambda message: print(message, file=sys.stderr)  # noqa: E731
        with LocalStack(root / "stack", agy, progress=progress) as stack:
            counted, seconds = run_load(stack, "faults", conversations, trials, seed)
    totals = report(counted, seed, seconds)
    for one in counted:
        for failure in one.tally.failures:
            print(failure, file=sys.stderr)
    return 1 if totals["lost"] or totals["duplicated"] else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
