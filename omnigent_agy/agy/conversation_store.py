"""The person's own agy conversations: agy's list of them, and a private copy of one.

People start agy in a terminal and go on elsewhere. agy lists a person's conversations in
``<gemini dir>/antigravity-cli/conversation_summaries.db``, SQLite, table
``conversation_summaries(conversation_id, title, preview, step_count, last_modified_time,
status, agent_name, workspace_uris)`` (docs/wire.md §9, public reports: the table and its
columns are reported, their types and value formats are not). So every value is read
leniently: a time may be RFC 3339 text or seconds or milliseconds since 1970, the workspaces a
JSON array, one URI or a comma-separated list; a row that cannot be read at all is counted,
never a crash, and a file that is not such a list is a :class:`ConversationStoreError` that
names it.

A conversation is opened elsewhere on a **private copy** (docs/decisions.md §4: one
conversation, one agy): :func:`copy_conversation` copies what agy keeps of it, every entry of
agy's folder named by its id (its brain directory, docs/wire.md §7, and whatever else agy
names after it), plus its row of the list, into the gemini dir of the omnigent session that
goes on with it. The person's own store is only read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from omnigent_agy.agy.gemini_home import AGY_DIR
from omnigent_agy.errors import ConversationStoreError, ConversationUnknownError

__all__ = [
    "SUMMARIES_DB",
    "ConversationSummary",
    "StoredConversations",
    "copy_conversation",
    "find_conversation",
    "read_conversations",
]

#: agy's list of conversations, inside a gemini dir (docs/wire.md §9).
SUMMARIES_DB: Final = AGY_DIR / "conversation_summaries.db"
_TABLE: Final = "conversation_summaries"
_COLUMNS: Final = (
    "conversation_id",
    "title",
    "preview",
    "step_count",
    "last_modified_time",
    "status",
    "agent_name",
    "workspace_uris",
)
_CREATE: Final = (
    f"CREATE TABLE {_TABLE} (conversation_id TEXT PRIMARY KEY, title TEXT, preview TEXT, "
    "step_count INTEGER, last_modified_time TEXT, status TEXT, agent_name TEXT, "
    "workspace_uris TEXT)"
)
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_MIN_PREFIX: Final = 4
_MS_SINCE_1970: Final = 10**11  # a number above this counts milliseconds, not seconds
_DIR_MODE: Final = 0o700
_FILE_MODE: Final = 0o600


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One row of agy's list, read leniently (see the module doc)."""

    conversation_id: str
    title: str
    preview: str
    step_count: int | None
    last_modified: datetime | None
    status: str
    workspaces: tuple[Path, ...]

    @property
    def workspace(self) -> Path | None:
        """The conversation's (first) workspace, if agy named one."""
        return self.workspaces[0] if self.workspaces else None


@dataclass(frozen=True, slots=True)
class StoredConversations:
    """agy's list: its conversations, newest first, and how many rows could not be read."""

    path: Path
    conversations: tuple[ConversationSummary, ...]
    unreadable_rows: int = 0
    exists: bool = True


def read_conversations(gemini_dir: Path) -> StoredConversations:
    """agy's list of conversations in ``gemini_dir``; no list at all is an empty one."""
    path = gemini_dir / SUMMARIES_DB
    if not path.exists():
        return StoredConversations(path, (), exists=False)
    try:
        rows = _rows(path)
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from exc
    found: list[ConversationSummary] = []
    bad = 0
    for row in rows:
        summary = _summary(row)
        if summary is None:
            bad += 1
        else:
            found.append(summary)
    oldest = datetime.min.replace(tzinfo=UTC)
    found.sort(key=lambda s: s.last_modified or oldest, reverse=True)
    return StoredConversations(path, tuple(found), bad)


