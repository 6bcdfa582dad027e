"""Throwaway plugins for tests, held to the hookspecs as they are registered.

pluggy takes a ``@hookimpl`` whose name no hookspec has and never calls it: a test plugin
with a misspelled hook would pass without testing anything. ``register`` runs
``check_pending()`` right after registering, so the misspelling fails where it is made.
"""

from __future__ import annotations

import pluggy


def register(manager: pluggy.PluginManager, plugin: object, name: str | None = None) -> None:
    """``manager.register(plugin, name)``, then fail on any hookimpl without a hookspec."""
    manager.register(plugin, name=name)
    manager.check_pending()
