"""Where agy-sim works, as agy decides it (docs/wire.md §9: public reports, not recordings).

- **The workspace as spelled.** agy tests the spelling of its workspace, so agy-sim reads it
  as a Go program's ``os.Getwd`` does: ``$PWD`` when that names the working folder (a shell's
  ``cd`` into a link leaves the link's path there), else ``getcwd()``, which resolves links.
  Which of the two agy reads is a **guess**; a link whose path has no dot works either way
  only through ``$PWD``, which is what the reports describe.
- **A hidden workspace is dropped.** A ``/.`` in that spelling makes agy log ``failed to add
  project resource folder … is hidden: ignore uri`` and work in its scratch folder instead:
  ``<gemini_dir>/antigravity-cli/scratch`` (**guess**: the reports name ``~/.gemini``'s,
  i.e. the default gemini dir's; the words around the path in the line are a guess too).
  With ``--sim-resolve-workspace-links`` the test is on the folder with its links resolved,
  so a dot-free link into a hidden folder is dropped too (no agy is known to; a switch to
  show what the plugin then says).
- **Trust is per exact spelling**: ``trustedWorkspaces`` is compared with that spelling, not
  with the folder it names (``gemini.GeminiDir``).
- **A trusted workspace brings MCP servers of its own**: ``.agents/mcp_config.json`` in the
  folder agy works in, ``mcpServers`` entries with ``command``/``args``/``env`` (stdio) or
  ``serverUrl`` (remote), started beside the person's only while the workspace is trusted
  (``mcp_host.McpHost``).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "HIDDEN_LINE",
    "WORKSPACE_MCP_CONFIG",
    "Workspace",
    "find_workspace",
    "spelled_cwd",
    "touch",
    "workspace_mcp_servers",
]

HIDDEN_LINE: Final = "failed to add project resource folder {uri}: {path} is hidden: ignore uri"
SCRATCH: Final = Path("antigravity-cli") / "scratch"
WORKSPACE_MCP_CONFIG: Final = Path(".agents") / "mcp_config.json"


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folder agy-sim was started in as spelled, and the one it works in."""

    spelled: Path
    folder: Path
    dropped: str = ""
    """agy's log line when the spelled workspace was dropped as hidden; "" otherwise."""


def spelled_cwd(environ: Mapping[str, str]) -> Path:
    """The working folder as spelled: ``$PWD`` when it names the working folder, else getcwd()."""
    pwd = environ.get("PWD", "")
    if pwd and os.path.isabs(pwd):
        try:
            if os.path.samefile(pwd, "."):
                return Path(pwd)
        except OSError:
            pass
    return Path.cwd()


def find_workspace(spelled: Path, gemini_dir: Path, *, resolve_links: bool = False) -> Workspace:
    """Where agy works when started in ``spelled``: there, or its scratch folder if hidden.

    ``resolve_links`` (``--sim-resolve-workspace-links``): the test reads the folder with its
    links resolved, so a dot-free link into a hidden folder is dropped as well — an agy that
    did so would defeat the plugin's link; whether any does is not known (§9)."""
    tested = os.path.realpath(spelled) if resolve_links else os.path.normpath(spelled)
    if "/." not in tested:
        return Workspace(spelled, spelled)
    scratch = gemini_dir / SCRATCH
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = HIDDEN_LINE.format(uri=spelled.as_uri(), path=spelled)
    return Workspace(spelled, scratch, dropped=line)


def workspace_mcp_servers(folder: Path) -> dict[str, Mapping[str, Any]]:
    """The servers of ``folder``'s ``.agents/mcp_config.json``; {} without a readable one."""
    try:
        config = json.loads((folder / WORKSPACE_MCP_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    if not isinstance(servers, dict):
        return {}
    return {str(name): spec for name, spec in servers.items() if isinstance(spec, Mapping)}


def touch(arguments: str, folder: Path) -> str:
    """``touch FILE…`` really run, in ``folder``: the one command agy-sim executes, so a test
    sees where agy's writes land (its workspace, or the scratch folder of a hidden one).
    Only plain relative names inside ``folder``; anything else is refused as touch would fail.
    """
    out = []
    for name in shlex.split(arguments):
        target = Path(os.path.normpath(folder / name))
        if os.path.isabs(name) or not target.is_relative_to(folder) or name.startswith("-"):
            out.append(f"touch: agy-sim only creates files inside its workspace: {name}\n")
            continue
        try:
            target.touch()
        except OSError as exc:
            out.append(f"touch: cannot touch '{name}': {exc.strerror}\n")
    return "".join(out)
