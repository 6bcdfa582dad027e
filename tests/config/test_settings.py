"""User configuration: the flag, the policy block, the keep limits, and editing the file."""

from __future__ import annotations

import os
import re
import stat
import textwrap
from pathlib import Path

import pytest
import yaml

from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.keep import KeepPolicy
from omnigent_agy.agy.statedir import STATE_DIR_ENV
from omnigent_agy.config.config_file import set_enabled
from omnigent_agy.config.settings import (
    ENV_ENABLED,
    ENV_IDLE_STOP_AFTER,
    ENV_MAX_KEPT,
    ENV_TRUSTED_WORKSPACES,
    AgyConfig,
    default_config_path,
    load_config,
    parse_config,
)
from omnigent_agy.errors import ConfigError
from omnigent_agy.interactions.policy import PermissionMode, parse_rule

NO_ENV: dict[str, str] = {}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return tmp_path / ".omnigent" / "config.yaml"


def test_absent_file_is_disabled_by_default(config_file: Path) -> None:
    config = load_config(config_file, env=NO_ENV)
    assert config == AgyConfig(path=config_file)
    assert (config.enabled, config.enabled_source, config.keep_agy_running) == (
        False,
        "default",
        True,
    )


def test_full_block(config_file: Path) -> None:
    write(
        config_file,
        """
        server: http://127.0.0.1:8000
        harness:
          default: claude-sdk
          agy-cli:
            enabled: true
            command: /opt/agy/bin/agy
            args: ["--log-level", "debug"]
            keep_agy_running: false
            permissions:
              mode: accept-edits
              allow: ["command(git status)", "read(/home/u/project/**)"]
              deny: ["command(rm:*)"]
        """,
    )
    config = load_config(config_file, env=NO_ENV)
    assert config.enabled
    assert config.enabled_source == "file"
    assert config.command == "/opt/agy/bin/agy"
    assert config.args == ("--log-level", "debug")
    assert config.keep_agy_running is False
    assert config.permissions.mode is PermissionMode.ACCEPT_EDITS
    assert config.permissions.allow == (
        parse_rule("command(git status)"),
        parse_rule("read(/home/u/project/**)"),
    )
    assert config.permissions.deny == (parse_rule("command(rm:*)"),)


@pytest.mark.parametrize(
    ("file_flag", "env_value", "enabled", "source"),
    [
        ("true", "0", False, ENV_ENABLED),
        ("false", "1", True, ENV_ENABLED),
        ("true", "", True, "file"),
        ("true", "  ", True, "file"),
        ("false", None, False, "file"),
    ],
)
def test_environment_overrides_the_file(
    config_file: Path, file_flag: str, env_value: str | None, enabled: bool, source: str
) -> None:
    write(config_file, f"harness: {{agy-cli: {{enabled: {file_flag}}}}}\n")
    env = {} if env_value is None else {ENV_ENABLED: env_value}
    config = load_config(config_file, env=env)
    assert (config.enabled, config.enabled_source) == (enabled, source)


@pytest.mark.parametrize("value", ["yes", "true", "2", "on"])
def test_bad_environment_flag_names_the_variable(config_file: Path, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, env={ENV_ENABLED: value})
    assert ENV_ENABLED in str(caught.value)
    assert "1 (enable) or 0 (disable)" in str(caught.value)
    assert caught.value.key == ENV_ENABLED


