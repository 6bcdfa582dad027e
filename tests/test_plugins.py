"""The pluggy hooks: built-in plugin, ordering, and real ``omnigent_agy`` entry points."""

from __future__ import annotations

import asyncio
import importlib
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pluggy
import pytest
from hookplugins import register

from omnigent_agy import plugins as hooks
from omnigent_agy.errors import PluginLoadError
from omnigent_agy.interactions.policy import (
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
    RequestKind,
    Verdict,
    decide,
)
from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.plugins import (
    CheckResult,
    HarnessRegistration,
    OnboardingCheck,
    TurnCall,
    harness_registrations,
    hookimpl,
    interrupt_session_hook,
    model_aliases,
    new_plugin_manager,
    onboarding_checks,
    run_turn_hook,
)


@pytest.fixture
def manager() -> pluggy.PluginManager:
    return new_plugin_manager(load_entry_points=False)


CALL = TurnCall("s1", [{"role": "user", "content": "hi"}], [], "sys", {"model": None})


class FakeDriver:
    """Stands in for the executor: records what the built-in hooks delegate."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def _events(self, text: str) -> AsyncIterator[object]:
        yield text

    def builtin_run_turn(self, call: TurnCall) -> AsyncIterator[object]:
        self.calls.append(("run", call))
        return self._events("builtin")

    async def _interrupt(self) -> bool:
        return True

    def builtin_interrupt_session(self, session_key: str) -> Awaitable[bool]:
        self.calls.append(("interrupt", session_key))
        return self._interrupt()


async def _collect(events: AsyncIterator[object]) -> list[object]:
    return [event async for event in events]


def _run(manager: pluggy.PluginManager, driver: FakeDriver) -> list[object]:
    events = run_turn_hook(manager, driver, CALL)
    return asyncio.run(_collect(events))


def test_builtin_run_turn_and_interrupt_delegate_to_the_executor(
    manager: pluggy.PluginManager,
) -> None:
    driver = FakeDriver()
    assert _run(manager, driver) == ["builtin"]
    assert asyncio.run(_await(interrupt_session_hook(manager, driver, "s1"))) is True
    assert driver.calls == [
        ("run", CALL),
        ("interrupt", "s1"),
    ]


async def _await(awaitable: Awaitable[bool]) -> bool:
    return await awaitable


def test_a_plugin_can_take_over_a_turn_or_pass(manager: pluggy.PluginManager) -> None:
    class Wrapper:
        def __init__(self) -> None:
            self.take_over = True

        @hookimpl
        def agy_run_turn(self, call: TurnCall) -> AsyncIterator[object] | None:
            if not self.take_over:
                return None

            async def events() -> AsyncIterator[object]:
                yield f"plugin:{call.session_key}"

            return events()

    plugin = Wrapper()
    register(manager, plugin)
    driver = FakeDriver()
    assert _run(manager, driver) == ["plugin:s1"]
    assert driver.calls == []
    plugin.take_over = False
    assert _run(manager, driver) == ["builtin"]


def test_registration_order_puts_installed_plugins_before_the_builtin(
    manager: pluggy.PluginManager,
) -> None:
    class Extra:
        @hookimpl
        def agy_register_harness(self, register: Callable[[HarnessRegistration], None]) -> None:
            register(HarnessRegistration("agy-cli", "Corp Antigravity", ("corp-agy",)))

    register(manager, Extra())
    registered = harness_registrations(manager)
    assert [r.label for r in registered] == ["Corp Antigravity", "Antigravity CLI"]
    assert registered[-1] == HarnessRegistration("agy-cli", "Antigravity CLI", ("antigravity-cli",))


def test_model_aliases_first_registration_wins(manager: pluggy.PluginManager) -> None:
    class First:
        @hookimpl
        def agy_register_models(self, register: Callable[[str, str], None]) -> None:
            register("Fast", "Gemini 3 Flash")

    class Second:
        @hookimpl
        def agy_register_models(self, register: Callable[[str, str], None]) -> None:
            register("fast", "Gemini 3 Pro (Low)")
            register("deep", "Gemini 3 Pro (High)")

    register(manager, First())
    register(manager, Second())  # registered last, so called first
    assert model_aliases(manager) == {"fast": "Gemini 3 Pro (Low)", "deep": "Gemini 3 Pro (High)"}


def test_onboarding_checks_are_collected(manager: pluggy.PluginManager) -> None:
    check = OnboardingCheck("corp proxy", lambda: CheckResult(ok=False, detail="no proxy"))

    class Checks:
        @hookimpl
        def agy_onboarding_checks(self, register: Callable[[OnboardingCheck], None]) -> None:
            register(check)

    assert onboarding_checks(manager) == []
    register(manager, Checks())
    assert onboarding_checks(manager) == [check]
    assert check.run() == CheckResult(ok=False, detail="no proxy")


def test_a_test_plugin_with_a_misspelled_hook_fails_where_it_is_registered(
    manager: pluggy.PluginManager,
) -> None:
    class Typo:
        @hookimpl
        def agy_register_model(self, register: Callable[[str, str], None]) -> None:
            register("fast", "Gemini 3 Flash")

    with pytest.raises(pluggy.PluginValidationError, match="agy_register_model"):
        register(manager, Typo())


def test_get_plugin_manager_is_cached_until_reset() -> None:
    hooks.reset_plugin_manager_for_tests()
    try:
        first = hooks.get_plugin_manager()
        assert hooks.get_plugin_manager() is first
        assert first.get_plugin("builtin") is not None
        hooks.reset_plugin_manager_for_tests()
        assert hooks.get_plugin_manager() is not first
    finally:
        hooks.reset_plugin_manager_for_tests()


# --- real entry points: a distribution on sys.path that declares the group ----------


@pytest.fixture
def install_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str, str], None]]:
    """Install a throwaway distribution with one ``omnigent_agy`` entry point."""
    modules: list[str] = []

    def install(module: str, source: str) -> None:
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        dist = tmp_path / f"{module}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(f"[omnigent_agy]\n{module} = {module}\n")
        modules.append(module)

    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield install
    for module in modules:
        sys.modules.pop(module, None)


ORG_PLUGIN = """
from omnigent_agy.plugins import hookimpl
from omnigent_agy.interactions.policy import PermissionDecision, Verdict

