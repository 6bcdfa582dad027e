"""Which agy runs: ``OMNIGENT_AGY_CLI_PATH``, else ``harness.agy-cli.command``, else ``agy``
on PATH or where agy's installer puts it (docs/configuration.md). The host's readiness check,
the doctor, the probe and the turn all resolve it here, so they cannot disagree."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from omnigent_agy.config.settings import AgyConfig, check_not_relative
from omnigent_agy.constants import ENV_PATH, INSTALL_HINT, KEY
from omnigent_agy.errors import AgyNotFoundError

DEFAULT_EXECUTABLE = "agy"


def named_executable(config: AgyConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """Where the agy to run is named, and the name: ``OMNIGENT_AGY_CLI_PATH``, else
    ``harness.agy-cli.command``, else ``agy`` (looked up on PATH)."""
    override = env.get(ENV_PATH, "").strip()
    if override:
        return ENV_PATH, override
    if config.command:
        return f"{KEY}.command", config.command
    return "PATH", DEFAULT_EXECUTABLE


def installer_bin(env: Mapping[str, str]) -> Path:
    """``~/.local/bin``: where agy's installer puts agy, which a host started outside a login
    shell often lacks on its PATH (omnigent's own readiness check looks there too)."""
    home = env.get("HOME", "").strip()
    return (Path(home) if os.path.isabs(home) else Path.home()) / ".local" / "bin"


def _expand_home(value: str, env: Mapping[str, str]) -> str:
    # `~` from the environment the agy is resolved for, not this process's HOME.
    home = env.get("HOME", "")
    if home and (value == "~" or value.startswith("~/")):
        return home + value[1:]
    return os.path.expanduser(value)


def _executable_file(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def resolve_executable(config: AgyConfig, env: Mapping[str, str] | None = None) -> Path:
    """The agy to run, absolute: ``OMNIGENT_AGY_CLI_PATH``, else ``harness.agy-cli.command``,
    else ``agy``. A path is used as it is; a name is looked up on PATH (its absolute folders:
    a relative one is another folder in each process), then in :func:`installer_bin`.

    Raises :class:`AgyNotFoundError`, whose ``looked_last`` is the absolute path checked
    last, or :class:`ConfigError` for a relative path."""
    env = os.environ if env is None else env
    source, value = named_executable(config, env)
    check_not_relative(value, source)
    # An explicit choice that does not resolve is an error, never a silent fall back
    # to another agy: the user asked for that binary (e.g. the simulator).
    if os.sep in value:
        candidate = Path(_expand_home(value, env))
        if _executable_file(candidate):
            return candidate.absolute()
        looked_last = candidate
    else:
        folders = env.get("PATH", os.defpath).split(os.pathsep)
        search = os.pathsep.join(folder for folder in folders if os.path.isabs(folder))
        if found := shutil.which(value, path=search):
            return Path(found).absolute()
        looked_last = installer_bin(env) / value
        if _executable_file(looked_last):
            return looked_last
    if source == "PATH":
        raise AgyNotFoundError(
            f"agy (the Antigravity CLI) is not on PATH or in {looked_last.parent}",
            remediation=f"Install it with `{INSTALL_HINT}`, or set {ENV_PATH} or {KEY}.command "
            "to its path; then run `omnigent-agy doctor`",
            looked_last=looked_last,
        )
    raise AgyNotFoundError(
        f"{source} is {value!r}, which is not an executable file",
        remediation=f"Fix or unset {source}; `omnigent-agy config` shows what is in effect",
        looked_last=looked_last,
    )
