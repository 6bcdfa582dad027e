"""The agys the plugin supports, named in one place (config/agy_versions.py), and what the
doctor says of each: agy-sim run as the version in question, as a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agy_sim.versions import DEFAULT_VERSION, OLDER
from omnigent_agy import ENV_PATH, MIN_AGY_VERSION
from omnigent_agy import MIN_AGY_VERSION as FAILURES_MINIMUM
from omnigent_agy.config.agy_versions import TESTED_TEXT, Support, support, untested_notice
from omnigent_agy.doctor.checks import Status, check_agy_version, read_agy_version

AGY_SIM = Path(sys.executable).with_name("agy-sim")
OMNIGENT_AGY = Path(sys.executable).with_name("omnigent-agy")
PROBE = "`omnigent-agy probe`"


def as_version(tmp_path: Path, version: str) -> Path:
    """An `agy` that is agy-sim run as agy `version`."""
    agy = tmp_path / "bin" / "agy"
    agy.parent.mkdir(exist_ok=True)
    agy.write_text(f'#!/bin/sh\nexec "{AGY_SIM}" --sim-version {version} "$@"\n')
    agy.chmod(0o755)
    return agy


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ((1, 1, 9), Support.TOO_OLD),
        ((1, 2, 1), Support.TOO_OLD),
        ((1, 2, 2), Support.TESTED),
        ((1, 2, 14), Support.TESTED),
        ((1, 3, 0), Support.TESTED),
        ((1, 5, 16), Support.TESTED),
        ((1, 5, 99), Support.TESTED),
        ((1, 6, 0), Support.UNTESTED),
        ((2, 0, 0), Support.UNTESTED),
    ],
)
def test_the_tested_range_is_1_2_to_1_5(version: tuple[int, int, int], expected: Support) -> None:
    assert support(version) is expected
    assert TESTED_TEXT == "1.2.x to 1.5.x"
    assert FAILURES_MINIMUM == MIN_AGY_VERSION  # the refusal reads the same number


@pytest.mark.parametrize("version", [DEFAULT_VERSION, OLDER])
def test_the_doctor_passes_each_tested_agy(tmp_path: Path, version: str) -> None:
    checked = read_agy_version(as_version(tmp_path, version))
    assert checked.result.status is Status.OK
    assert checked.result.summary == f"{version} (tested: 1.2.x to 1.5.x)"
    assert checked.shown == version


@pytest.mark.parametrize("version", ["1.6.0", "2.0.1"])
def test_the_doctor_warns_of_an_untested_agy_and_says_what_to_run(
    tmp_path: Path, version: str
) -> None:
    result = check_agy_version(as_version(tmp_path, version))
    assert result.status is Status.WARN  # a warning, never a refusal
    assert result.code is None
    assert result.summary == f"{version}: omnigent-agy is tested with agy 1.2.x to 1.5.x only"
    assert result.remediation is not None
    assert PROBE in result.remediation
    assert "pip install -U omnigent-agy" in result.remediation


def test_an_agy_that_prints_no_version_is_read_as_none(tmp_path: Path) -> None:
    agy = tmp_path / "agy"
    agy.write_text("#!/bin/sh\necho 'Antigravity CLI'\n")
    agy.chmod(0o755)
    checked = read_agy_version(agy)
    assert checked.result.status is Status.WARN
    assert checked.shown is None


def test_the_notice_names_the_version_the_range_and_what_to_run() -> None:
    notice = untested_notice("1.6.0")
    assert "this agy is 1.6.0" in notice
    assert TESTED_TEXT in notice
    assert PROBE in notice


def test_the_doctor_command_shows_the_warning_line(tmp_path: Path) -> None:
    """What a person sees: `omnigent-agy doctor` with an agy of an untested version."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGY_SIM_", "OMNIGENT_"))}
    env.update(HOME=str(home), PYTHONIOENCODING="utf-8")
    env[ENV_PATH] = str(as_version(tmp_path, "1.6.0"))
    ran = subprocess.run(
        [str(OMNIGENT_AGY), "doctor", "--workspace", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = ran.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("! agy version"))
    assert lines[at].endswith("1.6.0: omnigent-agy is tested with agy 1.2.x to 1.5.x only")
    assert lines[at + 1].startswith("    -> It may work. Run `omnigent-agy probe`")
    assert "✓ agy signed in" in ran.stdout  # the checks after it still ran
