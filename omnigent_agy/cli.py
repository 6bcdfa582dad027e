"""``omnigent-agy``: enable or disable the harness and show the effective configuration.

Each subcommand is one ``_add_<name>(subparsers)`` function listed in ``COMMANDS``: it
adds its parser and sets ``handler`` to a function taking the parsed arguments and
returning the exit status. ``doctor`` and ``demo`` join the same way.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from omnigent_agy.interactions.hooks import get_plugin_manager, model_aliases
from omnigent_agy.onboarding.catalog import FAMILY_ALIASES
from omnigent_agy.onboarding.config import (
    ENV_ENABLED,
    ENV_PATH,
    KEY,
    AgyConfig,
    AgyNotFoundError,
    ConfigError,
    default_config_path,
    load_config,
    resolve_executable,
    set_enabled,
)
from omnigent_agy.rpc.errors import AgyError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

Handler = Callable[[argparse.Namespace], int]


def _config_path(args: argparse.Namespace) -> Path:
    path = getattr(args, "config", None)
    return Path(path).expanduser() if path else default_config_path()


def _enable(args: argparse.Namespace, *, enabled: bool) -> int:
    change = set_enabled(_config_path(args), enabled)
    word = "enabled" if enabled else "disabled"
    before = {None: "unset", True: "true", False: "false"}[change.before]
    print(f"{KEY}.enabled: {before} -> {str(enabled).lower()} in {change.path}")
    if change.backup is not None:
        print(f"comments are not kept when the file is rewritten; the old file is {change.backup}")
    override = os.environ.get(ENV_ENABLED, "").strip()
    if override and (override == "1") != enabled:
        print(f"note: {ENV_ENABLED}={override} is set and overrides the file", file=sys.stderr)
    print(f"omnigent-agy is {word}; restart `omnigent server` and `omnigent host` to apply it")
    if enabled:
        # omnigent's server refuses an agy-cli agent until it restarts with the plugin, and
        # keeps agents only in its database: the registration cannot happen here (README,
        # "Registering the agent").
        print(f'then register its agent: omnigent agent add "{agent_folder_path()}"')
    return EXIT_OK


def _add_enable(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser("enable", help="offer the agy-cli harness to omnigent")
    parser.set_defaults(handler=lambda args: _enable(args, enabled=True))


def _add_disable(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser("disable", help="stop offering the agy-cli harness")
    parser.set_defaults(handler=lambda args: _enable(args, enabled=False))


def describe(config: AgyConfig) -> list[str]:
    """The effective configuration as lines of text; nothing secret is in it."""
    try:
        executable = str(resolve_executable(config))
    except AgyNotFoundError as exc:
        executable = f"not found ({exc})"
    source = {"file": f"{KEY}.enabled", "default": "default"}.get(
        config.enabled_source, config.enabled_source
    )
    policy = config.permissions
    lines = [
        f"config file:       {config.path}",
        f"enabled:           {str(config.enabled).lower()} (from {source})",
        f"agy executable:    {executable}",
        f"agy arguments:     {' '.join(config.args) or '(none)'}",
        f"keep agy running:  {str(config.keep_agy_running).lower()}",
        f"kept agys:         {config.keep.describe()}",
        f"permission mode:   {policy.mode.value}",
        f"deny rules:        {', '.join(map(str, policy.deny)) or '(none)'}",
        f"allow rules:       {', '.join(map(str, policy.allow)) or '(none)'}",
    ]
    manager = get_plugin_manager()
    plugins = sorted(name for name, _ in manager.list_name_plugin() if name)
    aliases = {**dict.fromkeys(FAMILY_ALIASES, "(family)"), **model_aliases(manager)}
    lines.append(f"plugins:           {', '.join(plugins)}")
    lines.append("model aliases:     " + ", ".join(f"{a} -> {t}" for a, t in aliases.items()))
    return lines


def _show_config(args: argparse.Namespace) -> int:
    config = load_config(_config_path(args))
    print("\n".join(describe(config)))
    if os.environ.get(ENV_PATH, "").strip():
        print(f"({ENV_PATH} is set and takes precedence over {KEY}.command)")
    return EXIT_OK


def _add_config(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser("config", help="print the effective configuration")
    parser.set_defaults(handler=_show_config)


AGENT_PACKAGE = "omnigent.community.harness.agy"
# An agent folder, not a single-file YAML: omnigent 0.19 keeps an agent's `description:` (the
# web picker's subtitle) only from a folder's config.yaml.
AGENT_FOLDER = "agent"


def agent_folder_path() -> Path:
    """The shipped agent folder (package data of the adapter; its spec is `config.yaml`)."""
    return Path(str(resources.files(AGENT_PACKAGE).joinpath(AGENT_FOLDER)))


def _show_agent_path(args: argparse.Namespace) -> int:
    del args
    print(agent_folder_path())
    return EXIT_OK


def _add_agent_path(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "agent-path",
        help="print the path of the shipped agent folder (for `omnigent agent add`)",
    )
    parser.set_defaults(handler=_show_agent_path)


def _doctor(args: argparse.Namespace) -> int:
    # Imported here: the other commands need not load the launcher and httpx.
    from omnigent_agy.onboarding import doctor  # noqa: PLC0415

    workspace = Path(args.workspace).expanduser().absolute() if args.workspace else Path.cwd()
    results = doctor.doctor_report(
        _config_path(args), workspace, fix_instructions=args.fix_instructions
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


def _add_doctor(subparsers: argparse._SubParsersAction[Any]) -> None:
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


DEMO_DESCRIPTION = """\
Start omnigent's own server and host on this machine (127.0.0.1 only, in a private folder
removed afterwards) with omnigent-agy enabled and its agent registered, as the README's install
steps do. agy is yours when it is installed and signed in, else the bundled simulator agy-sim.

