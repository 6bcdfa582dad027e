"""``omnigent-agy ps|stop``: the agys kept for conversations, and stopping them."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from omnigent_agy.cli.common import EXIT_FAILED, EXIT_USAGE, Subparsers, config_path
from omnigent_agy.config.settings import load_config

if TYPE_CHECKING:
    from omnigent_agy.agy.keep import KeepPolicy
    from omnigent_agy.agy.retention import KeptConversation


def _ps(args: argparse.Namespace) -> int:
    # Imported here, as for doctor: psutil, libtmux and httpx.
    from omnigent_agy.agy import retention, sweep  # noqa: PLC0415
    from omnigent_agy.agy import running_agys as running  # noqa: PLC0415
    from omnigent_agy.agy.keep import format_duration  # noqa: PLC0415

    policy = load_config(config_path(args)).keep
    statuses = sweep.survey(policy)
    idle = [agy for agy in running.list_running() if not agy.alive]
    kept = {c.key: c for c in retention.conversations()}
    if not statuses and not idle:
        print("no agy is running for omnigent-agy")
    for status in statuses:
        state = kept.get(status.running.key)
        print(status.describe(state.describe_disk() if state is not None else None))
    moment = running.now()
    for agy in idle:
        record = agy.record
        how = (
            f"stopped {format_duration(moment - record.stopped_at)} ago: {record.stopped_reason}"
            if record.stopped_at is not None
            else f"not running (pid {agy.pid} is gone)"
        )
        resumes = f"; the next turn resumes conversation {agy.cascade_id}" if agy.cascade_id else ""
        print(f"{agy.key}  {how}{resumes}{_state_line(kept.get(agy.key), policy, moment)}")
    listed = {s.running.key for s in statuses} | {agy.key for agy in idle}
    for key, state in kept.items():
        if key not in listed:
            print(f"{key}  no agy started{_state_line(state, policy, moment)}")
    print(f"limits: {policy.describe()} (`omnigent-agy stop --idle` applies them now)")
    if kept:
        total = sum(state.disk for state in kept.values())
        print(
            f"private state: {len(kept)} conversation(s), {retention.size(total)} on disk "
            "(`omnigent-agy prune` shows what it would remove)"
        )
    if statuses:
        _print_quota()
    return 0


def _state_line(state: KeptConversation | None, policy: KeepPolicy, moment: float) -> str:
    if state is None:
        return ""
    due = state.due(policy, moment)
    return f"  {state.describe_disk()}" + (f"  removed at the next sweep: {due}" if due else "")


def _print_quota() -> None:
    """The account's plan and quota, asked of one of the running agys (they share it)."""
    from omnigent_agy.doctor import quota_report as quota  # noqa: PLC0415 - as for ps

    asked = asyncio.run(quota.ask_running_agy())
    if asked is None:
        print("quota unknown: no running agy answered")
        return
    moment = datetime.now().astimezone()
    print(f"account (asked the agy of {asked.agy.key}):")
    for line in quota.quota_lines(asked.quota, moment):
        print(f"  {line}")


def add_ps(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "ps",
        help="list the agys kept for conversations: idle time, memory, disk, what stops them",
    )
    parser.set_defaults(handler=_ps)


def _stop(args: argparse.Namespace) -> int:
    from omnigent_agy.agy import running_agys as running  # noqa: PLC0415 - as for ps
    from omnigent_agy.agy import sweep  # noqa: PLC0415

    if args.idle:
        if args.all or args.conversation:
            print("omnigent-agy: --idle takes no conversations and no --all", file=sys.stderr)
            return EXIT_USAGE
        policy = load_config(config_path(args)).keep
        stopped = sweep.sweep(policy)
        for status in stopped:
            print(f"stopped {status.running.key}: {status.stop_reason}")
        if not stopped:
            print(f"no agy is due to stop ({policy.describe()})")
        return 0
    found = [agy for agy in running.list_running() if agy.alive]
    known = {agy.key for agy in running.list_running()}
    chosen = found if args.all else [agy for agy in found if agy.key in set(args.conversation)]
    unknown = set(args.conversation) - known
    for key in sorted(unknown):
        print(f"omnigent-agy: no agy record for {key!r} (see `omnigent-agy ps`)", file=sys.stderr)
    for key in sorted(set(args.conversation) & known - {agy.key for agy in chosen}):
        print(f"{key} is not running")
    refused = False
    for agy in chosen:
        if running.stop_running(agy, "stopped by `omnigent-agy stop`"):
            print(f"stopped {agy.key}")
        else:
            print(
                f"{agy.key} not stopped: pid {agy.pid} belongs to another user "
                f"(uid {running.owner_uid(agy.pid)}); only they can stop it",
                file=sys.stderr,
            )
            refused = True
    return EXIT_FAILED if unknown or refused else 0


def add_stop(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "stop",
        help="stop the agy of a conversation (or --all, or --idle: what the limits say); "
        "the next turn starts it again on the same conversation",
    )
    parser.add_argument("conversation", nargs="*", help="keys as `omnigent-agy ps` prints them")
    parser.add_argument("--all", action="store_true", help="stop every agy")
    parser.add_argument(
        "--idle",
        action="store_true",
        help="sweep now: stop the agys idle_stop_after, max_kept and gone workspaces say to",
    )
    parser.set_defaults(handler=_stop)
