"""The folders are the layers: every module imports only the layers its own may use.

The table is the architecture (docs/architecture.md). A module's layer is its sub-package
(``omnigent_agy.reading.mapper`` → ``reading``); the top-level ``omnigent_agy/__init__.py``
holds only constants and is open to all. Every import counts, also the lazy ones inside
functions and those under ``TYPE_CHECKING``: a layer that needs a higher one only for a type
is still tied to it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

CORE = REPO_ROOT / "omnigent_agy"
ADAPTER = REPO_ROOT / "omnigent_harness_agy"

# layer → the layers it may import (besides itself and the package root's constants).
ALLOWED: dict[str, frozenset[str]] = {
    "rpc": frozenset(),
    "agy": frozenset({"rpc"}),
    "reading": frozenset({"rpc"}),
    "interactions": frozenset({"rpc", "reading"}),
    "onboarding": frozenset({"rpc", "agy", "reading", "interactions"}),
    # omnigent's tools over MCP: the harness's socket and the MCP server agy starts.
    "relay": frozenset({"rpc", "agy"}),
    "session": frozenset({"rpc", "agy", "reading", "interactions", "onboarding", "relay"}),
    "cli": frozenset({"rpc", "agy", "reading", "interactions", "onboarding", "relay", "session"}),
    # The fake agy shares only the wire codec and the error tree with the plugin: a
    # simulator built from the client's own code would agree with the client's mistakes.
    "simulator": frozenset({"rpc"}),
    # The omnigent adapter sits on top; the demo may start the simulator.
    "adapter": frozenset(
        {
            "rpc",
            "agy",
            "reading",
            "interactions",
            "onboarding",
            "relay",
            "session",
            "cli",
            "simulator",
        }
    ),
}
# Only the adapter may import omnigent: everything under omnigent_agy is host-agnostic.
MAY_IMPORT_OMNIGENT = frozenset({"adapter"})


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the imported module, absolute
    line: int


def layer_of_path(path: Path) -> str:
    if path.is_relative_to(ADAPTER):
        return "adapter"
    rel = path.relative_to(CORE)
    if len(rel.parts) == 1:
        return "cli" if rel.stem == "cli" else "root"
    return rel.parts[0]


def layer_of_module(module: str) -> str | None:
    """The layer an absolute module name belongs to, or None outside the project."""
    parts = module.split(".")
    if module.startswith("omnigent.community.harness.agy"):
        return "adapter"
    if parts[0] != "omnigent_agy":
        return None
    if len(parts) == 1:
        return "root"
    if parts[1] == "cli":
        return "cli"
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
            # `from omnigent_agy import reading` imports a layer by its package name.
            if module == "omnigent_agy":
                found.extend(
                    Import(f"omnigent_agy.{alias.name}", node.lineno) for alias in node.names
                )
            else:
                found.append(Import(module, node.lineno))
    return found


def package_of(path: Path) -> str:
    if path.is_relative_to(ADAPTER):
        rel = path.relative_to(ADAPTER).with_suffix("")
        parts = ["omnigent", "community", "harness", "agy", *rel.parts]
    else:
        rel = path.relative_to(REPO_ROOT).with_suffix("")
        parts = list(rel.parts)
    # A module's relative imports start from its package; an __init__ is its own package.
    return ".".join(parts[:-1])


def modules() -> list[Path]:
    return sorted([*CORE.rglob("*.py"), *ADAPTER.rglob("*.py")])


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
            problems.append(f"{where}: the package root holds constants and imports no layer")
        elif target not in allowed:
            problems.append(f"{where}: layer {own!r} may import only {sorted(allowed)}")
    return problems


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    assert violations(path) == []


def test_every_layer_is_a_documented_package() -> None:
    folders = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(ALLOWED) - {"cli", "adapter"}
    for name in folders:
        doc = ast.get_docstring(ast.parse((CORE / name / "__init__.py").read_text()))
        assert doc, f"omnigent_agy/{name}/__init__.py needs a docstring saying what it owns"
        assert "May import" in doc, f"omnigent_agy/{name}/__init__.py: say what it may import"


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("reading/mapper.py", "from omnigent_agy.session.turns import TurnResult\n", True),
        ("reading/mapper.py", "from omnigent_agy.rpc import errors\n", False),
        ("rpc/wire.py", "from omnigent_agy import reading\n", True),
        ("rpc/wire.py", "import omnigent.inner.executor\n", True),
        ("simulator/server.py", "from omnigent_agy.reading.steps import Question\n", True),
        ("interactions/gates.py", "from ..reading import steps\n", False),
        ("interactions/gates.py", "from ..session import turns\n", True),
    ],
)
def test_the_check_catches_an_upward_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, module: str, expected: bool
) -> None:
    # A copy of the tree with one import added: the check must name it.
    fake_core = tmp_path / "omnigent_agy"
    target = fake_core / source
    target.parent.mkdir(parents=True)
    target.write_text(module)
    monkeypatch.setattr(f"{__name__}.CORE", fake_core)
    monkeypatch.setattr(f"{__name__}.REPO_ROOT", tmp_path)
    assert bool(violations(target)) is expected
