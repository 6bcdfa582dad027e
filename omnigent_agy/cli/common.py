"""What every subcommand module shares: exit statuses, the handler type, the config file, a
subcommand with a long description, and a report printed where its status says."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omnigent_agy.config.settings import default_config_path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]
# What a module's `add(subparsers)` receives: argparse's private type, named once here.
type Subparsers = argparse._SubParsersAction[Any]


def config_path(args: argparse.Namespace) -> Path:
    """The omnigent config file `--config` names, else the default one."""
    path = getattr(args, "config", None)
    return Path(path).expanduser() if path else default_config_path()


def add_described(
    subparsers: Subparsers, name: str, *, summary: str, description: str
) -> argparse.ArgumentParser:
    """The parser of subcommand `name`, its `--help` showing `description` as written."""
    return subparsers.add_parser(  # type: ignore[no-any-return]
        name,
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def report(status: int, lines: Sequence[str]) -> int:
    """Print a command's report (stdout when it went well, else stderr); its status."""
    print("\n".join(lines), file=sys.stdout if status == EXIT_OK else sys.stderr)
    return status
