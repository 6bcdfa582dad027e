"""``omnigent-agy conversations [open ID]``: the person's own agy conversations, and going
on with one in omnigent (cli/own_conversations.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from omnigent_agy.cli.common import Subparsers, config_path, report
from omnigent_agy.config.settings import load_config, read_config_file


def _server(args: argparse.Namespace) -> str:
    """--server, else the `server` key of omnigent's config, else omnigent's local server."""
    from omnigent_agy.cli.omnigent_api import DEFAULT_SERVER  # noqa: PLC0415 - httpx

    if args.server:
        return str(args.server)
    configured = read_config_file(config_path(args)).get("server")
    return (
        configured.strip()
        if isinstance(configured, str) and configured.strip()
        else (DEFAULT_SERVER)
    )


def _conversations(args: argparse.Namespace) -> int:
    from omnigent_agy.cli import own_conversations as own  # noqa: PLC0415 - httpx

    config = load_config(config_path(args))
    if args.action is None:
        status, lines = own.list_conversations(config, os.environ, limit=args.limit)
    else:
        request = own.OpenRequest(
            wanted=args.id,
            server=_server(args),
            host=args.host,
            workspace=Path(args.workspace).expanduser().absolute() if args.workspace else None,
            agent=args.agent,
            again=args.again,
        )
        status, lines = own.open_conversation(config, os.environ, request)
    return report(status, lines)


def add_conversations(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "conversations",
        help="list your own agy conversations (title, workspace, last change), or open one in "
        "omnigent to go on with it there",
    )
    parser.add_argument("--limit", type=int, default=30, help="list at most N (default 30)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    opening = actions.add_parser(
        "open",
        help="open that conversation in a new omnigent session (agy goes on with a private "
        "copy of it) and print the session's URL",
    )
    opening.add_argument("id", metavar="ID", help="the conversation's id (or its first letters)")
    opening.add_argument(
        "--server",
        metavar="URL",
        help="omnigent's server (default: omnigent's config's "
        "`server`, else http://127.0.0.1:6767)",
    )
    opening.add_argument(
        "--host",
        metavar="HOST",
        help="the omnigent host on this machine, by id or name "
        "(needed when the server has several)",
    )
    opening.add_argument(
        "--workspace",
        metavar="FOLDER",
        help="the folder to work in (default: the conversation's own)",
    )
    opening.add_argument(
        "--agent", default="Antigravity-CLI", help="the omnigent agent (default: the shipped one)"
    )
    opening.add_argument(
        "--again",
        action="store_true",
        help="open another session even if one already goes on with this conversation",
    )
    parser.set_defaults(handler=_conversations)
