"""Seeding agy's private gemini dir from the person's ~/.gemini (docs/wire.md §1b)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from gemini_home import make_person_gemini

from omnigent_agy.agy.gemini_home import (
    GeminiSeed,
    seed_gemini_dir,
    sync_sign_in,
)
from omnigent_agy.agy.mcp_selection import McpSelection
from omnigent_agy.errors import SeedError

SERVERS = {
    "github": {"command": "gh-mcp", "args": ["serve"], "env": {"GITHUB_TOKEN": "ghp_secret"}},
    "slack": {"command": "slack-mcp", "enabledTools": ["read_channel"]},
}


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def seeded(tmp_path: Path, workspace: Path, **kwargs: Any) -> tuple[Path, GeminiSeed]:
    person = make_person_gemini(
        tmp_path / "home" / ".gemini",
        settings={"gcp": {"project": "p1", "location": "us-central1"}, "theme": "dark"},
        skills=("review",),
        mcp_servers=SERVERS,
        rules="Always answer in English.\n",
    )
    seed = GeminiSeed(source=person.path, trusted_workspace=workspace, **kwargs)
    target = tmp_path / "state" / "gemini"
    seed_gemini_dir(target, seed, fresh=True)
    return target, seed


def test_the_seeded_folder_is_the_persons_agy(tmp_path: Path, workspace: Path) -> None:
    target, seed = seeded(tmp_path, workspace)
    token = target / "antigravity-cli" / "antigravity-oauth-token"
    assert (
        token.read_bytes() == (seed.source / "antigravity-cli/antigravity-oauth-token").read_bytes()
    )
    assert (target / "google_accounts.json").is_file()
    assert (target / "installation_id").is_file()
    onboarding = read(target / "antigravity-cli/cache/onboarding.json")
    assert onboarding == dict.fromkeys(
        ("onboardingComplete", "consumerOnboardingComplete", "enterpriseOnboardingComplete"), True
    )
    assert (target / "config/.migrated").exists()
    settings = read(target / "antigravity-cli/settings.json")
    assert settings["gcp"] == {"project": "p1", "location": "us-central1"}  # turns need it
    assert settings["theme"] == "dark"
    assert settings["showFeedbackSurvey"] is False
    assert settings["trustedWorkspaces"] == [str(workspace)]
    assert "modelProvider" not in settings
    skills = target / "skills"
    assert skills.is_symlink()
    assert (skills / "review" / "SKILL.md").is_file()
    assert read(target / "config/mcp_config.json")["mcpServers"] == SERVERS
    assert (target / "GEMINI.md").read_text() == "Always answer in English.\n"


def test_secrets_are_private_and_nothing_is_group_or_world_readable(
    tmp_path: Path, workspace: Path
) -> None:
    target, _ = seeded(tmp_path, workspace)
    for path in target.rglob("*"):
        if path.is_symlink():
            continue
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {mode:o}"


def test_a_link_out_of_the_persons_folder_is_never_followed(
    tmp_path: Path, workspace: Path
) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    outside = tmp_path / "elsewhere" / "id_rsa"
    outside.parent.mkdir()
    outside.write_text("PRIVATE KEY")
    token = person.path / "oauth_creds.json"
    token.symlink_to(outside)
    skills_outside = tmp_path / "elsewhere" / "skills"
    skills_outside.mkdir()
    (person.path / "skills").symlink_to(skills_outside, target_is_directory=True)
    target = tmp_path / "state" / "gemini"
    report = seed_gemini_dir(target, GeminiSeed(person.path, workspace), fresh=True)
    assert not (target / "oauth_creds.json").exists()
    assert not (target / "skills").exists()
    assert any("oauth_creds.json" in s for s in report.skipped)
    assert "PRIVATE KEY" not in "".join(
        p.read_text() for p in target.rglob("*") if p.is_file() and not p.is_symlink()
    )


def test_a_link_inside_the_persons_folder_is_read(tmp_path: Path, workspace: Path) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini", signed_in=False)
    real = person.path / "backup" / "oauth_creds.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"access_token": "a", "refresh_token": "r"}))
    (person.path / "oauth_creds.json").symlink_to(real)
    target = tmp_path / "state" / "gemini"
    seed_gemini_dir(target, GeminiSeed(person.path, workspace), fresh=True)
    copied = target / "oauth_creds.json"
    assert not copied.is_symlink()
    assert read(copied)["refresh_token"] == "r"


def test_a_reattach_refreshes_the_token_but_not_agys_settings(
    tmp_path: Path, workspace: Path
) -> None:
    target, seed = seeded(tmp_path, workspace)
    settings = target / "antigravity-cli/settings.json"
    settings.write_text(json.dumps({**read(settings), "agyWroteThis": True}))
    renewed = {"token": {"access_token": "renewed", "refresh_token": "r2"}}
    (seed.source / "antigravity-cli/antigravity-oauth-token").write_text(json.dumps(renewed))
    seed_gemini_dir(target, seed, fresh=False)
    assert read(target / "antigravity-cli/antigravity-oauth-token") == renewed
    assert read(settings)["agyWroteThis"] is True


def test_an_allow_list_gives_only_those_servers_and_a_deny_list_all_but(
    tmp_path: Path, workspace: Path
) -> None:
    target, _ = seeded(tmp_path, workspace, mcp_selection=McpSelection(allow=("slack",)))
    assert list(read(target / "config/mcp_config.json")["mcpServers"]) == ["slack"]
    target, _ = seeded(tmp_path / "2", workspace, mcp_selection=McpSelection(deny=("slack",)))
    assert list(read(target / "config/mcp_config.json")["mcpServers"]) == ["github"]


def test_the_plugins_own_server_sits_beside_the_persons(tmp_path: Path, workspace: Path) -> None:
    relay = {"command": "python", "args": ["-m", "relay"], "enabledTools": ["sys_session_list"]}
    target, _ = seeded(tmp_path, workspace, extra_mcp_servers={"omnigent": relay})
    servers = read(target / "config/mcp_config.json")["mcpServers"]
    assert servers == {**SERVERS, "omnigent": relay}


def test_the_agents_instructions_follow_the_persons_rules(tmp_path: Path, workspace: Path) -> None:
    target, _ = seeded(tmp_path, workspace, instructions="  Be a careful reviewer.\n")
    rules = (target / "GEMINI.md").read_text()
    assert rules.startswith("Always answer in English.\n\n# Instructions from omnigent")
    assert rules.endswith("\n\nBe a careful reviewer.\n")


def test_an_api_key_sets_agys_gemini_provider(tmp_path: Path, workspace: Path) -> None:
    target, _ = seeded(tmp_path, workspace, api_key=True)
    assert read(target / "antigravity-cli/settings.json")["modelProvider"] == "gemini"


def test_hooks_run_in_the_real_config_dir(tmp_path: Path, workspace: Path) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    hooks = {"hooks": {"PreToolUse": [{"type": "command", "command": "./check.sh 'x'"}]}}
    (person.path / "config").mkdir(exist_ok=True)
    (person.path / "config/hooks.json").write_text(json.dumps(hooks))
    target = tmp_path / "state" / "gemini"
    seed_gemini_dir(target, GeminiSeed(person.path, workspace), fresh=True)
    command = read(target / "config/hooks.json")["hooks"]["PreToolUse"][0]["command"]
    real = (person.path / "config").resolve()
    assert command == f"cd {real} && exec sh -c './check.sh '\"'\"'x'\"'\"''"


@pytest.mark.parametrize(
    "relative", ["antigravity-cli/settings.json", "config/mcp_config.json", "config/hooks.json"]
)
def test_a_broken_json_file_of_the_person_is_an_error_naming_it(
    tmp_path: Path, workspace: Path, relative: str
) -> None:
    person = make_person_gemini(tmp_path / "home" / ".gemini")
    broken = person.path / relative
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("{not json")
    with pytest.raises(SeedError) as caught:
        seed_gemini_dir(tmp_path / "t", GeminiSeed(person.path, workspace), fresh=True)
    assert str(broken) in str(caught.value)
    assert caught.value.code == "agy_settings_invalid"
    assert str(broken) in caught.value.remediation
    assert broken.read_text() == "{not json"  # loses nothing


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (["github"], "must be a mapping"),
        ({"allow": ["a"], "deny": ["b"]}, "not both"),
        ({"allow": "github"}, "list of MCP server names"),
        ({"alow": ["a"]}, "alow is not a setting"),
    ],
)
def test_a_bad_server_selection_names_the_key(raw: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        McpSelection.parse(raw, key="harness.agy-cli.mcp_servers")


def test_seeding_logs_no_secret(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    person = make_person_gemini(tmp_path / "home" / ".gemini", mcp_servers=SERVERS)
    seed_gemini_dir(tmp_path / "t", GeminiSeed(person.path, workspace), fresh=True)
    for secret in (*person.secrets, "ghp_secret"):
        assert secret not in caplog.text
    assert os.fspath(person.path) in caplog.text  # it does say where it seeded from


TOKEN = Path("antigravity-cli/antigravity-oauth-token")


def test_a_sign_in_renewed_or_revoked_by_the_person_reaches_the_copy(
    tmp_path: Path, workspace: Path
) -> None:
    """No copy of the person's sign-in outlives theirs: another sign-in is copied, a signed-out
    person's copy removed; agy renewing its own access token is no change (agy keeps it)."""
    target, seed = seeded(tmp_path, workspace)
    assert sync_sign_in(target, seed.source) is False, "nothing changed since the seed"

    own = read(target / TOKEN)
    own["token"]["access_token"] = "renewed by agy itself"
    (target / TOKEN).write_text(json.dumps(own))
    assert sync_sign_in(target, seed.source) is False
    assert read(target / TOKEN)["token"]["access_token"] == "renewed by agy itself"

    again = {"token": {"access_token": "a3", "refresh_token": "signed in again"}}
    (seed.source / TOKEN).write_text(json.dumps(again))
    assert sync_sign_in(target, seed.source) is True
    assert read(target / TOKEN) == again
    assert stat.S_IMODE((target / TOKEN).stat().st_mode) == 0o600

    (seed.source / TOKEN).unlink()
    (seed.source / "google_accounts.json").unlink()
    assert sync_sign_in(target, seed.source) is True
    assert not (target / TOKEN).exists(), "signed out there, signed out here"
    assert not (target / "google_accounts.json").exists()
    assert sync_sign_in(target, seed.source) is False
