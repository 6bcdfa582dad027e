"""The plugin's source files, for the tests that read its code (error tree, failure codes,
constants): every module of ``omnigent_agy`` and of the adapter, by module name.

The adapter's folder is ``omnigent_harness_agy``; it is imported as
``omnigent.community.harness.agy``, shown ``adapter.<module>`` in short names.
"""

from __future__ import annotations

from pathlib import Path

from conftest import REPO_ROOT

CORE_PACKAGE = "omnigent_agy"
ADAPTER_PACKAGE = "omnigent.community.harness.agy"
FOLDERS = {
    CORE_PACKAGE: REPO_ROOT / "omnigent_agy",
    ADAPTER_PACKAGE: REPO_ROOT / "omnigent_harness_agy",
}


def plugin_sources() -> dict[str, Path]:
    """Every module of the plugin (its importable name) → its file."""
    found: dict[str, Path] = {}
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join([package, *parts]).removesuffix(".__init__")] = path
    return found


def short_name(module: str) -> str:
    """``omnigent_agy.rpc.wire`` → ``rpc.wire``; the adapter's → ``adapter.plugin``."""
    if module.startswith(f"{ADAPTER_PACKAGE}."):
        return "adapter." + module.removeprefix(f"{ADAPTER_PACKAGE}.")
    return module.removeprefix(f"{CORE_PACKAGE}.")


def where(path: Path) -> str:
    """``path`` as the repository names it."""
    return str(path.relative_to(REPO_ROOT))
