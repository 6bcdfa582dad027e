"""``omnigent-agy enable|disable|config|agent-path``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from omnigent_agy import ENV_PATH, cli
from omnigent_agy import plugins as hooks
from omnigent_agy.config.agent_folder import DATA_HOME_ENV
from omnigent_agy.config.settings import ENV_ENABLED


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    for name in (ENV_ENABLED, ENV_PATH, "OMNIGENT_CONFIG_HOME", DATA_HOME_ENV):
        monkeypatch.delenv(name, raising=False)
    hooks.reset_plugin_manager_for_tests()
    yield tmp_path
    hooks.reset_plugin_manager_for_tests()


def config_of(home: Path) -> dict[str, object]:
    loaded = yaml.safe_load((home / ".omnigent" / "config.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_enable_then_disable_edits_the_default_file(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["enable"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"harness.agy-cli.enabled: unset -> true in {home}/.omnigent/config.yaml" in out
    assert "restart" in out
    folder = home / ".local" / "share" / "omnigent-agy" / "agent"
    assert f'then register its agent: omnigent agent add "{folder}"' in out
    assert (folder / "config.yaml").is_file()
    assert config_of(home) == {"harness": {"agy-cli": {"enabled": True}}}

    assert cli.main(["disable"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "true -> false" in out
    assert "register" not in out
    assert config_of(home) == {"harness": {"agy-cli": {"enabled": False}}}


def test_enable_warns_when_the_environment_disagrees(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENV_ENABLED, "0")
    assert cli.main(["enable"]) == cli.EXIT_OK
    assert f"{ENV_ENABLED}=0 is set and overrides the file" in capsys.readouterr().err
    assert config_of(home) == {"harness": {"agy-cli": {"enabled": True}}}


def test_explicit_config_path(tmp_path: Path, home: Path) -> None:
    target = tmp_path / "elsewhere.yaml"
    target.write_text("server: http://127.0.0.1:1\n")
    assert cli.main(["--config", str(target), "enable"]) == cli.EXIT_OK
    assert yaml.safe_load(target.read_text()) == {
        "server": "http://127.0.0.1:1",
        "harness": {"agy-cli": {"enabled": True}},
    }
    assert not (home / ".omnigent" / "config.yaml").exists()


def test_config_prints_the_effective_configuration(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agy = home / "bin" / "agy"
    agy.parent.mkdir()
    agy.write_text("#!/bin/sh\n")
    agy.chmod(0o755)
    config = home / ".omnigent" / "config.yaml"
    config.parent.mkdir()
    config.write_text(
        "harness:\n  agy-cli:\n    enabled: true\n"
        "    permissions: {mode: plan, allow: ['command(git status)'], deny: ['command(rm:*)']}\n"
        "auth: {api_key: sk-not-for-printing}\n"
    )
    monkeypatch.setenv("SOME_TOKEN", "tok-not-for-printing")

    assert cli.main(["config"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"config file:       {config}" in out
    assert "enabled:           true (from harness.agy-cli.enabled)" in out
    assert f"agy executable:    {agy}" in out
    assert "permission mode:   plan" in out
    assert "allow rules:       command(git status)" in out
    assert "deny rules:        command(rm:*)" in out
    assert "plugins:           builtin" in out
    assert "gemini-pro -> (family)" in out
    assert "not-for-printing" not in out


def test_config_reports_the_environment_and_a_missing_agy(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENV_ENABLED, "1")
    monkeypatch.setenv(ENV_PATH, str(home / "missing-agy"))
    assert cli.main(["config"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"enabled:           true (from {ENV_ENABLED})" in out
    assert "agy executable:    not found" in out
    assert f"{ENV_PATH} is set" in out


def test_a_broken_config_exits_2_naming_the_key(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = home / ".omnigent" / "config.yaml"
    config.parent.mkdir()
    config.write_text("harness:\n  agy-cli:\n    permissions: {mode: yolo}\n")
    assert cli.main(["config"]) == cli.EXIT_USAGE
    assert "harness.agy-cli.permissions.mode 'yolo'" in capsys.readouterr().err


def test_agent_path_names_the_folder(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["agent-path"]) == cli.EXIT_OK
    path = Path(capsys.readouterr().out.strip())
    assert path == home / ".local" / "share" / "omnigent-agy" / "agent"
    agent = yaml.safe_load((path / "config.yaml").read_text())
    assert agent["executor"] == {"type": "omnigent", "config": {"harness": "agy-cli"}}
    assert {"spec_version", "name", "description", "instructions", "terminals"} <= set(agent)
    assert Path(agent["terminals"]["agy"]["command"]).is_absolute()
    # Written again on every call, whole: a second call gives the same folder and file.
    first = (path / "config.yaml").read_text()
    assert cli.main(["agent-path"]) == cli.EXIT_OK
    assert Path(capsys.readouterr().out.strip()) == path
    assert (path / "config.yaml").read_text() == first


def test_every_command_is_one_function() -> None:
    parser = cli.build_parser()
    choices = next(
        action.choices
        for action in parser._actions  # argparse keeps subparsers here
        if action.dest == "command"
    )
    assert isinstance(choices, dict)
    expected = {
        "enable",
        "disable",
        "config",
        "agent-path",
        "doctor",
        "demo",
        "ps",
        "stop",
        "probe",
        "attach",
        "trust",
        "conversations",
        "prune",
    }
    assert set(choices) == expected
    assert len(cli.COMMANDS) == len(choices)


def test_probe_takes_yes_or_no_turns_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["probe", "--yes", "--no-turns"])
    assert exited.value.code == cli.EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err


def test_console_script_runs(home: Path) -> None:
    script = Path(sys.executable).with_name("omnigent-agy")
    assert script.exists(), "the project is installed with its console script"
    env = {**os.environ, "HOME": str(home)}
    result = subprocess.run(
        [str(script), "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "enable" in result.stdout
    assert "config" in result.stdout


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main([])
    assert caught.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_demo_without_agy_sim_says_in_one_line_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As where only the plugin is installed: every agy_sim module unimportable.
    for name in [*(name for name in sys.modules if name.split(".")[0] == "agy_sim"), "agy_sim"]:
        monkeypatch.setitem(sys.modules, name, None)
    assert cli.main(["demo"]) == cli.EXIT_FAILED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "agy-sim, which is not installed" in captured.err
    assert "scripts/demo" in captured.err
    assert "pip install 'CHECKOUT[demo]' CHECKOUT/agy-sim" in captured.err


def test_demo_help_describes_both_ways_of_running_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["demo", "--help"])
    assert caught.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "scripted conversation" in shown
    assert "--interactive" in shown
    assert "web UI's address" in shown
    assert "Ctrl-C" in shown
