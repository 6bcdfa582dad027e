"""Each constant of the plugin is written once, in the layer that owns it.

Environment variable names (ours and the ones we read of omnigent, agy, tmux and XDG) are
each spelled in one module; the others import the name. The harness's identity (id, label,
alias) and the tmux socket are spelled in constants.py, where every layer can read them.
Code is searched, not comments or docstrings.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections import defaultdict

import pytest
from pluginsource import plugin_sources, short_name

import omnigent_agy
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.session.binding import SessionSettings

ENV_NAME = re.compile(r"(?:OMNIGENT|HARNESS|ANTIGRAVITY|GEMINI|AGY|TMUX|XDG)(?:_[A-Z0-9]+)*")
# Where each identity string may be written. agy's own folder in a gemini dir happens to be
# spelled like the harness's alias; the plugin's name is also its distribution, its command
# and its state and data folders.
IDENTITY = {
    omnigent_agy.HARNESS_ID: {"constants"},
    omnigent_agy.HARNESS_LABEL: {"constants"},
    **{alias: {"constants", "agy.gemini_home"} for alias in omnigent_agy.HARNESS_ALIASES},
    omnigent_agy.TMUX_SOCKET: {
        "constants",
        "agy.statedir",
        "config.agent_folder",
        "cli",
        "adapter.plugin",
    },
}


def literals(source: str) -> list[str]:
    """The string constants of ``source``'s code: no docstrings (comments are not in the AST)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    # An attribute's docstring (a string statement after an assignment) is prose too.
    docstrings |= {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def where_spelled() -> dict[str, set[str]]:
    """Each string constant → the modules that write it (short names: ``agy.statedir``)."""
    spelled: dict[str, set[str]] = defaultdict(set)
    for module, path in plugin_sources().items():
        if module == "omnigent_agy":
            continue  # the core's face names what it hands on; it spells no value
        for text in literals(path.read_text(encoding="utf-8")):
            spelled[text].add(short_name(module))
    return spelled


SPELLED = where_spelled()


def test_every_environment_variable_name_is_written_in_one_module() -> None:
    names = {text: found for text, found in SPELLED.items() if ENV_NAME.fullmatch(text)}
    assert len(names) > 20, "the search found too few names to be looking in the right place"
    assert {name: sorted(found) for name, found in names.items() if len(found) > 1} == {}


@pytest.mark.parametrize("value", sorted(IDENTITY))
def test_the_harness_identity_is_written_in_the_package_root(value: str) -> None:
    assert SPELLED[value] <= IDENTITY[value]


def test_every_default_tmux_socket_is_the_one_constant() -> None:
    assert SessionSettings.__dataclass_fields__["tmux_socket"].default == omnigent_agy.TMUX_SOCKET
    default = inspect.signature(TerminalHost).parameters["socket_name"].default
    assert default == omnigent_agy.TMUX_SOCKET


# -- the search itself -----------------------------------------------------------------------


def test_the_search_sees_code_and_skips_prose() -> None:
    source = '''"""Reads OMNIGENT_AGY_X."""
ENV = "OMNIGENT_AGY_X"
LABEL = "Antigravity CLI"
"""The label, as OMNIGENT_AGY_Y says."""


def f() -> str:
    """Uses HARNESS_AGY_CLI_MODEL."""
    # "HARNESS_AGY_CLI_CWD" in a comment
    return os.environ.get("XDG_STATE_HOME", f"{ENV}-HARNESS_AGY_CLI_AGENT_NAME")
'''
    assert literals(source) == [
        "OMNIGENT_AGY_X",
        "Antigravity CLI",
        "XDG_STATE_HOME",
        "-HARNESS_AGY_CLI_AGENT_NAME",
    ]
    assert [text for text in literals(source) if ENV_NAME.fullmatch(text)] == [
        "OMNIGENT_AGY_X",
        "XDG_STATE_HOME",
    ]
