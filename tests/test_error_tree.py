"""The error tree drawn in ``omnigent_agy.errors`` is the tree of the classes, both ways.

Every exception class of the plugin is in the drawing, under its real parent and with the code
of its catalogue entry, derives from ``AgyError`` and is defined in ``omnigent_agy.errors`` —
or it is one of the control-flow signals the docstring names, which stay in their own layer.
Whatever is drawn exists. The drawing is parsed, the classes are found by importing every
module of the plugin and walking ``AgyError``'s subclasses.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from pluginsource import plugin_sources, short_name

from omnigent_agy import errors
from omnigent_agy.errors import AgyError

_LINE = re.compile(
    r"^(?P<prefix>(?:│   |    |├── |└── )*)(?P<name>\w+)\s+(?P<code>agy_\w+)"
    r"(?:\s+also an? (?P<also>\w+))?\s*$"
)
_SIGNAL = re.compile(r"``(?P<name>\w+)`` in\s+(?P<module>[\w.]+)")


@dataclass(frozen=True, slots=True)
class Node:
    parent: str | None
    code: str  # of its catalogue entry (the class's ``kind``)
    also: str | None = None  # a foreign base ("ValueError"), drawn as "also a ValueError"

    def __str__(self) -> str:
        also = f", also a {self.also}" if self.also else ""
        return f"under {self.parent} with {self.code}{also}"


def parse_drawing(doc: str) -> dict[str, Node]:
    """The tree drawn in the literal block after the first ``::`` line of ``doc``."""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("::")) + 1
    block: list[str] = []
    for line in lines[start:]:
        if block and not line.strip():
            break
        if line.strip():
            block.append(line.removeprefix("    "))
    tree: dict[str, Node] = {}
    path: list[str] = []
    for line in block:
        match = _LINE.match(line)
        assert match, f"a line of the drawing does not parse: {line!r}"
        depth = len(match["prefix"]) // 4
        assert depth <= len(path), f"{match['name']} is drawn deeper than its parent"
        assert match["name"] not in tree, f"{match['name']} is drawn twice"
        del path[depth:]
        tree[match["name"]] = Node(path[-1] if path else None, match["code"], match["also"])
        path.append(match["name"])
    return tree


def drawn_signals(doc: str) -> dict[str, str]:
    """The control-flow signals the docstring names: name → relative module."""
    paragraph = doc[doc.index("Not errors") :].split("\n\n", maxsplit=1)[0]
    return {m["name"]: m["module"] for m in _SIGNAL.finditer(paragraph)}


def plugin_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in plugin_sources()]


def exception_classes() -> list[type[BaseException]]:
    """Every exception class a module of the plugin defines at its top level."""
    return [
        obj
        for module in plugin_modules()
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == module.__name__
    ]


def real_tree(classes: list[type[BaseException]]) -> dict[str, Node]:
    tree: dict[str, Node] = {}
    for cls in classes:
        if not issubclass(cls, AgyError):
            continue
        ours = [base for base in cls.__bases__ if issubclass(base, AgyError)]
        foreign = [base.__name__ for base in cls.__bases__ if not issubclass(base, AgyError)]
        assert len(ours) <= 1, f"{cls.__name__} has two parents in the tree: {ours}"
        assert len(foreign) <= 1 or cls is AgyError, f"{cls.__name__}: bases {foreign}"
        parent = ours[0].__name__ if ours else None
        also = foreign[0] if foreign and cls is not AgyError else None
        tree[cls.__name__] = Node(parent, cls.kind.code, also)
    return tree


def differences(drawn: dict[str, Node], real: dict[str, Node]) -> list[str]:
    """What a reader of the drawing would get wrong, one line each."""
    problems = [f"{name} ({real[name].code}) is not drawn" for name in real.keys() - drawn]
    problems += [f"{name} is drawn but no such error exists" for name in drawn.keys() - real]
    problems += [
        f"{name} is drawn {drawn[name]}, the class is {real[name]}"
        for name in drawn.keys() & real.keys()
        if drawn[name] != real[name]
    ]
    return sorted(problems)


DOC = errors.__doc__ or ""
CLASSES = exception_classes()


def test_every_error_of_the_plugin_derives_from_agy_error() -> None:
    signals = drawn_signals(DOC)
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in CLASSES
        if not issubclass(cls, AgyError) and cls.__name__ not in signals
    ]
    assert outside == []


def test_the_drawing_is_the_tree_of_the_classes() -> None:
    real = real_tree(CLASSES)
    assert len(real) == len({cls for cls in CLASSES if issubclass(cls, AgyError)}), (
        "two errors share a name"
    )
    assert differences(parse_drawing(DOC), real) == []


def test_every_error_is_defined_in_the_errors_module() -> None:
    elsewhere = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in CLASSES
        if issubclass(cls, AgyError) and cls.__module__ != errors.__name__
    ]
    assert elsewhere == []


def errors_defined_outside(sources: dict[str, Path]) -> list[str]:
    """Classes (at any depth) of modules other than ``errors`` with an error of the tree as a
    base, by name: ``class GoneError(AgyError)``, ``class Late(errors.SessionError)``."""
    tree_names = set(parse_drawing(DOC))
    return [
        f"{short_name(module)}:{node.lineno} {node.name}"
        for module, path in sources.items()
        if module != errors.__name__
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).rsplit(".", 1)[-1] in tree_names for base in node.bases)
    ]


def test_no_other_shipped_module_defines_an_error() -> None:
    assert errors_defined_outside(plugin_sources()) == []


def test_the_search_finds_a_planted_error(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from omnigent_agy import errors\n"
        "from omnigent_agy.errors import AgyError\n"
        "class GoneError(AgyError): ...\n"
        "def later():\n"
        "    class LateError(errors.SessionError): ...\n"
        "class Fine(Exception): ...\n"
    )
    found = errors_defined_outside({"omnigent_agy.planted": planted})
    assert found == ["planted:3 GoneError", "planted:5 LateError"]


def test_the_signals_are_the_only_other_exceptions_and_stay_in_their_layer() -> None:
    signals = drawn_signals(DOC)
    real = {cls.__name__: short_name(cls.__module__) for cls in CLASSES}
    others = {name: module for name, module in real.items() if name not in parse_drawing(DOC)}
    assert others == signals
    for name, module in signals.items():
        layer = module.split(".")[0]
        users = {
            short_name(source).split(".")[0]
            for source, path in plugin_sources().items()
            if name in names(path)
        }
        assert users == {layer}, f"{name} is used outside {layer}: {sorted(users)}"


def names(path: Path) -> set[str]:
    """The names a module's code uses (not its comments or docstrings)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.ClassDef):
            found.add(node.name)
    return found


