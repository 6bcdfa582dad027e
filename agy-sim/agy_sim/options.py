"""agy-sim's command line: agy's own flags and the simulator's switches, as ``SimOptions``.

    agy-sim [--csrf_token=T] [--log-file PATH] [--gemini_dir DIR] [--conversation ID]
            [--model M] [--effort E] [--mode MODE] [--dangerously-skip-permissions]
            [--sim-... switches]
    agy-sim --version
    agy-sim [--output-format json] models
    agy-sim acp [--sim-... switches]          (the Agent Client Protocol on stdio)
    agy-sim changelog

Switches that exist only in the simulator start with ``--sim-`` and each has an
``AGY_SIM_*`` environment variable (the flag wins), so a launcher that passes agy's own
flags can still configure it. docs/simulator.md lists them all. ``__main__`` runs the command
these options ask for; ``process`` runs the language server with them.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from agy_sim.faults import FaultConfigError, FaultRule, control_file_for, parse_spec
from agy_sim.quota import QUOTA_SCENARIOS
from agy_sim.versions import (
    CHANGELOG,
    CSRF,
    DEFAULT_VERSION,
    SUBAGENT_GATES,
    Version,
    at_least,
    version_tuple,
)
from agy_sim.workspace import spelled_cwd

__all__ = [
    "DEFAULT_STARTUP_DELAY",
    "MODELS_FORMATS",
    "SIM_VERSION",
    "TRUTHY",
    "SimOptions",
    "build_parser",
    "parse_options",
    "version_tuple",
]

SIM_VERSION: Final = DEFAULT_VERSION
# Real agy spends 7-9 s on an account eligibility check before it is ready (docs/wire.md §1).
DEFAULT_STARTUP_DELAY: Final = 8.0

TRUTHY: Final = frozenset({"1", "true", "yes", "on"})
MODELS_FORMATS: Final = ("table", "ids")


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Everything the command line and the ``AGY_SIM_*`` environment asked for."""

    command: str | None = None
    show_version: bool = False
    csrf_token: str | None = None
    log_file: Path | None = None
    gemini_dir: Path = Path("~/.gemini")
    keeps_conversations: bool = False  # only under a --gemini_dir given: never the real one
    ignored_gemini_dir: Path | None = None  # a relative --gemini_dir, which agy ignores
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
    output_format: str = "text"
    models_format: str = "table"
    quota: str = "normal"
    http1_only: bool = False
    frame_log: Path | None = None
    version: str = SIM_VERSION
    workspace: Path = Path()
    refuses_unknown_conversation: bool = False
    """--sim-refuse-unknown-conversation: `--conversation` with an id it does not keep exits 1
    instead of starting a new conversation (what agy does then is not reported)."""
    resolves_links: bool = False
    """--sim-resolve-workspace-links: the hidden-folder test reads the workspace with its links
    resolved, so a dot-free link to a hidden folder is dropped too (an agy that would; §9)."""

    @property
    def sim_version(self) -> Version:
        """The version agy-sim runs as, as numbers (``versions.version_tuple``)."""
        return version_tuple(self.version)

    def at_least(self, feature: Version) -> bool:
        """Whether the agy this runs as has ``feature`` (a first version of ``versions``)."""
        return at_least(self.sim_version, feature)

    @property
    def enforces_csrf(self) -> bool:
        # CSRF arrived in agy 1.2.2 (docs/wire.md §1): an older version enforces no token.
        return self.at_least(CSRF)

    @property
    def subagents_ask(self) -> bool:
        """A sub-agent's own calls wait in its own cascade (``versions.SUBAGENT_GATES``)."""
        return self.at_least(SUBAGENT_GATES)

    def __repr__(self) -> str:  # never shows the token (docs/decisions.md §9)
        token = "set" if self.csrf_token else "unset"
        return f"SimOptions(command={self.command!r}, csrf_token={token}, version={self.version!r})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agy-sim",
        description="A simulated agy (Antigravity CLI) for tests and demos.",
        epilog="Every --sim-* switch also reads an AGY_SIM_* environment variable.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=("models", "changelog", "acp"),
        help=(
            "models: list models; changelog: print the release notes (agy >= 1.3); "
            "acp: the Agent Client Protocol on stdio"
        ),
    )
    _agy_flags(parser.add_argument_group("agy's flags"))
    sim = parser.add_argument_group("simulator switches")
    _sim_timing_and_faults(sim)
    _sim_answers(sim)
    return parser


