"""A stranger's TLS server on a port agy just left, recording what reaches it.

    python tests/_stranger_tls.py PORT FOLDER

Binds 127.0.0.1:PORT as soon as it is free (trying every few milliseconds for up to 30 s),
serves TLS (ALPN h2 and http/1.1, like agy) with a self-signed certificate of its own, made
now in FOLDER, and writes ``FOLDER/bound`` once listening. For each connection it appends one
JSON line to ``FOLDER/connections`` when the connection ends (``handshake``: "ok" or the TLS
error, ``bytes``: how many bytes arrived after the handshake) and appends those bytes to
``FOLDER/received``. Runs until SIGTERM. Run as another user through ``_as_user.py``.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import sys
import threading
from pathlib import Path

from waiting import wait_until

from agy_sim.certs import make_self_signed_cert

_IDLE = 2.0  # seconds without a byte before the stranger hangs up, as a server would


def _bind(port: int) -> socket.socket:
    def bound() -> socket.socket | None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            return None
        return sock

    sock = wait_until(bound, timeout=30, what=f"port {port} to be free", interval=0.002)
    sock.listen(16)
    return sock


def _serve_one(
    conn: socket.socket, context: ssl.SSLContext, folder: Path, lock: threading.Lock
) -> None:
    received = b""
    try:
        conn.settimeout(_IDLE)
        with context.wrap_socket(conn, server_side=True) as tls:
            handshake = "ok"
            try:
                while chunk := tls.recv(65536):
                    received += chunk
                    with lock, (folder / "received").open("ab") as out:
                        out.write(chunk)
            except (OSError, ssl.SSLError):
                pass
    except (OSError, ssl.SSLError) as exc:
        handshake = f"{type(exc).__name__}: {exc}"
    with lock, (folder / "connections").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"handshake": handshake, "bytes": len(received)}) + "\n")


def main() -> int:
    port, folder = int(sys.argv[1]), Path(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    certs = make_self_signed_cert(folder / "tls")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.certfile, certs.keyfile)
    context.set_alpn_protocols(["h2", "http/1.1"])
    sock = _bind(port)
    (folder / "received").touch()
    (folder / "bound").write_text(str(port))
    lock = threading.Lock()
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=_serve_one, args=(conn, context, folder, lock), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
