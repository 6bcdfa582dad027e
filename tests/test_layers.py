"""The folders are the layers: every module imports only the layers its own may use.

The table is the architecture (docs/architecture.md). A module's layer is its sub-package
(``omnigent_agy.reading.mapper`` → ``reading``); a top-level module is a layer of its own. The
ground floor is open to all and imports no layer: ``omnigent_agy/constants.py`` and
``omnigent_agy.errors`` (every error and the failures a person sees), standard library only,
so the relay's MCP server (standard library only) can raise them. The package's
``__init__.py`` is the core's face: it hands on, lazily, the names a host needs, and only the
adapter imports from it.
The tooling distribution built from ``agy-sim/`` is two layers of its own: ``simulator``
(``agy_sim``) and ``stack`` (``agy_sim.stack``); no layer of the plugin may import either.
Every import counts, also the lazy ones inside functions and those under ``TYPE_CHECKING``: a
layer that needs a higher one only for a type is still tied to it.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

CORE = REPO_ROOT / "omnigent_agy"
ADAPTER = REPO_ROOT / "omnigent_harness_agy"
SIMULATOR = REPO_ROOT / "agy-sim" / "agy_sim"
STACK = SIMULATOR / "stack"

# layer → the layers it may import (besides itself and omnigent_agy/constants.py).
ALLOWED: dict[str, frozenset[str]] = {
    # Every error class and the failure catalogue, on the ground floor.
    "errors": frozenset(),
    "rpc": frozenset({"errors"}),
    "agy": frozenset({"errors", "rpc"}),
    "reading": frozenset({"errors", "rpc"}),
    "interactions": frozenset({"errors", "rpc", "reading"}),
    # The hooks a plugin implements, at the package's top; they name the policy's types.
    "hookspecs": frozenset({"errors", "interactions"}),
    # pluggy's manager at the package's top: loading plugins, calling the hooks.
    "plugins": frozenset({"errors", "rpc", "hookspecs"}),
    "config": frozenset({"errors", "rpc", "agy", "interactions"}),
    "models": frozenset({"errors", "rpc", "reading"}),
    "doctor": frozenset(
        {
            "errors",
            "rpc",
            "agy",
            "reading",
            "interactions",
            "hookspecs",
            "plugins",
            "config",
            "models",
        }
    ),
    # omnigent's tools over MCP: the harness's socket and the MCP server agy starts.
    "relay": frozenset({"errors", "rpc", "agy"}),
    "session": frozenset(
        {
            "errors",
            "rpc",
            "agy",
            "reading",
            "interactions",
            "hookspecs",
            "plugins",
            "config",
            "models",
            "doctor",
            "relay",
        }
    ),
    # `omnigent-agy probe`: agy started as the plugin starts it, read as the plugin reads it.
    "probe": frozenset(
        {
            "errors",
            "rpc",
            "agy",
            "reading",
            "interactions",
            "hookspecs",
            "plugins",
            "config",
            "models",
            "doctor",
        }
    ),
    "cli": frozenset(
        {
            "errors",
            "rpc",
            "agy",
            "reading",
            "interactions",
            "hookspecs",
            "plugins",
            "config",
            "models",
            "doctor",
            "relay",
            "session",
            "probe",
        }
    ),
    # The core's face (omnigent_agy/__init__.py): the names a host needs, loaded lazily.
    "face": frozenset(
        {
            "errors",
            "rpc",
            "agy",
            "reading",
            "interactions",
            "hookspecs",
            "plugins",
            "config",
            "models",
            "doctor",
            "relay",
            "session",
            "probe",
        }
    ),
    # The omnigent adapter sits on top and sees the core only through its face.
    "adapter": frozenset({"face", "errors", "hookspecs", "plugins"}),
    # The tooling (agy-sim/), which no layer of the plugin imports, and which imports none of
    # it. The fake agy has its own wire codec and errors: a simulator built from the client's
    # own code would agree with the client's mistakes. omnigent's stack on loopback and the
    # demo run agy-sim, omnigent and omnigent-agy as commands, as a person does.
    "simulator": frozenset(),
    "stack": frozenset(),
}
TOOLING = frozenset({"simulator", "stack"})
# The ground floor, beside the package root's constants: every layer may import them.
GROUND = frozenset({"errors"})
# Only the adapter may import omnigent: everything under omnigent_agy is host-agnostic.
MAY_IMPORT_OMNIGENT = frozenset({"adapter"})


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the imported module, absolute
    line: int
    names: tuple[str, ...] = ()  # what `from module import ...` takes (modules among them)


def layer_of_path(path: Path) -> str:
    if path.is_relative_to(ADAPTER):
        return "adapter"
    if path.is_relative_to(STACK):
        return "stack"
    if path.is_relative_to(SIMULATOR):
        return "simulator"
    rel = path.relative_to(CORE)
    if len(rel.parts) == 1:
        # The package's face, a top-level layer (errors, hookspecs, plugins), or constants.
        if rel.name == "__init__.py":
            return "face"
        return rel.stem if rel.stem in ALLOWED else "root"
    return rel.parts[0]


def layer_of_module(module: str) -> str | None:
    """The layer an absolute module name belongs to, or None outside the project."""
    parts = module.split(".")
    if module.startswith("omnigent.community.harness.agy"):
        return "adapter"
    if parts[0] == "agy_sim":
        return "stack" if parts[1:2] == ["stack"] else "simulator"
    if parts[0] != "omnigent_agy":
        return None
    if len(parts) == 1:
        return "face"
    return parts[1] if parts[1] in ALLOWED else "root"


def imports_of(path: Path, package: str) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # `from omnigent_agy import reading` imports a layer by its package name;
            # `from omnigent_agy import AgySession`, a name of the package's face.
            if module == "omnigent_agy":
                for alias in node.names:
                    sub = CORE / alias.name
                    if alias.name in ALLOWED or sub.is_dir() or sub.with_suffix(".py").is_file():
                        found.append(Import(f"omnigent_agy.{alias.name}", node.lineno))
                    else:
                        found.append(Import("omnigent_agy", node.lineno, (alias.name,)))
            else:
                names = tuple(alias.name for alias in node.names)
                found.append(Import(module, node.lineno, names))
    return found


def package_of(path: Path) -> str:
    if path.is_relative_to(ADAPTER):
        rel = path.relative_to(ADAPTER).with_suffix("")
        parts = ["omnigent", "community", "harness", "agy", *rel.parts]
    elif path.is_relative_to(SIMULATOR):
        parts = list(path.relative_to(SIMULATOR.parent).with_suffix("").parts)
    else:
        rel = path.relative_to(REPO_ROOT).with_suffix("")
        parts = list(rel.parts)
    # A module's relative imports start from its package; an __init__ is its own package.
    return ".".join(parts[:-1])


def modules() -> list[Path]:
    return sorted([*CORE.rglob("*.py"), *ADAPTER.rglob("*.py"), *SIMULATOR.rglob("*.py")])


def violations(path: Path) -> list[str]:
    own = layer_of_path(path)
    allowed = ALLOWED.get(own, frozenset(ALLOWED))  # the root may not exist as a layer
    problems = []
    for imp in imports_of(path, package_of(path)):
        target = layer_of_module(imp.module)
        where = f"{path.relative_to(REPO_ROOT)}:{imp.line} imports {imp.module}"
        if imp.module.split(".")[0] == "omnigent" and target is None:
            if own not in MAY_IMPORT_OMNIGENT:
                problems.append(f"{where}: only the adapter may import omnigent")
            continue
        if target is None or target in {own, "root"}:
            continue
        if own == "root":
            problems.append(f"{where}: constants.py holds constants and imports no layer")
        elif target not in allowed:
            problems.append(f"{where}: layer {own!r} may import only {sorted(allowed)}")
    return problems


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    assert violations(path) == []


def module_of(path: Path) -> str:
    package = package_of(path)
    return package if path.name == "__init__.py" else f"{package}.{path.stem}"


def import_circles(paths: list[Path]) -> list[list[str]]:
    """Every circle of imports among the modules at `paths` (lazy and type-only ones count)."""
    graph: dict[str, set[str]] = {module_of(path): set() for path in paths}
    for path in paths:
        for imp in imports_of(path, package_of(path)):
            # `from pkg import module` ties to the module, as `from pkg.module import x`
            # does; a name of pkg's own ties to pkg.
            subs = [f"{imp.module}.{name}" for name in imp.names]
            if not (subs and all(sub in graph for sub in subs)):
                subs = [imp.module, *subs]
            targets = subs
            graph[module_of(path)].update(t for t in targets if t in graph)
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            circles.append([*trail[trail.index(module) :], module])
            return
        if module in done:
            return
        for target in sorted(graph[module] - {module}):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return circles


def test_no_module_imports_itself_through_others() -> None:
    # Modules in a circle can be neither read nor loaded apart; agy-sim had two
    # (__main__ <-> process through SimOptions, engine <-> handlers), the plugin one
    # (the hooks' caller <-> their specification, type-only, cut by one module of both).
    tooling = [path for path in modules() if path.is_relative_to(SIMULATOR)]
    plugin = [path for path in modules() if not path.is_relative_to(SIMULATOR.parent)]
    for paths in (tooling, plugin):
        assert [" -> ".join(circle) for circle in import_circles(paths)] == []


def test_the_circle_check_finds_a_type_only_circle(tmp_path: Path) -> None:
    fake_simulator = tmp_path / "agy-sim" / "agy_sim"
    fake_simulator.mkdir(parents=True)
    (fake_simulator / "__init__.py").write_text("")
    (fake_simulator / "engine.py").write_text("from agy_sim import handlers\n")
    (fake_simulator / "handlers.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .engine import Engine\n"
    )
    paths = sorted(fake_simulator.glob("*.py"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(f"{__name__}.SIMULATOR", fake_simulator)
        patch.setattr(f"{__name__}.REPO_ROOT", tmp_path)
        assert import_circles(paths) == [["agy_sim.engine", "agy_sim.handlers", "agy_sim.engine"]]


def test_every_layer_is_a_documented_package() -> None:
    folders = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    top = {p.stem for p in CORE.glob("*.py")} & set(ALLOWED)
    assert folders == set(ALLOWED) - {"adapter", "face"} - TOOLING - top
    packages = [CORE / name for name in folders] + [SIMULATOR, STACK]
    for package in packages:
        where = package.relative_to(REPO_ROOT) / "__init__.py"
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc, f"{where} needs a docstring saying what it owns"
        assert "May import" in doc, f"{where}: say what it may import"


def test_the_ground_floor_imports_the_standard_library_only() -> None:
    for name in sorted(GROUND):
        path = CORE / f"{name}.py"
        assert layer_of_path(path) == name, f"{name} must sit at the package's top"
        assert ALLOWED[name] == frozenset(), f"{name} is the ground floor: it imports no layer"
        foreign = {
            imp.module
            for imp in imports_of(path, "omnigent_agy")
            if imp.module.split(".")[0] not in {"omnigent_agy", *sys.stdlib_module_names}
        }
        assert foreign == set(), f"{name}.py imports more than the standard library"


def test_no_layer_of_the_plugin_may_import_the_tooling() -> None:
    assert all(TOOLING.isdisjoint(ALLOWED[layer]) for layer in set(ALLOWED) - TOOLING)


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("reading/mapper.py", "from omnigent_agy.session.turn_results import TurnResult\n", True),
        ("reading/mapper.py", "from omnigent_agy.rpc import wire\n", False),
        ("reading/mapper.py", "from omnigent_agy import errors\n", False),
        ("relay/mcp_server.py", "from omnigent_agy.errors import RelayError\n", False),
        ("errors.py", "from omnigent_agy.errors import Failure\n", False),
        ("errors.py", "from omnigent_agy.rpc.wire import Code\n", True),
        ("errors.py", "from omnigent_agy.config.settings import KEY\n", True),
        ("rpc/wire.py", "from omnigent_agy import reading\n", True),
        ("rpc/wire.py", "import omnigent.inner.executor\n", True),
        ("agy_sim/server.py", "from omnigent_agy.reading.steps import Question\n", True),
        ("agy_sim/server.py", "from omnigent_agy.rpc.wire import encode_envelope\n", True),
        ("agy_sim/server.py", "from agy_sim.envelopes import encode_envelope\n", False),
        ("agy_sim/stack/local_stack.py", "from omnigent_agy.cli import agent_folder_path\n", True),
        ("agy_sim/stack/demo.py", "from .rest import choose\n", False),
        ("agy_sim/stack/demo.py", "from agy_sim.scenarios import choose\n", True),
        ("agy_sim/stack/demo.py", "from ..scenarios import choose\n", True),
        ("session/turn_results.py", "from agy_sim.stack import rest\n", True),
        ("cli/demo.py", "import agy_sim\n", True),
        ("interactions/gates.py", "from ..reading import steps\n", False),
        ("interactions/gates.py", "from ..session import turns\n", True),
    ],
)
def test_the_check_catches_an_upward_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, module: str, expected: bool
) -> None:
    # A copy of the tree with one import added: the check must name it.
    fake_core = tmp_path / "omnigent_agy"
    fake_simulator = tmp_path / "agy-sim" / "agy_sim"
    root = fake_simulator.parent if source.startswith("agy_sim/") else fake_core
    target = root / source
    target.parent.mkdir(parents=True)
    target.write_text(module)
    monkeypatch.setattr(f"{__name__}.CORE", fake_core)
    monkeypatch.setattr(f"{__name__}.SIMULATOR", fake_simulator)
    monkeypatch.setattr(f"{__name__}.STACK", fake_simulator / "stack")
    monkeypatch.setattr(f"{__name__}.REPO_ROOT", tmp_path)
    assert bool(violations(target)) is expected
