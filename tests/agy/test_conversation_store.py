"""agy's list of the person's conversations, read in every shape people may meet (docs/wire.md
§9 reports the table and its columns, not their types), and the private copy of one."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agy_store import A, B, row, store, tree_digest

from agy_sim.cascade import Cascade
from agy_sim.summaries import write_summary
from omnigent_agy.agy.conversation_store import (
    SUMMARIES_DB,
    copy_conversation,
    find_conversation,
    read_conversations,
)
from omnigent_agy.errors import ConversationStoreError, ConversationUnknownError


def test_agy_sims_list_reads_back(tmp_path: Path) -> None:
    cascade = Cascade(  # as agy-sim's store hands it to its list
        cascade_id=A,
        trajectory_id="t",
        created_at="2026-11-30T09:00:00.123456789Z",
        workspace_uri="file:///home/me/my%20project",
        last_modified="2026-11-30T09:05:00.123456789Z",
        steps=[
            {"type": "CORTEX_STEP_TYPE_USER_INPUT", "userInput": {"userResponse": "Hi\nthere"}},
            {"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE", "plannerResponse": {"response": "Hello"}},
        ],
    )
    write_summary(tmp_path, cascade)
    (found,) = read_conversations(tmp_path).conversations
    assert found.conversation_id == A
    assert (found.title, found.preview, found.step_count) == ("Hi", "Hello", 2)
    assert found.last_modified == datetime(2026, 11, 30, 9, 5, 0, 123456, tzinfo=UTC)
    assert found.workspace == Path("/home/me/my project")


@pytest.mark.parametrize(
    ("modified", "expected"),
    [
        ("2026-11-30T10:00:00Z", datetime(2026, 11, 30, 10, tzinfo=UTC)),
        ("2026-11-30T11:00:00+01:00", datetime(2026, 11, 30, 10, tzinfo=UTC)),
        ("2026-11-30T10:00:00", datetime(2026, 11, 30, 10, tzinfo=UTC)),
        (1796032800, datetime(2026, 11, 30, 10, tzinfo=UTC)),  # seconds
        (1796032800000, datetime(2026, 11, 30, 10, tzinfo=UTC)),  # milliseconds
        ("1796032800000", datetime(2026, 11, 30, 10, tzinfo=UTC)),  # as text
        (1796032800.5, datetime(2026, 11, 30, 10, 0, 0, 500000, tzinfo=UTC)),
        ("yesterday", None),
        (None, None),
        (-5, None),
    ],
)
def test_last_change_in_any_form(tmp_path: Path, modified: object, expected: object) -> None:
    store(tmp_path, [row(modified=modified)])
    assert read_conversations(tmp_path).conversations[0].last_modified == expected


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        (json.dumps(["file:///a/b", "file:///c"]), (Path("/a/b"), Path("/c"))),
        ("file:///a/b", (Path("/a/b"),)),
        (json.dumps("file:///a/b"), (Path("/a/b"),)),
        ("file:///a/b,file:///c", (Path("/a/b"), Path("/c"))),
        ("/a/b\n/c", (Path("/a/b"), Path("/c"))),
        (json.dumps(["relative/x", 7, "https://example.com/x"]), ()),
        ("", ()),
        (None, ()),
    ],
)
def test_workspaces_in_any_form(tmp_path: Path, uris: object, expected: object) -> None:
    store(tmp_path, [(A, "t", "p", 1, "2026-11-30T10:00:00Z", "IDLE", "", uris)])
    assert read_conversations(tmp_path).conversations[0].workspaces == expected


def test_newest_first_and_bad_rows_counted(tmp_path: Path) -> None:
    store(
        tmp_path,
        [
            row(A, modified="2026-11-29T10:00:00Z"),
            row(B, modified="2026-11-30T10:00:00Z"),
            row("", modified="2026-12-01T10:00:00Z"),
            row("../../etc", modified="2026-12-01T10:00:00Z"),
            (None, None, None, None, None, None, None, None),
            (b"\x00\xff", "t", "p", "many", None, None, None, None),
        ],
    )
    stored = read_conversations(tmp_path)
    assert [c.conversation_id for c in stored.conversations] == [B, A]
    assert stored.unreadable_rows == 4


def test_a_list_with_only_ids_still_lists(tmp_path: Path) -> None:
    store(tmp_path, [(A,), (B,)], columns="conversation_id TEXT")
    stored = read_conversations(tmp_path)
    assert {c.conversation_id for c in stored.conversations} == {A, B}
    assert all(c.title == "" and c.step_count is None for c in stored.conversations)


def test_no_list_is_no_conversations(tmp_path: Path) -> None:
    stored = read_conversations(tmp_path)
    assert not stored.exists
    assert stored.conversations == ()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_bytes(b"not a database at all, just text\n" * 10), "file is not"),
        (lambda p: p.write_bytes(b""), "no table conversation_summaries"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit(),
            "no table conversation_summaries",
        ),
        (
            lambda p: (
                sqlite3.connect(p)
                .execute("CREATE TABLE conversation_summaries (title TEXT)")
                .connection.commit()
            ),
            "no conversation_id column",
        ),
    ],
    ids=["not-sqlite", "empty-file", "no-table", "no-id-column"],
)
def test_a_bad_list_is_a_clear_error(tmp_path: Path, make: Any, says: str) -> None:
    path = tmp_path / SUMMARIES_DB
    path.parent.mkdir(parents=True)
    make(path)
    before = path.read_bytes()
    with pytest.raises(ConversationStoreError) as raised:
        read_conversations(tmp_path)
    assert says in str(raised.value)
    assert raised.value.path == path
    assert "run `agy` once" in raised.value.remediation
    assert path.read_bytes() == before  # agy's file is never changed


def test_find_by_id_or_unique_prefix(tmp_path: Path) -> None:
    other = A[:8] + "-ffff-4fff-8fff-ffffffffffff"
    store(tmp_path, [row(A), row(B), row(other)])
    stored = read_conversations(tmp_path)
    assert find_conversation(stored, A).conversation_id == A
    assert find_conversation(stored, B[:6]).conversation_id == B
    with pytest.raises(ConversationUnknownError, match="starts several"):
        find_conversation(stored, A[:8])
    with pytest.raises(ConversationUnknownError, match="no agy conversation 'abc'"):
        find_conversation(stored, "abc")  # too short to be a prefix
    with pytest.raises(ConversationUnknownError, match="no agy conversation"):
        find_conversation(stored, "ffffffff")


def test_the_private_copy(tmp_path: Path) -> None:
    person, target = tmp_path / "person", tmp_path / "session"
    store(person, [row(A), row(B)])
    agy = person / "antigravity-cli"
    (agy / "brain" / A / "notes").mkdir(parents=True)
    (agy / "brain" / A / "task.md").write_text("the task")
    (agy / "brain" / A / "notes" / "n.md").write_text("a note")
    (agy / "conversations").mkdir()
    (agy / "conversations" / f"{A}.pb").write_bytes(b"\x08\x01history")
    (agy / "conversations" / f"{B}.pb").write_bytes(b"other")
    (agy / "brain" / A / "outside").symlink_to(tmp_path)  # never followed
    before = tree_digest(person)
    summary = find_conversation(read_conversations(person), A)
    copied = copy_conversation(person, summary, target)
    assert sorted(copied) == [f"brain/{A}", f"conversations/{A}.pb"]
    mine = target / "antigravity-cli"
    assert (mine / "brain" / A / "notes" / "n.md").read_text() == "a note"
    assert (mine / "conversations" / f"{A}.pb").read_bytes() == b"\x08\x01history"
    assert not (mine / "conversations" / f"{B}.pb").exists()
    assert not (mine / "brain" / A / "outside").exists()
    for path in mine.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    # The copy lists only this conversation, as agy wrote its row.
    assert [c.conversation_id for c in read_conversations(target).conversations] == [A]
    assert tree_digest(person) == before  # the person's store is only read


def test_a_listed_conversation_with_nothing_stored_is_refused(tmp_path: Path) -> None:
    store(tmp_path / "person", [row(A)])
    summary = find_conversation(read_conversations(tmp_path / "person"), A)
    with pytest.raises(ConversationStoreError, match="keeps nothing of it"):
        copy_conversation(tmp_path / "person", summary, tmp_path / "session")
    assert not (tmp_path / "session" / SUMMARIES_DB).exists()


def test_the_list_is_read_while_agy_holds_it(tmp_path: Path) -> None:
    path = store(tmp_path, [row(A)])
    with contextlib.closing(sqlite3.connect(path)) as writer:
        writer.execute("BEGIN")
        writer.execute("UPDATE conversation_summaries SET title = 'changing'")
        stored = read_conversations(tmp_path)  # a reader is not blocked by a writer
    assert stored.conversations[0].title == "Fix the build"
    assert os.path.exists(path)
