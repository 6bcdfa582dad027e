"""User configuration: the enable flag, the agy executable's name, the permission policy and
how long agy is kept running (the sweep's limits). Which agy that name resolves to is
``executable``'s; writing the enable flag into the file is ``config_file``'s.

Everything lives under ``harness.agy-cli`` in omnigent's own user config file
(``~/.omnigent/config.yaml``, or ``$OMNIGENT_CONFIG_HOME/config.yaml`` as omnigent reads
it). omnigent itself reads ``command`` and ``args`` from that same mapping and ignores
the rest, so the two never disagree about the executable. The schema and the precedence
of environment variables are in docs/configuration.md.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.mcp_selection import McpSelection
from omnigent_agy.agy.statedir import STATE_DIR_ENV
from omnigent_agy.agy.trust_store import WorkspacePattern, operator_patterns
from omnigent_agy.constants import ENV_PATH, HARNESS_ID, KEY
from omnigent_agy.errors import ConfigError, InvalidRuleError
from omnigent_agy.interactions.policy import PermissionMode, PermissionPolicy, Rule, parse_rule

ENV_ENABLED = "OMNIGENT_AGY_CLI_ENABLED"
ENV_CONFIG_HOME = "OMNIGENT_CONFIG_HOME"
ENV_IDLE_STOP_AFTER = "OMNIGENT_AGY_CLI_IDLE_STOP_AFTER"
ENV_MAX_KEPT = "OMNIGENT_AGY_CLI_MAX_KEPT"
ENV_RETENTION = "OMNIGENT_AGY_CLI_RETENTION"
# Folders added to harness.agy-cli.trusted_workspaces, separated by os.pathsep.
ENV_TRUSTED_WORKSPACES = "OMNIGENT_AGY_TRUSTED_WORKSPACES"
_KNOWN_KEYS = (
    "enabled",
    "command",
    "args",
    "keep_agy_running",
    "idle_stop_after",
    "max_kept",
    "retention",
    "tmux_socket",
    "permissions",
    "gemini_home",
    "mcp_servers",
    "omnigent_tools",
    "trusted_workspaces",
)
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_TMUX_SOCKET = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PERMISSION_KEYS = ("mode", "allow", "deny")


@dataclass(frozen=True, slots=True)
class AgyConfig:
    """The effective configuration; ``enabled_source`` names where the flag came from."""

    path: Path
    enabled: bool = False
    enabled_source: str = "default"
    command: str | None = None
    args: tuple[str, ...] = ()
    keep_agy_running: bool = True
    keep: KeepPolicy = field(default_factory=KeepPolicy)
    """How long and how many idle agys are kept running (`idle_stop_after`, `max_kept`)."""
    tmux_socket: str | None = None
    """The tmux socket name (`tmux -L NAME`) agy runs under; None: the default."""
    permissions: PermissionPolicy = field(default_factory=PermissionPolicy)
    gemini_home: str | None = None
    """The person's gemini dir each conversation's private one is seeded from (docs/wire.md §1b)."""
    mcp_servers: McpSelection = field(default_factory=McpSelection)
    """Which of the person's MCP servers agy gets (an agent's own selection wins)."""
    omnigent_tools: bool = True
    """omnigent's own tools reach agy through the plugin's MCP relay."""
    trusted_workspaces: tuple[WorkspacePattern, ...] = ()
    """Folders the operator trusts for agy (docs/decisions.md §11); others are asked about."""


def default_config_path(env: Mapping[str, str] | None = None) -> Path:
    """omnigent's user config file, resolved now (not at import) so HOME can change."""
    env = os.environ if env is None else env
    if config_home := env.get(ENV_CONFIG_HOME):
        return Path(config_home) / "config.yaml"
    return Path.home() / ".omnigent" / "config.yaml"


