"""``omnigent-agy probe``: check the person's agy against every wire fact the plugin uses."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from omnigent_agy.cli.common import Subparsers, add_described, config_path
from omnigent_agy.config.settings import load_config

PROBE_DESCRIPTION = """\
Check your own agy against every wire fact omnigent-agy relies on (docs/probe.md): agy's
version and release notes (agy changelog), process and log, TLS and HTTP versions, the CSRF
header, each method the plugin calls and the fields it reads, a workspace in a hidden folder
and a dot-free link to it, and, if you agree (each costs a turn of your quota), a short
streamed answer, a permission gate answered Deny, a question, a Stop, then /clear and a resumed
conversation. agy runs as the plugin runs it: a fresh token, a private folder seeded from your
~/.gemini, a scratch workspace the probe makes and removes. Prints a PASS/FAIL/SKIP/INFO table
and writes a redacted recording (no token, account or path of yours) to attach to a bug report.
Exits 1 when a fact the plugin relies on failed."""


def _probe(args: argparse.Namespace) -> int:
    # Imported here: the probe pulls in the launcher, the reader and httpx.
    import asyncio  # noqa: PLC0415
    import shutil  # noqa: PLC0415
    from datetime import UTC, datetime  # noqa: PLC0415

    from omnigent_agy.probe import consent, report, run  # noqa: PLC0415

    config = load_config(config_path(args))

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    choice = consent.choose(
        yes=args.yes,
        no_turns=args.no_turns,
        interactive=sys.stdin is not None and sys.stdin.isatty(),
        ask=input,
        say=say,
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    record = None if args.no_record else Path(args.record or f"agy-probe-{stamp}").absolute()
    settings = run.ProbeSettings(
        config=config,
        env=os.environ,
        turns=choice.turns,
        resume=choice.resume,
        declined=choice.declined,
        model=args.model,
        record=record,
    )
    result = asyncio.run(run.run_probe(settings, say))
    width = max(80, shutil.get_terminal_size((120, 24)).columns)
    print(report.render(result.executable, result.version, result.findings, width=width))
    if result.recording is not None:
        print(
            f"\nrecording: {result.recording} (redacted; attach it to a bug report, docs/probe.md)"
        )
    return report.exit_code(result.findings)


def add_probe(subparsers: Subparsers) -> None:
    parser = add_described(
        subparsers,
        "probe",
        summary="check your agy against every wire fact the plugin relies on; a redacted recording",
        description=PROBE_DESCRIPTION,
    )
    turns = parser.add_mutually_exclusive_group()
    turns.add_argument("--yes", action="store_true", help="spend every turn without asking")
    turns.add_argument("--no-turns", action="store_true", help="spend no turn (no model call)")
    parser.add_argument("--model", help="the model of the turns (default: agy's own default)")
    parser.add_argument(
        "--record", metavar="DIR", help="where to write the recording (default: ./agy-probe-<time>)"
    )
    parser.add_argument("--no-record", action="store_true", help="write no recording")
    parser.set_defaults(handler=_probe)
