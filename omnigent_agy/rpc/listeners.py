"""Which process listens on which loopback TCP port (docs/wire.md §1, port discovery).

Discovery must never bind a port whose owner is not the agy we started (or one of its
descendants) or belongs to another user: anyone on the machine can open a loopback port,
and agy's log naming a port proves nothing about who holds it now. So ownership is read
from the kernel, with three backends tried in order:

1. psutil (per-process sockets; system-wide where the platform allows it),
2. ``/proc/net/tcp{,6}`` joined with ``/proc/<pid>/fd`` socket inodes (Linux, no psutil),
3. ``lsof -nP -iTCP -sTCP:LISTEN`` (last resort, e.g. where psutil is denied).

A backend answers None when it cannot see the system (absent, permission denied); the
next one is tried. A listener whose process cannot be identified has ``pid=None`` and
counts as foreign.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "Listener",
    "PortOwnership",
    "is_port_owned_by",
    "list_listeners",
    "port_ownership",
    "process_tree",
]

logger = logging.getLogger(__name__)

_TCP_LISTEN = "0A"  # st column of /proc/net/tcp for LISTEN
_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Listener:
    """A listening TCP socket: its address, port and owning process when known."""

    ip: str
    port: int
    pid: int | None

    @property
    def reachable_on_loopback(self) -> bool:
        """Whether 127.0.0.1 / ::1 reaches it (a loopback or wildcard address)."""
        try:
            address = ipaddress.ip_address(self.ip.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback or address.is_unspecified


def process_tree(pid: int) -> set[int]:
    """``pid`` and its descendants that are still running (empty when ``pid`` is gone)."""
    try:
        root = psutil.Process(pid)
        children = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return set()
    return {pid, *(child.pid for child in children)}


def _owned_by_us(pids: Iterable[int]) -> bool:
    me = os.getuid()
    for pid in pids:
        try:
            if psutil.Process(pid).uids().real != me:
                return False
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            return False
    return True


def list_listeners(pids: set[int] | None = None) -> list[Listener]:
    """Listening TCP sockets of ``pids`` (None: of the whole system, as far as visible)."""
    for backend in _BACKENDS:
        found = backend(pids)
        if found is not None:
            return found
    logger.warning("no backend could list TCP listeners (psutil, /proc, lsof)")
    return []


@dataclass(frozen=True, slots=True)
class PortOwnership:
    """Who holds which loopback-reachable port, seen from the process tree of ``pid``."""

    pid: int
    tree: frozenset[int]
    tree_is_ours: bool
    ours: tuple[Listener, ...]
    """Listeners of ``pid`` and its descendants; ``pid``'s own first, then by port."""
    others: tuple[Listener, ...]
    """Listeners of every other process (``pid=None``: a process we may not inspect)."""

    def owns(self, port: int) -> bool:
        """Held by the tree, every process of which is ours, and by no one else.

        "No one else" matters: with SO_REUSEPORT (or a wildcard beside a loopback socket)
        two processes can listen on one port, and a connection may land on either.
        """
        return (
            self.tree_is_ours
            and any(lst.port == port for lst in self.ours)
            and not self.held_by_others(port)
        )

    def held_by_others(self, port: int) -> bool:
        """Whether a process outside the tree listens on ``port``."""
        return any(lst.port == port for lst in self.others)

    @property
    def candidate_ports(self) -> list[int]:
        """The ports the tree owns outright, ``pid``'s own first."""
        ports: list[int] = []
        for lst in self.ours:
            if lst.port not in ports and self.owns(lst.port):
                ports.append(lst.port)
        return ports


def port_ownership(pid: int) -> PortOwnership:
    """A snapshot of the listeners of ``pid``'s tree and of everyone else."""
    tree = frozenset(process_tree(pid))
    if not tree:
        return PortOwnership(pid, tree, False, (), ())
    ours = {
        (lst.port, lst.pid): lst for lst in list_listeners(set(tree)) if lst.reachable_on_loopback
    }
    others = [
        lst for lst in list_listeners(None) if lst.reachable_on_loopback and lst.pid not in tree
    ]
    return PortOwnership(
        pid=pid,
        tree=tree,
        tree_is_ours=_owned_by_us(tree),
        ours=tuple(sorted(ours.values(), key=lambda lst: (lst.pid != pid, lst.port))),
        others=tuple(others),
    )