def read_config_file(path: Path) -> dict[str, object]:
    """The whole YAML document as a mapping; an absent or empty file is ``{}``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    return document


def _section(document: Mapping[str, object]) -> Mapping[str, object]:
    # omnigent also accepts ``harness: <default id>`` (a scalar); then we have no block.
    harness = document.get("harness")
    if not isinstance(harness, dict):
        return {}
    section = harness.get(HARNESS_ID)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(
            f"{KEY} must be a mapping (e.g. 'enabled: true'), not {type(section).__name__}",
            key=KEY,
        )
    return section


def _bool(section: Mapping[str, object], name: str, default: bool) -> bool:
    value = section.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{KEY}.{name} must be true or false, not {value!r}", key=f"{KEY}.{name}")
    return value


def _env_flag(env: Mapping[str, str]) -> bool | None:
    raw = env.get(ENV_ENABLED, "").strip()
    if not raw:
        return None
    if raw in ("1", "0"):
        return raw == "1"
    raise ConfigError(
        f"{ENV_ENABLED}={raw!r} is not understood; set it to 1 (enable) or 0 (disable), "
        "or unset it to use the config file",
        key=ENV_ENABLED,
    )


def parse_duration(value: object, key: str) -> float | None:
    """``30m``, ``2h``, ``1h30m``, ``90s``, ``30d`` → seconds; ``0`` → None (never)."""
    text = str(value).strip() if isinstance(value, str | int) and value is not True else ""
    if text == "0":
        return None
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        raise ConfigError(
            f"{key} must be a duration such as 30m, 2h, 1h30m or 30d (or 0 for never), "
            f"not {value!r}",
            key=key,
        )
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds
    return float(total) if total else None


def _count(value: object, key: str) -> int | None:
    """A whole number ≥ 0 (YAML int or env text); ``0`` → None (no cap)."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.isdigit():
        text = int(text)
    if isinstance(text, bool) or not isinstance(text, int) or text < 0:
        raise ConfigError(
            f"{key} must be a whole number of agys (0 for no cap), not {value!r}", key=key
        )
    return text or None


def _keep_policy(section: Mapping[str, object], env: Mapping[str, str]) -> KeepPolicy:
    defaults = KeepPolicy()
    idle: float | None = defaults.idle_stop_after
    cap: int | None = defaults.max_kept
    if "idle_stop_after" in section:
        idle = parse_duration(section["idle_stop_after"], f"{KEY}.idle_stop_after")
    if "max_kept" in section:
        cap = _count(section["max_kept"], f"{KEY}.max_kept")
    if env.get(ENV_IDLE_STOP_AFTER, "").strip():
        idle = parse_duration(env[ENV_IDLE_STOP_AFTER], ENV_IDLE_STOP_AFTER)
    if env.get(ENV_MAX_KEPT, "").strip():
        cap = _count(env[ENV_MAX_KEPT], ENV_MAX_KEPT)
    retention: float | None = defaults.retention
    if "retention" in section:
        retention = parse_duration(section["retention"], f"{KEY}.retention")
    if env.get(ENV_RETENTION, "").strip():
        retention = parse_duration(env[ENV_RETENTION], ENV_RETENTION)
    return KeepPolicy(idle_stop_after=idle, max_kept=cap, retention=retention)


def _rules(permissions: Mapping[str, object], name: str) -> tuple[Rule, ...]:
    key = f"{KEY}.permissions.{name}"
    texts = permissions.get(name, [])
    if texts is None:
        return ()
    if not isinstance(texts, list):
        raise ConfigError(f"{key} must be a list of rules like 'command(git status)'", key=key)
    rules: list[Rule] = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"{key}[{index}] must be a string, not {text!r}", key=key)
        try:
            rules.append(parse_rule(text))
        except InvalidRuleError as exc:
            raise ConfigError(f"{key}[{index}]: {exc}", key=f"{key}[{index}]") from exc
    return tuple(rules)


def _permissions(section: Mapping[str, object]) -> PermissionPolicy:
    raw = section.get("permissions")
    if raw is None:
        return PermissionPolicy()
    key = f"{KEY}.permissions"
    if not isinstance(raw, dict):
        raise ConfigError(f"{key} must be a mapping with mode, allow and deny", key=key)
    _reject_unknown(raw, _PERMISSION_KEYS, key)
    mode_text = raw.get("mode", PermissionMode.ASK.value)
    try:
        mode = PermissionMode(mode_text)
    except ValueError:
        modes = ", ".join(mode.value for mode in PermissionMode)
        raise ConfigError(
            f"{key}.mode {mode_text!r} is not a mode; use one of {modes}", key=f"{key}.mode"
        ) from None
    return PermissionPolicy(mode, _rules(raw, "allow"), _rules(raw, "deny"))


def _reject_unknown(mapping: Mapping[str, object], known: tuple[str, ...], key: str) -> None:
    for name in mapping:
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            raise ConfigError(f"{key}.{name} is not a setting; {hint}", key=f"{key}.{name}")