def find_conversation(stored: StoredConversations, wanted: str) -> ConversationSummary:
    """The conversation ``wanted`` names: its id, or a prefix of one id (at least 4 letters)."""
    wanted = wanted.strip()
    exact = [c for c in stored.conversations if c.conversation_id == wanted]
    if exact:
        return exact[0]
    if len(wanted) >= _MIN_PREFIX:
        matches = [c for c in stored.conversations if c.conversation_id.startswith(wanted)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            ids = ", ".join(c.conversation_id for c in matches[:5])
            raise ConversationUnknownError(
                f"{wanted!r} starts several of your agy conversations ({ids}); give more of the id",
                wanted=wanted,
            )
    where = stored.path if stored.exists else f"{stored.path} (there is no such file)"
    raise ConversationUnknownError(f"no agy conversation {wanted!r} in {where}", wanted=wanted)


def copy_conversation(source: Path, summary: ConversationSummary, target: Path) -> list[str]:
    """Copy what agy keeps of ``summary`` in gemini dir ``source`` into gemini dir ``target``
    (private: 0700 folders, 0600 files; links are not followed) and list it there as its only
    conversation. Returns the entries copied, relative to agy's folder. Raises
    ConversationStoreError when agy's folder holds nothing of the conversation but its row."""
    cid = summary.conversation_id
    if not _ID.fullmatch(cid):
        raise ConversationStoreError(
            f"the conversation id {cid!r} is not one agy makes",
            path=source / SUMMARIES_DB,
            remediation="Pick another conversation; `omnigent-agy conversations` lists them.",
        )
    agy_dir = source / SUMMARIES_DB.parent
    copied: list[str] = []
    for entry in sorted(_named_by(agy_dir, cid)):
        relative = entry.relative_to(agy_dir)
        _copy_private(entry, target / SUMMARIES_DB.parent / relative)
        copied.append(str(relative))
    if not copied:
        raise ConversationStoreError(
            f"agy lists conversation {cid} but keeps nothing of it under {agy_dir} (no entry "
            f"named {cid}): its history cannot be copied",
            path=agy_dir,
            remediation="Open it in agy once (`agy --conversation ID`) so agy writes it again, "
            "or pick another conversation.",
        )
    _list_only(target / SUMMARIES_DB, source / SUMMARIES_DB, cid)
    return copied


# -- reading the list ----------------------------------------------------------------------


def _rows(path: Path) -> list[tuple[object, ...]]:
    # Read-only, and never the live file's lock for long: agy may be writing it.
    uri = f"{path.absolute().as_uri()}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({_TABLE})")}
        if not columns:
            raise sqlite3.DatabaseError(f"it has no table {_TABLE}")
        if "conversation_id" not in columns:
            raise sqlite3.DatabaseError(f"its table {_TABLE} has no conversation_id column")
        chosen = [name if name in columns else "NULL" for name in _COLUMNS]
        query = f"SELECT {', '.join(chosen)} FROM {_TABLE}"  # noqa: S608 - known names only
        return list(db.execute(query))


def _unreadable(path: Path, exc: sqlite3.Error) -> ConversationStoreError:
    if _busy(exc):
        # agy holds its list while it writes it: nothing is wrong with the file, and moving
        # it aside would lose agy's list of conversations.
        return ConversationStoreError(
            "agy's list of conversations is in use: agy is probably running and writing it",
            path=path,
            remediation="Try again in a moment; if it stays busy, close agy (its window, or "
            "`omnigent-agy ps` to see which conversation's agy runs) and try again. Leave the "
            "file where it is: it is agy's and is fine.",
        )
    return ConversationStoreError(
        f"agy's list of conversations cannot be read: {exc}",
        path=path,
        remediation="It is agy's file and is never changed here: run `agy` once (it rewrites "
        "its list), or move the file aside if agy cannot read it either; then try again.",
    )


