"""What a conversation runs, whichever harness: the processes that appeared on the machine
for it, found with psutil, and what they hold and use.

Before a conversation opens, `snapshot` notes every process of the stack: the host's
descendants (the harness process, `agy acp` under it), and every process whose command line
names the stack's folder or one of its hosts' tmux sockets (agy or agy-sim in tmux, the relay,
the tmux servers, which daemonize away from the host). After its first turn, the new ones are
the conversation's; the tmux server its agy runs in is added (shared between the
conversations of one harness, so a round counts it once). Counted alike for every harness:
whatever the host starts per conversation, including omnigent's own per-session processes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import psutil

from agy_sim.stack.local_stack import LocalStack


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def snapshot(stack: LocalStack) -> set[psutil.Process]:
    markers = [str(stack.root), *(host.tmux_socket for host in stack.hosts)]
    found: set[psutil.Process] = set()
    for host in stack.hosts:
        if host.process is not None:
            with contextlib.suppress(psutil.Error):
                found.update(psutil.Process(host.process.pid).children(recursive=True))
    for process in psutil.process_iter():
        if process.pid != os.getpid() and any(m in _cmdline(process) for m in markers):
            found.add(process)
    return found


def new_processes(stack: LocalStack, before: set[psutil.Process]) -> list[psutil.Process]:
    """The processes that appeared since `before`, with the tmux servers their agys run in."""
    fresh = snapshot(stack) - before
    servers = set()
    for process in list(fresh):
        with contextlib.suppress(psutil.Error):
            parent = process.parent()
            if parent is not None and "tmux" in parent.name():
                servers.add(parent)
            # A tmux client of the moment (a capture-pane, a send-keys) is not the
            # conversation's: only a tmux server, with agy under it, stays.
            if "tmux" in process.name() and not process.children():
                fresh.discard(process)
    return sorted(fresh | servers, key=lambda p: p.pid)


def kind(process: psutil.Process) -> str:
    line = _cmdline(process)
    if "agy-sim" in line or "agy_sim" in line:
        return "agy-sim (agy)"
    if "omnigent_agy.relay" in line:
        return "relay"
    with contextlib.suppress(psutil.Error):
        if "tmux" in process.name():
            return "tmux server"
    if "omnigent" in line:  # a harness process is forked by omnigent's zygote: its line
        return "omnigent process (harness, runner)"
    return "other"


@dataclass
class Usage:
    rss_mb: float
    uss_mb: float
    cpu_s: float
    kinds: dict[str, int]
    uss_by_kind: dict[str, float] = field(default_factory=dict)


def measure(processes: Iterable[psutil.Process]) -> Usage:
    rss = uss = cpu = 0.0
    kinds: dict[str, int] = {}
    uss_by_kind: dict[str, float] = {}
    for process in processes:
        with contextlib.suppress(psutil.Error):
            memory = process.memory_full_info()
            times = process.cpu_times()
            rss += memory.rss / 2**20
            uss += memory.uss / 2**20
            cpu += times.user + times.system
            name = kind(process)
            kinds[name] = kinds.get(name, 0) + 1
            uss_by_kind[name] = uss_by_kind.get(name, 0.0) + memory.uss / 2**20
    return Usage(rss, uss, cpu, kinds, uss_by_kind)


def describe(usage: Usage) -> str:
    """Each kind of process counted: how many, and their USS together."""
    return ", ".join(
        f"{count} {name} ({usage.uss_by_kind.get(name, 0.0):.0f} MB USS)"
        for name, count in sorted(usage.kinds.items())
    )


def cpu_between(before: Usage, after: Usage, turns: int) -> float:
    return max(0.0, after.cpu_s - before.cpu_s) / max(1, turns)


__all__: Sequence[str] = [
    "Usage",
    "cpu_between",
    "describe",
    "measure",
    "new_processes",
    "snapshot",
]
