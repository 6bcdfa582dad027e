"""``omnigent-agy enable|disable|config|agent-path``: offer the harness, show its settings."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path

from omnigent_agy.cli.common import EXIT_OK, Subparsers, config_path
from omnigent_agy.config.config_file import set_enabled
from omnigent_agy.config.executable import resolve_executable
from omnigent_agy.config.settings import ENV_ENABLED, AgyConfig, load_config
from omnigent_agy.constants import ENV_PATH, KEY
from omnigent_agy.errors import AgyNotFoundError
from omnigent_agy.models.catalog import FAMILY_ALIASES
from omnigent_agy.plugins import get_plugin_manager, model_aliases

AGENT_PACKAGE = "omnigent.community.harness.agy"
# An agent folder, not a single-file YAML: omnigent 0.19 keeps an agent's `description:` (the
# web picker's subtitle) only from a folder's config.yaml.
AGENT_FOLDER = "agent"


def agent_folder_path() -> Path:
    """The shipped agent folder (package data of the adapter; its spec is `config.yaml`)."""
    return Path(str(resources.files(AGENT_PACKAGE).joinpath(AGENT_FOLDER)))


def registered_agent_folder() -> Path:
    """The agent folder to register: the shipped one with this install's absolute path of
    `omnigent-agy` in its `agy` terminal (config/agent_folder.py), written out now."""
    from omnigent_agy.config.agent_folder import render_agent_folder  # noqa: PLC0415

    return render_agent_folder(agent_folder_path())


def _enable(args: argparse.Namespace, *, enabled: bool) -> int:
    change = set_enabled(config_path(args), enabled)
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
        print(f'then register its agent: omnigent agent add "{registered_agent_folder()}"')
    return EXIT_OK


def add_enable(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("enable", help="offer the agy-cli harness to omnigent")
    parser.set_defaults(handler=lambda args: _enable(args, enabled=True))


def add_disable(subparsers: Subparsers) -> None:
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
    config = load_config(config_path(args))
    print("\n".join(describe(config)))
    if os.environ.get(ENV_PATH, "").strip():
        print(f"({ENV_PATH} is set and takes precedence over {KEY}.command)")
    return EXIT_OK


def add_config(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("config", help="print the effective configuration")
    parser.set_defaults(handler=_show_config)


def _show_agent_path(args: argparse.Namespace) -> int:
    del args
    print(registered_agent_folder())
    return EXIT_OK


def add_agent_path(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "agent-path",
        help="write the agent folder for this install and print its path "
        "(for `omnigent agent add`)",
    )
    parser.set_defaults(handler=_show_agent_path)
