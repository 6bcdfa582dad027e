"""omnigent itself discovers and loads the installed plugin."""

from __future__ import annotations

from collections.abc import Iterator

import omnigent.community.harness as omnigent_namespace
import omnigent.community.harness.agy.plugin as plugin
import pytest
from omnigent import harness_plugins


@pytest.fixture
def fresh_plugin_state() -> Iterator[None]:
    harness_plugins.reset_plugin_state_for_tests()
    yield
    harness_plugins.reset_plugin_state_for_tests()


@pytest.mark.usefixtures("fresh_plugin_state")
def test_real_plugin_state_loads_the_entry_point_without_error() -> None:
    entry_points = {ep.name for ep in harness_plugins._entry_points()}
    assert "agy-cli" in entry_points

    state = harness_plugins.plugin_state()

    assert "agy-cli" not in state.load_errors, state.load_errors.get("agy-cli")
    names = [contribution.name for contribution in state.contributions]
    assert "omnigent-agy" in names


def test_adapter_is_imported_under_omnigents_namespace() -> None:
    assert plugin.__name__ == "omnigent.community.harness.agy.plugin"
    # Only our leaf package is ours: omnigent's own namespace packages stay omnigent's.
    assert omnigent_namespace.__file__ is not None
    assert "omnigent_harness_agy" not in omnigent_namespace.__file__
