"""``omnigent-agy prune``: remove conversations' private state by hand (docs/configuration.md,
"What a conversation leaves behind"). It shows what it would remove first; ``--yes`` does it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from omnigent_agy.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Subparsers, config_path
from omnigent_agy.config.settings import load_config, parse_duration
from omnigent_agy.errors import AgyError, ConfigError

if TYPE_CHECKING:
    from omnigent_agy.agy.keep import KeepPolicy
    from omnigent_agy.agy.retention import KeptConversation

DESCRIPTION = """\
Remove the private state of conversations (a copy of your sign-in, agy's store of the
conversation, its log, the cursor), their agy stopped first. Without arguments: what the
next sweep would remove anyway (sessions omnigent deleted, and those unused longer than
`retention`). It only shows what it would remove, with the disk each takes, until you add
--yes. A conversation a running harness process holds is never removed. A turn in a removed
conversation starts agy afresh: omnigent still shows the history, agy no longer has it."""


def _chosen(
    args: argparse.Namespace, found: dict[str, KeptConversation], policy: KeepPolicy, moment: float
) -> list[tuple[KeptConversation, str]]:
    """The conversations to remove, each with why; held ones are said and left out."""
    older = parse_duration(args.older_than, "--older-than") if args.older_than else None
    chosen: list[tuple[KeptConversation, str]] = []
    for key, state in found.items():
        reason = state.due(policy, moment)
        if key in args.conversation or args.all:
            reason = "removed by `omnigent-agy prune`"
        elif reason is None and older is not None and not state.agy_running:
            unused = moment - (state.last_used or moment)
            reason = f"unused longer than {args.older_than}" if unused >= older else None
        if reason is None:
            continue
        if state.held:
            print(f"{key}  kept: a running harness process holds it")
            continue
        chosen.append((state, reason))
    return chosen


def _remove(chosen: list[tuple[KeptConversation, str]], *, really: bool) -> tuple[int, int]:
    """Show or remove them; the bytes they took and how many removals failed."""
    from omnigent_agy.agy.retention import forget  # noqa: PLC0415 - as for ps

    total = failed = 0
    for state, reason in chosen:
        if not really:
            print(f"would remove {state.key}  {state.describe_disk()}  {reason}")
            total += state.disk
            continue
        try:
            done = forget(state.path, reason)
        except (OSError, AgyError) as exc:
            # One folder that cannot go (its permissions, a disk error, something holding a
            # file) must not keep the others: say it, go on, and exit non-zero at the end.
            failed += 1
            _say_failed(state, exc)
            continue
        if done.refused is not None:
            print(f"{state.key}  kept: {done.refused}")
            continue
        total += done.disk
        print(f"removed {state.key}  {state.describe_disk()}  {reason}")
    return total, failed


def _say_failed(state: KeptConversation, exc: BaseException) -> None:
    what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    where = getattr(exc, "filename", None) or state.path
    print(
        f"omnigent-agy: could not remove {state.key}: {what} ({where}). Check that you own "
        f"{state.path} and everything in it and that the disk is writable, then run "
        f"`omnigent-agy prune {state.key} --yes` again.",
        file=sys.stderr,
    )


def _prune(args: argparse.Namespace) -> int:
    # Imported here, as for ps: psutil and libtmux.
    from omnigent_agy.agy.retention import conversations, size  # noqa: PLC0415
    from omnigent_agy.agy.running_agys import now  # noqa: PLC0415

    if args.conversation and (args.all or args.older_than):
        print("omnigent-agy: name conversations, or --all, or --older-than", file=sys.stderr)
        return EXIT_USAGE
    policy = load_config(config_path(args)).keep
    found = {c.key: c for c in conversations()}
    unknown = sorted(set(args.conversation) - set(found))
    for key in unknown:
        print(
            f"omnigent-agy: no private state for {key!r} (see `omnigent-agy ps`)", file=sys.stderr
        )
    try:
        chosen = _chosen(args, found, policy, now())
    except ConfigError as exc:
        print(f"omnigent-agy: {exc}", file=sys.stderr)
        return EXIT_USAGE
    total, failed = _remove(chosen, really=args.yes)
    count = f"{len(chosen) - failed} conversation(s), {size(total)}"
    if not chosen:
        print("nothing to remove" + ("" if args.all else " (--all, --older-than or keys: more)"))
    elif not args.yes:
        print(f"{count} would be removed: run again with --yes to remove them")
    else:
        failures = f"; {failed} could not be removed (see above)" if failed else ""
        print(f"removed {count}{failures}")
    return EXIT_FAILED if unknown or failed else EXIT_OK


def add_prune(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "prune",
        help="remove conversations' private state (shows what it would remove; --yes does it)",
        description=DESCRIPTION,
    )
    parser.add_argument("conversation", nargs="*", help="keys as `omnigent-agy ps` prints them")
    parser.add_argument("--all", action="store_true", help="every conversation's")
    parser.add_argument(
        "--older-than", metavar="DURATION", help="also those unused this long (e.g. 7d, 12h)"
    )
    parser.add_argument("--yes", action="store_true", help="remove them (default: only show)")
    parser.set_defaults(handler=_prune)