Without options it then plays a short scripted conversation through omnigent's API, as the web
UI sends it, and prints what the web UI shows: agy's thinking and answer as they stream, its tool
calls and their output, the cards it asks with their buttons and the one pressed, the tokens
each turn used, and the Stop button. With --interactive it prints the web UI's address to open
in a browser instead, and keeps omnigent and agy running until Ctrl-C."""


def _demo(args: argparse.Namespace) -> int:
    # Only this command needs the adapter, which lives under omnigent's namespace (imported by
    # name: the type checker sees its source folder, not the installed path).
    demo = importlib.import_module("omnigent.community.harness.agy.demo")
    return int(demo.run(interactive=args.interactive, simulator=args.simulator))


def _add_demo(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="omnigent with agy in it on this machine: a scripted conversation, or the web UI",
        description=DEMO_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="print the web UI's address and keep running until Ctrl-C, instead of the script",
    )
    parser.add_argument("--simulator", action="store_true", help="use agy-sim even if agy exists")
    parser.set_defaults(handler=_demo)


def _ps(args: argparse.Namespace) -> int:
    # Imported here, as for doctor: psutil, libtmux and httpx.
    from omnigent_agy.agy import running, sweep  # noqa: PLC0415
    from omnigent_agy.agy.keep import format_duration  # noqa: PLC0415

    policy = load_config(_config_path(args)).keep
    statuses = sweep.survey(policy)
    idle = [agy for agy in running.list_running() if not agy.alive]
    if not statuses and not idle:
        print("no agy is running for omnigent-agy")
    for status in statuses:
        print(status.describe())
    moment = running.now()
    for agy in idle:
        record = agy.record
        how = (
            f"stopped {format_duration(moment - record.stopped_at)} ago: {record.stopped_reason}"
            if record.stopped_at is not None
            else f"not running (pid {agy.pid} is gone)"
        )
        resumes = f"; the next turn resumes conversation {agy.cascade_id}" if agy.cascade_id else ""
        print(f"{agy.key}  {how}{resumes}")
    print(f"limits: {policy.describe()} (`omnigent-agy stop --idle` applies them now)")
    return 0


def _add_ps(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "ps", help="list the agys kept for conversations: idle time, memory, what stops them"
    )
    parser.set_defaults(handler=_ps)


def _stop(args: argparse.Namespace) -> int:
    from omnigent_agy.agy import running, sweep  # noqa: PLC0415 - as for ps

    if args.idle:
        if args.all or args.conversation:
            print("omnigent-agy: --idle takes no conversations and no --all", file=sys.stderr)
            return EXIT_USAGE
        policy = load_config(_config_path(args)).keep
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


def _add_stop(subparsers: argparse._SubParsersAction[Any]) -> None:
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


COMMANDS: tuple[Callable[[argparse._SubParsersAction[Any]], None], ...] = (
    _add_enable,
    _add_disable,
    _add_config,
    _add_agent_path,
    _add_doctor,
    _add_demo,
    _add_ps,
    _add_stop,
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


if __name__ == "__main__":
    sys.exit(main())
