"""Find the TLS port of the agy *we* started (docs/wire.md §1, "Port discovery").

agy picks a random port. Two ways to learn it, tried on every poll until a deadline:

1. its ``--log-file`` (:mod:`omnigent_agy.rpc.agy_log`): the port it last announced;
2. the loopback TCP listeners of agy's pid and its descendants (:mod:`omnigent_agy.rpc.listeners`).

Either way a port is used only if it is held by agy's process tree, owned by this user,
and by no one else — the log may be stale or the port re-bound by a stranger — and only
if ``Heartbeat`` answers 200 with our CSRF token. Before the token is sent, the certificate
served on the port is fetched and the owner checked again (`pin_port`); the probe and every
client of the port found trust that certificate only (`pinning`), so a stranger binding the
port later is refused in the TLS handshake. When the conversation id is known,
``GetConversationMetadata`` must know it too. agy's plain-HTTP port N+1 fails the TLS
handshake and is skipped like any other non-RPC listener.

Failures are :class:`~omnigent_agy.errors.DiscoveryError` subclasses, each with a
``remediation``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from omnigent_agy.errors import (
    AgyExitedError,
    AgySignedOutError,
    ConversationNotFoundError,
    CsrfError,
    CsrfRejectedError,
    DiscoveryError,
    ForeignListenerError,
    PortNeverOpenedError,
    RpcError,
)
from omnigent_agy.rpc.agy_log import Announcement, LogWatcher
from omnigent_agy.rpc.client import TRANSIENT_CODES, RetryPolicy, RpcClient
from omnigent_agy.rpc.listeners import PortOwnership, is_port_owned_by, port_ownership
from omnigent_agy.rpc.pinning import Pin, fetch_certificate

__all__ = [
    "discover_pin",
    "is_port_owned_by",
    "pin_if_ours",
    "pin_port",
    "probe_port",
    "until_announced",
]

logger = logging.getLogger(__name__)

_ONE_TRY = RetryPolicy(attempts=1)
# How often agy's log is read between two scans of the listeners: reading it costs a read of
# what was appended; a scan costs 20-80 ms of CPU (docs/performance.md, "Cold start").
_LOG_POLL_S = 0.025


# -- probing ---------------------------------------------------------------------------------


class Probe(enum.Enum):
    """What a port said to Heartbeat (and GetConversationMetadata)."""

    OK = "ok"
    CSRF_REJECTED = "csrf rejected"
    STARTING = "starting"
    NOT_RPC = "not agy's RPC"
    UNKNOWN_CONVERSATION = "unknown conversation"


async def probe_port(
    port: int,
    *,
    csrf_token: str,
    conversation_id: str | None = None,
    timeout: float = 2.0,
    certificate: bytes | None = None,
) -> Probe:
    """Ask ``port`` for Heartbeat (and the conversation's metadata); one try each, trusting
    only ``certificate`` when given (a different one is NOT_RPC: nothing was sent)."""
    async with RpcClient(
        port=port, csrf_token=csrf_token, timeout=timeout, retry=_ONE_TRY, certificate=certificate
    ) as client:
        try:
            await client.heartbeat()
            if conversation_id is not None:
                await client.get_conversation_metadata(conversation_id)
        except CsrfError:
            return Probe.CSRF_REJECTED
        except RpcError as exc:
            return _classify(exc, heartbeat_ok=exc.method != "Heartbeat")
    return Probe.OK


def _classify(exc: RpcError, *, heartbeat_ok: bool) -> Probe:
    # An HTTP answer with a transient code (agy-sim's 503 "language server is starting")
    # means a connect server is there but not ready; a transport failure (TLS handshake
    # against the plain port N+1, connection refused) or a 404 means not agy's RPC port.
    answered = exc.http_status is not None
    if answered and exc.connect_code in TRANSIENT_CODES:
        return Probe.STARTING
    if heartbeat_ok:
        return Probe.UNKNOWN_CONVERSATION
    return Probe.NOT_RPC


# -- pinning ---------------------------------------------------------------------------------


async def pin_port(port: int, *, pid: int, log_file: Path | None, timeout: float = 2.0) -> Pin:
    """``port`` with the certificate served there, checked to be agy's (``pid``'s tree's).

    The owner is checked after the certificate was fetched: the caller saw agy hold the port
    before, so agy held it throughout and the certificate is agy's. Raises
    ForeignListenerError when someone else holds it now, OSError or ssl.SSLError when the
    port speaks no TLS (agy's plain port N+1, or nothing listens).
    """
    certificate = await fetch_certificate(port, timeout=timeout)
    if not await asyncio.to_thread(is_port_owned_by, port, pid):
        raise ForeignListenerError(
            f"port {port} is no longer held by agy (pid {pid}) alone", pid=pid, log_file=log_file
        )
    return Pin(port, certificate)


async def pin_if_ours(port: int, *, pid: int, log_file: Path | None) -> Pin | None:
    """`pin_port`, or None when the port is not agy's alone or speaks no TLS."""
    try:
        return await pin_port(port, pid=pid, log_file=log_file)
    except (ForeignListenerError, OSError, ssl.SSLError) as exc:
        logger.debug("port %s not pinned: %s", port, exc)
        return None


async def _pinned_probe(
    port: int,
    *,
    pid: int,
    log_file: Path,
    csrf_token: str,
    conversation_id: str | None,
    timeout: float,
) -> tuple[Probe, Pin | None]:
    try:
        pin = await pin_port(port, pid=pid, log_file=log_file, timeout=timeout)
    except ForeignListenerError:
        return Probe.NOT_RPC, None
    except (OSError, ssl.SSLError):  # no TLS there: not agy's RPC port
        return Probe.NOT_RPC, None
    outcome = await probe_port(
        port,
        csrf_token=csrf_token,
        conversation_id=conversation_id,
        timeout=timeout,
        certificate=pin.certificate,
    )
    return outcome, pin


# -- discovery -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Seen:
    """What failed along the way, to pick the most helpful error at the deadline."""

    foreign: set[int] = field(default_factory=set)
    outcomes: dict[int, Probe] = field(default_factory=dict)

    def failure(self, pid: int, log_file: Path, waited: float) -> DiscoveryError:
        def ports(kind: Probe) -> str:
            return ", ".join(str(p) for p, o in sorted(self.outcomes.items()) if o is kind)

        if rejected := ports(Probe.CSRF_REJECTED):
            message = f"agy (pid {pid}) rejected our CSRF token on port {rejected}"
            return CsrfRejectedError(message, pid=pid, log_file=log_file)
        if unknown := ports(Probe.UNKNOWN_CONVERSATION):
            message = f"agy (pid {pid}) on port {unknown} does not know the conversation"
            return ConversationNotFoundError(message, pid=pid, log_file=log_file)
        if self.foreign and not self.outcomes:
            held = ", ".join(str(p) for p in sorted(self.foreign))
            message = f"port {held} named in agy's log is held by another process or user"
            return ForeignListenerError(message, pid=pid, log_file=log_file)
        detail = ""
        if starting := ports(Probe.STARTING):
            detail = f" (port {starting} still said it was starting)"
        message = (
            f"agy (pid {pid}) opened no port answering Heartbeat within {waited:.3g} s{detail}"
        )
        return PortNeverOpenedError(message, pid=pid, log_file=log_file)


def _signed_out(
    watcher: LogWatcher, pid: int, log_file: Path, what: str
) -> AgySignedOutError | None:
    """The better reason for an agy that did not serve, when its log gives it."""
    if watcher.scanner.signed_in is not False:
        return None
    message = f"agy (pid {pid}) {what}: its log says it is not logged into Antigravity"
    return AgySignedOutError(message, pid=pid, log_file=log_file)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _own_port(ownership: PortOwnership, port: int) -> bool:
    return any(lst.port == port and lst.pid == ownership.pid for lst in ownership.ours)


def _candidates(ownership: PortOwnership, announced: Announcement | None, seen: _Seen) -> list[int]:
    ports: list[int] = []
    if announced is not None:
        if ownership.owns(announced.port):
            ports.append(announced.port)
        elif ownership.held_by_others(announced.port):
            # Not ours: someone else holds the port the log names. Never bind it.
            seen.foreign.add(announced.port)
    ports.extend(p for p in ownership.candidate_ports if p not in ports)
    return ports


async def discover_pin(
    *,
    pid: int,
    log_file: Path,
    csrf_token: str,
    conversation_id: str | None = None,
    deadline: float,
    poll_interval: float = 0.2,
    probe_timeout: float = 2.0,
) -> Pin:
    """The TLS port of agy ``pid`` with the certificate agy serves there (for its clients to
    trust alone), waiting up to ``deadline`` seconds for it to come up."""
    started = time.monotonic()
    stop_at = started + deadline
    watcher = LogWatcher(log_file)
    seen = _Seen()
    while True:
        if not _running(pid):
            watcher.poll()
            raise _signed_out(watcher, pid, log_file, "exited") or AgyExitedError(
                f"agy (pid {pid}) exited before its language server answered",
                pid=pid,
                log_file=log_file,
            )
        announced = watcher.poll()
        ownership = await asyncio.to_thread(port_ownership, pid)
        for port in _candidates(ownership, announced, seen):
            remaining = stop_at - time.monotonic()
            outcome, pin = await _pinned_probe(
                port,
                pid=pid,
                log_file=log_file,
                csrf_token=csrf_token,
                conversation_id=conversation_id,
                timeout=max(0.2, min(probe_timeout, remaining)),
            )
            seen.outcomes[port] = outcome
            logger.debug("agy pid %s port %s: %s", pid, port, outcome.value)
            if outcome is Probe.OK and pin is not None:
                return pin
            if outcome is Probe.CSRF_REJECTED and _own_port(ownership, port):
                # agy itself refused the token it was started with: waiting cannot heal
                # that. (A descendant refusing it may be something else agy runs.)
                raise seen.failure(pid, log_file, time.monotonic() - started)
        remaining = stop_at - time.monotonic()
        if remaining <= 0:
            signed_out = _signed_out(watcher, pid, log_file, "opened no port that answers")
            raise signed_out or seen.failure(pid, log_file, deadline)
        await until_announced(watcher, announced, min(poll_interval, remaining))


async def until_announced(watcher: LogWatcher, known: Announcement | None, wait: float) -> None:
    """Sleep ``wait`` seconds, or less: until agy's log announces a port other than ``known``
    (agy's port line is then followed at once, not at the next scan of the listeners)."""
    until = time.monotonic() + wait
    while (left := until - time.monotonic()) > 0:
        await asyncio.sleep(min(_LOG_POLL_S, left))
        if watcher.poll() != known:
            return
