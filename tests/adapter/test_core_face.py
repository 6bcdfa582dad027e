"""The adapter sees the core through its face: ``omnigent_agy`` and its top-level modules.

The core's modules may move and merge; what the adapter (a host's side) may rely on is the
package's ``__all__`` and the top-level ``errors``, ``hookspecs`` and ``plugins``.
``import omnigent_agy`` must stay cheap: the face loads each name on first use, so the relay
(standard library only until it runs) and a command's start pay nothing for it.
"""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import REPO_ROOT

import omnigent_agy

ADAPTER = REPO_ROOT / "omnigent_harness_agy"
MAY_IMPORT = frozenset(
    {"omnigent_agy", "omnigent_agy.errors", "omnigent_agy.hookspecs", "omnigent_agy.plugins"}
)


def core_imports() -> list[str]:
    found = []
    for path in sorted(ADAPTER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{path.name}:{node.lineno} {module}"
                for module in modules
                if module.split(".")[0] == "omnigent_agy" and module not in MAY_IMPORT
            ]
    return found


def test_the_adapter_imports_the_core_only_through_its_face() -> None:
    assert core_imports() == []


def test_every_name_of_the_face_loads() -> None:
    missing = [name for name in omnigent_agy.__all__ if getattr(omnigent_agy, name, None) is None]
    assert missing == []
    assert set(omnigent_agy.__all__) <= set(dir(omnigent_agy))


def test_importing_the_face_loads_no_layer() -> None:
    code = (
        "import sys, omnigent_agy\n"
        "print(sorted(m for m in sys.modules if m.startswith('omnigent_agy.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert done.stdout.strip() == "['omnigent_agy.constants']"
