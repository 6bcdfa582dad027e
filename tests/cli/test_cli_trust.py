"""``omnigent-agy trust``: what agy may work in without asking; trusting a folder; --forget."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from gemini_home import make_person_gemini

from omnigent_agy import cli
from omnigent_agy import plugins as hooks
from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.trust_store import STORE_FILE, TrustStore
from omnigent_agy.config.settings import ENV_TRUSTED_WORKSPACES


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("OMNIGENT_CONFIG_HOME", raising=False)
    monkeypatch.delenv(ENV_TRUSTED_WORKSPACES, raising=False)
    person = make_person_gemini(tmp_path / ".gemini")
    monkeypatch.setenv(GEMINI_HOME_ENV, str(person.path))
    hooks.reset_plugin_manager_for_tests()
    yield tmp_path
    hooks.reset_plugin_manager_for_tests()


@pytest.fixture
def clone(home: Path) -> Path:
    path = home / "src" / "clone"
    (path / ".agents").mkdir(parents=True)
    servers = {"mcpServers": {"tools": {"command": "sh", "args": ["-c", "touch pwned"]}}}
    (path / ".agents" / "mcp_config.json").write_text(json.dumps(servers))
    return path


def test_trust_then_forget_a_folder(
    home: Path, clone: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["trust", str(clone)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "trusting it lets agy run, when agy starts there:\n" in out
    assert '\n  (1) runs "sh -c \'touch pwned\'" — MCP server "tools"\n' in out
    assert f"trusted {clone}: agy starts there without asking" in out
    assert list(TrustStore(home / "state").entries()) == [str(clone)]

    assert cli.main(["trust"]) == cli.EXIT_OK
    listing = capsys.readouterr().out
    assert f"  {clone}  (since " in listing
    assert "`omnigent-agy trust`" in listing
    assert "Any other folder is asked about on a card" in listing
    assert "asks again" not in listing
    # A `git pull` adds a server: the listing says the yes no longer covers it.
    (clone / ".agents" / "mcp_config.json").write_text('{"mcpServers": {}}')
    assert cli.main(["trust"]) == cli.EXIT_OK
    listing = capsys.readouterr().out
    assert "asks again: what it makes agy run changed since" in listing

    assert cli.main(["trust", "--forget", str(clone)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"forgot {clone}" in out
    assert "the next session there asks you again" in out
    assert TrustStore(home / "state").entries() == {}


def test_forgetting_says_what_else_still_trusts_it(
    home: Path, clone: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_TRUSTED_WORKSPACES, str(clone))
    assert cli.main(["trust", "--forget", str(clone)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"{clone} was not trusted on a card" in out
    assert f"it is still trusted by the operator's list ({clone})" in out


def test_a_missing_folder_cannot_be_trusted(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["trust", str(home / "nowhere")]) == cli.EXIT_FAILED
    assert "is not a folder" in capsys.readouterr().err
    assert not (home / "state" / STORE_FILE).exists()


def test_a_broken_file_is_reported_and_kept(
    home: Path, clone: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = home / "state" / STORE_FILE
    store.parent.mkdir(mode=0o700)
    store.write_text("{broken")
    store.chmod(0o600)
    assert cli.main(["trust", str(clone)]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert f"{store} is not valid JSON" in err
    assert "Fix or remove" in err
    assert cli.main(["trust"]) == cli.EXIT_FAILED
    assert "cannot be read" in capsys.readouterr().err
    assert store.read_text() == "{broken"


def test_forget_needs_a_folder(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["trust", "--forget"]) == cli.EXIT_USAGE
    assert "--forget needs a FOLDER" in capsys.readouterr().err
