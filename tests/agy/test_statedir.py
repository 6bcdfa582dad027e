"""Per-session private state directories: layout, permissions, the agy record."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from omnigent_agy.agy.statedir import (
    STATE_DIR_ENV,
    AgyRecord,
    SessionStateDir,
    default_state_base,
    state_key,
)
from omnigent_agy.errors import StateDirError

TOKEN = "tok-" + "x" * 40


def _record(**overrides: object) -> AgyRecord:
    values: dict[str, object] = {
        "pid": 4242,
        "pid_create_time": 1234.5,
        "port": 50123,
        "csrf_token": TOKEN,
        "tmux_socket": "omnigent-agy",
        "tmux_session": "agy-conv",
        "log_file": "/state/agy.log",
    }
    values.update(overrides)
    return AgyRecord(**values)  # type: ignore[arg-type]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("conversation_id", "expected"),
    [
        ("conv_123-abc", "conv_123-abc"),
        ("0f8e2d1c-aaaa-bbbb-cccc-123456789abc", "0f8e2d1c-aaaa-bbbb-cccc-123456789abc"),
    ],
)
def test_safe_ids_are_kept(conversation_id: str, expected: str) -> None:
    assert state_key(conversation_id) == expected


@pytest.mark.parametrize("conversation_id", ["../etc", "a/b", "a.b", "x:y", "a b", "é", "z" * 200])
def test_unsafe_ids_are_sanitised_and_distinct(conversation_id: str) -> None:
    key = state_key(conversation_id)
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    assert len(key) <= 64
    assert key != state_key(conversation_id + "_")


def test_ids_that_sanitise_alike_stay_distinct() -> None:
    assert state_key("a.b") != state_key("a:b")
    assert state_key("a.b") != state_key("a_b")


def test_empty_id_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        state_key("")


def test_default_base_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_base() == tmp_path / "xdg" / "omnigent-agy"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_base() == tmp_path / "home" / ".local" / "state" / "omnigent-agy"
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "override"))
    assert default_state_base() == tmp_path / "override"


def test_a_relative_state_dir_variable_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A relative OMNIGENT_AGY_STATE_DIR is another folder in `omnigent host` than in the
    harness process (started in the session's workspace): refused, saying what to set (issue
    18). An explicit base is made absolute: agy ignores a relative --gemini_dir (wire.md §9)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(STATE_DIR_ENV, "relative-state")
    with pytest.raises(StateDirError, match="relative path") as refused:
        default_state_base()
    assert "absolute path" in refused.value.remediation
    assert not (tmp_path / "relative-state").exists()
    monkeypatch.setenv(STATE_DIR_ENV, "~/state")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_base() == tmp_path / "home" / "state"
    given = SessionStateDir.open("d", base=Path("given"))
    assert given.path == tmp_path / "given" / "d"
    assert given.gemini_dir.is_absolute()
    assert given.log_file.is_absolute()


def test_open_creates_private_dirs(tmp_path: Path) -> None:
    base = tmp_path / "deep" / "base"
    state = SessionStateDir.open("conv-1", base=base)
    assert state.path == base / "conv-1"
    assert state.key == "conv-1"
    assert _mode(base) == 0o700
    assert _mode(state.path) == 0o700
    assert _mode(state.gemini_dir) == 0o700
    assert state.log_file.parent == state.path
    assert state.cursor_file.parent == state.path
    # Opening again is fine.
    assert SessionStateDir.open("conv-1", base=base) == state


def test_open_uses_env_base(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "envbase"))
    state = SessionStateDir.open("c")
    assert state.path == tmp_path / "envbase" / "c"


def test_group_readable_session_dir_is_refused(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path / "b")
    state.path.chmod(0o750)
    with pytest.raises(StateDirError, match="permissions 0750") as info:
        SessionStateDir.open("conv", base=tmp_path / "b")
    assert "chmod 0700" in info.value.remediation


def test_world_writable_base_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "b"
    base.mkdir(mode=0o700)
    base.chmod(0o777)
    with pytest.raises(StateDirError, match="permissions 0777"):
        SessionStateDir.open("conv", base=base)


def test_readable_base_is_accepted(tmp_path: Path) -> None:
    base = tmp_path / "b"
    base.mkdir()
    base.chmod(0o755)
    assert SessionStateDir.open("conv", base=base).path.is_dir()


def test_symlinked_session_dir_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "b"
    base.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (base / "conv").symlink_to(target)
    with pytest.raises(StateDirError, match="symlink"):
        SessionStateDir.open("conv", base=base)


def test_foreign_owner_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("changing a directory's owner needs root")
    state = SessionStateDir.open("conv", base=tmp_path / "b")
    os.chown(state.path, 12345, 12345)
    with pytest.raises(StateDirError, match="owned by uid 12345"):
        SessionStateDir.open("conv", base=tmp_path / "b")


def test_record_round_trip_is_private_and_atomic(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    assert state.read_record() is None
    record = _record()
    state.write_record(record)
    assert _mode(state.record_file) == 0o600
    assert state.read_record() == record
    bound = record.with_cascade("cascade-1")
    state.write_record(bound)
    assert state.read_record() == bound
    # No temporary files are left behind.
    assert sorted(p.name for p in state.path.iterdir()) == ["agy.json", "gemini"]
    state.clear_record()
    assert state.read_record() is None


def test_record_repr_hides_the_token() -> None:
    record = _record()
    assert TOKEN not in repr(record)
    assert "4242" in repr(record)


def test_record_with_loose_permissions_is_refused(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    state.write_record(_record())
    state.record_file.chmod(0o644)
    with pytest.raises(StateDirError, match="permissions 0644"):
        state.read_record()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"version": 99}',
        '{"version": 1, "pid": "12"}',
        '{"version": 1, "pid": true, "pid_create_time": 1, "port": null, "csrf_token": "t",'
        ' "tmux_socket": "s", "tmux_session": "t", "log_file": "l"}',
    ],
    ids=["not-json", "list", "future-version", "pid-as-string", "pid-as-bool"],
)
def test_malformed_record_is_a_state_error(tmp_path: Path, text: str) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    fd = os.open(state.record_file, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    with pytest.raises(StateDirError, match="unreadable"):
        state.read_record()


def test_record_without_port_round_trips(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    record = _record(port=None, cascade_id=None)
    state.write_record(record)
    assert state.read_record() == record