@pytest.mark.parametrize(
    ("block", "key", "hint"),
    [
        ("agy-cli: 5", "harness.agy-cli", "must be a mapping"),
        ("agy-cli: {enabled: 'yes'}", "harness.agy-cli.enabled", "true or false"),
        ("agy-cli: {keep_agy_runing: true}", "harness.agy-cli.keep_agy_runing", "did you mean"),
        ("agy-cli: {command: ''}", "harness.agy-cli.command", "path or a name"),
        ("agy-cli: {args: --fast}", "harness.agy-cli.args", "list of strings"),
        ("agy-cli: {permissions: ask}", "harness.agy-cli.permissions", "mapping"),
        ("agy-cli: {permissions: {mode: yolo}}", "harness.agy-cli.permissions.mode", "bypass"),
        ("agy-cli: {permissions: {allow: 'command(ls)'}}", "permissions.allow", "list of rules"),
        ("agy-cli: {permissions: {allow: [ls]}}", "permissions.allow[0]", "kind(pattern)"),
        ("agy-cli: {permissions: {deny: [3]}}", "permissions.deny[0]", "must be a string"),
        (
            "agy-cli: {permissions: {deny: ['command(ls)', 'shell(rm)']}}",
            "permissions.deny[1]",
            "unknown kind 'shell'",
        ),
        ("agy-cli: {permissions: {allowed: []}}", "permissions.allowed", "did you mean 'allow'"),
        ("agy-cli: {tmux_socket: 'a/b'}", "harness.agy-cli.tmux_socket", "tmux -L NAME"),
        ("agy-cli: {tmux_socket: 3}", "harness.agy-cli.tmux_socket", "socket name"),
        ("agy-cli: {gemini_home: ''}", "harness.agy-cli.gemini_home", "gemini dir"),
        ("agy-cli: {omnigent_tools: 'no'}", "harness.agy-cli.omnigent_tools", "true or false"),
        ("agy-cli: {mcp_servers: [github]}", "harness.agy-cli.mcp_servers", "allow' or 'deny"),
        ("agy-cli: {mcp_servers: {allow: [a], deny: [b]}}", "mcp_servers", "not both"),
    ],
)
def test_bad_settings_name_the_key(config_file: Path, block: str, key: str, hint: str) -> None:
    write(config_file, f"harness:\n  {block}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, env=NO_ENV)
    assert key in str(caught.value)
    assert hint in str(caught.value)


@pytest.mark.parametrize("text", ["harness: [unclosed\n", "- a list\n"])
def test_unusable_file_names_the_file(config_file: Path, text: str) -> None:
    write(config_file, text)
    with pytest.raises(ConfigError, match=re.escape(str(config_file))):
        load_config(config_file, env=NO_ENV)


@pytest.mark.parametrize("text", ["", "harness: claude-sdk\n", "harness: {agy-cli: }\n"])
def test_no_block_means_defaults(config_file: Path, text: str) -> None:
    write(config_file, text)
    assert load_config(config_file, env=NO_ENV) == AgyConfig(path=config_file)


def test_default_path_follows_home_and_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_config_path({}) == tmp_path / "home" / ".omnigent" / "config.yaml"
    assert default_config_path({"OMNIGENT_CONFIG_HOME": "/etc/og"}) == Path("/etc/og/config.yaml")


# --- set_enabled ---------------------------------------------------------------------

ORIGINAL = """\
server: http://127.0.0.1:8000
harness:
  default: claude-sdk
  claude-sdk:
    command: /opt/claude
  agy-cli:
    command: /opt/agy
    permissions:
      mode: plan
providers:
  gemini: {api_key_env: GEMINI_API_KEY}
"""


def test_set_enabled_keeps_everything_else(config_file: Path) -> None:
    write(config_file, ORIGINAL)
    config_file.chmod(0o600)

    change = set_enabled(config_file, True)

    assert (change.before, change.after, change.backup) == (None, True, None)
    document = yaml.safe_load(config_file.read_text())
    expected = yaml.safe_load(ORIGINAL)
    expected["harness"]["agy-cli"]["enabled"] = True
    assert document == expected
    assert list(document) == ["server", "harness", "providers"]  # order kept
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert load_config(config_file, env=NO_ENV).permissions.mode is PermissionMode.PLAN

    assert set_enabled(config_file, False).before is True
    assert load_config(config_file, env=NO_ENV).enabled is False
    assert [p.name for p in config_file.parent.iterdir()] == ["config.yaml"]  # no temp files


def test_set_enabled_keeps_a_wider_mode_and_creates_new_files_private(config_file: Path) -> None:
    write(config_file, "server: x\n")
    config_file.chmod(0o644)
    set_enabled(config_file, True)
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o644

    fresh = config_file.parent / "sub" / "config.yaml"
    set_enabled(fresh, True)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert yaml.safe_load(fresh.read_text()) == {"harness": {"agy-cli": {"enabled": True}}}


def test_set_enabled_converts_omnigents_scalar_harness(config_file: Path) -> None:
    write(config_file, "harness: pi\n")
    set_enabled(config_file, True)
    assert yaml.safe_load(config_file.read_text()) == {
        "harness": {"default": "pi", "agy-cli": {"enabled": True}}
    }


def test_set_enabled_backs_up_a_commented_file(config_file: Path) -> None:
    write(config_file, "# my settings\nserver: x  # the server\n")
    change = set_enabled(config_file, True)
    assert change.backup == config_file.with_name("config.yaml.bak")
    assert change.backup.read_text() == "# my settings\nserver: x  # the server\n"


@pytest.mark.parametrize("text", ["harness: [a, b]\n", "harness: {agy-cli: [x]}\n"])
def test_set_enabled_refuses_to_clobber(config_file: Path, text: str) -> None:
    write(config_file, text)
    with pytest.raises(ConfigError):
        set_enabled(config_file, True)
    assert config_file.read_text() == text


def test_tmux_socket_names_the_socket(config_file: Path) -> None:
    write(config_file, "harness:\n  agy-cli: {tmux_socket: agy-work.1}\n")
    assert load_config(config_file, env=NO_ENV).tmux_socket == "agy-work.1"
    write(config_file, "harness:\n  agy-cli: {enabled: true}\n")
    assert load_config(config_file, env=NO_ENV).tmux_socket is None


# -- how long agy is kept ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("1h30m", 5400.0),
        ("90s", 90.0),
        ("1h0m5s", 3605.0),
        ("0", None),
        ("0m", None),
        (0, None),
    ],
)
def test_idle_stop_after_takes_durations(config_file: Path, text: object, seconds: float) -> None:
    document = {"harness": {"agy-cli": {"idle_stop_after": text}}}
    config = parse_config(document, path=config_file, env=NO_ENV)
    assert config.keep.idle_stop_after == seconds


