"""``omnigent-agy doctor``: each check against real processes (agy-sim, small fake agys, tmux),
the report, the pre-flight, the AGENTS.md offer, and the command end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pluggy
import psutil
import pytest
from gemini_home import make_person_gemini
from hookplugins import register
from waiting import wait_until

from omnigent_agy import ENV_PATH
from omnigent_agy import plugins as hooks
from omnigent_agy.config.settings import ENV_ENABLED, AgyConfig, load_config
from omnigent_agy.doctor.checkup import (
    DoctorLine,
    Status,
    check_agy_on_path,
    check_agy_version,
    check_enabled,
    check_instructions_file,
    check_python_and_omnigent,
    check_signed_in,
    check_tmux,
    doctor_report,
    exit_code,
    judge_runtime,
    parse_version,
    plugin_checks,
    preflight,
    render,
    render_json,
    run_doctor,
)
from omnigent_agy.models.agy_models import ModelsForm, parse_models_output
from omnigent_agy.plugins import OnboardingCheck, hookimpl

AGY_SIM = Path(sys.executable).with_name("agy-sim")
OMNIGENT_AGY = Path(sys.executable).with_name("omnigent-agy")
TOKEN = "Zq3xP-8LwR2vT_k9mNcY4bH7sJdF1gA6eU0oIiXyVtQ"
_no_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def needs_tmux[F: Callable[..., object]](test: F) -> F:
    return pytest.mark.tmux(_no_tmux(test))


Script = Callable[[str, str], Path]


@pytest.fixture
def script(tmp_path: Path) -> Script:
    """``script(name, body)``: an executable sh script in a private bin directory."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def make(name: str, body: str) -> Path:
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
        return path

    return make


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private HOME and none of our variables; the plugin manager rebuilt around the test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in (ENV_ENABLED, ENV_PATH, "OMNIGENT_CONFIG_HOME", "AGY_SIM_SIGNED_OUT"):
        monkeypatch.delenv(name, raising=False)
    hooks.reset_plugin_manager_for_tests()
    yield home
    hooks.reset_plugin_manager_for_tests()


def sim_wrapper(script: Script, *flags: str) -> Path:
    return script("agy", f'exec "{AGY_SIM}" {" ".join(flags)} "$@"')


# -- agy on PATH -----------------------------------------------------------------------------


def test_agy_found_through_the_environment_variable(tmp_path: Path) -> None:
    result = check_agy_on_path(AgyConfig(path=tmp_path / "c.yaml"), {ENV_PATH: str(AGY_SIM)})
    assert result.status is Status.OK
    assert result.summary == f"{AGY_SIM} (from {ENV_PATH})"


def test_agy_found_through_the_config_and_on_path(script: Script, tmp_path: Path) -> None:
    fake = script("agy", "exit 0")
    config = AgyConfig(path=tmp_path / "c.yaml", command=str(fake))
    assert check_agy_on_path(config, {}).summary == f"{fake} (from harness.agy-cli.command)"
    on_path = check_agy_on_path(AgyConfig(path=tmp_path / "c.yaml"), {"PATH": str(fake.parent)})
    assert on_path.summary == f"{fake} (from PATH)"


def test_agy_found_where_its_installer_puts_it_says_so(tmp_path: Path) -> None:
    installed = tmp_path / "home" / ".local" / "bin" / "agy"
    installed.parent.mkdir(parents=True)
    installed.write_text("#!/bin/sh\n")
    installed.chmod(0o755)
    env = {"PATH": str(tmp_path / "empty"), "HOME": str(tmp_path / "home")}
    result = check_agy_on_path(AgyConfig(path=tmp_path / "c.yaml"), env)
    assert result.status is Status.OK
    assert result.summary == (
        f"{installed} (from PATH: not on PATH, found where agy's installer puts it)"
    )


@pytest.mark.parametrize("env_path", ["", "/nonexistent/agy"])
def test_agy_missing(tmp_path: Path, env_path: str) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), ENV_PATH: env_path}
    result = check_agy_on_path(AgyConfig(path=tmp_path / "c.yaml"), env)
    assert result.status is Status.FAIL
    assert result.code == "agy_not_installed"
    assert result.remediation
    assert result.remediation not in result.summary


