"""``omnigent-agy``: enable or disable the harness, show the effective configuration, and
look after the agys it keeps.

The dispatcher only: each subcommand lives in a module of this package as an
``add_<name>(subparsers)`` function that adds its parser and sets ``handler`` to a function
taking the parsed arguments and returning the exit status (``common.EXIT_*``). To add a
subcommand, write its module (say ``cli/conversations.py`` with ``add_conversations``) and list
that function in ``COMMANDS`` below; tests/cli/test_cli.py names every subcommand. May import
every layer of the plugin but the adapter; a command that needs a heavy one (the launcher,
httpx) imports it inside its handler, so the others start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from omnigent_agy.cli import (
    attach,
    conversations,
    demo,
    doctor,
    enabling,
    probe,
    prune,
    running,
    trust,
)
from omnigent_agy.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Handler, Subparsers
from omnigent_agy.errors import AgyError, ConfigError

__all__ = ["COMMANDS", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    enabling.add_enable,
    enabling.add_disable,
    enabling.add_config,
    enabling.add_agent_path,
    doctor.add_doctor,
    demo.add_demo,
    running.add_ps,
    running.add_stop,
    prune.add_prune,
    probe.add_probe,
    attach.add_attach,
    trust.add_trust,
    conversations.add_conversations,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnigent-agy", description="Google's Antigravity CLI (agy) as an omnigent harness."
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="the omnigent config file (default: ~/.omnigent/config.yaml or "
        "$OMNIGENT_CONFIG_HOME/config.yaml)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        print(f"omnigent-agy: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AgyError as exc:
        print(f"omnigent-agy: {exc}", file=sys.stderr)
        return EXIT_FAILED