def _agy_flags(agy: argparse._ArgumentGroup) -> None:
    """The flags agy itself takes."""
    agy.add_argument("--version", dest="show_version", action="store_true")
    agy.add_argument("--csrf_token", metavar="TOKEN")
    agy.add_argument("--log-file", type=Path, metavar="PATH")
    agy.add_argument("--gemini_dir", type=Path, metavar="DIR")
    agy.add_argument("--conversation", metavar="ID", help="start on this stored conversation")
    agy.add_argument("--model")
    agy.add_argument("--effort")
    agy.add_argument("--mode")
    agy.add_argument("--dangerously-skip-permissions", dest="skip_permissions", action="store_true")
    agy.add_argument("--output-format", choices=("text", "json"), help="before the sub-command")


def _sim_timing_and_faults(sim: argparse._ArgumentGroup) -> None:
    """The simulator's pace, its faults, its sign-in and the version it runs as."""
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


def _sim_answers(sim: argparse._ArgumentGroup) -> None:
    """What the simulator answers and how: its listings, quota, protocols, history, folders."""
    sim.add_argument(
        "--sim-models-format",
        choices=MODELS_FORMATS,
        help="what `models` prints: the table (default) or bare ids (builds before August 2026)",
    )
    sim.add_argument(
        "--sim-quota",
        choices=QUOTA_SCENARIOS,
        help="the account's quota: normal, low, exhausted (Gemini), malformed or missing answers",
    )
    sim.add_argument(
        "--sim-http1-only",
        action="store_true",
        default=None,
        help="offer only http/1.1 in TLS (ALPN): an agy the plugin's HTTP/2 cannot reach",
    )
    sim.add_argument(
        "--sim-frame-log",
        type=Path,
        metavar="PATH",
        help="append a line per stream frame sent (its time and answer lengths; benchmarks)",
    )
    sim.add_argument(
        "--sim-history",
        type=int,
        metavar="STEPS",
        help="finished steps the TUI cascade starts with",
    )
    sim.add_argument(
        "--sim-refuse-unknown-conversation",
        action="store_true",
        default=None,
        help="exit 1 when --conversation names a conversation not kept, not start a new one",
    )
    sim.add_argument(
        "--sim-resolve-workspace-links",
        action="store_true",
        default=None,
        help="drop a workspace whose links resolve into a hidden folder, dot-free link or not",
    )


