"""Every failure code that can reach omnigent is catalogued, documented and spelled once.

A code reaches omnigent (the error card, the doctor's JSON) from a catalogue entry
(``omnigent_agy.errors``): an error carries its entry as ``kind``, a
``Failure``/``DoctorLine`` is built from an entry's ``code``. No module but the catalogue
spells a code: the plugin's code is searched for codes given where a code can be given
(``code = "agy_…"``, ``code="agy_…"``, a ``Failure``/``FailureKind``/``DoctorLine`` built
with one) and for any string that is a catalogue code. Each catalogue entry has a title and a
remediation, and docs/onboarding.md's table lists exactly the catalogue's codes with the same
titles. Only ``omnigent_harness_agy/executor_errors.py`` builds an ``ExecutorError``.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass

import pytest
from conftest import REPO_ROOT
from pluginsource import plugin_sources, where

from omnigent_agy.doctor.checks import DoctorLine
from omnigent_agy.errors import CATALOGUE, Failure, FailureKind, kind_for_code

ONE_BUILDER = REPO_ROOT / "omnigent_harness_agy" / "executor_errors.py"
THE_CATALOGUE = REPO_ROOT / "omnigent_agy" / "errors.py"
CODES = frozenset(kind.code for kind in CATALOGUE)
DOCS = REPO_ROOT / "docs" / "onboarding.md"
# The code's position among the positional arguments of the types that carry one.
CODE_POSITION = {
    cls.__name__: [f.name for f in dataclasses.fields(cls)].index("code")
    for cls in (Failure, FailureKind, DoctorLine)
}
_ROW = re.compile(r"^\| `(?P<code>agy_\w+)` \| (?P<title>[^|]+?) \|", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Found:
    code: str
    where: str  # "path:line"


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_code(target: ast.expr) -> bool:
    return (isinstance(target, ast.Name) and target.id == "code") or (
        isinstance(target, ast.Attribute) and target.attr == "code"
    )


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def codes_in(source: str, where: str) -> list[Found]:
    """Every failure code ``source`` spells out, wherever a code can be given."""
    found: list[tuple[str | None, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += [(_literal(k.value), k.value.lineno) for k in node.keywords if k.arg == "code"]
            position = CODE_POSITION.get(_callee(node))
            if position is not None and position < len(node.args):
                found.append((_literal(node.args[position]), node.lineno))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and any(map(_is_code, _targets(node))):
            found.append((_literal(node.value), node.lineno))
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            defaults = [
                *zip(params[len(params) - len(node.defaults) :], node.defaults, strict=True),
                *((a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d),
            ]
            found += [(_literal(d), d.lineno) for a, d in defaults if a.arg == "code"]
    return [Found(code, f"{where}:{line}") for code, line in found if code is not None]


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def spelled_codes(source: str, where: str) -> list[Found]:
    """Every string of ``source``'s code (not its docstrings) that is a catalogue code, and
    every code given where a code can be given."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    spelled = [
        Found(node.value, f"{where}:{node.lineno}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and id(node) not in prose
        and isinstance(node.value, str)
        and node.value in CODES
    ]
    given = [found for found in codes_in(source, where) if found not in spelled]
    return sorted(spelled + given, key=lambda found: found.where)


def executor_errors_in(source: str, where: str) -> list[str]:
    """Where ``source`` builds an ``ExecutorError``."""
    return [
        f"{where}:{node.lineno}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and _callee(node) == "ExecutorError"
    ]


def every_code() -> list[Found]:
    return [
        found
        for path in plugin_sources().values()
        for found in codes_in(path.read_text(encoding="utf-8"), where(path))
    ]


def test_the_search_reaches_the_catalogue() -> None:
    assert {f.code for f in every_code()} == CODES
    assert len(plugin_sources()) > 60


def test_no_module_but_the_catalogue_spells_a_failure_code() -> None:
    spelled = [
        f"{found.where}: {found.code}"
        for path in plugin_sources().values()
        if path != THE_CATALOGUE
        for found in spelled_codes(path.read_text(encoding="utf-8"), where(path))
    ]
    assert spelled == []


def test_every_code_that_can_reach_omnigent_is_catalogued() -> None:
    unknown = [f"{f.where}: {f.code}" for f in every_code() if kind_for_code(f.code).code != f.code]
    assert unknown == []


def test_every_catalogue_entry_has_a_title_and_a_remediation() -> None:
    for kind in CATALOGUE:
        assert re.fullmatch(r"agy_[a-z]+(_[a-z]+)*", kind.code), kind.code
        assert kind.title.strip(), kind.code
        assert kind.remediation.strip(), kind.code
    assert len({kind.code for kind in CATALOGUE}) == len(CATALOGUE)


def test_docs_onboarding_lists_exactly_the_catalogue() -> None:
    table = {m["code"]: m["title"] for m in _ROW.finditer(DOCS.read_text(encoding="utf-8"))}
    assert table == {kind.code: kind.title for kind in CATALOGUE}


def test_only_the_adapter_failures_module_builds_an_executor_error() -> None:
    built = [
        place
        for path in plugin_sources().values()
        if path != ONE_BUILDER
        for place in executor_errors_in(path.read_text(encoding="utf-8"), where(path))
    ]
    assert built == []


# -- the search itself: planted codes are found ---------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('class GoneError(AgyError):\n    code = "agy_gone"\n', ["agy_gone"]),
        ('class GoneError(AgyError):\n    code: str = "agy_gone"\n', ["agy_gone"]),
        ('raise SessionError("agy left", code="agy_gone")\n', ["agy_gone"]),
        ('error = AgyError("x")\nerror.code = "agy_gone"\n', ["agy_gone"]),
        ('def __init__(self, *, code: str = "agy_gone") -> None: ...\n', ["agy_gone"]),
        ('def __init__(self, code: str = "agy_gone") -> None: ...\n', ["agy_gone"]),
        ('Failure("agy_gone", "Gone", "it left", "run it")\n', ["agy_gone"]),
        ('FailureKind("agy_gone", "Gone", "run it")\n', ["agy_gone"]),
        ('DoctorLine("agy", Status.FAIL, "gone", None, "agy_gone")\n', ["agy_gone"]),
        ('ExecutorError(message="x", code="agy_gone")\n', ["agy_gone"]),
        ('DoctorLine("agy", Status.FAIL, "gone", None, KIND.code)\n', []),
        ('log("code", "agy_gone")\ncodes = ["agy_gone"]\n', []),
    ],
)
def test_the_search_finds_a_planted_code(source: str, expected: list[str]) -> None:
    assert [f.code for f in codes_in(source, "planted.py")] == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('TRAMPOLINE_CODE = "agy_workspace_unreachable"\n', ["agy_workspace_unreachable"]),
        ('log.info("%s", "agy_exited")\n', ["agy_exited"]),
        ('raise SessionError("agy left", code="agy_gone")\n', ["agy_gone"]),
        ('def f():\n    """Fails with "agy_exited"."""\n', []),
        ("TRAMPOLINE_CODE = AGY_WORKSPACE_UNREACHABLE.code\n", []),
        ('harness = "agy_sim"\n', []),
    ],
)
def test_the_search_finds_a_planted_literal(source: str, expected: list[str]) -> None:
    assert [f.code for f in spelled_codes(source, "planted.py")] == expected


def test_the_search_finds_a_planted_executor_error() -> None:
    source = (
        "from omnigent.inner.executor import ExecutorError\nreturn_ = ExecutorError(message='x')\n"
    )
    assert executor_errors_in(source, "planted.py") == ["planted.py:2"]
