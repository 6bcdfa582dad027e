"""`omnigent-agy prune --yes` when one removal fails: it says which and what to do, removes
the others, and exits non-zero; never a traceback. Run as the console script a person runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.cli.common import EXIT_FAILED


def test_a_removal_that_fails_is_said_and_the_rest_go_on(tmp_path: Path) -> None:
    base = tmp_path / "state"
    for key in ("broken", "fine-1", "fine-2"):
        SessionStateDir.open(key, base=base)
    # A real failure, whoever runs the test (root ignores permissions): the removal's lock
    # cannot be opened where a folder stands in its place.
    (base / "broken" / "lifecycle.lock").mkdir()
    env = {
        **os.environ,
        "OMNIGENT_AGY_STATE_DIR": str(base),
        "OMNIGENT_CONFIG_HOME": str(tmp_path / "omnigent"),
        "HOME": str(tmp_path / "home"),
    }
    cli = str(Path(sys.executable).with_name("omnigent-agy"))
    done = subprocess.run(
        [cli, "prune", "--all", "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    said = done.stderr
    assert "could not remove broken: Is a directory" in said
    assert f"{base / 'broken'}" in said
    assert "then run `omnigent-agy prune broken --yes` again" in said
    assert "removed fine-1" in done.stdout
    assert "removed fine-2" in done.stdout
    assert "1 could not be removed" in done.stdout
    assert not (base / "fine-1").exists()
    assert not (base / "fine-2").exists()
    assert (base / "broken").is_dir()
