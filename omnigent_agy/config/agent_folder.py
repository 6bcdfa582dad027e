"""The shipped agent folder, written out for this install (`omnigent-agy agent-path`).

The agent's ``agy`` terminal (agy's own screen in omnigent's Terminal view, docs/in-omnigent.md)
runs ``omnigent-agy attach``. omnigent runs a declared terminal's command through a shell in
the host's environment, whose ``PATH`` need not name the folder this plugin was installed in
(a virtual environment, pipx), and copies the agent folder when it is registered. So the folder
a person registers is the shipped one with this install's command written in: a copy under the
user's data folder, written again (atomically) on every call.

That command is this install's interpreter, isolated (``python -I -m omnigent_agy.cli
attach``), not the ``omnigent-agy`` script: the terminal starts in a folder of omnigent's
choosing (a workspace), and a script's interpreter puts an empty or relative ``PYTHONPATH``
entry (``PYTHONPATH=":"``) on the module path as that folder, so a repository's own
``omnigent_agy`` package would run in the plugin's place. ``-I`` ignores ``PYTHONPATH`` and
the user site; the installed package (an editable install's finder too) is in site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from omnigent_agy.agy.statedir import write_private_file

__all__ = [
    "DATA_HOME_ENV",
    "TERMINAL",
    "attach_command",
    "render_agent_folder",
    "rendered_agent_folder",
]

#: Where the XDG spec puts a user's data, when it is set.
DATA_HOME_ENV: Final = "XDG_DATA_HOME"
#: The agent's terminal that shows agy's screen (its key under ``terminals:``).
TERMINAL: Final = "agy"
_SHIPPED_COMMAND: Final = "    command: omnigent-agy\n"
_CONFIG: Final = "config.yaml"


@dataclass(frozen=True, slots=True)
class AttachCommand:
    """How a terminal starts ``omnigent-agy attach`` with this install."""

    command: str
    args: tuple[str, ...]


def attach_command() -> AttachCommand:
    """This install's interpreter (a venv's, pipx's), isolated, running the CLI module's
    ``attach`` (see the module doc)."""
    python = str(Path(sys.executable).absolute())
    return AttachCommand(python, ("-I", "-m", "omnigent_agy.cli", "attach"))


def rendered_agent_folder() -> Path:
    """``$XDG_DATA_HOME/omnigent-agy/agent``, else ``~/.local/share/omnigent-agy/agent``."""
    data = os.environ.get(DATA_HOME_ENV)
    # The XDG spec says relative values are invalid and must be ignored.
    base = Path(data) if data and os.path.isabs(data) else Path.home() / ".local" / "share"
    return base / "omnigent-agy" / "agent"


def render_agent_folder(shipped: Path, target: Path | None = None) -> Path:
    """Write the shipped agent folder to ``target`` (default ``rendered_agent_folder()``)
    with this install's attach command; returns the folder."""
    target = target or rendered_agent_folder()
    text = (shipped / _CONFIG).read_text(encoding="utf-8")
    if text.count(_SHIPPED_COMMAND) != 1:
        raise ValueError(f"{shipped / _CONFIG} does not name the {TERMINAL} terminal's command")
    found = attach_command()
    rendered = text.replace(
        _SHIPPED_COMMAND,
        f"    command: {_scalar(found.command)}\n",
    ).replace("    args: [attach]\n", f"    args: {_flow(found.args)}\n")
    spec: Any = yaml.safe_load(rendered)
    terminal = spec["terminals"][TERMINAL]
    if terminal["command"] != found.command or tuple(terminal["args"]) != found.args:
        raise ValueError(f"could not write the attach command into {shipped / _CONFIG}")
    target.mkdir(parents=True, exist_ok=True)
    for item in shipped.iterdir():
        if item.name == _CONFIG or item.name.startswith((".", "__")):
            continue
        if item.is_dir():
            shutil.copytree(item, target / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, target / item.name)
    # Nothing secret in it, but written whole or not at all: omnigent may be reading it.
    write_private_file(target / _CONFIG, rendered, durable=False)
    return target


def _scalar(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar


def _flow(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_scalar(v) for v in values) + "]"