# -- version ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2.5", (1, 2, 5)),
        ("agy 1.2.7 (abc123)", (1, 2, 7)),
        ("1.2.5-sim", (1, 2, 5)),
        ("Antigravity CLI v1.10.0", (1, 10, 0)),
        ("agy version 2.0", (2, 0, 0)),
        ("build 20260101 1.2.3", (1, 2, 3)),
        ("no version here", None),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == expected


def test_the_simulator_is_new_enough() -> None:
    result = check_agy_version(AGY_SIM)
    assert result.status is Status.OK
    assert result.summary == "1.5.16 (tested: 1.2.x to 1.5.x)"


def test_an_old_agy_is_too_old(script: Script) -> None:
    result = check_agy_version(sim_wrapper(script, "--sim-version", "1.2.1"))
    assert result.status is Status.FAIL
    assert result.code == "agy_too_old"
    assert "1.2.1" in result.summary
    assert result.remediation
    assert "install.sh" in result.remediation


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('echo "agy 1.2.7 (abc)"', Status.OK, None),
        ('echo "agy 1.2.2"', Status.OK, None),
        ('printf "agy 1.2.9\\ncommit abc\\nbuilt 2026-01-01\\n"', Status.OK, None),
        ("echo 1.1.9", Status.FAIL, "agy_too_old"),
        ('echo "something else"', Status.WARN, None),
        ('echo "crashed" >&2; exit 3', Status.FAIL, "agy_launch_failed"),
    ],
    ids=["banner", "minimum", "multi-line", "old", "unreadable", "crash"],
)
def test_version_outputs(script: Script, body: str, status: Status, code: str | None) -> None:
    result = check_agy_version(script("agy", body))
    assert (result.status, result.code) == (status, code)


def test_a_hanging_agy_is_killed_with_its_children(script: Script, tmp_path: Path) -> None:
    # Not `exec`: the shell's child `sleep` holds the pipes, so only a group kill ends it.
    marker = tmp_path / "pid"
    hung = script("agy", f'sleep 600 & echo $! > "{marker}"; wait')
    result = check_agy_version(hung, timeout=1.0)
    assert result.status is Status.FAIL
    assert result.code == "agy_launch_failed"
    assert "did not finish within 1 s" in result.summary
    pid = int(marker.read_text())
    wait_until(lambda: _ended(pid), timeout=10, what=f"the hung agy's child {pid} to end")