def parse_config(
    document: Mapping[str, object], *, path: Path, env: Mapping[str, str] | None = None
) -> AgyConfig:
    """Validate the ``harness.agy-cli`` block of ``document`` and apply the environment."""
    env = os.environ if env is None else env
    section = _section(document)
    _reject_unknown(section, _KNOWN_KEYS, KEY)
    enabled, source = (
        _bool(section, "enabled", False),
        "file" if "enabled" in section else "default",
    )
    flag = _env_flag(env)
    if flag is not None:
        enabled, source = flag, ENV_ENABLED
    command = section.get("command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError(f"{KEY}.command must be a path or a name on PATH", key=f"{KEY}.command")
    if command is not None:
        check_not_relative(command.strip(), f"{KEY}.command")
    if override := env.get(ENV_PATH, "").strip():
        check_not_relative(override, ENV_PATH)
    args = section.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ConfigError(f"{KEY}.args must be a list of strings", key=f"{KEY}.args")
    socket = section.get("tmux_socket")
    if socket is not None and (not isinstance(socket, str) or not _TMUX_SOCKET.fullmatch(socket)):
        raise ConfigError(
            f"{KEY}.tmux_socket must be a socket name of letters, digits, '.', '_' or '-' "
            f"(as in `tmux -L NAME`), not {socket!r}",
            key=f"{KEY}.tmux_socket",
        )
    gemini_home = section.get("gemini_home")
    if gemini_home is not None and (not isinstance(gemini_home, str) or not gemini_home.strip()):
        raise ConfigError(
            f"{KEY}.gemini_home must be the path of your gemini dir (default ~/.gemini)",
            key=f"{KEY}.gemini_home",
        )
    _check_absolute_folders(gemini_home, env)
    try:
        selection = McpSelection.parse(section.get("mcp_servers"), key=f"{KEY}.mcp_servers")
    except ValueError as exc:
        raise ConfigError(str(exc), key=f"{KEY}.mcp_servers") from None
    return AgyConfig(
        trusted_workspaces=_trusted_workspaces(section, env),
        path=path,
        enabled=enabled,
        enabled_source=source,
        command=command.strip() if command else None,
        args=tuple(args),
        keep_agy_running=_bool(section, "keep_agy_running", True),
        keep=_keep_policy(section, env),
        tmux_socket=socket,
        permissions=_permissions(section),
        gemini_home=gemini_home.strip() if gemini_home else None,
        mcp_servers=selection,
        omnigent_tools=_bool(section, "omnigent_tools", True),
    )


def _trusted_workspaces(
    section: Mapping[str, object], env: Mapping[str, str]
) -> tuple[WorkspacePattern, ...]:
    """The operator's trusted folders: the key's list, then the variable's (added to it)."""
    key = f"{KEY}.trusted_workspaces"
    extra = [part for part in env.get(ENV_TRUSTED_WORKSPACES, "").split(os.pathsep) if part]
    patterns: list[WorkspacePattern] = []
    sources = ((key, section.get("trusted_workspaces") or []), (ENV_TRUSTED_WORKSPACES, extra))
    for name, values in sources:
        try:
            patterns += operator_patterns(values, key=name)
        except ValueError as exc:
            raise ConfigError(str(exc), key=name) from None
    return tuple(patterns)


def load_config(path: Path | None = None, *, env: Mapping[str, str] | None = None) -> AgyConfig:
    """Read and validate the configuration; raises ``ConfigError`` naming the bad key."""
    path = path or default_config_path(env)
    return parse_config(read_config_file(path), path=path, env=env)


def check_not_relative(value: str, key: str) -> None:
    """A relative path means another file in each process that reads it: ``omnigent host``
    and the harness process it spawns start in different folders (the harness in the
    session's workspace), so the host would find an agy the turn cannot."""
    if os.sep in value and not os.path.isabs(value) and not value.startswith("~"):
        raise ConfigError(
            f"{key} is {value!r}, a relative path; give agy's absolute path (or one under ~), "
            "or a name to look up on PATH",
            key=key,
        )


def _check_absolute_folders(gemini_home: object, env: Mapping[str, str]) -> None:
    """The person's gemini dir and the plugin's state folder must be absolute (or under ~):
    a relative one names another folder in `omnigent host` than in the harness process it
    spawns (started in the session's workspace), so the host's checks and sweeps and the
    turn would each use their own, and agy ignores a relative ``--gemini_dir`` (docs/wire.md
    §9) for the person's own ``~/.gemini``."""
    given = (
        (f"{KEY}.gemini_home", gemini_home if isinstance(gemini_home, str) else ""),
        (GEMINI_HOME_ENV, env.get(GEMINI_HOME_ENV, "")),
        (STATE_DIR_ENV, env.get(STATE_DIR_ENV, "")),
    )
    for key, raw in given:
        value = raw.strip()
        if value and not value.startswith("~") and not os.path.isabs(value):
            raise ConfigError(
                f"{key} is {value!r}, a relative path; give an absolute path (or one under ~), "
                "or unset it for the default",
                key=key,
            )