class _Switches:
    """A ``--sim-*`` switch's value, else its ``AGY_SIM_*`` variable's, checked: an invalid
    one exits 2 with a usage message (``parser.error``)."""

    def __init__(self, parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
        self._parser = parser
        self._environ = environ

    def on(self, flag: bool | None, env: str) -> bool:
        return bool(flag or self._environ.get(env, "").lower() in TRUTHY)

    def choice(self, flag: str | None, env: str, choices: Sequence[str], default: str) -> str:
        value = flag or self._environ.get(env) or default
        if value not in choices:
            self._parser.error(f"{env} must be one of {', '.join(choices)}")
        return value

    def seconds(self, flag: float | None, env: str) -> float | None:
        if flag is not None:
            value = flag
        elif self._environ.get(env):
            try:
                value = float(self._environ[env])
            except ValueError:
                self._parser.error(f"{env} must be a number of seconds")
        else:
            return None
        if value < 0:
            self._parser.error(f"{env.lower()} must not be negative")
        return value

    def steps(self, flag: int | None, env: str) -> int | None:
        value = flag
        if value is None and self._environ.get(env):
            try:
                value = int(self._environ[env])
            except ValueError:
                self._parser.error(f"{env} must be a whole number of steps")
        if value is not None and value < 0:
            self._parser.error(f"{env.lower()} must not be negative")
        return value

    def fault_rules(self, flags: Sequence[str]) -> tuple[FaultRule, ...]:
        specs = [*filter(None, self._environ.get("AGY_SIM_FAULT", "").split(";")), *flags]
        try:
            return tuple(parse_spec(spec) for spec in specs)
        except FaultConfigError as exc:
            self._parser.error(str(exc))

    def path(self, flag: Path | None, env: str) -> Path | None:
        return flag or _path(self._environ.get(env))


def parse_options(
    argv: Sequence[str], environ: Mapping[str, str], *, cwd: Path | None = None
) -> SimOptions:
    """Options from ``argv`` and ``environ``; exits 2 with a usage message when invalid."""
    parser = build_parser()
    args = parser.parse_args(list(argv))
    version = _checked_command(parser, args, argv, environ)
    switch = _Switches(parser, environ)
    quota = switch.choice(args.sim_quota, "AGY_SIM_QUOTA", QUOTA_SCENARIOS, "normal")
    models_format = switch.choice(
        args.sim_models_format, "AGY_SIM_MODELS_FORMAT", MODELS_FORMATS, "table"
    )
    rules = switch.fault_rules(args.sim_fault)
    faults_path = switch.path(args.sim_faults, "AGY_SIM_FAULTS")
    startup_delay = switch.seconds(args.sim_startup_delay, "AGY_SIM_STARTUP_DELAY")
    history = switch.steps(args.sim_history, "AGY_SIM_HISTORY")
    gemini_dir, given, ignored = _gemini_dir(args.gemini_dir)
    return SimOptions(
        command=args.command,
        show_version=args.show_version,
        csrf_token=args.csrf_token,
        log_file=args.log_file,
        gemini_dir=gemini_dir,
        keeps_conversations=given is not None,
        ignored_gemini_dir=ignored,
        conversation=args.conversation,
        model=args.model,
        effort=args.effort,
        mode=args.mode,
        skip_permissions=args.skip_permissions,
        startup_delay=DEFAULT_STARTUP_DELAY if startup_delay is None else startup_delay,
        waiting_timeout=switch.seconds(args.sim_waiting_timeout, "AGY_SIM_WAITING_TIMEOUT"),
        token_delay=switch.seconds(args.sim_token_delay, "AGY_SIM_TOKEN_DELAY"),
        long_token_delay=switch.seconds(args.sim_long_token_delay, "AGY_SIM_LONG_TOKEN_DELAY"),
        slow_command_seconds=switch.seconds(
            args.sim_slow_command_seconds, "AGY_SIM_SLOW_COMMAND_SECONDS"
        ),
        faults_file=_faults_file(faults_path, gemini_dir),
        fault_rules=rules,
        signed_out=switch.on(args.sim_signed_out, "AGY_SIM_SIGNED_OUT"),
        debug_rpc=switch.on(args.sim_debug_rpc, "AGY_SIM_DEBUG_RPC"),
        history_steps=history or 0,
        http2_only=switch.on(args.sim_http2_only, "AGY_SIM_HTTP2_ONLY"),
        http1_only=switch.on(args.sim_http1_only, "AGY_SIM_HTTP1_ONLY"),
        frame_log=switch.path(args.sim_frame_log, "AGY_SIM_FRAME_LOG"),
        version=version,
        output_format=args.output_format or "text",
        models_format=models_format,
        quota=quota,
        # As spelled (PWD, when it names the working folder): agy tests the spelling (§9).
        workspace=cwd if cwd is not None else spelled_cwd(environ),
        refuses_unknown_conversation=switch.on(
            args.sim_refuse_unknown_conversation, "AGY_SIM_REFUSE_UNKNOWN_CONVERSATION"
        ),
        resolves_links=switch.on(
            args.sim_resolve_workspace_links, "AGY_SIM_RESOLVE_WORKSPACE_LINKS"
        ),
    )


def _checked_command(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    argv: Sequence[str],
    environ: Mapping[str, str],
) -> str:
    """The version agy-sim runs as, once the command line is one that version takes."""
    if args.output_format is not None and _after_command(argv, "--output-format"):
        # agy reads it only ahead of the sub-command (docs/wire.md §9); what it does with one
        # after is not reported: refusing it is a guess that keeps a misplaced flag visible.
        parser.error(
            "--output-format must come before the sub-command (agy --output-format json models)"
        )
    version: str = args.sim_version or environ.get("AGY_SIM_VERSION") or SIM_VERSION
    if args.command == "changelog" and not at_least(version, CHANGELOG):
        # An agy before the command answers it as any unknown word (a guess, versions.py).
        parser.error("argument command: invalid choice: 'changelog' (choose from 'models')")
    return version


def _gemini_dir(flag: Path | None) -> tuple[Path, Path | None, Path | None]:
    """The gemini dir agy uses, the one given (None: the default), the one it ignored."""
    # agy ignores a relative --gemini_dir and falls back to its default (docs/wire.md §9).
    ignored = flag if flag and not flag.is_absolute() else None
    given = None if ignored is not None else flag
    return given or Path.home() / ".gemini", given, ignored


def _faults_file(faults_path: Path | None, gemini_dir: Path) -> Path | None:
    """A folder of control files: this agy follows its own (one per --gemini_dir)."""
    if faults_path is not None and faults_path.is_dir():
        return control_file_for(faults_path, gemini_dir)
    return faults_path


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _after_command(argv: Sequence[str], flag: str) -> bool:
    """Whether ``flag`` comes after the sub-command on the command line."""
    words = list(argv)
    if "models" not in words:
        return False
    at = words.index("models")
    return any(w == flag or w.startswith(f"{flag}=") for w in words[at + 1 :])
