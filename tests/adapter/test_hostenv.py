"""The host's settings reach the harness process: the plugin's variables pass omnigent's filter.

omnigent's own `_build_runner_env` (what `omnigent host` gives each runner; the runner hands
its environment on to the harness process) is the judge here; the e2e tests in
tests/e2e/test_e2e_hosts.py check the same on the real stack.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from omnigent.community.harness.agy import hostenv, plugin
from omnigent.host import connect
from omnigent.inner.agent_env import strip_desktop_session_env

import omnigent_agy
from omnigent_agy import ENV_PATH
from omnigent_agy.config.executable import resolve_executable
from omnigent_agy.config.settings import ENV_ENABLED, load_config

PACKAGES = [Path(plugin.__file__).parent, Path(omnigent_agy.__file__).parent]
# Settings the plugin reads that omnigent itself passes to runners (its allow-list and the
# providers' credentials): a test below checks they still do.
OMNIGENTS_OWN = ("PATH", "HOME", "OMNIGENT_CONFIG_HOME", "GEMINI_API_KEY")


def runner_environment(host: dict[str, str]) -> dict[str, str]:
    """What a harness process spawned for `host`'s environment starts with."""
    runner = connect._build_runner_env(
        host, server_url="", runner_id="", binding_token="", workspace="", parent_pid=0
    )
    return strip_desktop_session_env(runner)


def the_plugins_variables() -> set[str]:
    """Every OMNIGENT_AGY_* name written in the plugin's code (the simulator's aside)."""
    names: set[str] = set()
    for package in PACKAGES:
        for source in package.rglob("*.py"):
            if "simulator" not in source.parts:
                names |= set(re.findall(r"\"(OMNIGENT_AGY_[A-Z_]+)\"", source.read_text()))
    return names


def test_every_variable_of_the_plugin_reaches_the_harness(tmp_path: Path) -> None:
    names = the_plugins_variables()
    assert {ENV_ENABLED, ENV_PATH, "OMNIGENT_AGY_STATE_DIR", "OMNIGENT_AGY_TMUX_SOCKET"} <= names
    host = {name: f"{tmp_path}/{name.lower()}" for name in [*names, *hostenv.ALSO_READ]}
    host |= {name: f"/value/of/{name}" for name in OMNIGENTS_OWN}
    host[ENV_ENABLED] = "1"
    before = runner_environment(dict(host))
    assert ENV_PATH not in before, "omnigent passes it now: the forwarding may go"

    added = hostenv.forward_to_runners(host)

    assert sorted(added) == sorted([*names, *hostenv.ALSO_READ])
    harness = runner_environment(host)
    for name in [*names, *hostenv.ALSO_READ, *OMNIGENTS_OWN]:
        assert harness.get(name) == host[name], name


def test_the_harness_resolves_the_agy_the_host_was_ready_with(tmp_path: Path) -> None:
    agy = tmp_path / "builds" / "agy"
    agy.parent.mkdir()
    agy.write_text("#!/bin/sh\n")
    agy.chmod(0o755)
    host = {"HOME": str(tmp_path), "PATH": str(tmp_path / "empty"), ENV_PATH: str(agy)}
    hostenv.forward_to_runners(host)
    harness = runner_environment(host)
    config = load_config(tmp_path / "config.yaml", env=harness)
    assert resolve_executable(config, harness) == resolve_executable(config, host) == agy


def test_the_operators_own_names_stay_and_nothing_is_listed_twice() -> None:
    host = {hostenv.PASSTHROUGH_ENV: " MY_TOKEN , ,OMNIGENT_AGY_CLI_PATH", ENV_PATH: "/a/agy"}
    host |= {"OMNIGENT_AGY_STATE_DIR": "/state", "TMUX_TMPDIR": "/tmux", "UNRELATED": "x"}
    assert hostenv.forward_to_runners(host) == ["OMNIGENT_AGY_STATE_DIR", "TMUX_TMPDIR"]
    listed = "MY_TOKEN,OMNIGENT_AGY_CLI_PATH,OMNIGENT_AGY_STATE_DIR,TMUX_TMPDIR"
    assert host[hostenv.PASSTHROUGH_ENV] == listed
    assert hostenv.forward_to_runners(host) == []
    assert host[hostenv.PASSTHROUGH_ENV] == listed


def test_nothing_set_changes_nothing() -> None:
    host = {"PATH": "/usr/bin"}
    assert hostenv.forward_to_runners(host) == []
    assert host == {"PATH": "/usr/bin"}


def test_the_passthrough_name_is_omnigents() -> None:
    assert hostenv.PASSTHROUGH_ENV == connect.RUNNER_ENV_PASSTHROUGH_ENV_VAR


def test_loading_the_plugin_enabled_forwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OMNIGENT_CONFIG_HOME", raising=False)
    monkeypatch.setenv(ENV_ENABLED, "1")
    monkeypatch.setenv(ENV_PATH, "/opt/agy/bin/agy")
    monkeypatch.setenv(hostenv.PASSTHROUGH_ENV, "MY_TOKEN")
    plugin.get_contribution()
    listed = os.environ[hostenv.PASSTHROUGH_ENV].split(",")
    assert listed[0] == "MY_TOKEN"
    assert {ENV_ENABLED, ENV_PATH} <= set(listed)


def test_loading_the_plugin_disabled_forwards_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OMNIGENT_CONFIG_HOME", raising=False)
    monkeypatch.setenv(ENV_ENABLED, "0")
    monkeypatch.setenv(hostenv.PASSTHROUGH_ENV, "MY_TOKEN")
    plugin.get_contribution()
    assert os.environ[hostenv.PASSTHROUGH_ENV] == "MY_TOKEN"
