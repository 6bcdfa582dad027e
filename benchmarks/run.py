"""Run every benchmark, each in a process of its own, and print their tables.

    python benchmarks/run.py [--quick]

`tox -e bench` runs them in full (docs/performance.md reports those figures); the test suite
runs `--quick` once (tests/test_benchmarks.py), small sizes, so the scripts keep working.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "bench_frames.py",
    "bench_e2e.py",
    "bench_unary.py",
    "bench_attach.py",
    "bench_turn.py",
    "bench_reader.py",
    "bench_mapper.py",
    "bench_sweep.py",
    "bench_relay.py",
    "bench_scale.py",
    "bench_floor.py",
    "bench_cold.py",
    "bench_disk.py",
    "bench_faults.py",
)


def main() -> int:
    extra = [arg for arg in sys.argv[1:] if arg == "--quick"]
    failed = []
    for script in SCRIPTS:
        print(f"\n## {script}", flush=True)
        if subprocess.run([sys.executable, str(HERE / script), *extra], check=False).returncode:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