def _busy(exc: sqlite3.Error) -> bool:
    """SQLite's "database is locked" (SQLITE_BUSY, SQLITE_LOCKED and their extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _summary(row: tuple[object, ...]) -> ConversationSummary | None:
    cid, title, preview, steps, modified, status, _agent, workspaces = row
    if not isinstance(cid, str) or not _ID.fullmatch(cid.strip()):
        return None
    return ConversationSummary(
        conversation_id=cid.strip(),
        title=_text(title),
        preview=_text(preview),
        step_count=_count(steps),
        last_modified=_moment(modified),
        status=_text(status),
        workspaces=_workspaces(workspaces),
    )


def _text(value: object) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return " ".join(str(value).split()) if value is not None else ""


def _count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    with contextlib.suppress(TypeError, ValueError):
        number = int(str(value).strip()) if isinstance(value, (str, bytes)) else int(value)  # type: ignore[call-overload]
        return number if number >= 0 else None
    return None


def _moment(value: object) -> datetime | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            value = float(text)
        else:
            return _rfc3339(text)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > _MS_SINCE_1970 else value
        with contextlib.suppress(OverflowError, OSError, ValueError):
            return datetime.fromtimestamp(seconds, UTC)
    return None


def _rfc3339(text: str) -> datetime | None:
    # Python before 3.11 and agy's nanoseconds: keep at most microseconds.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text.replace("Z", "+00:00"))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _workspaces(value: object) -> tuple[Path, ...]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or not value.strip():
        return ()
    items: list[object]
    try:
        parsed = json.loads(value)
    except ValueError:
        items = [part for part in re.split(r"[,\n]", value) if part.strip()]
    else:
        items = parsed if isinstance(parsed, list) else [parsed]
    paths = [path for item in items if (path := _path(item)) is not None]
    return tuple(dict.fromkeys(paths))


def _path(item: object) -> Path | None:
    if not isinstance(item, str):
        return None
    text = item.strip()
    if text.startswith("file:"):
        text = unquote(urlparse(text).path)
    return Path(text) if text.startswith("/") else None


# -- the private copy ----------------------------------------------------------------------


def _named_by(agy_dir: Path, cid: str) -> list[Path]:
    """Every entry under agy's folder whose name is the id or starts with it (``<id>``,
    ``<id>.pb``, ``<id>.json``), three folders deep at most; links are not followed."""
    found: list[Path] = []
    if not agy_dir.is_dir():
        return found
    for root, dirs, files in os.walk(agy_dir):
        depth = len(Path(root).relative_to(agy_dir).parts)
        found.extend(
            Path(root) / name
            for name in [*dirs, *files]
            if name == cid or name.startswith((f"{cid}.", f"{cid}_"))
        )
        dirs[:] = [d for d in dirs if d != cid and depth < 3]
    return found


def _copy_private(entry: Path, target: Path) -> None:
    info = entry.lstat()
    target.parent.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    if stat.S_ISLNK(info.st_mode):
        return  # never follow a link out of agy's folder
    if stat.S_ISDIR(info.st_mode):
        target.mkdir(mode=_DIR_MODE, exist_ok=True)
        for child in entry.iterdir():
            _copy_private(child, target / child.name)
    elif stat.S_ISREG(info.st_mode):
        shutil.copyfile(entry, target, follow_symlinks=False)
        os.chmod(target, _FILE_MODE)


def _list_only(target_db: Path, source_db: Path, cid: str) -> None:
    """The copy's own list: the conversation's row as agy wrote it (every column agy has)."""
    target_db.parent.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    target_db.unlink(missing_ok=True)
    uri = f"{source_db.absolute().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as source:
            schema = source.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)
            ).fetchone()
            cursor = source.execute(
                f"SELECT * FROM {_TABLE} WHERE conversation_id = ?",  # noqa: S608 - constant
                (cid,),
            )
            row = cursor.fetchone()
        with contextlib.closing(sqlite3.connect(target_db)) as copy, copy:
            copy.execute(schema[0] if schema else _CREATE)
            if row is not None:
                marks = ", ".join("?" * len(row))
                copy.execute(f"INSERT INTO {_TABLE} VALUES ({marks})", row)  # noqa: S608
    except sqlite3.Error as exc:
        raise _unreadable(source_db, exc) from exc
    os.chmod(target_db, _FILE_MODE)
