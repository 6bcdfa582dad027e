"""What the relay's MCP server costs each agy: start-up to its first answers, memory, CPU and
instructions, beside the same server built on the ``mcp`` SDK (benchmarks/sdk_relay.py).

Run: `.venv/bin/python benchmarks/bench_relay.py [--quick]`. Every agy starts one relay from
its mcp_config.json and keeps it for its whole life, so this is paid once per conversation
(docs/performance.md, "The relay"). Each server is started as agy starts it (``python -I``),
sent ``initialize`` and ``tools/list`` on its stdin, and measured once both are answered: the
wall time to the answers, the process's CPU time, RSS and USS (what it alone holds). The
instructions of a whole run (start, the two answers, stdin closed) are counted by valgrind's
callgrind, which the load of a shared machine does not change; `python -I -c pass` is the
interpreter's own floor. `--quick`: 2 starts each, callgrind for the plugin's relay only.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from common import HERE, load_average, options, table

from omnigent_agy.relay.channel import relay_entry

TOOLS = [
    {
        "name": f"tool_{n}",
        "description": f"omnigent's tool number {n}",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    for n in range(12)
]
MESSAGES = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def servers(folder: Path) -> dict[str, list[str]]:
    tools = folder / "relay-tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    # No harness listens on the socket: the relay lists the last turn's tools from the file.
    entry = relay_entry(folder / "relay.sock", tools, [])
    return {
        "plugin (standard library)": [entry["command"], *entry["args"]],
        "mcp SDK": [sys.executable, "-I", str(HERE / "sdk_relay.py"), "--tools", str(tools)],
    }


def one_start(argv: list[str]) -> tuple[float, float, float, float]:
    """(seconds to both answers, CPU seconds, RSS MB, USS MB) of one start."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(MESSAGES)
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(2)]
        elapsed = time.perf_counter() - started
        assert len(answers[1]["result"]["tools"]) == len(TOOLS), answers
        info = psutil.Process(process.pid)
        memory = info.memory_full_info()
        times = info.cpu_times()
        return elapsed, times.user + times.system, memory.rss / 2**20, memory.uss / 2**20
    finally:
        process.stdin.close()
        process.wait(30)
        process.stdout.close()


def instructions(argv: list[str], folder: Path) -> int:
    """Instructions of a whole run under callgrind (start, the answers, stdin closed)."""
    out = folder / "callgrind.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        input=MESSAGES,
        capture_output=True,
        check=False,
        timeout=900,
    )
    if done.returncode != 0:  # what valgrind and the program said, not only the exit status
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"callgrind run of {argv} ended {done.returncode}:\n{tail}")
    for line in done.stderr.decode().splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    raise RuntimeError("callgrind printed no count")


def main() -> None:
    args = options(__doc__ or "")
    starts = 2 if args.quick else 7
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as name:
        folder = Path(name)
        rows = []
        counts: list[tuple[str, int]] = []
        for label, argv in servers(folder).items():
            runs = [one_start(argv) for _ in range(starts)]
            rows.append(
                [
                    label,
                    statistics.median(run[0] for run in runs) * 1000,
                    statistics.median(run[1] for run in runs) * 1000,
                    statistics.median(run[2] for run in runs),
                    statistics.median(run[3] for run in runs),
                ]
            )
            if not args.quick or label.startswith("plugin"):
                counts.append((label, instructions(argv, folder)))
        counts.append(
            (
                "python -I -c pass (the floor)",
                instructions([sys.executable, "-I", "-c", "pass"], folder),
            )
        )
    table(
        "One relay per agy: start to its initialize and tools/list answers"
        f" (medians of {starts}; {load_average()})",
        ["server", "wall ms", "CPU ms", "RSS MB", "USS MB"],
        rows,
    )
    table(
        "Instructions of a whole run (valgrind callgrind; steady under load)",
        ["run", "instructions (millions)"],
        [[label, count / 1e6] for label, count in counts],
    )


if __name__ == "__main__":
    main()
