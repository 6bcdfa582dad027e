"""Per-conversation private state directories (docs/decisions.md §9).

Everything one agy needs to survive a harness restart lives in one directory per
conversation, created 0700 and owned by the user: agy's log file (``--log-file``), its
``--gemini_dir``, the reader's cursor, and the *agy record* — the JSON that lets a respawned
harness process re-attach to the running agy (pid, port, tmux session, cascade id and the
CSRF token, which is why the record is 0600 and lives nowhere else).

A directory (or record) with the wrong owner or with group/other permission bits is refused
with a :class:`StateDirError` that says what to fix: silently "repairing" it would hide that
someone else may have read or replaced the token.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from omnigent_agy.errors import StateDirError

__all__ = [
    "STATE_DIR_ENV",
    "XDG_STATE_ENV",
    "AgyRecord",
    "SessionStateDir",
    "default_state_base",
    "state_key",
]

#: Overrides the base directory of every session's state (tests, unusual installs).
STATE_DIR_ENV = "OMNIGENT_AGY_STATE_DIR"
#: Where the XDG spec puts a user's state, when it is set.
XDG_STATE_ENV = "XDG_STATE_HOME"
_FOLDER = "omnigent-agy"  # under $XDG_STATE_HOME or ~/.local/state

_DIR_MODE = 0o700
_FILE_MODE = 0o600
_RECORD_VERSION = 1
_SAFE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_KEY = 64


def default_state_base() -> Path:
    """``$OMNIGENT_AGY_STATE_DIR``, else ``$XDG_STATE_HOME/omnigent-agy``, else
    ``~/.local/state/omnigent-agy``; always absolute.

    A relative ``OMNIGENT_AGY_STATE_DIR`` is refused (:class:`StateDirError`): it would name
    another folder in each process that reads it — ``omnigent host`` and its sweeper, the
    harness process (started in the session's workspace), ``omnigent-agy ps`` — so one would
    never find the agys another started."""
    override = os.environ.get(STATE_DIR_ENV, "").strip()
    if override:
        path = Path(override).expanduser()
        if not path.is_absolute():
            raise StateDirError(
                f"{STATE_DIR_ENV} is {override!r}, a relative path",
                path=path,
                remediation=f"Set {STATE_DIR_ENV} to an absolute path (or one under ~), "
                "or unset it to use ~/.local/state/omnigent-agy.",
            )
        return path
    xdg = os.environ.get(XDG_STATE_ENV)
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / _FOLDER
    return Path.home() / ".local" / "state" / _FOLDER


def state_key(conversation_id: str) -> str:
    """A directory (and tmux session) name for a conversation id.

    Safe ids are used as they are; anything else keeps its safe characters and gains a
    short hash of the original, so two ids never share a directory and no id can walk out
    of the base (``..``, ``/``) or smuggle a tmux target separator (``.``, ``:``).
    """
    if not conversation_id:
        raise ValueError("conversation id must not be empty")
    if _SAFE_KEY.fullmatch(conversation_id) and len(conversation_id) <= _MAX_KEY:
        return conversation_id
    # surrogatepass: an id from JSON may hold a lone surrogate (bytes that were no UTF-8);
    # every other id hashes as before.
    digest = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    readable = _UNSAFE_CHARS.sub("_", conversation_id)[: _MAX_KEY - 13]
    return f"{readable}-{digest}"


@dataclass(frozen=True, slots=True)
class AgyRecord:
    """What a harness process needs to re-attach to a running agy.

    ``pid_create_time`` (psutil's process creation time) guards against pid reuse after a
    reboot or a long idle period. ``csrf_token`` never appears in ``repr``.
    """

    pid: int
    pid_create_time: float
    port: int | None
    csrf_token: str = field(repr=False)
    tmux_socket: str
    tmux_session: str
    log_file: str
    cascade_id: str | None = None
    follows_tui: bool = False
    """The bound cascade is the one agy's TUI shows, so a `/clear` typed there moves it."""
    workspace: str | None = None
    """agy's working directory: a sweep stops an agy whose workspace is gone."""
    stopped_at: float | None = None
    """When omnigent-agy stopped this agy (a sweep, `stop`); the record stays so the next
    turn resumes the conversation (`cascade_id`). None while it runs."""
    stopped_reason: str | None = None

    def to_json(self) -> str:
        """The record as the JSON stored on disk."""
        return json.dumps({"version": _RECORD_VERSION, **asdict(self)}, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a stored record; raises ``ValueError`` when it is not one."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _RECORD_VERSION:
            raise ValueError("not an agy record of a known version")
        try:
            return cls(
                pid=_typed(data, "pid", int),
                pid_create_time=float(_typed(data, "pid_create_time", (int, float))),
                port=_optional(data, "port", int),
                csrf_token=_typed(data, "csrf_token", str),
                tmux_socket=_typed(data, "tmux_socket", str),
                tmux_session=_typed(data, "tmux_session", str),
                log_file=_typed(data, "log_file", str),
                cascade_id=_optional(data, "cascade_id", str),
                follows_tui=data.get("follows_tui") is True,
                workspace=_optional(data, "workspace", str),
                stopped_at=_optional(data, "stopped_at", float),
                stopped_reason=_optional(data, "stopped_reason", str),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed agy record: {exc}") from exc

    def with_cascade(self, cascade_id: str, *, follows_tui: bool = False) -> AgyRecord:
        """The same record bound to ``cascade_id`` (docs/decisions.md §4: bound once, persisted)."""
        return replace(self, cascade_id=cascade_id, follows_tui=follows_tui)

    def as_stopped(self, reason: str, at: float) -> AgyRecord:
        """The record of this agy once stopped: the token and port are of no use any more."""
        return replace(self, csrf_token="", port=None, stopped_at=at, stopped_reason=reason)


def _typed(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data[key]
    # bool is an int subclass; a boolean pid or port is never right.
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{key} has the wrong type")
    return value


def _optional(data: dict[str, Any], key: str, kind: type) -> Any:
    return None if data.get(key) is None else _typed(data, key, kind)


@dataclass(frozen=True, slots=True)
class SessionStateDir:
    """One conversation's private directory. Build it with :meth:`open`."""

    path: Path

    @classmethod
    def open(cls, conversation_id: str, *, base: Path | None = None) -> Self:
        """Create (or check) the directory for ``conversation_id`` under ``base``."""
        # Absolute, whatever ``base`` is: agy ignores a relative --gemini_dir (docs/wire.md §9).
        root = (base if base is not None else default_state_base()).expanduser().absolute()
        _ensure_private_dir(root, create_parents=True, base=True)
        directory = root / state_key(conversation_id)
        _ensure_private_dir(directory)
        _ensure_private_dir(directory / "gemini")
        return cls(directory)

    @property
    def key(self) -> str:
        """The sanitised conversation key (the directory's name)."""
        return self.path.name

    @property
    def log_file(self) -> Path:
        """agy's ``--log-file``."""
        return self.path / "agy.log"

    @property
    def gemini_dir(self) -> Path:
        """agy's ``--gemini_dir``: isolates its state and config per session (docs/wire.md §1)."""
        return self.path / "gemini"

    @property
    def cursor_file(self) -> Path:
        """The reader's durable cursor."""
        return self.path / "cursor.json"

    @property
    def record_file(self) -> Path:
        """The agy record (holds the CSRF token: 0600)."""
        return self.path / "agy.json"

    def read_record(self) -> AgyRecord | None:
        """The stored record, or None when there is none."""
        try:
            fd = os.open(self.record_file, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StateDirError(
                f"cannot open the agy record: {exc.strerror}",
                path=self.record_file,
                remediation="Remove the file; the next turn starts a fresh agy.",
            ) from exc
        with os.fdopen(fd, encoding="utf-8") as handle:
            _check_private(os.fstat(handle.fileno()), self.record_file, want_dir=False)
            text = handle.read()
        try:
            return AgyRecord.from_json(text)
        except ValueError as exc:
            raise StateDirError(
                f"the agy record is unreadable: {exc}",
                path=self.record_file,
                remediation="Remove the file; the next turn starts a fresh agy.",
            ) from exc

    def write_record(self, record: AgyRecord) -> None:
        """Store ``record`` atomically (temp file + rename) with mode 0600."""
        write_private_file(self.record_file, record.to_json())

    def update_record(self, change: Callable[[AgyRecord], AgyRecord]) -> AgyRecord | None:
        """Rewrite the stored record as ``change`` makes it from the record stored now (None,
        and nothing written, when there is none), excluding every other update, in any thread
        or process: a port update made from an older read can no longer undo the stop mark
        `omnigent-agy stop` wrote meanwhile. ``change`` returns its argument to
        leave the record as it is."""
        fd = os.open(self.path / "agy.json.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            record = self.read_record()
            if record is None:
                return None
            changed = change(record)
            if changed != record:
                self.write_record(changed)
            return changed
        finally:
            os.close(fd)  # closing releases the lock

    def clear_record(self) -> None:
        """Forget the running agy (after it was stopped)."""
        self.record_file.unlink(missing_ok=True)


def write_private_file(path: Path, content: str | bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``content``, mode 0600, never following a symlink.

    Safe with any number of writers at once, threads or processes: each write goes to a temp
    file of its own beside ``path`` (a random name, created ``O_EXCL | O_NOFOLLOW`` and 0600 by
    ``mkstemp``) and is renamed over ``path``, so a reader sees one writer's whole content and
    the last rename wins. (One temp name per process made two threads' writes collide and one
    fail.) ``durable`` flushes the file and its directory to disk before returning, for what
    must survive a power cut; a killed process loses nothing either way.
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # The rename itself is on disk once the directory is.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _ensure_private_dir(path: Path, *, create_parents: bool = False, base: bool = False) -> None:
    if create_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=_DIR_MODE)
    _check_private(os.lstat(path), path, want_dir=True, base=base)


def _check_private(info: os.stat_result, path: Path, *, want_dir: bool, base: bool = False) -> None:
    kind_ok = stat.S_ISDIR(info.st_mode) if want_dir else stat.S_ISREG(info.st_mode)
    if not kind_ok:
        raise StateDirError(
            f"expected a {'directory' if want_dir else 'regular file'}, found something else "
            "(a symlink?)",
            path=path,
            remediation="Remove it; omnigent-agy recreates its state on the next turn.",
        )
    if info.st_uid != os.getuid():
        raise StateDirError(
            f"owned by uid {info.st_uid}, not by you (uid {os.getuid()})",
            path=path,
            remediation="Another user must not own omnigent-agy state; remove it or set "
            f"{STATE_DIR_ENV} to a directory of your own.",
        )
    # The base may be readable by others (a user-chosen directory); it must not be writable
    # by them, or they could swap a session directory. Session dirs and files are private.
    forbidden = 0o022 if base else 0o077
    if stat.S_IMODE(info.st_mode) & forbidden:
        mode = "0700" if want_dir else "0600"
        raise StateDirError(
            f"permissions {stat.S_IMODE(info.st_mode):04o} let other users in; it holds the "
            "CSRF token",
            path=path,
            remediation=f"Run `chmod {mode} {path}` (and check nobody else read it), or remove it.",
        )