@hookimpl
def agy_register_models(register):
    register("corp-default", "Gemini 3 Flash")

@hookimpl
def agy_permission_decision(request):
    if (request.command_line or "").startswith("terraform apply"):
        return PermissionDecision(Verdict.DENY, "plugin:corp", "no applies from agents")
    return None
"""


def test_entry_point_plugin_changes_a_decision_and_adds_a_model_alias(
    install_plugin: Callable[[str, str], None],
) -> None:
    install_plugin("corp_agy_policy", ORG_PLUGIN)
    manager = new_plugin_manager()
    assert manager.get_plugin("corp_agy_policy") is not None

    request = PermissionRequest(RequestKind.COMMAND, command_line="terraform apply -auto-approve")
    bypass = PermissionPolicy(PermissionMode.BYPASS)
    without_plugin = decide(request, bypass, new_plugin_manager(load_entry_points=False))
    assert without_plugin is not None
    assert without_plugin.verdict is Verdict.ALLOW
    decision = decide(request, bypass, manager)
    assert decision is not None
    assert (decision.verdict, decision.source) == (Verdict.DENY, "plugin:corp")

    catalog = ModelCatalog.from_response(
        {"response": {"models": {"f": {"model": "MODEL_F", "displayName": "Gemini 3 Flash"}}}},
        aliases=model_aliases(manager),
    )
    assert catalog.resolve_plan_model("corp-default", None).enum == "MODEL_F"


def test_a_plugin_that_fails_to_import_is_named(
    install_plugin: Callable[[str, str], None],
) -> None:
    install_plugin("corp_agy_broken", "raise RuntimeError('missing corp settings')\n")
    with pytest.raises(PluginLoadError, match=r"'corp_agy_broken'.*missing corp settings"):
        new_plugin_manager()


def test_a_misspelled_hook_fails_loudly(install_plugin: Callable[[str, str], None]) -> None:
    install_plugin(
        "corp_agy_typo",
        """
        from omnigent_agy.plugins import hookimpl

        @hookimpl
        def agy_permission_decisions(request):
            return None
        """,
    )
    with pytest.raises(PluginLoadError, match="agy_permission_decisions"):
        new_plugin_manager()
