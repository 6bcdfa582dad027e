"""Run agy-sim (or the discovery tests' fake agy, or a stranger's TLS server) as another user.

    <venv>/bin/agy tests/_as_user.py UID GID HOME {sim|fake|stranger} ARGS...

Started by root (``foreign.py``) with ``argv[0]`` = the venv's ``bin/agy`` (as agy-sim's own
re-exec does), so the process table shows what agy's does. The interpreter, its standard
library and the venv may sit where the other user cannot read them (``/root``), so this
imports everything the program needs first, then drops to ``UID``/``GID`` for good (real,
effective and saved ids, no supplementary groups) and only then runs it: every socket it
binds, every file it writes and the process itself belong to the other user.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path

from agy_sim.certs import make_self_signed_cert

# Modules the programs import lazily, loaded while the files are still readable.
_PRELOAD = (
    "agy_sim.__main__",
    "agy_sim.process",
    "encodings.idna",
    "encodings.ascii",
    "encodings.latin_1",
    "asyncio.unix_events",
    "concurrent.futures.thread",
    "email.parser",
    "email.feedparser",
    "http.cookies",
    "json.decoder",
    "logging.handlers",
    "secrets",
    "shlex",
    "ssl",
    "tempfile",
    "uuid",
)


# Test helpers run as the other user, by program name.
_HELPERS = {"fake": "_fake_agy", "stranger": "_stranger_tls"}


def _drop(uid: int, gid: int, home: Path) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    os.environ["HOME"] = str(home)
    os.environ["USER"] = os.environ["LOGNAME"] = str(uid)
    os.chdir(home)


def main() -> int:
    uid, gid, home, program, *args = sys.argv[1:]
    tests = Path(__file__).resolve().parent
    sys.path.insert(0, str(tests))
    helper = _HELPERS.get(program)
    for name in (*_PRELOAD, helper) if helper else _PRELOAD:
        importlib.import_module(name)
    # cryptography loads parts of itself on first use (its backends): make one certificate
    # now, as every program here does once it runs, so that they are loaded too. Where the
    # venv cannot be read by the other user (a checkout in a 0700 folder, as `mktemp -d`
    # makes) they could not be loaded after the drop.
    with tempfile.TemporaryDirectory() as scratch:
        make_self_signed_cert(Path(scratch))
    _drop(int(uid), int(gid), Path(home))
    if helper:
        sys.argv = [sys.argv[0], *args]
        return int(sys.modules[helper].main())
    simulator = sys.modules["agy_sim.__main__"]
    return int(simulator.main(args))


if __name__ == "__main__":
    sys.exit(main())
