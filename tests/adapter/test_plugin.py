"""The contribution as real omnigent sees it, the spawn-env builder and the shipped agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import omnigent.community.harness.agy.plugin as plugin
import omnigent.community.harness.agy.readiness as readiness
import pytest
import yaml
from hookplugins import register as register_checked
from omnigent import harness_plugins
from omnigent.community.harness.agy.hostenv import PASSTHROUGH_ENV
from omnigent.community.harness.agy.spawn_env import build_spawn_env
from omnigent.harness_capabilities import HarnessCapabilities, Resume
from omnigent.onboarding.harness_install import required_cli_for_harness
from omnigent.onboarding.harness_readiness import harness_is_configured
from omnigent.util.reasoning_effort import efforts_for_harness

from omnigent_agy import INSTALL_HINT
from omnigent_agy import plugins as hooks
from omnigent_agy.config.agent_folder import DATA_HOME_ENV
from omnigent_agy.config.config_file import set_enabled
from omnigent_agy.config.settings import ENV_ENABLED
from omnigent_agy.doctor.checks import Status
from omnigent_agy.doctor.checkup import plugin_checks
from omnigent_agy.plugins import HarnessRegistration, hookimpl

AGENT_FOLDER = Path(plugin.__file__).with_name("agent")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private HOME, no agy variables, and fresh omnigent and pluggy registries."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in (ENV_ENABLED, "OMNIGENT_AGY_CLI_PATH", "OMNIGENT_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    # Loading the plugin enabled edits the passthrough list (hostenv): undone after the test.
    monkeypatch.setenv(PASSTHROUGH_ENV, "")
    monkeypatch.delenv(PASSTHROUGH_ENV)
    harness_plugins.reset_plugin_state_for_tests()
    hooks.reset_plugin_manager_for_tests()
    yield tmp_path
    harness_plugins.reset_plugin_state_for_tests()
    hooks.reset_plugin_manager_for_tests()


def ours() -> harness_plugins.HarnessContribution:
    state = harness_plugins.plugin_state()
    assert "agy-cli" not in state.load_errors, state.load_errors["agy-cli"]
    return next(c for c in state.contributions if c.name == "omnigent-agy")


def assert_registered() -> None:
    contribution = ours()
    assert contribution.valid_harnesses == frozenset({"agy-cli"})
    assert "agy-cli" in harness_plugins.valid_harnesses()
    assert harness_plugins.harness_aliases()["antigravity-cli"] == "agy-cli"
    assert harness_plugins.harness_labels()["agy-cli"] == "Antigravity CLI"
    assert harness_plugins.harness_modules()["agy-cli"] == "omnigent.community.harness.agy.app"
    assert harness_plugins.model_env_keys()["agy-cli"] == "HARNESS_AGY_CLI_MODEL"
    assert harness_plugins.harness_install_keys()["agy-cli"] == "agy-cli"
    assert "gemini" not in harness_plugins.install_specs()  # the core spec stays the core's
    row = next(r for r in harness_plugins.harness_catalog() if r["id"] == "agy-cli")
    assert row["label"] == "Antigravity CLI"
    assert row["capabilities"] == plugin.DEFAULT_CAPABILITIES.as_dict()
    # omnigent's own readers of the contribution agree with it.
    cli = required_cli_for_harness("agy-cli")
    assert cli is not None
    assert cli.install_hint == INSTALL_HINT
    assert efforts_for_harness("agy-cli") == frozenset({"low", "medium", "high"})


def assert_absent() -> None:
    contribution = ours()
    assert contribution == harness_plugins.HarnessContribution(name="omnigent-agy")
    assert "agy-cli" not in harness_plugins.valid_harnesses()
    assert "agy-cli" not in harness_plugins.harness_labels()


@pytest.mark.usefixtures("home")
def test_disabled_by_default_contributes_nothing() -> None:
    assert_absent()


@pytest.mark.usefixtures("home")
def test_enabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_ENABLED, "1")
    assert_registered()


def test_enabled_by_the_config_file(home: Path) -> None:
    set_enabled(home / ".omnigent" / "config.yaml", True)
    assert_registered()


def test_environment_disables_over_the_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_enabled(home / ".omnigent" / "config.yaml", True)
    monkeypatch.setenv(ENV_ENABLED, "0")
    assert_absent()


def test_a_broken_config_is_a_named_load_error(home: Path) -> None:
    config = home / ".omnigent" / "config.yaml"
    config.parent.mkdir()
    config.write_text("harness:\n  agy-cli:\n    enabled: true\n    permissions: {allow: [ls]}\n")
    state = harness_plugins.plugin_state()
    assert "harness.agy-cli.permissions.allow[0]" in state.load_errors["agy-cli"]
    assert "agy-cli" not in harness_plugins.valid_harnesses()


@pytest.fixture
def register_plugin(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[object], None]]:
    del home
    monkeypatch.setenv(ENV_ENABLED, "1")
    manager = hooks.get_plugin_manager()
    registered: list[object] = []

    def register(extension: object) -> None:
        register_checked(manager, extension)
        registered.append(extension)

    yield register
    for extension in registered:
        manager.unregister(extension)


def test_a_plugin_adds_an_alias_and_capabilities(register_plugin: Callable[[object], None]) -> None:
    custom = HarnessCapabilities(
        **{**plugin.DEFAULT_CAPABILITIES.__dict__, "resume": Resume.COLD_ONLY, "images": True}
    )

    class Corp:
        @hookimpl
        def agy_register_harness(self, register: Callable[[HarnessRegistration], None]) -> None:
            register(
                HarnessRegistration("agy-cli", "Antigravity CLI (Corp)", ("corp-agy",), custom)
            )

    register_plugin(Corp())
    assert harness_plugins.harness_aliases()["corp-agy"] == "agy-cli"
    assert harness_plugins.harness_aliases()["antigravity-cli"] == "agy-cli"
    assert harness_plugins.harness_labels()["agy-cli"] == "Antigravity CLI (Corp)"
    assert harness_plugins.harness_capabilities()["agy-cli"] == custom
    assert harness_plugins.harness_install_keys()["corp-agy"] == "agy-cli"


def test_an_alias_omnigent_owns_is_refused(register_plugin: Callable[[object], None]) -> None:
    class Greedy:
        @hookimpl
        def agy_register_harness(self, register: Callable[[HarnessRegistration], None]) -> None:
            register(HarnessRegistration("agy-cli", "Antigravity CLI", ("agy",)))

    register_plugin(Greedy())
    state = harness_plugins.plugin_state()
    assert "override existing harness keys: ['agy']" in state.load_errors["agy-cli"]


@pytest.mark.parametrize(
    ("registration", "says"),
    [
        (HarnessRegistration("agy-two", "Two"), "serves only 'agy-cli'"),
        (HarnessRegistration("agy-cli", "X", (), {"resume": "cold"}), "HarnessCapabilities"),
    ],
)
def test_bad_registrations_are_load_errors(
    register_plugin: Callable[[object], None], registration: HarnessRegistration, says: str
) -> None:
    class Bad:
        @hookimpl
        def agy_register_harness(self, register: Callable[[HarnessRegistration], None]) -> None:
            register(registration)

    register_plugin(Bad())
    assert says in harness_plugins.plugin_state().load_errors["agy-cli"]


def test_bench_prompt_carries_the_placeholder_the_bench_swaps() -> None:
    # omnigent's harness bench token-swaps "omnigent-bench-ok" (harness_capabilities.py).
    prompt = plugin.DEFAULT_CAPABILITIES.shell_tool_prompt
    assert prompt is not None
    assert "omnigent-bench-ok" in prompt
    assert plugin.DEFAULT_CAPABILITIES.shell_tool_name == "sys_os_shell"


# --- spawn env -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "cwd", "expected"),
    [
        (
            SimpleNamespace(
                name="agy-cli",
                executor=SimpleNamespace(model=" gemini-pro ", reasoning_effort="high"),
            ),
            Path("/work/space"),
            {
                "HARNESS_AGY_CLI_MODEL": "gemini-pro",
                "HARNESS_AGY_CLI_REASONING_EFFORT": "high",
                "HARNESS_AGY_CLI_AGENT_NAME": "agy-cli",
                "HARNESS_AGY_CLI_CWD": "/work/space",
            },
        ),
        (SimpleNamespace(executor=SimpleNamespace(model=None)), None, {}),
        (SimpleNamespace(executor=SimpleNamespace(model="")), None, {}),
        (object(), None, {}),
    ],
)
def test_build_spawn_env(spec: object, cwd: Path | None, expected: dict[str, str]) -> None:
    assert build_spawn_env(spec, cwd=cwd, workdir=Path("/bundle")) == expected


# --- the shipped agent through real omnigent, in a clean process ---------------------

LOAD_AGENT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from omnigent.harness_aliases import canonicalize_harness
    from omnigent.harness_plugins import load_object, spawn_env_builders
    from omnigent.spec import load
    spec = load(Path(sys.argv[1]))
    builder = load_object(spawn_env_builders()["agy-cli"])
    terminals = {
        name: {
            "command": t.command,
            "args": t.args,
            "start_on_attach": t.tmux_start_on_attach,
            "sandbox": t.os_env.sandbox.type,
        }
        for name, t in (spec.terminals or {}).items()
    }
    print(json.dumps({
        "harness": spec.executor.config["harness"],
        "description": spec.description,
        "alias": canonicalize_harness("antigravity-cli"),
        "env": builder(spec, cwd=Path("/ws"), workdir=None),
        "terminals": terminals,
    }))
    """
)


