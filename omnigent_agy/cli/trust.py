"""``omnigent-agy trust``: the folders agy may work in without asking."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from omnigent_agy.cli.common import EXIT_USAGE, Subparsers, config_path, report
from omnigent_agy.config.settings import load_config


def _trust(args: argparse.Namespace) -> int:
    from omnigent_agy.cli import trust_command  # noqa: PLC0415 - as for doctor

    config = load_config(config_path(args))
    env = os.environ
    if args.folder is None:
        if args.forget:
            print("omnigent-agy: --forget needs a FOLDER", file=sys.stderr)
            return EXIT_USAGE
        status, lines = trust_command.list_trusted(config, env)
    elif args.forget:
        status, lines = trust_command.forget_folder(config, Path(args.folder), env)
    else:
        by = "`omnigent-agy trust`"
        status, lines = trust_command.trust_folder(config, Path(args.folder), env, by=by)
    return report(status, lines)


def add_trust(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "trust",
        help="list the folders agy may work in without asking, trust one (as the card's "
        "“Yes, I trust this folder” does), or --forget one",
    )
    parser.add_argument("folder", nargs="?", help="the folder (default: list what is trusted)")
    parser.add_argument(
        "--forget", action="store_true", help="forget your answer: the next session asks again"
    )
    parser.set_defaults(handler=_trust)
