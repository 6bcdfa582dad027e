"""The watch a harness process leaves for when it ends: omnigent deleting a session removes the
conversation's deletion marker (``retention``) only after it ended the harness process, and
tells the harness nothing (docs/host.md, "Deleting a session"). Armed at the first turn, it
costs a blocked shell until then; once the marker goes, ``python -m`` this module removes the
conversation's state (``retention.forget``) as soon as no harness holds it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import psutil

from omnigent_agy.agy.retention import Removal, deleted_marker, forget
from omnigent_agy.agy.terminal import process_running

__all__ = ["WATCH_AFTER_EXIT", "WATCH_LOG", "arm_deletion_watch", "main", "watch_for_deletion"]

logger = logging.getLogger(__name__)

#: How long after a harness process ends the marker is watched: the host removes it within
#: seconds of ending that process when the session is deleted.
WATCH_AFTER_EXIT: Final = 120.0
_WATCH_POLL: Final = 0.25


def watch_for_deletion(
    state_dir: Path, within: float = WATCH_AFTER_EXIT, *, host_pid: int | None = None
) -> Removal | None:
    """Remove the conversation's state if its deletion marker goes within ``within`` seconds,
    as soon as no live harness holds the conversation any more. With ``host_pid`` (the process
    that ran the harness), the watch ends once that process is gone, after one more look at the
    marker (a host that stopped deletes nothing more; one that deleted removed the marker
    before it went) — unless the marker is gone already: then only a harness still holding
    the conversation is waited for, up to ``within``."""
    deadline = time.monotonic() + within
    host = _process(host_pid)
    host_gone = host_pid is not None and host is None
    refused: str | None = None  # the last reason logged, so a wait logs once, not per look
    while True:
        # The host's state is read before the marker is looked at, so a marker it removed
        # before it went is seen in this round.
        if not state_dir.is_dir():
            return None  # removed by someone else meanwhile
        if deleted_marker(state_dir) is not None:
            done = forget(state_dir, "omnigent deleted the conversation")
            if done.refused is None:
                return done
            if done.refused != refused:
                logger.info("not removing %s yet: %s", done.key, done.refused)
            refused = done.refused
        if (host_gone and refused is None) or time.monotonic() >= deadline:
            return None
        time.sleep(_WATCH_POLL)
        host_gone = host is not None and not process_running(host)


def _process(pid: int | None) -> psutil.Process | None:
    if pid is None:
        return None
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


# The waiter: a POSIX shell in a session of its own, started in the background by a shell that
# ends at once, so it is nobody's child by the time the host ends the harness's process tree
# (a SIGTERM to the tree, a SIGKILL after 5 s). It blocks reading a pipe whose one writer is
# the harness process, which never writes: the kernel closes it when that process ends however
# it ends (a kill before its executor's close_session ran too), and the read returns. Then it
# looks at the marker once a second for WATCH_AFTER_EXIT seconds, ending early when the
# state is gone or the host is gone (after one more look); only a marker gone starts Python,
# which checks everything again and removes. Until then it costs no CPU and no interpreter.
_WAITER: Final = """
exec 3<&0 </dev/null
{
    read -r unused <&3
    exec 3<&-
    state=$1 marker=$2 host=$3 within=$4
    shift 4
    waited=0
    while [ -d "$state" ]; do
        [ -e "$marker" ] || exec "$@"
        if [ "$host" -gt 1 ] && ! kill -0 "$host" 2>/dev/null; then
            [ -e "$marker" ] || exec "$@"
            exit 0
        fi
        [ "$waited" -lt "$within" ] || exit 0
        sleep 1
        waited=$((waited + 1))
    done
} &
"""

# This process's write ends, one per conversation armed (kept open until it ends).
_ARMED: dict[Path, int] = {}
_ARMED_LOCK = threading.Lock()


def arm_deletion_watch(state_dir: Path, marker: Path, within: float = WATCH_AFTER_EXIT) -> None:
    """Once per process and conversation: when this process ends, however it ends, watch
    for ``marker`` to go for ``within`` seconds and remove the conversation's state if it does
    (``watch_for_deletion``). omnigent tells a harness nothing of a deletion and removes the
    marker only after it ended the harness process, and it may end it before its
    ``close_session`` runs (a 5 s grace, then SIGKILL), so the watch is armed beforehand."""
    key = state_dir.resolve()
    with _ARMED_LOCK:
        if key in _ARMED:
            return
        read_end, write_end = os.pipe()  # neither is inherited by other children
        try:
            host = os.getppid()  # the runner or omnigent's zygote that forked this process
            # -I: neither the workspace (this process's folder) nor PYTHONPATH shadows the
            # package (a repository's own omnigent_agy/ would run); the waiter runs from / so
            # it holds no folder busy.
            python = [sys.executable, "-I", "-m", __name__, str(key), "--within", str(within)]
            if host > 1:
                python += ["--host-pid", str(host)]
            seconds = str(max(1, math.ceil(within)))
            command = ["/bin/sh", "-c", _WAITER, "sh", str(key), str(marker), str(host), seconds]
            with _watch_log(key.parent) as log:
                process = subprocess.Popen(  # noqa: S603 - our own script and interpreter
                    [*command, *python],
                    stdin=read_end,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                    close_fds=True,
                    cwd="/",
                )
            process.wait()  # the shell returns at once; the waiter goes on alone
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        _ARMED[key] = write_end


#: The deletion watches' log, beside the conversations' folders: what they removed, or why not.
WATCH_LOG: Final = "deletion-watch.log"
_WATCH_LOG_LIMIT: Final = 256 * 1024


@contextlib.contextmanager
def _watch_log(base: Path) -> Iterator[int]:
    path = base / WATCH_LOG
    with contextlib.suppress(OSError):
        if path.stat().st_size > _WATCH_LOG_LIMIT:
            os.replace(path, path.with_suffix(".log.old"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        yield fd
    finally:
        os.close(fd)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m omnigent_agy.agy.deletion_watch STATE_DIR [--within SECONDS] [--host-pid PID]``:
    the watch a waiter starts once the marker went (``arm_deletion_watch``)."""
    parser = argparse.ArgumentParser(prog="python -m omnigent_agy.agy.deletion_watch")
    parser.add_argument("state_dir", type=Path)
    parser.add_argument("--within", type=float, default=WATCH_AFTER_EXIT)
    parser.add_argument("--host-pid", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s omnigent-agy deletion watch: %(message)s"
    )
    try:
        done = watch_for_deletion(args.state_dir, args.within, host_pid=args.host_pid)
    except Exception:
        logger.exception("watching %s failed", args.state_dir)
        return 1
    if done is None and args.state_dir.is_dir() and deleted_marker(args.state_dir) is not None:
        logger.warning(
            "%s: omnigent deleted the conversation, but its state stays (why: the line "
            "above); the next sweep tries again",
            args.state_dir.name,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