def test_no_exception_class_hides_inside_a_function() -> None:
    # The walk above sees top-level classes only: an error defined in a function would escape it.
    hidden = []
    for path in plugin_sources().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            hidden += [
                f"{path.name}:{inner.lineno} {inner.name}"
                for inner in ast.walk(node)
                if isinstance(inner, ast.ClassDef)
                and any(ast.unparse(b).endswith(("Error", "Exception")) for b in inner.bases)
            ]
    assert hidden == []


# -- the check itself: a drawing that is wrong in each way is caught ---------------------------

_PREFLIGHT = "    │   └── PreflightError            agy_internal\n"
_LAST = "    └── ContributionError             agy_internal\n"


@pytest.mark.parametrize(
    ("drawing", "expected"),
    [
        pytest.param(DOC, [], id="the-real-drawing"),
        pytest.param(
            DOC.replace(_PREFLIGHT, ""),
            ["PreflightError (agy_internal) is not drawn"],
            id="a-class-left-out",
        ),
        pytest.param(
            DOC.replace(_LAST, _LAST.replace("└", "├") + _LAST.replace("Contribution", "Ghost")),
            ["GhostError is drawn but no such error exists"],
            id="a-class-that-does-not-exist",
        ),
        pytest.param(
            DOC.replace(_PREFLIGHT, _PREFLIGHT.replace("│   └", "├")),
            [
                "PreflightError is drawn under AgyError with agy_internal, "
                "the class is under SessionError with agy_internal"
            ],
            id="a-wrong-parent",
        ),
        pytest.param(
            DOC.replace("agy_message_unsupported    also a ValueError", "agy_internal"),
            [
                "MessageError is drawn under AgyError with agy_internal, "
                "the class is under AgyError with agy_message_unsupported, also a ValueError"
            ],
            id="a-wrong-code-and-a-foreign-base-left-out",
        ),
    ],
)
def test_the_check_catches_a_wrong_drawing(drawing: str, expected: list[str]) -> None:
    # Against the drawing itself (the test above holds it to the classes), so that one class
    # added to the package fails that test only.
    assert drawing is DOC or drawing != DOC, "the mutation did not apply"
    assert differences(parse_drawing(drawing), parse_drawing(DOC)) == expected
