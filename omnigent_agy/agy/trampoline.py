"""The trampoline that starts agy in its tmux pane without its argv in tmux's command lines.

The command line of agy holds its CSRF token (``--csrf_token=…``, docs/wire.md §1). To keep it
out of tmux's command lines (and libtmux's debug log, which prints every tmux command), the
pane (`terminal.TerminalHost.start`) does not get the command directly: it runs
``python -m omnigent_agy.agy.trampoline LAUNCH_FILE``, which reads argv, cwd and environment
from a 0600 file written by `write_launch_file`, deletes the file and ``exec``s agy — so the
pane's pid *is* agy's pid.

The pane starts in the launch file's private folder, never in the workspace: tmux expands
formats (``#(command)``) in a start directory, and a workspace on the module path could stand
in for this module. The trampoline changes into the workspace itself (``os.chdir``: the path is
data), and runs isolated (``python -I``: no ``PYTHONPATH``, no user site, no current folder
on the module path). A folder it cannot enter is said as such (:data:`ENTER_FAILED`, the
``agy_workspace_unreachable`` code), never as a missing program.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from omnigent_agy.errors import AGY_WORKSPACE_UNREACHABLE

__all__ = [
    "ENTER_FAILED",
    "ENTER_FAILED_CODE",
    "PANE_ENV",
    "TMUX_CLIENT_ENV",
    "LaunchFile",
    "could_not_enter",
    "entry_failure",
    "main",
    "trampoline_argv",
    "write_launch_file",
]

_MODULE = "omnigent_agy.agy.trampoline"
_EXEC_FAILED = 127
#: The trampoline's exit status when it could not change into the folder agy works in.
ENTER_FAILED = 126
#: The failure code it prints then (the catalogue's), first on its line.
ENTER_FAILED_CODE = AGY_WORKSPACE_UNREACHABLE.code
#: What tmux sets in the processes of its panes: a process started with them takes itself for
#: one inside that tmux client (agy's, or the harness's own terminal).
TMUX_CLIENT_ENV = frozenset({"TMUX", "TMUX_PANE"})
# What tmux itself gives the pane, kept when the launch file's environment replaces the
# server's: the terminal agy draws on and the pane it is in.
PANE_ENV = TMUX_CLIENT_ENV | {"TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORTERM"}


@dataclass(frozen=True, slots=True)
class LaunchFile:
    """A launch file written for the trampoline; ``remove_dir``: the folder is its own."""

    path: Path
    remove_dir: bool


def write_launch_file(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    unset_env: Sequence[str] = (),
    replace_env: bool = False,
    private_dir: Path | None,
) -> LaunchFile:
    """The launch file for ``argv``: 0600, in ``private_dir``, else in a folder of its own.
    ``env`` is laid over the tmux server's environment, less the names in ``unset_env``; with
    ``replace_env`` it is the whole environment, but for what tmux gives the pane
    (:data:`PANE_ENV`): the server keeps the environment of whoever started it, maybe long
    ago and configured otherwise."""
    remove_dir = private_dir is None
    directory = (
        Path(tempfile.mkdtemp(prefix="omnigent-agy-")) if private_dir is None else private_dir
    )
    fd, name = tempfile.mkstemp(prefix=".launch-", suffix=".json", dir=directory)
    # mkstemp creates the file 0600: it holds agy's argv, CSRF token included.
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "argv": list(argv),
                "cwd": str(cwd),
                "env": dict(env),
                "unset": list(unset_env),
                "replace": replace_env,
                "remove_dir": remove_dir,
            },
            handle,
        )
    return LaunchFile(Path(name), remove_dir)


def trampoline_argv(launch_file: Path) -> list[str]:
    """The pane's command: this interpreter, isolated (``-I``: ``PYTHONPATH``, the user
    site and the current folder stay off the module path, whatever they hold), running
    this module on ``launch_file``."""
    return [sys.executable, "-I", "-m", _MODULE, str(launch_file)]


def could_not_enter(screen: Sequence[str]) -> str | None:
    """Why a pane's trampoline could not enter agy's folder (``No such file or directory``),
    read from its line on the pane's ``screen``; None when that is not why the pane ended
    (the exit status alone could be agy's own)."""
    marker = f"omnigent-agy [{ENTER_FAILED_CODE}]"
    line = next((line for line in screen if line.startswith(marker)), None)
    return None if line is None else line.rpartition(": ")[2].strip()


def entry_failure(folder: object, exc: BaseException) -> str:
    """The line the trampoline prints when it cannot enter ``folder``."""
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"omnigent-agy [{ENTER_FAILED_CODE}]: could not enter the folder {folder!r}: {why}"


def _exec_launch_file(path: Path) -> int:
    """The trampoline: read the launch file, delete it, exec the command."""
    with path.open(encoding="utf-8") as handle:
        spec = json.load(handle)
    path.unlink()
    if spec.get("remove_dir"):
        with contextlib.suppress(OSError):
            path.parent.rmdir()
    argv: list[str] = spec["argv"]
    inherited = dict(os.environ)
    if spec.get("replace"):
        inherited = {name: value for name, value in inherited.items() if name in PANE_ENV}
    env = {**inherited, **spec["env"]}
    for name in spec.get("unset", ()):
        env.pop(name, None)
    folder = spec["cwd"]
    try:
        # Data, never a shell or a format: the folder's name may hold anything.
        os.chdir(folder)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        print(entry_failure(folder, exc), file=sys.stderr)  # noqa: T201
        return ENTER_FAILED
    try:
        os.execvpe(argv[0], argv, env)  # noqa: S606 - argv is ours, never a shell string
    except OSError as exc:
        # Never print argv: it holds the CSRF token.
        print(f"omnigent-agy: cannot start {argv[0]!r}: {exc.strerror}", file=sys.stderr)  # noqa: T201
    return _EXEC_FAILED


def main(args: Sequence[str] | None = None) -> int:
    """``python -m omnigent_agy.agy.trampoline LAUNCH_FILE``."""
    argv = list(sys.argv[1:] if args is None else args)
    if len(argv) != 1:
        print("usage: python -m omnigent_agy.agy.trampoline LAUNCH_FILE", file=sys.stderr)  # noqa: T201
        return 2
    return _exec_launch_file(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main())
