"""``agy-sim``: a fake ``agy`` that takes agy's command line (WIRE.md §1).

    agy-sim [--csrf_token=T] [--log-file PATH] [--gemini_dir DIR] [--conversation ID]
            [--model M] [--effort E] [--mode MODE] [--dangerously-skip-permissions]
            [--sim-... switches]
    agy-sim --version
    agy-sim models

Switches that exist only in the simulator start with ``--sim-`` and each has an
``AGY_SIM_*`` environment variable (the flag wins), so a launcher that passes agy's own
flags can still configure it. docs/simulator.md lists them all.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from omnigent_agy.simulator.catalog import ModelCatalog
from omnigent_agy.simulator.faults import FaultConfigError, FaultRule, parse_spec
from omnigent_agy.simulator.tui import SIGN_IN_HINT

SIM_VERSION: Final = "1.2.5-sim"
# CSRF arrived in agy 1.2.2 (WIRE.md §1): an older version enforces no token.
FIRST_CSRF_VERSION: Final = (1, 2, 2)
# Real agy spends 7-9 s on an account eligibility check before it is ready (WIRE.md §1).
DEFAULT_STARTUP_DELAY: Final = 8.0

_TRUE: Final = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Everything the command line and the ``AGY_SIM_*`` environment asked for."""

    command: str | None = None
    show_version: bool = False
    csrf_token: str | None = None
    log_file: Path | None = None
    gemini_dir: Path = Path("~/.gemini")
    keeps_conversations: bool = False  # only under a --gemini_dir given: never the real one
    conversation: str | None = None
    model: str | None = None
    effort: str | None = None
    mode: str | None = None
    skip_permissions: bool = False
    startup_delay: float = DEFAULT_STARTUP_DELAY
    waiting_timeout: float | None = None
    token_delay: float | None = None
    long_token_delay: float | None = None
    slow_command_seconds: float | None = None
    faults_file: Path | None = None
    fault_rules: tuple[FaultRule, ...] = ()
    signed_out: bool = False
    debug_rpc: bool = False
    history_steps: int = 0
    http2_only: bool = False
    version: str = SIM_VERSION
    workspace: Path = Path()

    @property
    def enforces_csrf(self) -> bool:
        return version_tuple(self.version) >= FIRST_CSRF_VERSION

    def __repr__(self) -> str:  # never shows the token (DESIGN-NOTES §9)
        token = "set" if self.csrf_token else "unset"
        return f"SimOptions(command={self.command!r}, csrf_token={token}, version={self.version!r})"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"1.2.1-sim"`` → ``(1, 2, 1)``; no leading number counts as the newest."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    if match is None:
        return (sys.maxsize,)
    return tuple(int(part) for part in match.group(0).split("."))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agy-sim",
        description="A simulated agy (Antigravity CLI) for tests and demos.",
        epilog="Every --sim-* switch also reads an AGY_SIM_* environment variable.",
    )
    parser.add_argument("command", nargs="?", choices=("models",), help="list models")
    agy = parser.add_argument_group("agy's flags")
    agy.add_argument("--version", dest="show_version", action="store_true")
    agy.add_argument("--csrf_token", metavar="TOKEN")
    agy.add_argument("--log-file", type=Path, metavar="PATH")
    agy.add_argument("--gemini_dir", type=Path, metavar="DIR")
    agy.add_argument("--conversation", metavar="ID", help="start on this stored conversation")
    agy.add_argument("--model")
    agy.add_argument("--effort")
    agy.add_argument("--mode")
    agy.add_argument("--dangerously-skip-permissions", dest="skip_permissions", action="store_true")
    sim = parser.add_argument_group("simulator switches")
    sim.add_argument("--sim-startup-delay", type=float, metavar="SECONDS")
    sim.add_argument("--sim-waiting-timeout", type=float, metavar="SECONDS")
    sim.add_argument("--sim-token-delay", type=float, metavar="SECONDS")
    sim.add_argument("--sim-long-token-delay", type=float, metavar="SECONDS")
    sim.add_argument("--sim-slow-command-seconds", type=float, metavar="SECONDS")
    sim.add_argument("--sim-faults", type=Path, metavar="PATH", help="JSON fault control file")
    sim.add_argument("--sim-fault", action="append", default=[], metavar="SPEC")
    sim.add_argument("--sim-signed-out", action="store_true", default=None)
    sim.add_argument("--sim-version", metavar="VERSION")
    sim.add_argument(
        "--sim-debug-rpc", action="store_true", default=None, help="serve SimulatorSnapshot"
    )
    sim.add_argument(
        "--sim-http2-only", action="store_true", default=None, help="answer 501 to HTTP/1.1"
    )
    sim.add_argument(
        "--sim-history",
        type=int,
        metavar="STEPS",
        help="finished steps the TUI cascade starts with",
    )
    return parser


