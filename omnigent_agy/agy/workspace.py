"""The folder agy works in: the person's workspace, or a dot-free link to it (docs/wire.md §9).

agy drops a workspace whose path, as spelled, contains ``/.`` (a folder on the way is hidden:
``~/.config/tool``, ``repo/.worktrees/feature``) and silently works in its own scratch folder;
reached through a symbolic link whose path has no dot, the same folder works. So for a hidden
workspace agy is started in such a link:

- **private and attack-safe**: it lives in a folder of this user's (``omnigent-agy-<uid>``)
  under ``$XDG_RUNTIME_DIR`` when that is a dot-free 0700 folder of theirs, else under the
  temporary directory, made 0700 and checked (a directory, not a link, owned by this user,
  no group or other bits) before anything goes in: a folder another user could have made is
  refused, never used (the plugin's own state folder under ``~/.local`` is hidden itself);
- **one per conversation** (``workspaces/<key>/<name>``, so agy still sees the workspace's own
  name last), made again by every launch that needs it (:func:`relink`: a stop a moment before
  may have removed it), and removed when the conversation's agy stops (:func:`remove_link`,
  which the launcher and ``omnigent-agy stop`` call) unless an agy of the conversation
  recorded as running still works in it;
- **never shown**: cards and tool rows name the person's own path (:meth:`AgyWorkspace.for_person`).

When no such folder can be made the turn is refused with ``agy_workspace_hidden``
(:class:`WorkspaceHiddenError`), naming the path and what to do: a silent scratch folder
would edit nothing of the person's while agy reports success. A folder agy cannot enter at
all (gone, not a folder, not the person's to enter, a name the system refuses) is refused
with ``agy_workspace_unreachable`` (:class:`WorkspaceUnreachableError`, `check_enterable`).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psutil

from omnigent_agy.agy.statedir import SessionStateDir, write_private_file
from omnigent_agy.errors import (
    StateDirError,
    WorkspaceHiddenError,
    WorkspaceUnreachableError,
)

__all__ = [
    "LINK_RECORD",
    "RUNTIME_DIR_ENV",
    "AgyWorkspace",
    "check_enterable",
    "check_private_dir",
    "is_hidden",
    "prepare_workspace",
    "private_runtime_folder",
    "ready_folder",
    "relink",
    "remove_link",
]

#: The file in a conversation's state directory naming its link, so any process that stops
#: the conversation's agy removes the link (whatever its environment says about runtime dirs).
LINK_RECORD: Final = "workspace-link"
#: The login session's private runtime folder (XDG), where the links go when it is safe.
RUNTIME_DIR_ENV: Final = "XDG_RUNTIME_DIR"
_LINKS: Final = "workspaces"
_HIDDEN: Final = "/."


def check_enterable(folder: Path, *, shown: Path | None = None) -> None:
    """WorkspaceUnreachableError unless ``folder`` is a directory this process may enter;
    the message names ``shown`` (the person's spelling) when given, escaped (``repr``: a
    newline, a control character or a direction mark in the name is shown as such)."""
    named = shown if shown is not None else folder
    try:
        info = os.stat(folder)
        if not stat.S_ISDIR(info.st_mode):
            why = "it is not a folder"
        elif not os.access(folder, os.X_OK):
            why = "you may not enter it"
        else:
            return
    except ValueError:  # a NUL byte: no folder can have it in its name
        why = "no folder's name can hold a NUL character"
    except OSError as exc:
        why = exc.strerror or str(exc)
    raise WorkspaceUnreachableError(
        f"agy was not started: could not enter the folder {str(named)!r}: {why}", folder=named
    )


def is_hidden(path: Path | str) -> bool:
    """Whether agy drops ``path`` as a workspace: ``/.`` in its absolute spelling (§9)."""
    return _HIDDEN in os.path.normpath(os.path.abspath(path))


@dataclass(frozen=True, slots=True)
class AgyWorkspace:
    """The person's workspace and the path agy is given for it (the same, or the link)."""

    person: Path
    agy: Path

    @property
    def linked(self) -> bool:
        return self.agy != self.person

    def for_person(self, text: str) -> str:
        """``text`` with agy's spelling of the workspace replaced by the person's."""
        if not self.linked or str(self.agy) not in text:
            return text
        # The link's path, as a whole path segment: not a longer name that starts with it.
        pattern = re.escape(str(self.agy)) + r"(?![^/\s'\"`)\],;:])"
        return re.sub(pattern, lambda _: str(self.person), text)

    def value_for_person[T](self, value: T) -> T:
        """A JSON-like value (strings in dicts and lists) with agy's paths made the person's."""
        if not self.linked:
            return value
        if isinstance(value, str):
            return self.for_person(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {key: self.value_for_person(item) for key, item in value.items()}  # type: ignore[return-value]
        if isinstance(value, list):
            return [self.value_for_person(item) for item in value]  # type: ignore[return-value]
        return value


def _dot_free_private(path: Path) -> bool:
    """A runtime dir as XDG describes it: ours, a real directory, 0700, and dot-free."""
    if not path.is_absolute() or is_hidden(path):
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def _bases(env: Mapping[str, str]) -> list[Path]:
    """Where the private folder may go, best first: the runtime dir, then the temp dirs."""
    bases: list[Path] = []
    runtime = env.get(RUNTIME_DIR_ENV, "")
    if runtime and _dot_free_private(Path(runtime)):
        bases.append(Path(runtime))
    for temp in (tempfile.gettempdir(), "/tmp"):  # noqa: S108 - checked below, 0700 and ours
        path = Path(temp)
        if path.is_absolute() and not is_hidden(path) and path.is_dir() and path not in bases:
            bases.append(path)
    return bases


def check_private_dir(folder: Path) -> None:
    """Make ``folder`` (0700) unless it exists; then insist it is a directory of this user's,
    not a link, with no group or other bits: PermissionError naming what is wrong otherwise."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{folder} is not a directory (a link or a file is in its place)")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to uid {info.st_uid}, not to you")
    if info.st_mode & 0o077:
        raise PermissionError(
            f"{folder} has mode {stat.S_IMODE(info.st_mode):04o}: other users could have put "
            "something in it"
        )


def private_runtime_folder(env: Mapping[str, str] | None = None) -> Path:
    """This user's ``omnigent-agy-<uid>`` folder, dot-free, checked (see the module doc).

    PermissionError when the first place it belongs holds one that is not safely ours
    (another user may have made it: it is refused, never repaired); FileNotFoundError when
    there is no dot-free place at all.
    """
    bases = _bases(os.environ if env is None else env)
    if not bases:
        raise FileNotFoundError("no private runtime or temporary folder without a '.' in its path")
    folder = bases[0] / f"omnigent-agy-{os.getuid()}"
    check_private_dir(folder)
    return folder


def _visible_name(workspace: Path) -> str:
    return workspace.name.lstrip(".") or "workspace"


def prepare_workspace(
    person: Path, key: str, state_dir: Path, env: Mapping[str, str] | None = None
) -> AgyWorkspace:
    """The path agy is given for ``person``: itself, or (hidden) this conversation's link,
    made or repaired now and named in ``state_dir`` (:data:`LINK_RECORD`)."""
    person = Path(os.path.normpath(os.path.abspath(person)))
    if not is_hidden(person):
        return AgyWorkspace(person, person)
    try:
        link = private_runtime_folder(env) / _LINKS / key / _visible_name(person)
    except OSError as exc:
        raise _hidden_error(person, exc) from exc
    relink(link, person, state_dir)
    return AgyWorkspace(person, link)


def relink(link: Path, person: Path, state_dir: Path) -> None:
    """Make (or repair) the conversation's ``link`` → ``person`` and name it in
    ``state_dir``; nothing when agy is given the workspace itself. A launch calls it right
    before agy starts: the stop of an earlier agy may have removed the link meanwhile."""
    if link == person:
        return
    try:
        # omnigent-agy-<uid>, its workspaces/ and the conversation's folder: each 0700, ours.
        for folder in (link.parents[2], link.parents[1], link.parent):
            check_private_dir(folder)
        _point(link, person)
    except OSError as exc:
        raise _hidden_error(person, exc) from exc
    # The path's bytes: a folder's name need not be UTF-8.
    record = state_dir / LINK_RECORD
    if not record.exists() or record.read_bytes() != os.fsencode(link):
        write_private_file(record, os.fsencode(link))


def ready_folder(link: Path | None, person: Path, state_dir: Path) -> None:
    """Right before agy starts: the folder it starts in there and enterable. A hidden
    workspace's ``link`` is made again (a stop a moment before removes it); a folder that
    cannot be entered is refused (`check_enterable`) before anything starts."""
    if link is not None:
        relink(link, person, state_dir)
    check_enterable(link or person, shown=person)


def _hidden_error(person: Path, exc: OSError) -> WorkspaceHiddenError:
    return WorkspaceHiddenError(
        f"agy ignores a workspace inside a hidden folder ({str(person)!r}) and would silently "
        f"work in its own scratch folder; no private link to it could be made: {exc}",
        workspace=person,
    )


def _point(link: Path, target: Path) -> None:
    """``link`` → ``target``, replaced atomically when it points elsewhere."""
    with contextlib.suppress(OSError):
        if os.readlink(link) == str(target):
            return
    # A short name of its own (the folder is this conversation's): the link's name may be
    # as long as a name can be already.
    temporary = link.with_name(f".{secrets.token_hex(6)}")
    os.symlink(target, temporary, target_is_directory=True)
    try:
        os.replace(temporary, link)  # fails on a real directory in its place: never removed
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def remove_link(state_dir: Path) -> bool:
    """Remove the conversation's workspace link (and its folder) if it has one; True if it did.

    Only a symbolic link of this user's is removed, never what a link points at; and not
    while the conversation's record names an agy that still runs (it works in the link: a
    stop of an earlier agy must not pull it from under a newer one).
    """
    if _recorded_agy_runs(state_dir):
        return False
    record = state_dir / LINK_RECORD
    try:
        link = Path(os.fsdecode(record.read_bytes()))
    except OSError:
        return False
    removed = False
    with contextlib.suppress(OSError):
        info = os.lstat(link)
        if stat.S_ISLNK(info.st_mode) and info.st_uid == os.getuid():
            link.unlink()
            removed = True
    with contextlib.suppress(OSError):
        link.parent.rmdir()  # only when empty
    record.unlink(missing_ok=True)
    return removed


def _recorded_agy_runs(state_dir: Path) -> bool:
    """Whether the conversation's record names an agy not marked stopped whose process (the
    same one: its start time matches) still runs."""
    try:
        record = SessionStateDir(state_dir).read_record()
    except StateDirError:
        return False
    if record is None or record.stopped_at is not None:
        return False
    try:
        process = psutil.Process(record.pid)
        same = abs(process.create_time() - record.pid_create_time) < 1.0
        return same and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
