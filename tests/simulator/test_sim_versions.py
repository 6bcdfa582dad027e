"""agy-sim as agy 1.5.16 by default and as any other version asked for (agy_sim/versions.py):
its version where agy shows one (``--version``, the log's version line, the TUI), ``agy
changelog`` from 1.3 on, and one question that every version-dependent behaviour asks."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from simproc import AGY_SIM, FAST, SimLauncher, sim_launcher

from agy_sim.changelog import NOTES
from agy_sim.engine_config import EngineSettings
from agy_sim.options import parse_options
from agy_sim.versions import (
    CHANGELOG,
    CSRF,
    DEFAULT_VERSION,
    OLDER,
    SUBAGENT_GATES,
    at_least,
)


def agy(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """agy-sim run as a command, the way the doctor and the probe run agy."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGY_SIM_")}
    return subprocess.run(
        [str(AGY_SIM), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
        check=False,
    )


# -- the version ------------------------------------------------------------------------------


def test_agy_sim_is_agy_1_5_16_unless_told_otherwise() -> None:
    assert DEFAULT_VERSION == "1.5.16"
    assert agy("--version").stdout == "1.5.16\n"
    assert agy("--version", "--sim-version", OLDER).stdout == "1.2.14\n"
    assert agy("--version", AGY_SIM_VERSION="1.2.14").stdout == "1.2.14\n"
    # The flag wins over the environment, as for every switch.
    assert agy("--version", "--sim-version", "1.4.12", AGY_SIM_VERSION="1.2.14").stdout == (
        "1.4.12\n"
    )


@pytest.mark.parametrize(
    ("version", "feature", "has"),
    [
        ("1.5.16", SUBAGENT_GATES, True),
        ("1.5.15", SUBAGENT_GATES, True),
        ("1.5.14", SUBAGENT_GATES, False),
        ("1.2.14", SUBAGENT_GATES, False),
        ("1.2.14", CSRF, True),
        ("1.2.1", CSRF, False),
        ("1.2.14", CHANGELOG, False),
        ("1.3.0", CHANGELOG, True),
        ("2.0.0-dev", SUBAGENT_GATES, True),
        ("dev", SUBAGENT_GATES, True),  # a build without a number has everything
    ],
)
def test_one_question_decides_what_a_version_does(
    version: str, feature: tuple[int, ...], has: bool
) -> None:
    """The process's options and the engine's settings answer alike, from the one version."""
    options = parse_options(["--sim-version", version], {})
    assert at_least(version, feature) is has
    assert options.at_least(feature) is has
    assert EngineSettings(sim_version=options.sim_version).at_least(feature) is has
    assert EngineSettings().at_least(feature) is at_least(DEFAULT_VERSION, feature)


# -- agy changelog ----------------------------------------------------------------------------


def entries(text: str) -> list[str]:
    """The versions a changelog lists, in its order (a line that is a bare version)."""
    return [line for line in text.splitlines() if line and line[0].isdigit()]


def test_changelog_prints_the_simulators_notes_newest_first_offline() -> None:
    ran = agy("changelog")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert "not Google's" in lines[0]  # the simulator's own notes, said at the top
    assert entries(ran.stdout) == [number for number, _ in NOTES]
    assert entries(ran.stdout)[0] == "1.5.16"
    assert entries(ran.stdout)[-1] == "1.2.14"
    assert "sub-agent" in ran.stdout.split("\n1.5.15\n")[1].split("\n1.5.0\n")[0]
    assert all(len(line) <= 88 for line in lines[1:])


def test_an_older_agy_lists_no_later_version() -> None:
    ran = agy("changelog", "--sim-version", "1.4.12")
    assert ran.returncode == 0, ran.stderr
    assert entries(ran.stdout) == ["1.4.12", "1.4.0", "1.3.0", "1.2.14"]


def test_an_agy_before_1_3_has_no_changelog() -> None:
    ran = agy("changelog", AGY_SIM_VERSION=OLDER)
    assert ran.returncode == 2
    assert ran.stdout == ""
    assert "invalid choice: 'changelog'" in ran.stderr


# -- the running process shows its version ------------------------------------------------------


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


@pytest.mark.tmux
@pytest.mark.parametrize("version", [DEFAULT_VERSION, OLDER])
def test_the_log_and_the_screen_name_the_version(sims: SimLauncher, version: str) -> None:
    sim = sims.launch(*FAST, env={"AGY_SIM_VERSION": version})
    assert f"] Language server version: {version}\n" in sim.log_text()
    sim.wait_screen(f"agy-sim {version} (simulated Antigravity CLI)")
