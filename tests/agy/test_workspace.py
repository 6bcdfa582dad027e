"""A workspace inside a hidden folder reaches agy as a private dot-free link (docs/wire.md §9)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import psutil
import pytest

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.agy.workspace import (
    LINK_RECORD,
    AgyWorkspace,
    is_hidden,
    prepare_workspace,
    private_runtime_folder,
    ready_folder,
    remove_link,
)
from omnigent_agy.errors import WorkspaceHiddenError


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        ("/home/me/project", False),
        ("/home/me/.config/tool", True),
        ("/home/me/repo/.worktrees/feature", True),
        ("/home/me/.dotfiles", True),
        ("/home/me/project.v2/src", False),  # a dot inside a name is not a hidden folder
        ("/home/me/a/./b", False),  # "." is no folder: the spelling is normalised first
        ("/home/me/a/../.b/c", True),
    ],
)
def test_what_agy_counts_as_hidden(path: str, hidden: bool) -> None:
    assert is_hidden(path) is hidden


@pytest.fixture
def runtime(tmp_path: Path) -> dict[str, str]:
    """A private XDG_RUNTIME_DIR, as a login session has one (0700, the user's)."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    return {"XDG_RUNTIME_DIR": str(folder)}


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo" / ".worktrees" / "feature"
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text("# feature\n")
    return workspace


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state" / "conv_1"
    folder.mkdir(parents=True, mode=0o700)
    return folder


def test_a_plain_workspace_is_given_as_it_is(tmp_path: Path, state: Path) -> None:
    where = prepare_workspace(tmp_path, "conv_1", state, {})
    assert where == AgyWorkspace(tmp_path, tmp_path)
    assert not where.linked
    assert not (state / LINK_RECORD).exists()


def test_a_hidden_workspace_gets_a_private_dot_free_link(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    where = prepare_workspace(hidden, "conv_1", state, runtime)
    link = where.agy
    assert where.person == hidden
    assert not is_hidden(link), link
    assert link.is_symlink()
    assert os.readlink(link) == str(hidden)
    assert (link / "README.md").read_text() == "# feature\n"
    assert link.name == "feature"  # agy still sees the workspace's own name last
    assert link.is_relative_to(runtime["XDG_RUNTIME_DIR"])
    for folder in (link.parent, link.parent.parent, link.parent.parent.parent):
        info = folder.lstat()
        assert stat.S_ISDIR(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o700, folder
        assert info.st_uid == os.getuid()
    assert (state / LINK_RECORD).read_text() == str(link)
    # The next turn finds it as it is, and repairs it when it is gone.
    assert prepare_workspace(hidden, "conv_1", state, runtime) == where
    link.unlink()
    assert prepare_workspace(hidden, "conv_1", state, runtime) == where
    assert link.is_symlink()


def test_a_link_pointing_elsewhere_is_repointed(
    hidden: Path, state: Path, runtime: dict[str, str], tmp_path: Path
) -> None:
    link = prepare_workspace(hidden, "conv_1", state, runtime).agy
    link.unlink()
    link.symlink_to(tmp_path / "somewhere-else")
    assert os.readlink(prepare_workspace(hidden, "conv_1", state, runtime).agy) == str(hidden)


def test_removing_the_link_leaves_the_workspace(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    link = prepare_workspace(hidden, "conv_1", state, runtime).agy
    assert remove_link(state) is True
    assert not link.exists()
    assert not link.is_symlink()
    assert not link.parent.exists()  # the conversation's folder of links goes too
    assert not (state / LINK_RECORD).exists()
    assert (hidden / "README.md").is_file()
    assert remove_link(state) is False  # nothing left to remove


def test_only_a_link_is_ever_removed(hidden: Path, state: Path, runtime: dict[str, str]) -> None:
    link = prepare_workspace(hidden, "conv_1", state, runtime).agy
    link.unlink()
    link.mkdir()  # something else took its place: not ours to delete
    (link / "keep.txt").write_text("keep")
    remove_link(state)
    assert (link / "keep.txt").read_text() == "keep"


def test_a_hidden_runtime_dir_is_not_used(
    hidden: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotted = tmp_path / ".run"
    dotted.mkdir(mode=0o700)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    link = prepare_workspace(hidden, "conv_1", state, {"XDG_RUNTIME_DIR": str(dotted)}).agy
    assert link.is_relative_to(temp)
    assert not is_hidden(link)


def test_a_runtime_dir_others_can_enter_is_not_used(
    hidden: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared-run"
    shared.mkdir()
    shared.chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    link = prepare_workspace(hidden, "conv_1", state, {"XDG_RUNTIME_DIR": str(shared)}).agy
    assert link.is_relative_to(temp)


def test_an_open_folder_in_its_place_is_refused_not_repaired(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    planted = Path(runtime["XDG_RUNTIME_DIR"]) / f"omnigent-agy-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)  # anyone could have put a link of their own in it
    with pytest.raises(WorkspaceHiddenError) as caught:
        prepare_workspace(hidden, "conv_1", state, runtime)
    assert caught.value.code == "agy_workspace_hidden"
    assert str(hidden) in str(caught.value)
    assert "0777" in str(caught.value)
    assert "TMPDIR" in caught.value.remediation
    assert stat.S_IMODE(planted.stat().st_mode) == 0o777  # left as it was: refused, not fixed


def test_a_link_in_its_place_is_refused(
    hidden: Path, state: Path, runtime: dict[str, str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o700)
    (Path(runtime["XDG_RUNTIME_DIR"]) / f"omnigent-agy-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(WorkspaceHiddenError, match="not a directory"):
        prepare_workspace(hidden, "conv_1", state, runtime)
    assert not any(elsewhere.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_another_users_folder_is_refused(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    theirs = Path(runtime["XDG_RUNTIME_DIR"]) / f"omnigent-agy-{os.getuid()}"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)  # nobody's
    with pytest.raises(WorkspaceHiddenError, match="belongs to uid 65534"):
        prepare_workspace(hidden, "conv_1", state, runtime)


def test_the_private_folder_is_shared_with_the_relay(runtime: dict[str, str]) -> None:
    folder = private_runtime_folder(runtime)
    assert folder == Path(runtime["XDG_RUNTIME_DIR"]) / f"omnigent-agy-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("/run/l/feature", "/w/.worktrees/feature"),
        ("/run/l/feature/src/a.py", "/w/.worktrees/feature/src/a.py"),
        ("cd '/run/l/feature' && ls", "cd '/w/.worktrees/feature' && ls"),
        ("/run/l/feature-two/a.py", "/run/l/feature-two/a.py"),  # a sibling: not the link
        ("/run/l/features", "/run/l/features"),
        ("nothing to map", "nothing to map"),
    ],
)
def test_what_the_person_sees_names_their_own_path(text: str, shown: str) -> None:
    where = AgyWorkspace(Path("/w/.worktrees/feature"), Path("/run/l/feature"))
    assert where.for_person(text) == shown


def test_values_are_mapped_deeply() -> None:
    where = AgyWorkspace(Path("/w/.x/f"), Path("/run/l/f"))
    value = {"cwd": "/run/l/f", "paths": ["/run/l/f/a", 3], "n": None}
    assert where.value_for_person(value) == {"cwd": "/w/.x/f", "paths": ["/w/.x/f/a", 3], "n": None}


def test_the_link_stays_while_the_record_names_an_agy_that_runs(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    """A stop of an earlier agy (`omnigent-agy stop`, a sweep) must not pull the link from
    under the agy started since: the record names that one, still running."""
    link = prepare_workspace(hidden, "conv_1", state, runtime).agy
    this = psutil.Process()  # stands for the running agy: a live process of ours
    record = AgyRecord(
        pid=this.pid,
        pid_create_time=this.create_time(),
        port=None,
        csrf_token="t0k",
        tmux_socket="s",
        tmux_session="agy-conv_1",
        log_file=str(state / "agy.log"),
        cascade_id="c-1",
    )
    states = SessionStateDir(state)
    states.write_record(record)
    assert remove_link(state) is False
    assert link.is_symlink()
    states.write_record(record.as_stopped("idle", time.time()))
    assert remove_link(state) is True
    assert not link.is_symlink()


def test_a_launch_makes_the_link_again_after_a_stop_removed_it(
    hidden: Path, state: Path, runtime: dict[str, str]
) -> None:
    link = prepare_workspace(hidden, "conv_1", state, runtime).agy
    assert remove_link(state) is True
    ready_folder(link, hidden, state)
    assert os.readlink(link) == str(hidden)
    assert (state / LINK_RECORD).read_text(encoding="utf-8") == str(link)


def test_a_link_to_a_workspace_with_the_longest_name_can_be_made(
    tmp_path: Path, state: Path, runtime: dict[str, str]
) -> None:
    """The link's temporary name is short: the link's own may be as long as a name can be."""
    longest = tmp_path / ".hidden" / ("n" * 255)
    longest.mkdir(parents=True)
    link = prepare_workspace(longest, "conv_1", state, runtime).agy
    assert os.readlink(link) == str(longest)
