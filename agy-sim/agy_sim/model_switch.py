"""``/model`` typed in agy-sim's TUI, and the model its settings remember.

What is known (docs/wire.md §9, public reports, not recordings): agy's
``antigravity-cli/settings.json`` has a ``model`` key, "the default model", holding a display
name (``"Gemini 3.5 Flash (High)"``), and tools that want agy on another model for a run
rewrite that key. What agy-sim assumes from it (a **guess**, nothing recorded): ``/model <id or
name>`` in the TUI switches the model of the turns typed there and writes the choice to that
key; a TUI started without ``--model`` starts on the model the key names. A turn sent over RPC
names its own model (``planModel``, §3), so only a client that reads the key learns of a
switch. Given no ``--gemini_dir``, the person's own folder is never written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from agy_sim.catalog import CatalogModel, ModelCatalog
from agy_sim.gemini import SETTINGS

__all__ = ["MODEL_KEY", "model_command", "remembered_model"]

MODEL_KEY: Final = "model"


def _settings(gemini_dir: Path) -> dict[str, Any]:
    try:
        value = json.loads((gemini_dir / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def remembered_model(gemini_dir: Path, catalog: ModelCatalog) -> CatalogModel | None:
    """The model the settings name, when it is one agy-sim serves."""
    name = _settings(gemini_dir).get(MODEL_KEY)
    return catalog.resolve(name) if isinstance(name, str) and name.strip() else None


def _remember(gemini_dir: Path, display_name: str) -> None:
    """Write the choice into the settings, keeping every other key (mode 0600, atomic)."""
    file = gemini_dir / SETTINGS
    settings = _settings(gemini_dir)
    settings[MODEL_KEY] = display_name
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.model.{os.getpid()}")
    tmp.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(file)


def model_command(
    catalog: ModelCatalog,
    current: Callable[[], CatalogModel],
    switch: Callable[[CatalogModel], None],
    gemini_dir: Path | None,
) -> Callable[[str], str]:
    """What ``/model [name]`` does: with a name, switch (and remember it in ``gemini_dir``'s
    settings, when given); without, show the model and the choices. Returns the TUI's line;
    an unknown name is a ValueError naming the choices."""

    def choices() -> str:
        return ", ".join(m.key for m in catalog.models if not m.disabled)

    def command(name: str) -> str:
        if not name.strip():
            return f"[model] {current().display_name}; switch with /model <id>: {choices()}"
        chosen = catalog.resolve(name)
        if chosen is None or chosen.disabled:
            raise ValueError(f"no model {name.strip()!r}; choose one of: {choices()}")
        switch(chosen)
        if gemini_dir is not None:
            _remember(gemini_dir, chosen.display_name)
        return f"[model] {chosen.display_name}"

    return command
