"""Whether agy works in the folder it was given, said when it does not (docs/wire.md §9).

agy drops a workspace whose path has a hidden folder in it and works in its own scratch folder
instead, saying so only in its log: ``failed to add project resource folder … is hidden:
ignore uri``. The plugin gives agy a dot-free link to a hidden workspace (`agy.workspace`),
which the reports say agy takes — a guess until a probe shows it of each version. An agy that
drops the link too, or reports another folder as the conversation's workspace (its
``workspaceUris``), would answer every message from a folder with nothing of the person's in
it while reporting success. So each agy launched or re-attached is checked once, before any
message reaches it, and the turn ends with ``agy_workspace_ignored`` naming both folders.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from omnigent_agy.agy.workspace import AgyWorkspace
from omnigent_agy.errors import RpcError, WorkspaceIgnoredError
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.endpoint import FollowingClient

__all__ = [
    "check_workspace",
    "hidden_line",
    "ignored_workspace",
    "reported_folders",
]

# agy's words (§9); the words between are not reported exactly, so any text may stand there.
_HIDDEN_LINE: Final = re.compile(r"failed to add project resource folder .*is hidden: ignore uri")
_GLOG_HEADER: Final = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]\s]+\] ")
# The line comes at start-up: the head of the log is enough, however long agy has run.
_LOG_HEAD: Final = 1 << 20


async def check_workspace(
    client: FollowingClient, cascade_id: str, log_file: Path, where: AgyWorkspace
) -> WorkspaceIgnoredError | None:
    """Whether the agy of `log_file`, on conversation `cascade_id`, ignored its workspace."""
    line = await asyncio.to_thread(hidden_line, log_file)
    try:
        metadata = await client.run(lambda c: c.get_conversation_metadata(cascade_id))
    except RpcError:
        metadata = {}  # a conversation agy cannot describe: its log alone decides
    return ignored_workspace(where, log_line=line, reported=reported_folders(metadata))


def hidden_line(log_file: Path) -> str | None:
    """agy's line saying it ignored its workspace as hidden, from the head of its log."""
    try:
        with log_file.open("rb") as log:
            head = log.read(_LOG_HEAD).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _HIDDEN_LINE.search(head)
    if found is None:
        return None
    start = head.rfind("\n", 0, found.start()) + 1
    end = head.find("\n", found.end())
    line = head[start : end if end >= 0 else len(head)].strip()
    return _GLOG_HEADER.sub("", line)  # agy's words, without glog's time, pid and source


def reported_folders(metadata: Mapping[str, Any]) -> list[Path]:
    """The local folders of GetConversationMetadata's ``workspaceUris`` (file URIs only)."""
    uris = obj(metadata.get("metadata")).get("workspaceUris")
    folders = []
    for uri in uris if isinstance(uris, list) else []:
        parsed = urlparse(uri) if isinstance(uri, str) else None
        if parsed is not None and parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            folders.append(Path(unquote(parsed.path)))
    return folders


def ignored_workspace(
    where: AgyWorkspace, *, log_line: str | None, reported: list[Path]
) -> WorkspaceIgnoredError | None:
    """The error to end the turn with when agy logged that it ignored its workspace, or
    reports only folders other than it; None when agy works where it was given."""
    if log_line is not None and not _names(log_line, where):
        log_line = None  # another folder's line, not the workspace's
    elsewhere = [folder for folder in reported if not _covers(folder, where.agy)]
    if log_line is None and (not reported or len(elsewhere) < len(reported)):
        return None
    given = f"{where.person}" + (
        f" (given to agy as the link {where.agy}, whose path has no dot)" if where.linked else ""
    )
    works_in = (
        ", ".join(str(folder) for folder in elsewhere)
        if elsewhere
        else "its own scratch folder (~/.gemini/antigravity-cli/scratch or its gemini dir's)"
    )
    said = f"; agy's log: {log_line}" if log_line else ""
    return WorkspaceIgnoredError(
        f"agy ignored the workspace {given} and works in {works_in} instead{said}"
    )


def _covers(reported: Path, given: Path) -> bool:
    """Whether agy's reported workspace holds the folder it was given: that folder, or one
    above it (a repository's root, should agy report that), links resolved on both sides."""
    try:
        if reported.samefile(given):
            return True
    except OSError:
        pass
    return given.resolve(strict=False).is_relative_to(reported.resolve(strict=False))


def _names(line: str, where: AgyWorkspace) -> bool:
    """Whether agy's line is about the workspace: its path as given, or as resolved."""
    paths = {where.agy, where.person, where.agy.resolve(strict=False)}
    return any(str(path) in line or path.as_uri() in line for path in paths)