def is_port_owned_by(port: int, pid: int) -> bool:
    """Whether ``port`` is held by ``pid`` or a descendant (all ours) and by no one else."""
    return port_ownership(pid).owns(port)


# -- backends ------------------------------------------------------------------------------


def _psutil_listeners(pids: set[int] | None) -> list[Listener] | None:
    try:
        if pids is None:
            return [
                Listener(conn.laddr.ip, conn.laddr.port, conn.pid)
                for conn in psutil.net_connections(kind="tcp")
                if conn.status == psutil.CONN_LISTEN and conn.laddr
            ]
        found: list[Listener] = []
        for pid in pids:
            with contextlib.suppress(psutil.NoSuchProcess):
                found.extend(
                    Listener(pconn.laddr.ip, pconn.laddr.port, pid)
                    for pconn in psutil.Process(pid).net_connections("tcp")
                    if pconn.status == psutil.CONN_LISTEN and pconn.laddr
                )
    except psutil.AccessDenied:
        return None
    return found


def _procfs_listeners(pids: set[int] | None) -> list[Listener] | None:
    if not (_PROC / "net" / "tcp").exists():
        return None
    rows = [row for name in ("tcp", "tcp6") for row in _read_proc_net(_PROC / "net" / name)]
    owner = _socket_owners(pids if pids is not None else _all_pids())
    listeners = [Listener(ip, port, owner.get(inode)) for ip, port, inode in rows]
    if pids is None:
        return listeners
    return [lst for lst in listeners if lst.pid in pids]


def _read_proc_net(path: Path) -> list[tuple[str, int, int]]:
    """(ip, port, inode) of each LISTEN row of /proc/net/tcp or tcp6."""
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return []
    rows = []
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _TCP_LISTEN:
            continue
        hex_ip, hex_port = fields[1].split(":")
        rows.append((_decode_proc_ip(hex_ip), int(hex_port, 16), int(fields[9])))
    return rows


def _decode_proc_ip(hex_ip: str) -> str:
    # The kernel prints each 32-bit word of the address in host (little-endian) order.
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def _all_pids() -> set[int]:
    return {int(p.name) for p in _PROC.iterdir() if p.name.isdigit()}


def _socket_owners(pids: Iterable[int]) -> dict[int, int]:
    """socket inode → pid, for the processes whose fds we may read."""
    owners: dict[int, int] = {}
    for pid in pids:
        fd_dir = _PROC / str(pid) / "fd"
        try:
            fds = list(fd_dir.iterdir())
        except OSError:  # gone, or another user's process
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    owners.setdefault(int(target[8:-1]), pid)
    return owners


def _lsof_listeners(pids: set[int] | None) -> list[Listener] | None:
    lsof = shutil.which("lsof")
    if lsof is None:
        return None
    argv = [lsof, "-nP", "-iTCP", "-sTCP:LISTEN", "-F", "pn"]
    if pids is not None:
        argv += ["-a", "-p", ",".join(str(p) for p in sorted(pids))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired):
        return None
    # lsof exits 1 when nothing matched; anything it printed is still valid.
    listeners: list[Listener] = []
    pid: int | None = None
    for line in done.stdout.splitlines():
        if line.startswith("p"):
            pid = int(line[1:])
        elif line.startswith("n") and ":" in line:
            host, _, port = line[1:].rpartition(":")
            host = host.strip("[]")
            listeners.append(Listener("0.0.0.0" if host == "*" else host, int(port), pid))  # noqa: S104
    return listeners


_BACKENDS: tuple[Callable[[set[int] | None], list[Listener] | None], ...] = (
    _psutil_listeners,
    _procfs_listeners,
    _lsof_listeners,
)
