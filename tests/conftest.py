"""Shared fixtures for the omnigent-agy test suite.

The e2e fixtures are here too (not in tests/e2e/conftest.py: two modules named `conftest`
would shadow each other for `from conftest import ...`). `stack` starts one real stack for the
whole run (starting omnigent takes ~20 s; each test opens its own session on it), stopped with
everything it started even when a test fails; nothing starts unless a test asks for it. Under
pytest-xdist (`scripts/test -e e2e -- -n 2 --dist loadgroup`) "the whole run" is one worker's:
each worker that gets an e2e test starts a stack of its own, so no test may depend on another
having run first; a file whose tests share a module-scoped browser or REPL marks itself
`xdist_group`, so that starts once.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from gemini_home import PersonGemini, make_person_gemini
from stack import Conversation, leftovers
from waiting import wait_until

from agy_sim.stack.homes import write_simulator
from agy_sim.stack.local_stack import AGY_ACP_AGENT, TEST_SIMULATOR, LocalStack
from agy_sim.versions import DEFAULT_VERSION
from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"
SHARED = REPO_ROOT.parent / "shared"
SHARED_RECORDED = SHARED / "agy-wire" / "recorded"
#: omnigent's runner.idle_timeout_s on the e2e stack: longer than any test's own pause.
RUNNER_IDLE_S = 150


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long(minutes)` first, the longest first, the rest in their order:
    pytest-xdist hands out work in this order, so a test that waits minutes on omnigent
    overlaps the other worker's short tests instead of ending the run alone."""

    def minutes(item: pytest.Item) -> float:
        mark = item.get_closest_marker("long")
        return float(mark.args[0]) if mark is not None else 0.0

    items.sort(key=lambda item: -minutes(item))


@pytest.fixture
def sim_version() -> str:
    """The agy version agy-sim runs as for the harness tests; ``harnessproc.both_versions``
    parametrizes it over every version the plugin is tested with."""
    return DEFAULT_VERSION


@pytest.fixture
def shared_recorded() -> Path:
    """The recorded real agy steps beside the checkout; skips where they are absent."""
    if not SHARED_RECORDED.is_dir():
        pytest.skip(f"{SHARED_RECORDED} is absent (it exists beside the checkout and in CI only)")
    return SHARED_RECORDED


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_stack(tmp_path_factory.mktemp("stack")) as running:
        yield running


@contextlib.contextmanager
def running_stack(root: Path) -> Iterator[LocalStack]:
    """omnigent's stack with the plugin in `root`, the simulator as its agy; on leaving, it is
    stopped and nothing of it may be left."""
    agy = write_simulator(root / "agy-bin", TEST_SIMULATOR)
    (root / "stack" / "workspace").mkdir(parents=True)
    (root / "stack" / "workspace" / "README.md").write_text("# a project\n")
    # tox passes TMUX_TMPDIR through, and tmux then keeps its sockets there, not in /tmp: the
    # stack runs with one set (a private one unless the caller has its own), so every e2e run
    # checks that stopping it finds and stops its tmux servers wherever they are.
    env = {**os.environ, "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR") or str(root / "tmux")}
    Path(env["TMUX_TMPDIR"]).mkdir(exist_ok=True)
    # omnigent's model catalog as a host that downloaded it has it (fixtures/omnigent_catalog).
    catalogs = {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((FIXTURES / "omnigent_catalog").glob("*.json"))
    }
    # agy in omnigent's generic ACP harness too (`agy acp`, no plugin): test_e2e_acp.py.
    # Every test opens sessions of its own and leaves them; each idle session's runner costs
    # about half a CPU-second a minute (omnigent's, whatever the harness), and a whole run
    # leaves ~80 of them. Their runners end after RUNNER_IDLE_S with no work, as a person's
    # do after omnigent's hour, and come back at a session's next message.
    with LocalStack(
        root / "stack",
        agy,
        base_env=env,
        model_catalog=catalogs,
        acp_agents=[AGY_ACP_AGENT],
        runner_idle_timeout_s=RUNNER_IDLE_S,
    ) as running:
        yield running
    # A conversation's deletion watch (omnigent_agy/agy/deletion_watch.py) ends once its host is
    # gone, at its next look: a loaded machine gets some seconds for that, not its 120 s watch.
    left = wait_until(
        lambda: leftovers(running),
        timeout=30,
        what="the stack's processes and sockets to go",
        until=lambda found: not found,
    )
    assert not left, f"the stack left these behind: {left}"


@pytest.fixture
def conversation(stack: LocalStack) -> Iterator[Conversation]:
    """A new session of the shipped agent on the main host, its event stream open."""
    with Conversation(stack) as opened:
        yield opened


@pytest.fixture
def stack_restarted_disabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """A stack of the test's own after `omnigent-agy disable` and a restart of the server and
    hosts, as the README tells a person to do. Not the shared stack: the tests on that one run
    in any order, on any worker, and need the plugin enabled."""
    with running_stack(tmp_path_factory.mktemp("stack-disabled")) as running:
        running.restart(enabled=False)
        yield running


@pytest.fixture(autouse=True)
def omnigent_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """omnigent's data folder (`~/.omnigent`) of the tests' own: the harness places its
    deletion markers there (omnigent_harness_agy/deletion.py), never in the HOME of whoever
    runs the tests."""
    folder = tmp_path_factory.mktemp("omnigent-data")
    monkeypatch.setenv("OMNIGENT_DATA_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def person_gemini(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> PersonGemini:
    """The person's ~/.gemini every agy the plugin starts is seeded from (docs/wire.md §1b): signed
    in and onboarded, so a test's agy is the person's agy unless the test says otherwise."""
    person = make_person_gemini(tmp_path_factory.mktemp("person") / ".gemini")
    monkeypatch.setenv(GEMINI_HOME_ENV, str(person.path))
    return person