@pytest.mark.parametrize("text", ["30", 30, "2 h", "1.5h", "-1h", "30min", "h", "", True, [1]])
def test_a_bad_idle_limit_names_the_key(config_file: Path, text: object) -> None:
    document = {"harness": {"agy-cli": {"idle_stop_after": text}}}
    with pytest.raises(ConfigError, match=r"harness\.agy-cli\.idle_stop_after must be a duration"):
        parse_config(document, path=config_file, env=NO_ENV)


@pytest.mark.parametrize(("value", "cap"), [(3, 3), ("7", 7), (0, None)])
def test_max_kept_takes_a_count(config_file: Path, value: object, cap: int | None) -> None:
    document = {"harness": {"agy-cli": {"max_kept": value}}}
    assert parse_config(document, path=config_file, env=NO_ENV).keep.max_kept == cap


@pytest.mark.parametrize("value", [-1, "many", 2.5, True, None])
def test_a_bad_cap_names_the_key(config_file: Path, value: object) -> None:
    document = {"harness": {"agy-cli": {"max_kept": value}}}
    with pytest.raises(ConfigError, match=r"harness\.agy-cli\.max_kept must be a whole number"):
        parse_config(document, path=config_file, env=NO_ENV)


def test_keep_limits_default_and_yield_to_the_environment(config_file: Path) -> None:
    assert parse_config({}, path=config_file, env=NO_ENV).keep == KeepPolicy()
    assert KeepPolicy().idle_stop_after == 4 * 3600
    assert KeepPolicy().max_kept == 5
    document = {"harness": {"agy-cli": {"idle_stop_after": "2h", "max_kept": 2}}}
    env = {ENV_IDLE_STOP_AFTER: "5m", ENV_MAX_KEPT: "0"}
    keep = parse_config(document, path=config_file, env=env).keep
    assert keep == KeepPolicy(idle_stop_after=300.0, max_kept=None)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (ENV_IDLE_STOP_AFTER, "soon", "OMNIGENT_AGY_CLI_IDLE_STOP_AFTER must be a duration"),
        (ENV_MAX_KEPT, "-2", "OMNIGENT_AGY_CLI_MAX_KEPT must be a whole number"),
    ],
)
def test_a_bad_keep_variable_names_the_variable(
    config_file: Path, name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_config({}, path=config_file, env={name: value})
    assert caught.value.key == name


def test_the_gemini_home_the_relay_and_the_mcp_servers(config_file: Path) -> None:
    default = load_config(config_file, env=NO_ENV)
    assert default.omnigent_tools is True
    assert default.mcp_servers.admits("anything")
    write(
        config_file,
        """
        harness:
          agy-cli:
            gemini_home: ~/dotfiles/gemini
            omnigent_tools: false
            mcp_servers: {deny: [slack]}
        """,
    )
    config = load_config(config_file, env=NO_ENV)
    assert config.gemini_home == "~/dotfiles/gemini"
    assert config.omnigent_tools is False
    assert config.mcp_servers.admits("github")
    assert not config.mcp_servers.admits("slack")


def test_no_folder_is_trusted_by_default(config_file: Path) -> None:
    assert parse_config({}, path=config_file, env=NO_ENV).trusted_workspaces == ()


def test_the_operator_lists_trusted_folders_and_the_variable_adds_to_them(
    config_file: Path, tmp_path: Path
) -> None:
    document = {"harness": {"agy-cli": {"trusted_workspaces": ["/srv/repo", "~/work/**"]}}}
    extra = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    config = parse_config(document, path=config_file, env={ENV_TRUSTED_WORKSPACES: extra})
    assert [p.text for p in config.trusted_workspaces] == [
        "/srv/repo",
        "~/work/**",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]
    assert config.trusted_workspaces[1].subtree


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("/srv/repo", r"harness\.agy-cli\.trusted_workspaces must be a list"),
        (["repo"], r"harness\.agy-cli\.trusted_workspaces\[0\] 'repo' must be an absolute"),
        (["/a", 3], r"harness\.agy-cli\.trusted_workspaces\[1\] must be an absolute"),
        (["/a/*/b"], r"harness\.agy-cli\.trusted_workspaces\[0\] '/a/\*/b' must be"),
    ],
)
def test_a_bad_trusted_folder_names_the_key(config_file: Path, value: object, key: str) -> None:
    document = {"harness": {"agy-cli": {"trusted_workspaces": value}}}
    with pytest.raises(ConfigError, match=key):
        parse_config(document, path=config_file, env=NO_ENV)


