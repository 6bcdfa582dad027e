"""A real process with real listening sockets, for discovery tests.

    python tests/_listener_proc.py [--listen N] [--host H] [--child-listen N]
                                   [--log FILE] [--announce-port P] [--announce-pid PID]
                                   [--reuse-port P] [--become-uid UID]

Binds N TCP listeners on H (default 127.0.0.1), optionally starts a child (this script
again) with its own listeners, optionally writes agy's two log lines naming a port, then
prints one JSON line ``{"pid", "ports", "child_pid", "child_ports"}`` and holds everything
open until its stdin closes (or SIGTERM). The child is stopped with it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path


def _bind(host: str, port: int = 0, *, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen()
    return sock


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, default=1)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--child-listen", type=int, default=0)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--announce-port", type=int)
    parser.add_argument("--announce-pid", type=int)
    parser.add_argument("--reuse-port", type=int, help="also listen on this port (SO_REUSEPORT)")
    parser.add_argument("--become-uid", type=int, help="drop to this uid once listening (root)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    sockets = [_bind(args.host) for _ in range(args.listen)]
    if args.reuse_port is not None:
        sockets.append(_bind(args.host, args.reuse_port, reuse_port=True))
    child = None
    child_info: dict[str, object] = {"pid": None, "ports": []}
    if args.child_listen:
        child = subprocess.Popen(
            [sys.executable, __file__, "--listen", str(args.child_listen), "--host", args.host],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child_info = json.loads(child.stdout.readline())
    if args.log is not None:
        pid = args.announce_pid if args.announce_pid is not None else os.getpid()
        port = args.announce_port if args.announce_port is not None else sockets[0].getsockname()[1]
        with args.log.open("a", encoding="utf-8") as log:
            log.write(f"2026/01/02 15:04:05 Starting language server process with pid {pid}\n")
            log.write(
                f"2026/01/02 15:04:06 Language server listening on random port at {port} "
                "for HTTPS (gRPC)\n"
            )
    if args.become_uid is not None:
        os.setgid(args.become_uid)
        os.setuid(args.become_uid)
    info = {
        "pid": os.getpid(),
        "ports": [s.getsockname()[1] for s in sockets],
        "child_pid": child_info["pid"],
        "child_ports": child_info["ports"],
    }
    print(json.dumps(info), flush=True)
    try:
        sys.stdin.read()
    finally:
        if child is not None:
            child.terminate()
            child.wait(timeout=10)
        for sock in sockets:
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
