"""``omnigent-agy doctor``: check agy, its sign-in, tmux and the setup; say what to fix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omnigent_agy.cli.common import Subparsers, config_path


def _doctor(args: argparse.Namespace) -> int:
    # Imported here: the other commands need not load the launcher and httpx.
    from omnigent_agy.doctor import checkup as doctor  # noqa: PLC0415

    workspace = Path(args.workspace).expanduser().absolute() if args.workspace else Path.cwd()
    results = doctor.doctor_report(
        config_path(args), workspace, fix_instructions=args.fix_instructions
    )
    if args.json:
        print(doctor.render_json(results))
    else:
        encoding = getattr(sys.stdout, "encoding", None) or "ascii"
        try:
            "✓✗".encode(encoding)
            unicode = True
        except (UnicodeEncodeError, LookupError):
            unicode = False
        print(doctor.render(results, unicode=unicode))
    return doctor.exit_code(results)


def add_doctor(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check agy, its sign-in, tmux and the setup; say what to fix"
    )
    parser.add_argument(
        "--workspace", metavar="DIR", help="the project directory (default: the current one)"
    )
    parser.add_argument(
        "--fix-instructions",
        action="store_true",
        help="create AGENTS.md from CLAUDE.md when only CLAUDE.md exists (never overwrites)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_doctor)
