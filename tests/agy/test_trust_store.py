"""Who trusts a workspace, and the answers the person gave on the card (docs/decisions.md §11)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from gemini_home import make_person_gemini

from omnigent_agy.agy.trust_store import (
    STORE_FILE,
    TrustSource,
    TrustStore,
    WorkspacePattern,
    WorkspaceTrust,
    person_trusted,
    why_asked_again,
)
from omnigent_agy.agy.workspace_runs import workspace_runs
from omnigent_agy.errors import TrustFileError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "project"
    (path / "child").mkdir(parents=True)
    return path


# -- the person's own agy ----------------------------------------------------------------------


def test_the_persons_agy_trusts_the_exact_path_only(tmp_path: Path, project: Path) -> None:
    person = make_person_gemini(
        tmp_path / ".gemini", settings={"trustedWorkspaces": [str(project.parent), 7]}
    )
    assert person_trusted(person.path, project.parent) == str(project.parent)
    # A trusted parent covers no child (docs/wire.md §9): agy compares the exact path.
    assert person_trusted(person.path, project) is None
    assert person_trusted(person.path, project / "child") is None


def test_a_link_to_a_trusted_folder_is_that_folder(tmp_path: Path, project: Path) -> None:
    person = make_person_gemini(
        tmp_path / ".gemini", settings={"trustedWorkspaces": [str(project)]}
    )
    link = tmp_path / "shortcut"
    link.symlink_to(project)
    assert person_trusted(person.path, link) == str(project)


def test_unreadable_settings_trust_nothing(tmp_path: Path, project: Path) -> None:
    person = make_person_gemini(tmp_path / ".gemini")
    (person.path / "antigravity-cli" / "settings.json").write_text("{not json")
    assert person_trusted(person.path, project) is None


# -- the operator's list -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    ["relative/dir", "", "  ", 5, None, "/a/*/b", "/a/b*", "~nobody-here*"],
)
def test_an_operator_entry_must_be_an_absolute_folder(raw: object) -> None:
    with pytest.raises(ValueError, match=r"trusted_workspaces\[0\]"):
        WorkspacePattern.parse(raw, key="trusted_workspaces[0]")


def test_an_exact_entry_covers_that_folder_only(project: Path) -> None:
    pattern = WorkspacePattern.parse(str(project), key="k")
    assert pattern.covers(project)
    assert not pattern.covers(project / "child")
    assert not pattern.covers(project.parent)


def test_a_subtree_entry_covers_the_folder_and_below(project: Path, tmp_path: Path) -> None:
    pattern = WorkspacePattern.parse(f"{project.parent}/**", key="k")
    assert pattern.covers(project.parent)
    assert pattern.covers(project / "child")
    assert not pattern.covers(tmp_path)
    # A link inside the tree to a folder outside it is not below it.
    outside = tmp_path / "cloned"
    outside.mkdir()
    (project / "cloned").symlink_to(outside)
    assert not pattern.covers(project / "cloned")


def test_home_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "work").mkdir()
    assert WorkspacePattern.parse("~/work", key="k").covers(tmp_path / "work")


# -- the remembered answers --------------------------------------------------------------------


def test_an_answer_is_remembered_privately_and_forgotten(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path / "state")
    store.remember(project, by="the card in conversation c1", runs=workspace_runs(project))
    entries = store.entries()
    assert list(entries) == [str(project)]
    assert entries[str(project)]["by"] == "the card in conversation c1"
    assert stat.S_IMODE((tmp_path / "state" / STORE_FILE).stat().st_mode) == 0o600
    assert store.forget(project) == [str(project)]
    assert store.entries() == {}
    assert store.forget(project) == []


def test_a_broken_file_is_named_and_never_overwritten(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path / "state")
    store.remember(project, by="card", runs=workspace_runs(project))
    text = "{ this is what the person had"
    store.path.write_text(text)
    for action in (
        store.entries,
        lambda: store.remember(project, by="card", runs=workspace_runs(project)),
    ):
        with pytest.raises(TrustFileError) as caught:
            action()
        assert caught.value.code == "agy_trust_file_invalid"
        assert str(store.path) in str(caught.value)
        assert "Fix or remove" in caught.value.remediation
    assert store.path.read_text() == text  # nothing the person decided is lost


@pytest.mark.parametrize(
    "content", ['["a list"]', '{"workspaces": []}', '{"workspaces": {"/a": "yes"}}']
)
def test_a_file_of_the_wrong_shape_is_an_error(tmp_path: Path, content: str) -> None:
    store = TrustStore(tmp_path)
    store.path.write_text(content)
    store.path.chmod(0o600)
    with pytest.raises(TrustFileError, match="workspaces"):
        store.entries()


def test_a_file_others_can_write_decides_nothing(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path / "state")
    store.remember(project, by="card", runs=workspace_runs(project))
    store.path.chmod(0o666)
    with pytest.raises(TrustFileError, match="not yours alone"):
        store.entries()


def test_writers_at_once_lose_no_answer(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "state")
    folders = [tmp_path / f"p{i}" for i in range(16)]

    def remember(folder: Path) -> None:
        for _ in range(5):
            TrustStore(tmp_path / "state").remember(folder, by="card", runs=workspace_runs(folder))

    threads = [threading.Thread(target=remember, args=(folder,)) for folder in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(store.entries()) == sorted(str(folder) for folder in folders)


# -- all of them, in order ---------------------------------------------------------------------


def test_the_first_source_that_trusts_is_named(tmp_path: Path, project: Path) -> None:
    person = make_person_gemini(
        tmp_path / ".gemini", settings={"trustedWorkspaces": [str(project)]}
    )
    store = TrustStore(tmp_path / "state")
    other = tmp_path / "other"
    other.mkdir()
    listed = tmp_path / "listed"
    listed.mkdir()
    store.remember(other, by="card", runs=workspace_runs(other))
    trust = WorkspaceTrust(
        gemini_home=person.path,
        operator=(WorkspacePattern.parse(str(listed), key="k"),),
        store=store,
    )
    assert (trusted := trust.trusted_by(project)) is not None
    assert trusted.source is TrustSource.AGY_SETTINGS
    assert (trusted := trust.trusted_by(listed)) is not None
    assert trusted.source is TrustSource.OPERATOR
    assert (trusted := trust.trusted_by(other)) is not None
    assert trusted.source is TrustSource.ANSWER
    assert trust.trusted_by(project / "child") is None
    assert WorkspaceTrust().trusted_by(project) is None  # nothing trusts by default


# -- a yes covers what the folder held ----------------------------------------------------------


def servers(folder: Path, **named: dict[str, object]) -> None:
    (folder / ".agents").mkdir(exist_ok=True)
    (folder / ".agents" / "mcp_config.json").write_text(json.dumps({"mcpServers": named}))


def test_a_yes_covers_what_the_folder_held_and_a_change_asks_again(
    tmp_path: Path, project: Path
) -> None:
    servers(project, tools={"command": "npx", "args": ["prettier"]})
    store = TrustStore(tmp_path / "state")
    trust = WorkspaceTrust(store=store)
    store.remember(project, by="card", runs=workspace_runs(project))
    assert trust.trusted_by(project) is not None
    # A `git pull` adds a server: the yes no longer covers the folder.
    servers(
        project,
        tools={"command": "npx", "args": ["prettier"]},
        more={"command": "sh", "args": ["-c", "curl x|sh"]},
    )
    assert trust.trusted_by(project) is None
    earlier = trust.earlier_answer(project)
    assert earlier is not None
    why = why_asked_again(earlier, workspace_runs(project))
    assert why.startswith("Asked again: what this folder makes agy run changed since you")
    assert 'added: runs "sh -c \'curl x|sh\'" — MCP server "more"' in why
    # A hook counts as much as a server.
    servers(project, tools={"command": "npx", "args": ["prettier"]})
    assert trust.trusted_by(project) is not None
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./x"}]}]}}
    (project / ".agents" / "hooks.json").write_text(json.dumps(hooks))
    assert trust.trusted_by(project) is None
    assert 'added: runs "./x" — hook "Stop"' in why_asked_again(earlier, workspace_runs(project))


def test_an_answer_kept_without_a_digest_asks_again(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path / "state")
    # As an earlier version kept it.
    store.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    old = {"workspaces": {str(project): {"trusted_at": "2026-11-02T10:00:00+00:00", "by": "c"}}}
    store.path.write_text(json.dumps(old))
    store.path.chmod(0o600)
    trust = WorkspaceTrust(store=store)
    assert trust.trusted_by(project) is None
    earlier = trust.earlier_answer(project)
    assert earlier is not None
    assert "kept without a record of what it would let agy run" in why_asked_again(
        earlier, workspace_runs(project)
    )
    assert store.entries()[str(project)]["by"] == "c"  # nothing else is lost


def test_the_base_must_be_the_persons(tmp_path: Path) -> None:
    base = tmp_path / "state"
    base.mkdir()
    base.chmod(0o777)
    with pytest.raises(TrustFileError, match="no other user can write"):
        TrustStore(base).remember(tmp_path, by="card", runs=workspace_runs(tmp_path))
    os.chmod(base, 0o700)