def shipped_agent_copy(home: Path) -> Path:
    """A copy of the shipped agent folder to edit."""
    agent = home / "agent"
    shutil.copytree(AGENT_FOLDER, agent)
    return agent


def _load_agent(home: Path, agent: Path, enabled: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIGENT_")}
    env.update(HOME=str(home), OMNIGENT_AGY_CLI_ENABLED=enabled)
    return subprocess.run(
        [sys.executable, "-c", LOAD_AGENT, str(agent)],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_agents_mcp_servers_reach_the_harness(home: Path) -> None:
    agent = shipped_agent_copy(home)
    config = agent / "config.yaml"
    text = config.read_text()
    for commented in ("# llm:", "#   model: gemini-pro", "#   mcp_servers: {allow: [github]}"):
        assert commented in text  # the example the shipped agent shows is the one that works
        text = text.replace(commented, commented.replace("# ", "", 1))
    config.write_text(text)
    result = _load_agent(home, agent, "1")
    assert result.returncode == 0, result.stderr
    env = json.loads(result.stdout.strip().splitlines()[-1])["env"]
    assert json.loads(env["HARNESS_AGY_CLI_MCP_SERVERS"]) == {"allow": ["github"]}


def test_shipped_agent_loads_when_enabled(home: Path) -> None:
    agent = shipped_agent_copy(home)
    config = agent / "config.yaml"
    config.write_text(config.read_text().replace("# model: gemini-pro", "model: gemini-pro"))
    result = _load_agent(home, agent, "1")
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["harness"] == "agy-cli"
    # The web picker's subtitle: omnigent keeps it only from a folder's config.yaml.
    assert loaded["description"].startswith("Google's Antigravity CLI (agy)")
    assert loaded["alias"] == "agy-cli"
    assert loaded["env"] == {
        "HARNESS_AGY_CLI_MODEL": "gemini-pro",
        "HARNESS_AGY_CLI_AGENT_NAME": "Antigravity-CLI",
        "HARNESS_AGY_CLI_CWD": "/ws",
    }
    # agy's own screen in the Terminal view: one terminal, so "New shell" opens it in one
    # click; not named `antigravity`, whose `main` id the web takes for a native harness's
    # own terminal and hides from the tabs; outside omnigent's sandbox, which would keep
    # the pane from agy's tmux server.
    assert loaded["terminals"] == {
        "agy": {
            "command": "omnigent-agy",
            "args": ["attach"],
            "start_on_attach": True,
            "sandbox": "none",
        }
    }


def test_the_registered_agent_runs_this_installs_attach_isolated(
    home: Path,
) -> None:
    """`omnigent-agy agent-path` writes the folder to register: the host's PATH need not
    name the folder the plugin was installed in."""
    listed = subprocess.run(
        [str(Path(sys.executable).with_name("omnigent-agy")), "agent-path"],
        env={**os.environ, "HOME": str(home), DATA_HOME_ENV: str(home / "data")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    folder = Path(listed.stdout.strip())
    assert folder == home / "data" / "omnigent-agy" / "agent"
    result = _load_agent(home, folder, "1")
    assert result.returncode == 0, result.stderr
    terminal = json.loads(result.stdout.strip().splitlines()[-1])["terminals"]["agy"]
    command = Path(terminal["command"])
    assert command.is_absolute()
    assert os.access(command, os.X_OK)
    # This install's interpreter, isolated: the terminal may start in a workspace, whose own
    # omnigent_agy a PYTHONPATH with an empty entry would otherwise put first.
    assert command == Path(sys.executable).absolute()
    assert terminal["args"] == ["-I", "-m", "omnigent_agy.cli", "attach"]
    assert terminal["start_on_attach"] is True
    shipped = yaml.safe_load((AGENT_FOLDER / "config.yaml").read_text())
    rendered = yaml.safe_load((folder / "config.yaml").read_text())
    rendered["terminals"]["agy"]["command"] = "omnigent-agy"
    rendered["terminals"]["agy"]["args"] = ["attach"]
    assert rendered == shipped, "nothing else differs from the shipped agent"


def test_shipped_agent_is_refused_when_disabled(home: Path) -> None:
    result = _load_agent(home, AGENT_FOLDER, "0")
    assert result.returncode != 0
    assert "agy-cli" in result.stderr


# --- host readiness: omnigent's own check follows the agy the harness will run --------------


def fake_agy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    agy = folder / "agy"
    agy.write_text("#!/bin/sh\nexit 0\n")
    agy.chmod(0o755)
    return agy


def ready(monkeypatch: pytest.MonkeyPatch, home: Path) -> bool:
    """omnigent's verdict on agy-cli, as `omnigent host` computes it, from a fresh registry,
    with nothing called agy on PATH."""
    monkeypatch.setenv("PATH", str(home / "empty-path"))
    monkeypatch.setenv(ENV_ENABLED, "1")
    harness_plugins.reset_plugin_state_for_tests()
    assert_registered()
    return harness_is_configured("agy-cli")


def test_readiness_follows_the_environment_variable(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", str(fake_agy(home / "agy-build" / "bin")))
    assert ready(monkeypatch, home)


def test_readiness_follows_the_config_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agy = fake_agy(home / "builds")
    config = home / ".omnigent" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"harness:\n  agy-cli:\n    command: {agy}\n")
    assert ready(monkeypatch, home)


def test_readiness_finds_agy_on_path(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agy = fake_agy(home / "bin")
    assert not ready(monkeypatch, home)
    monkeypatch.setenv("PATH", str(agy.parent))
    harness_plugins.reset_plugin_state_for_tests()
    assert harness_is_configured("agy-cli")


@pytest.mark.parametrize("named", [None, "/nowhere/agy"])
def test_a_missing_agy_is_not_ready_and_says_what_to_install(
    home: Path, monkeypatch: pytest.MonkeyPatch, named: str | None
) -> None:
    if named:
        monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", named)
    assert not ready(monkeypatch, home)
    cli = required_cli_for_harness("agy-cli")
    assert cli is not None
    # Always absolute: where the harness would have looked last.
    assert cli.binary == (named or str(home / ".local" / "bin" / "agy"))
    assert cli.install_hint == INSTALL_HINT


def test_readiness_finds_agy_where_its_installer_puts_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """~/.local/bin, off the host's PATH: omnigent calls it ready, and the harness runs it."""
    agy = fake_agy(home / ".local" / "bin")
    assert ready(monkeypatch, home)
    cli = required_cli_for_harness("agy-cli")
    assert cli is not None
    assert cli.binary == str(agy)


def test_an_agy_only_omnigent_would_find_is_not_ready(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """omnigent searches more folders for a bare name (here ~/.npm-global/bin) than the
    harness searches for agy: readiness follows the harness, which would not find it."""
    fake_agy(home / ".npm-global" / "bin")
    assert not ready(monkeypatch, home)


def test_the_doctor_reports_omnigents_own_readiness(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The doctor's plugin line is omnigent's verdict: ready with the configured agy, a
    failure (so never "All checks passed") when the host would refuse the harness."""
    manager = hooks.new_plugin_manager()  # installed plugins, as `omnigent-agy doctor` loads
    assert readiness.NAME in [check.name for check in hooks.onboarding_checks(manager)]
    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", str(fake_agy(home / "agy-build")))
    assert ready(monkeypatch, home)
    [line] = [r for r in plugin_checks(manager) if r.name == readiness.NAME]
    assert line.status is Status.OK, line
    assert str(home / "agy-build" / "agy") in line.summary

    monkeypatch.setenv("OMNIGENT_AGY_CLI_PATH", str(home / "moved-away" / "agy"))
    assert not ready(monkeypatch, home)
    [line] = [r for r in plugin_checks(manager) if r.name == readiness.NAME]
    assert line.status is Status.FAIL
    assert "would refuse agy-cli" in line.summary
    assert line.remediation is not None
    assert INSTALL_HINT in line.remediation


def test_the_readiness_line_fails_when_omnigent_does_not_offer_the_harness(home: Path) -> None:
    harness_plugins.reset_plugin_state_for_tests()  # disabled: the flag is off in this HOME
    [line] = [r for r in plugin_checks(hooks.new_plugin_manager()) if r.name == readiness.NAME]
    assert line.status is Status.FAIL
    assert "omnigent-agy enable" in (line.remediation or "")
