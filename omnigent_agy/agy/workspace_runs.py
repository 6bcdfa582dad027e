"""What trusting a workspace lets agy run, as a person is shown it and as the trust keeps it.

agy reads two files of a trusted workspace that make it run commands of the repository's
choosing (docs/wire.md §9): ``.agents/mcp_config.json`` (each stdio MCP server's command
starts with agy; a remote one's ``serverUrl`` is connected to) and ``.agents/hooks.json``
(hooks run at agy's events; `hooks_file`). :func:`workspace_runs` reads both into
:class:`RunsEntry` values, each shown by :meth:`RunsEntry.line` **what would run first and in
full**, then the name, both escaped and quoted (`shown`): a long name cannot push the command
out of sight, and no character of either can pass for the card's own words. A file that cannot
be read says so, with its text.

The digest is over both files' bytes exactly; the trust a person gives on a card keeps it with
the entries it covered (:meth:`WorkspaceRuns.record`), so different contents ask again, naming
what changed (:func:`changes`). Rules (``.agents/rules/*.md``) are text for the model, not
commands: agy still asks before running anything they suggest, so they are not covered.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.hooks_file import read_hooks
from omnigent_agy.agy.shown import quoted, visible

__all__ = [
    "RUN_FILES",
    "WORKSPACE_HOOKS",
    "WORKSPACE_MCP_CONFIG",
    "RunsEntry",
    "WorkspaceRuns",
    "changes",
    "workspace_runs",
]

WORKSPACE_MCP_CONFIG: Final = Path(".agents") / "mcp_config.json"
WORKSPACE_HOOKS: Final = Path(".agents") / "hooks.json"
RUN_FILES: Final = (WORKSPACE_MCP_CONFIG, WORKSPACE_HOOKS)
_MAX_FILE_BYTES: Final = 256 * 1024
_MAX_RAW_SHOWN: Final = 4000  # of a file agy cannot read either; the rest is counted


@dataclass(frozen=True, slots=True)
class RunsEntry:
    """One thing the workspace would make agy run: its kind (``MCP server``, ``remote MCP
    server``, ``hook``), its name (a server's name, a hook's event and matcher) and the command
    line (or URL) in full, as found."""

    kind: str
    name: str
    runs: str

    def line(self) -> str:
        verb = "connects to" if self.kind.startswith("remote") else "runs"
        return f"{verb} {quoted(self.runs)} — {self.kind} {quoted(self.name)}"

    def key(self) -> tuple[str, str]:
        return self.kind, self.name


@dataclass(frozen=True, slots=True)
class WorkspaceRuns:
    """What a workspace's files would make agy run, what could not be read, and a digest of
    the files as they are."""

    entries: tuple[RunsEntry, ...]
    unreadable: tuple[str, ...]
    digest: str

    def lines(self) -> tuple[str, ...]:
        """One line each: the entries (command first), then what could not be read."""
        return tuple(entry.line() for entry in self.entries) + self.unreadable

    def record(self) -> dict[str, Any]:
        """What a person's yes covered, kept with it in the store."""
        covers = [[entry.kind, entry.name, entry.runs] for entry in self.entries]
        return {"digest": self.digest, "covers": covers}


def _server_entry(name: str, spec: object) -> RunsEntry | str:
    entry = spec if isinstance(spec, Mapping) else {}
    command, url = entry.get("command"), entry.get("serverUrl")
    if isinstance(command, str):
        args = entry.get("args")
        words = (
            [arg if isinstance(arg, str) else json.dumps(arg) for arg in args or []]
            if (isinstance(args, list))
            else []
        )
        env = entry.get("env")
        settings = (
            [f"{key}={value}" for key, value in env.items()] if isinstance(env, Mapping) else []
        )
        line = shlex.join([*(["env", *settings] if settings else []), command, *words])
        return RunsEntry("MCP server", name, line)
    if isinstance(url, str):
        return RunsEntry("remote MCP server", name, url)
    text = json.dumps(spec, ensure_ascii=False)
    return f"MCP server {quoted(name)} that the plugin cannot read: {visible(text)}"


