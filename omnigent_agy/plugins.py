"""pluggy hooks: how organisations extend omnigent-agy without forking it.

The hooks and what they pass (registrations, checks, the turn's driver) are specified in
``hookspecs``; this module loads the plugins and calls the hooks. A plugin is a
module (or object) with ``@hookimpl`` functions, published under the entry-point group
``omnigent_agy``. Registration hooks receive a ``register`` callback (as in simonw/llm) so the
host controls ordering and duplicates; decision hooks are ``firstresult``. The built-in
behaviour is itself a plugin, registered first and marked ``trylast`` where it is a default, so
any installed plugin is consulted before it.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast

import pluggy

from omnigent_agy import hookspecs
from omnigent_agy.constants import HARNESS_ALIASES, HARNESS_ID, HARNESS_LABEL
from omnigent_agy.errors import PluginLoadError
from omnigent_agy.hookspecs import (
    PROJECT,
    CheckResult,
    HarnessRegistration,
    OnboardingCheck,
    TurnCall,
    TurnDriver,
    hookimpl,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROJECT",
    "BuiltinPlugin",
    "CheckResult",
    "HarnessRegistration",
    "OnboardingCheck",
    "TurnCall",
    "TurnDriver",
    "get_plugin_manager",
    "harness_registrations",
    "hookimpl",
    "interrupt_session_hook",
    "model_aliases",
    "new_plugin_manager",
    "onboarding_checks",
    "reset_plugin_manager_for_tests",
    "run_turn_hook",
]

ENTRY_POINT_GROUP = "omnigent_agy"


class BuiltinPlugin:
    """omnigent-agy's own behaviour, registered as the plugin named ``builtin``."""

    @hookimpl
    def agy_register_harness(self, register: Callable[[HarnessRegistration], None]) -> None:
        register(HarnessRegistration(HARNESS_ID, HARNESS_LABEL, HARNESS_ALIASES))

    @hookimpl(trylast=True)
    def agy_run_turn(self, executor: TurnDriver, call: TurnCall) -> AsyncIterator[object]:
        return executor.builtin_run_turn(call)

    @hookimpl(trylast=True)
    def agy_interrupt_session(self, executor: TurnDriver, session_key: str) -> Awaitable[bool]:
        return executor.builtin_interrupt_session(session_key)


def new_plugin_manager(*, load_entry_points: bool = True) -> pluggy.PluginManager:
    """A fresh manager with the hookspecs, the built-in plugin and installed plugins."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(BuiltinPlugin(), name="builtin")
    if load_entry_points:
        _load_entry_points(manager)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginLoadError(
            f"omnigent-agy plugin {exc.plugin!r} implements a hook omnigent-agy does not "
            f"define ({exc}); check the hook name against omnigent_agy.hookspecs"
        ) from exc
    return manager


def _load_entry_points(manager: pluggy.PluginManager) -> None:
    # Our own loop rather than ``load_setuptools_entrypoints``: a plugin that fails to
    # import is named in the error, and a broken policy plugin must stop the harness
    # rather than be skipped (its rules would silently not apply).
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if manager.get_plugin(entry_point.name) is not None:
            continue
        try:
            plugin = entry_point.load()
            manager.register(plugin, name=entry_point.name)
        except Exception as exc:
            raise PluginLoadError(
                f"omnigent-agy plugin {entry_point.name!r} ({entry_point.value}) failed to "
                f"load: {exc}; fix or uninstall the package that provides it"
            ) from exc


_manager: list[pluggy.PluginManager] = []  # zero or one element
_manager_lock = threading.Lock()


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide manager, built on first use (entry points are read once)."""
    with _manager_lock:
        if not _manager:
            _manager.append(new_plugin_manager())
        return _manager[0]


def reset_plugin_manager_for_tests() -> None:
    with _manager_lock:
        _manager.clear()


def harness_registrations(manager: pluggy.PluginManager) -> list[HarnessRegistration]:
    """Every registration, in hook call order (installed plugins before the built-in)."""
    registered: list[HarnessRegistration] = []
    manager.hook.agy_register_harness(register=registered.append)
    return registered


def model_aliases(manager: pluggy.PluginManager) -> dict[str, str]:
    """Plugin-registered model aliases (lower-cased); the first registration wins."""
    aliases: dict[str, str] = {}

    def register(alias: str, target: str) -> None:
        aliases.setdefault(alias.strip().lower(), target.strip())

    manager.hook.agy_register_models(register=register)
    return aliases


def onboarding_checks(manager: pluggy.PluginManager) -> list[OnboardingCheck]:
    checks: list[OnboardingCheck] = []
    manager.hook.agy_onboarding_checks(register=checks.append)
    return checks


def run_turn_hook(
    manager: pluggy.PluginManager, executor: TurnDriver, call: TurnCall
) -> AsyncIterator[object]:
    """Call ``agy_run_turn``; the built-in implementation guarantees a result."""
    result = manager.hook.agy_run_turn(executor=executor, call=call)
    return cast("AsyncIterator[object]", result)


def interrupt_session_hook(
    manager: pluggy.PluginManager, executor: TurnDriver, session_key: str
) -> Awaitable[bool]:
    result = manager.hook.agy_interrupt_session(executor=executor, session_key=session_key)
    return cast("Awaitable[bool]", result)
