"""The onboarding checks, one function each: ``omnigent-agy doctor`` and the pre-flight.

Each check returns a :class:`DoctorLine`. They are public one by one because the
executor's pre-flight (``omnigent_agy.doctor.checkup.preflight``) runs some of the same
checks and turns the first failure into a
:class:`~omnigent_agy.errors.Failure` (``DoctorLine.code`` names it), so the
doctor and the error card never disagree.

Every check tolerates a missing, broken or hanging agy: subprocesses run without a terminal,
with a timeout, in their own process group, which is killed whole on timeout. agy's output
is never shown verbatim: ``agy models`` is only counted (in any of its forms,
:mod:`~omnigent_agy.models.agy_models`), and any line quoted from a failing
program is scrubbed (``errors.scrub``), so no token reaches a terminal or a log.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from omnigent_agy.agy.trampoline import TMUX_CLIENT_ENV
from omnigent_agy.config.agy_versions import (
    TESTED_TEXT,
    Support,
    parse_version,
    support,
    untested_warning,
)
from omnigent_agy.config.executable import installer_bin, named_executable, resolve_executable
from omnigent_agy.config.settings import ENV_ENABLED, AgyConfig, load_config
from omnigent_agy.constants import KEY, MIN_AGY_VERSION
from omnigent_agy.errors import (
    AGY_LAUNCH_FAILED,
    AGY_TMUX_FAILED,
    AgyNotFoundError,
    ConfigError,
    Failure,
    scrub,
    signed_out_failure,
    too_old_failure,
)
from omnigent_agy.models.agy_models import ModelsListing, parse_models_output

__all__ = [
    "AgyVersionCheck",
    "DoctorLine",
    "Status",
    "check_agy_on_path",
    "check_agy_version",
    "check_enabled",
    "check_python_and_omnigent",
    "check_signed_in",
    "check_tmux",
    "judge_runtime",
    "parse_version",
    "read_agy_version",
]

OMNIGENT_RANGE = ((0, 19), (0, 20))  # pyproject: omnigent>=0.19,<0.20
MIN_PYTHON = (3, 12)
MIN_TMUX = (3, 2, "a")  # libtmux's TMUX_MIN_VERSION
VERSION_TIMEOUT = 15.0
MODELS_TIMEOUT = 30.0  # `agy models` asks Google for the account's models
_KILL_GRACE = 5.0
_TMUX_VERSION = re.compile(r"(\d+)\.(\d+)([a-z]?)")


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class DoctorLine:
    """One line of the doctor's report. ``code`` is the failure code a FAIL stops a turn with;
    ``details`` are more lines shown under it (the quota's model groups)."""

    name: str
    status: Status
    summary: str
    remediation: str | None = None
    code: str | None = None
    details: tuple[str, ...] = ()


def _from_failure(name: str, failure: Failure) -> DoctorLine:
    return DoctorLine(name, Status.FAIL, failure.message, failure.remediation, failure.code)


# -- subprocesses ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ran:
    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str


def _run(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> _Ran:
    """Run ``argv`` without a terminal; raises OSError when it cannot be executed."""
    process = subprocess.Popen(  # noqa: S603 - argv is the configured agy or tmux
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=None if env is None else dict(env),
        start_new_session=True,  # its own group, so a hang is killed with its children
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        try:
            process.communicate(timeout=_KILL_GRACE)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds a pipe
            process.kill()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            process.wait()
        return _Ran(None, "", "")
    return _Ran(process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(text: str) -> str:
    """The last non-empty line of a program's output, scrubbed and short."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = scrub(lines[-1]) if lines else ""
    return last if len(last) <= 200 else last[:199] + "…"


def _exited(what: str, ran: _Ran) -> str:
    detail = _tail(ran.stderr) or _tail(ran.stdout)
    return f"`{what}` exited with status {ran.returncode}" + (f": {detail}" if detail else "")


# -- agy -------------------------------------------------------------------------------------


def _executable_source(config: AgyConfig, env: Mapping[str, str], executable: Path) -> str:
    source, value = named_executable(config, env)
    if os.sep not in value and executable.parent == installer_bin(env):
        return f"{source}: not on PATH, found where agy's installer puts it"
    return source


def check_agy_on_path(config: AgyConfig, env: Mapping[str, str] | None = None) -> DoctorLine:
    """The agy executable resolves (``OMNIGENT_AGY_CLI_PATH``, config, PATH)."""
    env = os.environ if env is None else env
    try:
        executable = resolve_executable(config, env)
    except AgyNotFoundError as exc:
        return DoctorLine(
            "agy executable",
            Status.FAIL,
            str(exc.args[0]).removesuffix(f". {exc.remediation}"),
            exc.remediation,
            exc.code,
        )
    return DoctorLine(
        "agy executable",
        Status.OK,
        f"{executable} (from {_executable_source(config, env, executable)})",
    )


@dataclass(frozen=True, slots=True)
class AgyVersionCheck:
    """The doctor's line for ``agy --version`` and the version it read (``shown``: the line
    agy printed, scrubbed; None when none could be read)."""

    result: DoctorLine
    shown: str | None = None
    number: tuple[int, int, int] | None = None


def read_agy_version(
    executable: Path, *, timeout: float = VERSION_TIMEOUT, env: Mapping[str, str] | None = None
) -> AgyVersionCheck:
    """``agy --version``, judged against the versions the plugin supports (``agy_versions``):
    older than ``MIN_AGY_VERSION`` fails, outside the tested range warns, unreadable warns."""
    name, broken = "agy version", None
    try:
        ran = _run([str(executable), "--version"], timeout=timeout, env=env)
    except OSError as exc:
        ran, broken = _Ran(1, "", ""), f"cannot run {executable}: {exc}"
    else:
        if ran.returncode is None:
            broken = f"`agy --version` did not finish within {timeout:g} s"
        elif ran.returncode != 0:
            broken = _exited("agy --version", ran)
    if broken is not None:
        return AgyVersionCheck(_from_failure(name, AGY_LAUNCH_FAILED.failure(broken)))
    # The first line that carries a version (a build may add commit and date lines).
    lines = [_tail(line) for line in (ran.stdout + "\n" + ran.stderr).splitlines()]
    shown = next((line for line in lines if parse_version(line)), None) or _tail(ran.stdout)
    version = parse_version(shown)
    if version is None:
        unread = DoctorLine(
            name,
            Status.WARN,
            f"cannot read a version in {shown!r}",
            f"omnigent-agy needs agy >= {'.'.join(map(str, MIN_AGY_VERSION))}; check "
            "`agy --version` by hand",
        )
        return AgyVersionCheck(unread)
    verdict = support(version)
    if verdict is Support.TOO_OLD:
        return AgyVersionCheck(_from_failure(name, too_old_failure(shown)), shown, version)
    if verdict is Support.UNTESTED:
        summary, remedy = untested_warning(shown)
        return AgyVersionCheck(DoctorLine(name, Status.WARN, summary, remedy), shown, version)
    tested = DoctorLine(name, Status.OK, f"{shown} (tested: {TESTED_TEXT})")
    return AgyVersionCheck(tested, shown, version)


def check_agy_version(
    executable: Path, *, timeout: float = VERSION_TIMEOUT, env: Mapping[str, str] | None = None
) -> DoctorLine:
    """The doctor's line of :func:`read_agy_version`."""
    return read_agy_version(executable, timeout=timeout, env=env).result


def check_signed_in(
    executable: Path, *, timeout: float = MODELS_TIMEOUT, env: Mapping[str, str] | None = None
) -> DoctorLine:
    """``agy models`` exits 0 only when agy is signed in (docs/wire.md §1)."""
    name = "agy signed in"
    try:
        ran = _run([str(executable), "models"], timeout=timeout, env=env)
    except OSError as exc:
        return _from_failure(name, AGY_LAUNCH_FAILED.failure(f"cannot run {executable}: {exc}"))
    if ran.returncode is None:
        # Not proof of anything (agy may be slow to reach Google): a warning, not a stop.
        return DoctorLine(
            name,
            Status.WARN,
            f"`agy models` did not answer within {timeout:g} s",
            "Run `agy models` in a terminal; if it asks you to sign in, run `agy` and sign in",
        )
    if ran.returncode != 0:
        return _from_failure(name, signed_out_failure(_exited("agy models", ran)))
    return _listed_models(name, parse_models_output(ran.stdout))


def _listed_models(name: str, listing: ModelsListing) -> DoctorLine:
    """What a successful ``agy models`` listed, in any of its forms (docs/wire.md §9)."""
    count = len(listing.models)
    unread = (
        f"; {len(listing.unread)} line(s) of its output not understood" if listing.unread else ""
    )
    if not count and not listing.unread:
        return DoctorLine(
            name,
            Status.WARN,
            "`agy models` succeeded but listed no model",
            "Run `agy models` in a terminal: an account without models cannot run a turn",
        )
    return DoctorLine(name, Status.OK, f"signed in; agy offers {count} models{unread}")


# -- the rest of the machine -----------------------------------------------------------------


def _tmux_version(text: str) -> tuple[int, int, str] | None:
    match = _TMUX_VERSION.search(text)
    return (int(match[1]), int(match[2]), match[3]) if match else None


def check_tmux(*, timeout: float = VERSION_TIMEOUT) -> DoctorLine:
    """tmux is installed and new enough for libtmux; needs no tmux server or ``$TMUX``."""
    name = "tmux"
    minimum = f"{MIN_TMUX[0]}.{MIN_TMUX[1]}{MIN_TMUX[2]}"
    remedy = f"Install tmux {minimum} or newer (`apt install tmux`, `brew install tmux`)"
    tmux = shutil.which("tmux")
    if tmux is None:
        return DoctorLine(name, Status.FAIL, "tmux is not on PATH", remedy, AGY_TMUX_FAILED.code)
    env = {k: v for k, v in os.environ.items() if k not in TMUX_CLIENT_ENV}
    try:
        ran = _run([tmux, "-V"], timeout=timeout, env=env)
    except OSError as exc:
        return DoctorLine(
            name, Status.FAIL, f"cannot run {tmux}: {exc}", remedy, AGY_TMUX_FAILED.code
        )
    shown = _tail(ran.stdout) or _tail(ran.stderr)
    if ran.returncode != 0:
        return DoctorLine(
            name,
            Status.FAIL,
            _exited("tmux -V", ran)
            if ran.returncode is not None
            else f"`tmux -V` did not finish within {timeout:g} s",
            remedy,
            AGY_TMUX_FAILED.code,
        )
    version = _tmux_version(shown)
    if version is None:
        return DoctorLine(name, Status.WARN, f"{tmux}: cannot read a version in {shown!r}", remedy)
    if version < MIN_TMUX:
        return DoctorLine(
            name, Status.FAIL, f"{shown} is older than {minimum}", remedy, AGY_TMUX_FAILED.code
        )
    return DoctorLine(name, Status.OK, f"{shown} ({tmux})")


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def judge_runtime(python: Sequence[int], omnigent_version: str | None) -> DoctorLine:
    """The Python and omnigent versions against what this package needs."""
    name = "python and omnigent"
    shown_python = ".".join(map(str, python[:3]))
    low, high = OMNIGENT_RANGE
    wanted = f"omnigent>={low[0]}.{low[1]},<{high[0]}.{high[1]}"
    fix = f"Install it in the same environment: `pip install '{wanted}'`"
    if tuple(python[:2]) < MIN_PYTHON:
        return DoctorLine(
            name,
            Status.FAIL,
            f"Python {shown_python} is older than 3.12",
            "Reinstall omnigent-agy with Python 3.12 or newer",
        )
    if omnigent_version is None:
        return DoctorLine(
            name, Status.FAIL, f"Python {shown_python}; omnigent is not installed", fix
        )
    if not low <= _numbers(omnigent_version)[:2] < high:
        return DoctorLine(
            name,
            Status.FAIL,
            f"Python {shown_python}; omnigent {omnigent_version} is not {wanted}",
            fix,
        )
    return DoctorLine(name, Status.OK, f"Python {shown_python}, omnigent {omnigent_version}")


def check_python_and_omnigent() -> DoctorLine:
    """This interpreter and the installed omnigent distribution."""
    try:
        omnigent_version: str | None = importlib.metadata.version("omnigent")
    except importlib.metadata.PackageNotFoundError:
        omnigent_version = None
    return judge_runtime(sys.version_info[:3], omnigent_version)


def check_enabled(config: AgyConfig, env: Mapping[str, str] | None = None) -> DoctorLine:
    """The enable flag and where it comes from (the environment wins over the file)."""
    env = os.environ if env is None else env
    name = "enabled"
    enable = "Run `omnigent-agy enable`, then restart `omnigent server` and `omnigent host`"
    if config.enabled_source == ENV_ENABLED:
        word = "enabled" if config.enabled else "disabled"
        summary = f"{word} by {ENV_ENABLED}={env.get(ENV_ENABLED, '').strip()}"
        if not config.enabled:
            return DoctorLine(name, Status.FAIL, summary, f"Unset {ENV_ENABLED} or set it to 1")
        try:
            in_file = load_config(config.path, env={}).enabled
        except ConfigError:
            in_file = False
        if not in_file:
            # omnigent processes started from another shell will not see this variable.
            return DoctorLine(
                name, Status.WARN, f"{summary} only; {config.path} does not enable it", enable
            )
        return DoctorLine(name, Status.OK, f"{summary} (and in {config.path})")
    if config.enabled:
        return DoctorLine(name, Status.OK, f"enabled by {KEY}.enabled in {config.path}")
    where = "is false" if config.enabled_source == "file" else "is not set"
    return DoctorLine(
        name, Status.FAIL, f"disabled: {KEY}.enabled {where} in {config.path}", enable
    )
