"""``agy-sim``: a fake ``agy`` that takes agy's command line (docs/wire.md §1).

``agy-sim --version``, ``agy-sim [--output-format json] models`` and ``agy-sim changelog``
answer at once; ``agy-sim acp`` speaks the Agent Client Protocol on stdio (``acp_process``);
anything else starts the language server (``process``). The flags and switches are
``options``'s.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agy_sim.catalog import ModelCatalog
from agy_sim.changelog import changelog_output
from agy_sim.options import TRUTHY, SimOptions, parse_options


def models_output(options: SimOptions) -> str:
    """What ``agy models`` prints, in the form asked for (docs/wire.md §9; docs/simulator.md).

    The table (``<id>\t<Display Name>[ · description]`` after a progress line) is what agy
    prints from August 2026; bare ids what it printed before; ``--output-format json`` JSON,
    whose shape no report shows (a **guess**: ``{"models": [{id, displayName,
    description?}]}``).
    """
    models = [entry for entry in ModelCatalog().models if not entry.disabled]
    if options.output_format == "json":
        listed = [
            {"id": m.key, "displayName": m.display_name}
            | ({"description": m.description} if m.description else {})
            for m in models
        ]
        return json.dumps({"models": listed}, indent=2) + "\n"
    if options.models_format == "ids":
        return "".join(f"{m.key}\n" for m in models)
    rows = [
        f"{m.key}\t{m.display_name}" + (f" · {m.description}" if m.description else "")
        for m in models
    ]
    return "Fetching available models...\n" + "".join(f"{row}\n" for row in rows)


def list_models(options: SimOptions) -> int:
    """``agy models``: the account's models; exit 0 means signed in (docs/wire.md §1)."""
    if options.signed_out:
        from agy_sim.tui import SIGN_IN_HINT  # noqa: PLC0415 - asyncio's import, only here

        print(SIGN_IN_HINT, file=sys.stderr)  # noqa: T201 - this is the command's output
        return 1
    sys.stdout.write(models_output(options))
    return 0


def look_like_agy() -> None:
    """Re-exec this process so the process table shows ``.../bin/agy`` as its ``argv[0]``.

    Tools that look for a running agy (omnigent's own agy client among them) match the
    basename of ``argv[0]`` (``agy``) and ``bin/agy`` on the command line, as the real
    binary has. A console script starts as ``python .../bin/agy-sim``; exec'ing the same
    interpreter with ``argv[0]`` = ``<its bin>/agy`` keeps the pid, the flags and the venv
    (Python finds ``pyvenv.cfg`` beside ``argv[0]``). Skipped when a real ``agy`` sits at
    that path (Python would resolve its prefix through it) or when already done.
    """
    if Path(sys.orig_argv[0]).name == "agy":
        return
    alias = Path(sys.executable).with_name("agy")
    if alias.exists():
        return
    os.execv(sys.executable, [str(alias), *sys.orig_argv[1:]])  # noqa: S606 - same argv


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv, os.environ)
    if options.show_version:
        print(options.version)  # noqa: T201
        return 0
    if options.command == "models":
        return list_models(options)
    if options.command == "changelog":
        sys.stdout.write(changelog_output(options.sim_version))
        return 0
    # Only a process that stays running is looked for in the process table: the quick answers
    # above skip the re-exec (a second interpreter start for every version probe).
    if argv is None and os.environ.get("AGY_SIM_KEEP_ARGV0", "").lower() not in TRUTHY:
        look_like_agy()
    if options.command == "acp":
        from agy_sim.acp_process import run_acp  # noqa: PLC0415 - only this command needs it

        return run_acp(options)
    # Imported here so --version, models and changelog stay quick and need no server stack.
    from agy_sim.process import run  # noqa: PLC0415

    return run(options)


if __name__ == "__main__":
    sys.exit(main())
