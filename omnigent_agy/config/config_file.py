"""Writing omnigent's config file: ``omnigent-agy enable|disable`` set
``harness.agy-cli.enabled`` and keep everything else the file holds."""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from omnigent_agy.config.settings import read_config_file
from omnigent_agy.constants import HARNESS_ID, KEY
from omnigent_agy.errors import ConfigError


@dataclass(frozen=True, slots=True)
class EnableChange:
    path: Path
    before: bool | None
    after: bool
    backup: Path | None = None


def set_enabled(path: Path, enabled: bool) -> EnableChange:
    """Write ``harness.agy-cli.enabled`` keeping every other key of the file.

    The file is rewritten atomically with its permissions kept (new files are 0600).
    PyYAML does not keep comments, so a file that had any is first copied to ``.bak``.
    """
    document = read_config_file(path)
    harness = _harness_mapping(document.get("harness"), path)
    section = harness.get(HARNESS_ID)
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError(f"{KEY} must be a mapping; fix it before enabling", key=KEY)
    before = section.get("enabled")
    section["enabled"] = enabled
    harness[HARNESS_ID] = section
    document["harness"] = harness
    backup = _backup_if_commented(path)
    _write_atomically(path, yaml.safe_dump(document, default_flow_style=False, sort_keys=False))
    return EnableChange(path, before if isinstance(before, bool) else None, enabled, backup)


def _harness_mapping(harness: object, path: Path) -> dict[str, object]:
    if isinstance(harness, str):
        # omnigent's scalar form names the default harness; keep it as ``default``.
        return {"default": harness}
    if harness is None:
        return {}
    if not isinstance(harness, dict):
        raise ConfigError(
            f"{path}: 'harness' must be a mapping; fix it before enabling", key="harness"
        )
    return harness


def _backup_if_commented(path: Path) -> Path | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if not any(line.lstrip().startswith("#") or " #" in line for line in text.splitlines()):
        return None
    backup = path.with_name(path.name + ".bak")
    _write_atomically(backup, text, mode_from=path)
    return backup


def _write_atomically(path: Path, text: str, *, mode_from: Path | None = None) -> None:
    try:
        mode = stat.S_IMODE((mode_from or path).stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