def parse_options(
    argv: Sequence[str], environ: Mapping[str, str], *, cwd: Path | None = None
) -> SimOptions:
    """Options from ``argv`` and ``environ``; exits 2 with a usage message when invalid."""
    parser = build_parser()
    args = parser.parse_args(list(argv))

    def number(flag: float | None, env: str) -> float | None:
        if flag is not None:
            value = flag
        elif environ.get(env):
            try:
                value = float(environ[env])
            except ValueError:
                parser.error(f"{env} must be a number of seconds")
        else:
            return None
        if value < 0:
            parser.error(f"{env.lower()} must not be negative")
        return value

    specs = [*filter(None, environ.get("AGY_SIM_FAULT", "").split(";")), *args.sim_fault]
    try:
        rules = tuple(parse_spec(spec) for spec in specs)
    except FaultConfigError as exc:
        parser.error(str(exc))
    faults_file = args.sim_faults or (
        Path(environ["AGY_SIM_FAULTS"]) if environ.get("AGY_SIM_FAULTS") else None
    )
    signed_out = args.sim_signed_out or environ.get("AGY_SIM_SIGNED_OUT", "").lower() in _TRUE
    startup_delay = number(args.sim_startup_delay, "AGY_SIM_STARTUP_DELAY")
    history = args.sim_history
    if history is None and environ.get("AGY_SIM_HISTORY"):
        try:
            history = int(environ["AGY_SIM_HISTORY"])
        except ValueError:
            parser.error("AGY_SIM_HISTORY must be a whole number of steps")
    if history is not None and history < 0:
        parser.error("agy_sim_history must not be negative")
    gemini_dir = args.gemini_dir or Path.home() / ".gemini"
    return SimOptions(
        command=args.command,
        show_version=args.show_version,
        csrf_token=args.csrf_token,
        log_file=args.log_file,
        gemini_dir=gemini_dir,
        keeps_conversations=args.gemini_dir is not None,
        conversation=args.conversation,
        model=args.model,
        effort=args.effort,
        mode=args.mode,
        skip_permissions=args.skip_permissions,
        startup_delay=DEFAULT_STARTUP_DELAY if startup_delay is None else startup_delay,
        waiting_timeout=number(args.sim_waiting_timeout, "AGY_SIM_WAITING_TIMEOUT"),
        token_delay=number(args.sim_token_delay, "AGY_SIM_TOKEN_DELAY"),
        long_token_delay=number(args.sim_long_token_delay, "AGY_SIM_LONG_TOKEN_DELAY"),
        slow_command_seconds=number(args.sim_slow_command_seconds, "AGY_SIM_SLOW_COMMAND_SECONDS"),
        faults_file=faults_file,
        fault_rules=rules,
        signed_out=bool(signed_out),
        debug_rpc=bool(args.sim_debug_rpc or environ.get("AGY_SIM_DEBUG_RPC", "").lower() in _TRUE),
        history_steps=history or 0,
        http2_only=bool(
            args.sim_http2_only or environ.get("AGY_SIM_HTTP2_ONLY", "").lower() in _TRUE
        ),
        version=args.sim_version or environ.get("AGY_SIM_VERSION") or SIM_VERSION,
        workspace=cwd if cwd is not None else Path.cwd(),
    )


def list_models(options: SimOptions) -> int:
    """``agy models``: the catalog's display names; exit 0 means signed in (WIRE.md §1)."""
    if options.signed_out:
        print(SIGN_IN_HINT, file=sys.stderr)  # noqa: T201 - this is the command's output
        return 1
    for entry in ModelCatalog().models:
        if not entry.disabled:
            print(entry.display_name)  # noqa: T201
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
    if argv is None and os.environ.get("AGY_SIM_KEEP_ARGV0", "").lower() not in _TRUE:
        look_like_agy()
    options = parse_options(sys.argv[1:] if argv is None else argv, os.environ)
    if options.show_version:
        print(options.version)  # noqa: T201
        return 0
    if options.command == "models":
        return list_models(options)
    # Imported here so --version and models stay quick and need no server stack.
    from omnigent_agy.simulator.process import run  # noqa: PLC0415

    return run(options)


if __name__ == "__main__":
    sys.exit(main())