def _ended(pid: int) -> bool:
    """The process is gone or a zombie (its reaper may be slow)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_file_that_cannot_run(tmp_path: Path) -> None:
    broken = tmp_path / "agy"
    broken.write_bytes(b"\x7fELF not really")
    broken.chmod(0o755)
    for result in (check_agy_version(broken), check_signed_in(broken)):
        assert result.status is Status.FAIL
        assert result.code == "agy_launch_failed"
        assert "cannot run" in result.summary


# -- sign-in ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form",
    [
        pytest.param((), id="table"),  # agy from August 2026 (docs/wire.md §9)
        pytest.param(("--sim-models-format", "ids"), id="bare-ids"),  # older builds
        pytest.param(("--output-format", "json"), id="json"),
    ],
)
def test_the_simulator_is_signed_in(script: Script, form: tuple[str, ...]) -> None:
    """Each form `agy models` prints, from agy-sim as a process, counts the same models."""
    result = check_signed_in(sim_wrapper(script, *form))
    assert result.status is Status.OK
    assert result.summary == "signed in; agy offers 10 models"


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        pytest.param((), ModelsForm.TABLE, id="table"),
        pytest.param(("--sim-models-format", "ids"), ModelsForm.IDS, id="bare-ids"),
        pytest.param(("--output-format", "json"), ModelsForm.JSON, id="json"),
    ],
)
def test_agy_models_of_the_simulator_parse(form: tuple[str, ...], expected: ModelsForm) -> None:
    ran = subprocess.run(
        [str(AGY_SIM), *form, "models"], capture_output=True, text=True, timeout=60, check=True
    )
    listing = parse_models_output(ran.stdout)
    assert listing.form is expected
    assert listing.unread == ()
    assert len(listing.models) == 10
    assert listing.models[2].id == "gemini-3-pro-high"
    if expected is not ModelsForm.IDS:
        assert listing.models[2].display_name == "Gemini 3 Pro (High)"
        assert listing.models[2].description == "Advanced reasoning"


def test_output_format_after_the_sub_command_is_refused() -> None:
    ran = subprocess.run(
        [str(AGY_SIM), "models", "--output-format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2
    assert "before the sub-command" in ran.stderr


def test_an_agy_listing_no_model_is_a_warning(script: Script) -> None:
    result = check_signed_in(script("agy", "echo 'Fetching available models...'"))
    assert result.status is Status.WARN
    assert result.summary == "`agy models` succeeded but listed no model"


@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_signed_out_agy(script: Script, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "env":
        monkeypatch.setenv("AGY_SIM_SIGNED_OUT", "1")
        executable = AGY_SIM
    else:
        executable = sim_wrapper(script, "--sim-signed-out")
    result = check_signed_in(executable)
    assert result.status is Status.FAIL
    assert result.code == "agy_signed_out"
    assert "You are not signed in" in result.summary
    assert result.remediation
    assert "`agy`" in result.remediation


def test_sign_in_output_is_never_shown_raw(script: Script) -> None:
    leaky = script("agy", f'echo "token={TOKEN}"; echo "auth failed for {TOKEN}" >&2; exit 1')
    result = check_signed_in(leaky)
    assert result.status is Status.FAIL
    assert TOKEN not in result.summary
    assert "auth failed for [redacted]" in result.summary
    chatty = script(
        "agy2",
        "printf 'Fetching available models...\\n"
        f"gemini-3-pro\\tGemini 3 Pro · {TOKEN}\\ngemini-3-flash\\tGemini 3 Flash\\n"
        f"an unexpected line {TOKEN}\\n'",
    )
    ok = check_signed_in(chatty)
    assert ok.summary == "signed in; agy offers 2 models; 1 line(s) of its output not understood"
    assert TOKEN not in ok.summary


def test_a_hanging_sign_in_is_a_warning(script: Script) -> None:
    result = check_signed_in(script("agy", "exec sleep 600"), timeout=0.5)
    assert result.status is Status.WARN
    assert result.code is None
    assert "did not answer within 0.5 s" in result.summary


# -- tmux ------------------------------------------------------------------------------------


@needs_tmux
def test_tmux_without_a_tmux_session(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "/tmp/not-a-socket,1,0"):
        if value is None:
            monkeypatch.delenv("TMUX", raising=False)
        else:
            monkeypatch.setenv("TMUX", value)
        result = check_tmux()
        assert result.status is Status.OK, result
        assert result.summary.startswith("tmux ")


def test_tmux_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = check_tmux()
    assert (result.status, result.code) == (Status.FAIL, "agy_tmux_failed")
    assert result.remediation
    assert "3.2a" in result.remediation


@pytest.mark.parametrize(
    ("shown", "status"),
    [
        ("tmux 3.3a", Status.OK),
        ("tmux 3.2a", Status.OK),
        ("tmux 3.2", Status.FAIL),
        ("tmux 2.9", Status.FAIL),
        ("tmux next-3.6", Status.OK),
        ("tmux master", Status.WARN),
    ],
)
def test_tmux_versions(
    script: Script, monkeypatch: pytest.MonkeyPatch, shown: str, status: Status
) -> None:
    fake = script("tmux", f'test "$1" = -V && echo "{shown}"')
    monkeypatch.setenv("PATH", str(fake.parent))
    assert check_tmux().status is status


# -- Python, omnigent, the flag --------------------------------------------------------------


def test_this_python_and_omnigent_pass() -> None:
    result = check_python_and_omnigent()
    assert result.status is Status.OK
    assert "omnigent 0.19." in result.summary


@pytest.mark.parametrize(
    ("python", "omnigent", "status"),
    [
        ((3, 12, 1), "0.19.1", Status.OK),
        ((3, 13, 0), "0.19.0rc1", Status.OK),
        ((3, 11, 9), "0.19.1", Status.FAIL),
        ((3, 12, 1), "0.18.4", Status.FAIL),
        ((3, 12, 1), "0.20.0", Status.FAIL),
        ((3, 12, 1), None, Status.FAIL),
    ],
)
def test_judge_runtime(python: tuple[int, ...], omnigent: str | None, status: Status) -> None:
    result = judge_runtime(python, omnigent)
    assert result.status is status
    assert (result.remediation is None) is (status is Status.OK)


def config_file(home: Path, text: str) -> Path:
    path = home / ".omnigent" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("file_text", "env_value", "status", "words"),
    [
        ("", None, Status.FAIL, "is not set in"),
        ("harness:\n  agy-cli:\n    enabled: false\n", None, Status.FAIL, "is false in"),
        ("harness:\n  agy-cli:\n    enabled: true\n", None, Status.OK, "enabled by harness"),
        ("harness:\n  agy-cli:\n    enabled: true\n", "0", Status.FAIL, "disabled by"),
        ("", "1", Status.WARN, "only;"),
        ("harness:\n  agy-cli:\n    enabled: true\n", "1", Status.OK, "(and in"),
    ],
)
def test_the_enable_flag_and_its_source(
    clean_env: Path, file_text: str, env_value: str | None, status: Status, words: str
) -> None:
    path = config_file(clean_env, file_text)
    env = {} if env_value is None else {ENV_ENABLED: env_value}
    result = check_enabled(load_config(path, env=env), env)
    assert result.status is status
    assert words in result.summary
    if status is not Status.OK:
        assert result.remediation
        assert "omnigent-agy enable" in result.remediation or ENV_ENABLED in result.remediation


# -- instructions ----------------------------------------------------------------------------


def test_only_claude_md_is_a_warning_with_an_offer(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n")
    result = check_instructions_file(tmp_path)
    assert result.status is Status.WARN
    assert result.remediation
    assert "omnigent-agy doctor --fix-instructions" in result.remediation
    assert not (tmp_path / "AGENTS.md").exists()


def test_fix_creates_agents_md_with_the_content_once(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n")
    result = check_instructions_file(tmp_path, fix=True)
    assert result.status is Status.OK
    assert result.summary.startswith("created ")
    created = (tmp_path / "AGENTS.md").read_text()
    assert created.startswith("<!-- Created by `omnigent-agy doctor --fix-instructions`")
    assert created.endswith("Use tabs.\n")
    again = check_instructions_file(tmp_path, fix=True)
    assert again.summary == f"AGENTS.md in {tmp_path}"
    assert (tmp_path / "AGENTS.md").read_text() == created


@pytest.mark.parametrize("existing", ["AGENTS.md", "GEMINI.md"])
def test_fix_never_touches_an_existing_file(tmp_path: Path, existing: str) -> None:
    (tmp_path / "CLAUDE.md").write_text("claude\n")
    (tmp_path / existing).write_text("mine\n")
    result = check_instructions_file(tmp_path, fix=True)
    assert result.status is Status.OK
    assert (tmp_path / existing).read_text() == "mine\n"
    assert {p.name for p in tmp_path.iterdir()} == {"CLAUDE.md", existing}


def test_fix_leaves_a_dangling_agents_md_link_alone(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("claude\n")
    (tmp_path / "AGENTS.md").symlink_to(tmp_path / "elsewhere.md")
    result = check_instructions_file(tmp_path, fix=True)
    assert result.status is Status.OK
    assert "left as it is" in result.summary
    assert not (tmp_path / "elsewhere.md").exists()


def test_no_instructions_or_no_workspace(tmp_path: Path) -> None:
    assert check_instructions_file(tmp_path).status is Status.OK
    assert check_instructions_file(tmp_path / "missing").status is Status.WARN


# -- plugins ---------------------------------------------------------------------------------


class CorpChecks:
    @hookimpl
    def agy_onboarding_checks(self, register: Callable[[OnboardingCheck], None]) -> None:
        register(OnboardingCheck("corp proxy", lambda: hooks.CheckResult(True, "proxy set")))
        register(
            OnboardingCheck(
                "corp vpn",
                lambda: hooks.CheckResult(False, f"vpn down (key={TOKEN})", "connect the vpn"),
            )
        )
        register(OnboardingCheck("corp broken", _raise))


def _raise() -> hooks.CheckResult:
    raise RuntimeError("plugin bug")


@pytest.fixture
def manager() -> Iterator[pluggy.PluginManager]:
    manager = hooks.new_plugin_manager(load_entry_points=False)
    register(manager, CorpChecks(), name="corp")
    yield manager
    manager.unregister(name="corp")


def test_plugin_checks_are_run_and_converted(manager: pluggy.PluginManager) -> None:
    results = plugin_checks(manager)
    assert [(r.name, r.status) for r in results] == [
        ("corp proxy", Status.OK),
        ("corp vpn", Status.FAIL),
        ("corp broken", Status.FAIL),
    ]
    assert results[1].remediation == "connect the vpn"
    assert TOKEN not in results[1].summary
    assert results[2].summary == "the check raised RuntimeError: plugin bug"


# -- the report and the pre-flight ------------------------------------------------------------


@needs_tmux
def test_a_healthy_setup_passes(clean_env: Path, tmp_path: Path) -> None:
    trusted = f"    trusted_workspaces: [{tmp_path}]\n"
    path = config_file(clean_env, "harness:\n  agy-cli:\n    enabled: true\n" + trusted)
    make_person_gemini(clean_env / ".gemini")  # the person signed in with agy
    manager = hooks.new_plugin_manager(load_entry_points=False)
    results = run_doctor(
        load_config(path, env={}), tmp_path, env={ENV_PATH: str(AGY_SIM)}, manager=manager
    )
    assert [r.name for r in results] == [
        "python and omnigent",
        "enabled",
        "agy executable",
        "agy version",
        "agy signed in",
        "agy quota",
        "tmux",
        "instructions file",
        "workspace",
        "workspace trusted",
        "agy's folder",
        "agy's folder: signed in",
        "agy's folder: onboarding",
        "agy's folder: workspace trusted",
        "agy's folder: settings",
        "agy's folder: MCP servers",
    ]
    # No agy of omnigent-agy runs here, so the quota is unknown: not a failure.
    assert {r.name: r.status for r in results if r.status is not Status.OK} == {
        "agy quota": Status.SKIP
    }
    assert exit_code(results) == 0
    assert preflight(load_config(path, env={}), {ENV_PATH: str(AGY_SIM)}) is None


def test_a_missing_agy_skips_what_depends_on_it(
    clean_env: Path, tmp_path: Path, manager: pluggy.PluginManager
) -> None:
    results = run_doctor(
        AgyConfig(path=tmp_path / "c.yaml"),
        tmp_path,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        manager=manager,
    )
    by_name = {r.name: r for r in results}
    assert by_name["agy executable"].status is Status.FAIL
    assert by_name["agy version"].status is Status.SKIP
    assert by_name["agy signed in"].status is Status.SKIP
    assert by_name["corp vpn"].status is Status.FAIL
    assert exit_code(results) == 1


def test_an_agy_that_does_not_run_skips_the_sign_in(script: Script, tmp_path: Path) -> None:
    broken = script("agy", "exit 9")
    results = run_doctor(
        AgyConfig(path=tmp_path / "c.yaml", command=str(broken)),
        tmp_path,
        env={},
        manager=hooks.new_plugin_manager(load_entry_points=False),
    )
    by_name = {r.name: r for r in results}
    assert by_name["agy version"].code == "agy_launch_failed"
    assert by_name["agy signed in"].status is Status.SKIP


def test_an_invalid_config_is_reported_and_the_rest_still_runs(
    clean_env: Path, tmp_path: Path
) -> None:
    path = config_file(clean_env, "harness:\n  agy-cli:\n    enabld: true\n")
    results = doctor_report(path, tmp_path, env={ENV_PATH: str(AGY_SIM)})
    assert results[0].name == "configuration"
    assert results[0].status is Status.FAIL
    assert results[0].code == "agy_config_invalid"
    assert "did you mean 'enabled'" in results[0].summary
    names = [r.name for r in results]
    assert "enabled" not in names
    assert "agy version" in names


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("missing", "agy_not_installed"),
        ("old", "agy_too_old"),
        ("signed-out", "agy_signed_out"),
        ("crash", "agy_launch_failed"),
    ],
)
def test_preflight_returns_the_first_failure(
    script: Script, tmp_path: Path, setup: str, code: str
) -> None:
    env: dict[str, str] = {"PATH": str(tmp_path / "empty"), "HOME": str(tmp_path)}
    if setup == "old":
        env[ENV_PATH] = str(sim_wrapper(script, "--sim-version", "1.2.1"))
    elif setup == "signed-out":
        env[ENV_PATH] = str(sim_wrapper(script, "--sim-signed-out"))
    elif setup == "crash":
        env[ENV_PATH] = str(script("agy", "exit 4"))
    failure = preflight(AgyConfig(path=tmp_path / "c.yaml"), env)
    assert failure is not None
    assert failure.code == code
    assert failure.title
    assert failure.remediation


def test_render_marks_and_remediations() -> None:
    results = [
        DoctorLine("one", Status.OK, "fine"),
        DoctorLine("two", Status.WARN, "hmm", "do this"),
        DoctorLine("three", Status.FAIL, "broken", "run `agy`", "agy_signed_out"),
        DoctorLine("four", Status.SKIP, "skipped: agy not found"),
        DoctorLine("five", Status.OK, "plan: Pro", details=("Gemini: 5 h: 62% left",)),
    ]
    assert render(results).splitlines() == [
        "✓ one    fine",
        "! two    hmm",
        "    -> do this",
        "✗ three  broken",
        "    -> run `agy`",
        "- four   skipped: agy not found",
        "✓ five   plan: Pro",
        "           Gemini: 5 h: 62% left",
        "",
        "1 failed, 1 warning.",
    ]
    assert render(results, unicode=False).splitlines()[3] == "XX three  broken"
    assert render(results, unicode=False).splitlines()[7] == "            Gemini: 5 h: 62% left"
    assert render(results[:1]).endswith("All checks passed.")
    assert exit_code(results) == 1
    assert exit_code(results[:2]) == 0
    document = json.loads(render_json(results))
    assert document["ok"] is False
    assert document["checks"][2] == {
        "name": "three",
        "status": "fail",
        "summary": "broken",
        "remediation": "run `agy`",
        "code": "agy_signed_out",
        "details": [],
    }
    assert document["checks"][4]["details"] == ["Gemini: 5 h: 62% left"]


# -- the command -----------------------------------------------------------------------------


def run_cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (ENV_ENABLED, ENV_PATH, "OMNIGENT_CONFIG_HOME", "AGY_SIM_SIGNED_OUT")
    }
    env.update(HOME=str(home), PYTHONIOENCODING="utf-8", **extra)
    env.setdefault(ENV_PATH, str(AGY_SIM))
    return subprocess.run(
        [str(OMNIGENT_AGY), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@needs_tmux
def test_cli_doctor_passes_then_fails_when_signed_out(clean_env: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert run_cli(clean_env, "enable").returncode == 0
    ok = run_cli(clean_env, "doctor", "--workspace", str(workspace))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "✓ agy signed in" in ok.stdout
    assert ok.stdout.rstrip().endswith("All checks passed.")

    out = run_cli(clean_env, "doctor", "--workspace", str(workspace), AGY_SIM_SIGNED_OUT="1")
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    failed = next(i for i, line in enumerate(lines) if line.startswith("✗ agy signed in"))
    assert lines[failed + 1].startswith("    -> Run `agy` in a terminal and sign in")


def test_cli_doctor_json_and_the_instructions_fix(clean_env: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "CLAUDE.md").write_text("Be brief.\n")
    out = run_cli(clean_env, "doctor", "--workspace", str(workspace), "--json")
    assert out.returncode == 1  # not enabled
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["enabled"]["status"] == "fail"
    assert checks["instructions file"]["status"] == "warn"
    assert not (workspace / "AGENTS.md").exists()

    fixed = run_cli(clean_env, "doctor", "--workspace", str(workspace), "--fix-instructions")
    line = next(x for x in fixed.stdout.splitlines() if x.startswith("✓ instructions file"))
    assert line.split(maxsplit=3)[3].startswith("created ")
    assert (workspace / "AGENTS.md").read_text().endswith("Be brief.\n")


def test_cli_doctor_reports_a_broken_config(clean_env: Path, tmp_path: Path) -> None:
    config_file(clean_env, "harness:\n  agy-cli: 3\n")
    out = run_cli(clean_env, "doctor", "--workspace", str(tmp_path), "--json")
    assert out.returncode == 1
    first = json.loads(out.stdout)["checks"][0]
    assert (first["name"], first["code"]) == ("configuration", "agy_config_invalid")
    assert TOKEN not in out.stdout
