"""``omnigent-agy attach``: a conversation's agy, its own screen, in this terminal."""

from __future__ import annotations

import argparse
import os
import sys

from omnigent_agy.cli.common import EXIT_USAGE, Subparsers, add_described, config_path
from omnigent_agy.config.settings import load_config

ATTACH_DESCRIPTION = """\
Show a conversation's agy, its own screen (agy's TUI), in this terminal: the `agy` terminal
of omnigent's Terminal view runs this. Typed keys go to agy (/clear, /model, its trust and
sign-in screens). Before the conversation's first message there is no agy: it says so and
attaches as soon as a message starts agy; it never starts agy itself. Closing it ends only
this view (docs/in-omnigent.md)."""


def _attach(args: argparse.Namespace) -> int:
    from omnigent_agy.agy import tmux_attach as attach  # noqa: PLC0415
    from omnigent_agy.agy import watchers  # noqa: PLC0415
    from omnigent_agy.constants import TMUX_SOCKET, TMUX_SOCKET_ENV  # noqa: PLC0415 - as for ps

    conversation = args.session or os.environ.get(watchers.TERMINAL_SESSION_ENV, "").strip()
    if not conversation:
        print(
            "omnigent-agy attach: which conversation? pass --session <omnigent session id> "
            f"(omnigent's Terminal view sets {watchers.TERMINAL_SESSION_ENV})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    socket = (
        os.environ.get(TMUX_SOCKET_ENV, "").strip()
        or load_config(config_path(args)).tmux_socket
        or TMUX_SOCKET
    )
    return attach.attach(conversation, socket=socket, out=sys.stdout)


def add_attach(subparsers: Subparsers) -> None:
    parser = add_described(
        subparsers,
        "attach",
        summary="a conversation's agy, its own screen, in this terminal (omnigent's Terminal view)",
        description=ATTACH_DESCRIPTION,
    )
    parser.add_argument(
        "--session",
        metavar="ID",
        help="the omnigent session (default: the one the Terminal view's pane belongs to)",
    )
    parser.set_defaults(handler=_attach)
