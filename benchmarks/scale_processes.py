"""The processes of one host of bench_scale.py, told apart: the plugin's own (the harness
process of each conversation, the relay MCP server each agy started, the tmux server agy runs
in) and agy's (agy-sim), with what each holds and has used.

A conversation's agy is the agy-sim whose command line names the conversation's private
state folder (``…/omnigent-agy/<session id>/``); its relay is its child running
``omnigent_agy.relay``; its harness is the process of the host listening on the socket the
relay's command line names (the harness serves omnigent's tools there, relay/channel.py);
the tmux server is agy's parent. What the host runs for omnigent (its runner processes) is
neither, and not counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import psutil

__all__ = ["ConversationProcesses", "Sample", "find", "sample"]

KINDS = ("harness", "relay", "tmux server", "agy")


@dataclass
class ConversationProcesses:
    session: str
    agy: psutil.Process
    relay: psutil.Process
    harness: psutil.Process


@dataclass
class Sample:
    """Per kind: summed RSS and USS (MB) and CPU seconds used so far."""

    rss: dict[str, float] = field(default_factory=dict)
    uss: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _socket_of(relay: psutil.Process) -> str:
    words = _cmdline(relay)
    return words[words.index("--socket") + 1]


def _listener(candidates: Iterable[psutil.Process], path: str) -> psutil.Process | None:
    for process in candidates:
        with contextlib.suppress(psutil.Error):
            if any(conn.laddr == path for conn in process.net_connections(kind="unix")):
                return process
    return None


def find(host_pid: int, root: str, sessions: Sequence[str]) -> list[ConversationProcesses]:
    """Each session's agy, relay and harness; a LookupError naming what is missing."""
    agys = {}
    for process in psutil.process_iter():
        words = _cmdline(process)
        line = " ".join(words)
        if root in line and any(word.endswith("agy-sim") for word in words):
            for session in sessions:
                if f"/{session}/" in line:
                    agys[session] = process
    host_side = psutil.Process(host_pid).children(recursive=True)
    found = []
    for session in sessions:
        agy = agys.get(session)
        if agy is None:
            raise LookupError(f"no agy-sim running for session {session}")
        relays = [c for c in agy.children() if "omnigent_agy.relay" in _cmdline(c)]
        if len(relays) != 1:
            raise LookupError(f"session {session}: {len(relays)} relays under its agy")
        harness = _listener(host_side, _socket_of(relays[0]))
        if harness is None:
            raise LookupError(f"session {session}: no harness listens on its relay's socket")
        found.append(ConversationProcesses(session, agy, relays[0], harness))
    return found


def sample(conversations: Sequence[ConversationProcesses]) -> Sample:
    """What the conversations' processes (and their one tmux server) hold and have used."""
    groups: dict[str, set[psutil.Process]] = {kind: set() for kind in KINDS}
    for conversation in conversations:
        groups["harness"].add(conversation.harness)
        groups["relay"].add(conversation.relay)
        groups["agy"].add(conversation.agy)
        with contextlib.suppress(psutil.Error):
            parent = conversation.agy.parent()
            if parent is not None:
                groups["tmux server"].add(parent)
    result = Sample()
    for kind, processes in groups.items():
        rss = uss = cpu = 0.0
        for process in processes:
            with contextlib.suppress(psutil.Error):
                memory = process.memory_full_info()
                times = process.cpu_times()
                rss += memory.rss / 2**20
                uss += memory.uss / 2**20
                cpu += times.user + times.system
        result.rss[kind], result.uss[kind], result.cpu[kind] = rss, uss, cpu
    return result
