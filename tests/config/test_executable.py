"""Which agy runs: the variable, the config's command, PATH, where agy's installer puts it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omnigent_agy import ENV_PATH
from omnigent_agy.config.executable import resolve_executable
from omnigent_agy.config.settings import AgyConfig, load_config
from omnigent_agy.errors import AgyNotFoundError, ConfigError

NO_ENV: dict[str, str] = {}


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_executable_from_the_environment_wins(tmp_path: Path) -> None:
    env_agy = executable(tmp_path / "env" / "agy")
    path_agy = executable(tmp_path / "bin" / "agy")
    config = AgyConfig(path=tmp_path / "c.yaml", command=str(tmp_path / "nowhere"))
    env = {ENV_PATH: str(env_agy), "PATH": str(path_agy.parent)}
    assert resolve_executable(config, env) == env_agy


def test_executable_from_the_config_then_path(tmp_path: Path) -> None:
    config_agy = executable(tmp_path / "opt" / "agy-sim")
    path_agy = executable(tmp_path / "bin" / "agy")
    env = {"PATH": str(path_agy.parent)}
    config = AgyConfig(path=tmp_path / "c.yaml", command=str(config_agy))
    assert resolve_executable(config, env) == config_agy
    assert resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env) == path_agy
    by_name = AgyConfig(path=tmp_path / "c.yaml", command="agy")
    assert resolve_executable(by_name, env) == path_agy


def test_an_explicit_executable_that_is_missing_never_falls_back(tmp_path: Path) -> None:
    executable(tmp_path / "bin" / "agy")
    env = {ENV_PATH: str(tmp_path / "typo" / "agy"), "PATH": str(tmp_path / "bin")}
    with pytest.raises(AgyNotFoundError) as caught:
        resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env)
    assert ENV_PATH in str(caught.value)
    assert "Fix or unset" in caught.value.remediation


def test_a_non_executable_file_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "agy"
    plain.write_text("")
    os.chmod(plain, 0o644)
    config = AgyConfig(path=tmp_path / "c.yaml", command=str(plain))
    with pytest.raises(AgyNotFoundError, match=r"harness\.agy-cli\.command"):
        resolve_executable(config, {"PATH": ""})


def test_agy_missing_from_path_says_how_to_install(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path / "home")}
    with pytest.raises(AgyNotFoundError) as caught:
        resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env)
    assert "not on PATH" in str(caught.value)
    assert "install.sh" in caught.value.remediation
    assert ENV_PATH in caught.value.remediation
    assert caught.value.code == "agy_not_installed"
    # The place looked at last, absolute: what the host's readiness check is given.
    assert caught.value.looked_last == tmp_path / "home" / ".local" / "bin" / "agy"


def test_agy_where_its_installer_puts_it_is_found_off_path(tmp_path: Path) -> None:
    """~/.local/bin (agy's installer's default), which a host's PATH often lacks."""
    installed = executable(tmp_path / "home" / ".local" / "bin" / "agy")
    on_path = executable(tmp_path / "bin" / "agy")
    env = {"PATH": str(tmp_path / "empty"), "HOME": str(tmp_path / "home")}
    assert resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env) == installed
    # PATH first; and a name in the config is looked up the same way.
    assert (
        resolve_executable(
            AgyConfig(path=tmp_path / "c.yaml"), {**env, "PATH": str(on_path.parent)}
        )
        == on_path
    )
    assert resolve_executable(AgyConfig(path=tmp_path / "c.yaml", command="agy"), env) == installed


def test_relative_folders_on_path_are_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative PATH entry is another folder in the host and in the harness (started in the
    session's workspace): the host would find an agy the turn cannot."""
    executable(tmp_path / "bin" / "agy")
    monkeypatch.chdir(tmp_path)
    env = {"PATH": f"bin{os.pathsep}", "HOME": str(tmp_path / "home")}
    with pytest.raises(AgyNotFoundError):
        resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env)


def test_home_in_a_path_is_the_resolved_environments(tmp_path: Path) -> None:
    agy = executable(tmp_path / "home" / "builds" / "agy")
    env = {"PATH": "", "HOME": str(tmp_path / "home"), ENV_PATH: "~/builds/agy"}
    assert resolve_executable(AgyConfig(path=tmp_path / "c.yaml"), env) == agy


@pytest.mark.parametrize("relative", ["bin/agy", "./agy", "../tools/agy"])
def test_a_relative_path_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str
) -> None:
    """It names another file in `omnigent host` than in the harness process."""
    config_file = tmp_path / "config.yaml"
    monkeypatch.chdir(tmp_path)
    executable(tmp_path / "bin" / "agy")
    config_file.write_text(f"harness:\n  agy-cli:\n    command: {relative}\n")
    with pytest.raises(ConfigError, match=r"harness\.agy-cli\.command is .*a relative path") as bad:
        load_config(config_file, env=NO_ENV)
    assert bad.value.key == "harness.agy-cli.command"
    config_file.write_text("harness:\n  agy-cli: {}\n")
    with pytest.raises(ConfigError, match=f"{ENV_PATH} is .*a relative path") as bad:
        load_config(config_file, env={ENV_PATH: relative})
    assert bad.value.key == ENV_PATH
    with pytest.raises(ConfigError, match="relative path"):
        resolve_executable(AgyConfig(path=config_file), {ENV_PATH: relative})