def _raw(path: Path, data: bytes, why: str) -> str:
    text = data.decode("utf-8", errors="surrogateescape")
    more = len(text) - _MAX_RAW_SHOWN
    shown = visible(text[:_MAX_RAW_SHOWN]) + (f"… ({more} more characters)" if more > 0 else "")
    return f"{path} {why}; its text: {shown}"


def _mcp(data: bytes) -> tuple[list[RunsEntry], list[str]]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return [], [_raw(WORKSPACE_MCP_CONFIG, data, "is not JSON the plugin can read")]
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        if document in ({}, None) or (isinstance(document, dict) and "mcpServers" not in document):
            return [], []
        return [], [_raw(WORKSPACE_MCP_CONFIG, data, "has no readable mcpServers object")]
    entries: list[RunsEntry] = []
    notes: list[str] = []
    for name, spec in servers.items():
        found = _server_entry(str(name), spec)
        (entries if isinstance(found, RunsEntry) else notes).append(found)  # type: ignore[arg-type]
    return entries, notes


def _hooks(data: bytes) -> tuple[list[RunsEntry], list[str]]:
    try:
        reading = read_hooks(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return [], [_raw(WORKSPACE_HOOKS, data, "is not JSON the plugin can read")]
    entries = [
        RunsEntry("hook", hook.event + (f" ({hook.matcher})" if hook.matcher else ""), hook.command)
        for hook in reading.hooks
    ]
    notes = [
        f"{WORKSPACE_HOOKS} holds what the plugin cannot read as hooks: {visible(text)}"
        for text in reading.unreadable
    ]
    return entries, notes


def _read(path: Path) -> bytes | str | None:
    """The file's bytes, None when absent, or why it cannot be read."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if len(data) > _MAX_FILE_BYTES:
        return f"is larger than {_MAX_FILE_BYTES} bytes"
    return data


def workspace_runs(workspace: Path) -> WorkspaceRuns:
    """What trusting ``workspace`` would let agy run, read now."""
    digest = hashlib.sha256()
    entries: list[RunsEntry] = []
    notes: list[str] = []
    for relative, parse in ((WORKSPACE_MCP_CONFIG, _mcp), (WORKSPACE_HOOKS, _hooks)):
        found = _read(workspace / relative)
        digest.update(f"{relative}\0".encode())
        if isinstance(found, bytes):
            digest.update(b"%d\0" % len(found) + found)
            more, unread = parse(found)
            entries += more
            notes += unread
        else:
            digest.update(b"absent\0" if found is None else b"unreadable\0")
            if found is not None:
                notes.append(f"{relative} {found}: the plugin cannot say what it would run")
    return WorkspaceRuns(tuple(entries), tuple(notes), digest.hexdigest())


def changes(covered: Sequence[Sequence[str]], now: WorkspaceRuns) -> tuple[str, ...]:
    """What differs between the entries a yes covered and those found now, one line each."""
    before: dict[tuple[str, str], list[str]] = {}
    for item in covered:
        if len(item) == 3 and all(isinstance(part, str) for part in item):
            before.setdefault((item[0], item[1]), []).append(item[2])
    after: dict[tuple[str, str], list[str]] = {}
    for entry in now.entries:
        after.setdefault(entry.key(), []).append(entry.runs)
    lines = []
    for key in sorted(before.keys() | after.keys()):
        was, found = before.get(key, []), after.get(key, [])
        kind, name = key
        if was and found and len(was) == len(found) == 1 and was != found:
            runs_now = RunsEntry(kind, name, found[0]).line()
            lines.append(f"changed: {runs_now}, instead of {quoted(was[0])}")
            continue
        lines += [
            f"added: {RunsEntry(kind, name, runs).line()}" for runs in found if runs not in was
        ]
        lines += [
            f"removed: {RunsEntry(kind, name, runs).line()}" for runs in was if runs not in found
        ]
    return tuple(lines)