def test_a_relative_folder_in_the_variable_names_the_variable(config_file: Path) -> None:
    with pytest.raises(ConfigError, match=ENV_TRUSTED_WORKSPACES) as caught:
        parse_config({}, path=config_file, env={ENV_TRUSTED_WORKSPACES: "repo"})
    assert caught.value.key == ENV_TRUSTED_WORKSPACES


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("file", "harness.agy-cli.gemini_home"),
        ("env", GEMINI_HOME_ENV),
        ("env", STATE_DIR_ENV),
    ],
)
def test_a_relative_folder_is_a_config_error_saying_what_to_do(
    config_file: Path, where: str, key: str
) -> None:
    """A relative gemini dir or state folder is another folder in `omnigent host` than in the
    harness process it spawns: refused where it is read, naming the setting."""
    env: dict[str, str] = {}
    if where == "file":
        write(config_file, "harness:\n  agy-cli:\n    gemini_home: dotfiles/gemini\n")
    else:
        write(config_file, "")
        env[key] = "dotfiles/gemini"
    with pytest.raises(ConfigError) as refused:
        load_config(config_file, env=env)
    assert refused.value.key == key
    assert f"{key} is 'dotfiles/gemini', a relative path" in str(refused.value)
    assert "give an absolute path (or one under ~)" in str(refused.value)


def test_folders_under_home_or_absolute_are_taken(config_file: Path, tmp_path: Path) -> None:
    write(config_file, "harness:\n  agy-cli:\n    gemini_home: ~/dotfiles/gemini\n")
    env = {GEMINI_HOME_ENV: str(tmp_path / "g"), STATE_DIR_ENV: "~/state"}
    assert load_config(config_file, env=env).gemini_home == "~/dotfiles/gemini"
