"""Every package folder of the repository ships in its distribution's wheel.

setuptools builds the wheels from the explicit ``packages`` lists of ``pyproject.toml`` and
``agy-sim/pyproject.toml``; an editable install finds a new sub-package anyway, so a folder
missing from the list passes every test run from a checkout and breaks only the installed
wheel (the CLI split once shipped without ``omnigent_agy.cli``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _listed(pyproject: Path) -> set[str]:
    setuptools = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
    return set(setuptools["packages"])


@pytest.mark.parametrize(
    ("pyproject", "top", "name"),
    [
        ("pyproject.toml", "omnigent_agy", "omnigent_agy"),
        ("pyproject.toml", "omnigent_harness_agy", "omnigent.community.harness.agy"),
        ("agy-sim/pyproject.toml", "agy-sim/agy_sim", "agy_sim"),
    ],
)
def test_every_package_folder_is_in_the_wheel(pyproject: str, top: str, name: str) -> None:
    folder = ROOT / top
    found = {
        ".".join((name, *init.parent.relative_to(folder).parts))
        for init in folder.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found, f"no packages under {top}"
    missing = sorted(found - _listed(ROOT / pyproject))
    assert missing == [], f"add {missing} to [tool.setuptools] packages in {pyproject}"
