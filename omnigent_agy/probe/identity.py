"""Who agy is on the machine: its process, its two ports and its log (docs/wire.md §1, §9).

The plugin finds agy's port from the listening line of agy's ``--log-file`` and from the
listeners of agy's process tree (`rpc.discovery`); these checks say whether the person's agy
writes those lines, in which form, and holds the ports it announces.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import psutil

from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.rpc.agy_log import LogScanner
from omnigent_agy.rpc.listeners import port_ownership, process_tree

__all__ = ["check_log", "check_process", "log_lines"]

_STARTING: Final = "Starting language server process with pid"
_LISTENING: Final = "Language server listening on random port at"
_SIGNED_IN: Final = "OAuth: authenticated successfully"
_SIGNED_OUT: Final = "You are not logged into Antigravity"
# glog's prefix (docs/wire.md §9): `I1202 05:12:00.123456  4242 server.go:123] message`.
_GLOG: Final = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [^ \]]+:\d+\] ")
_WANTED: Final = (_STARTING, _LISTENING, "Language server version:", _SIGNED_IN, _SIGNED_OUT)


def log_lines(log_text: str) -> list[str]:
    """The lines of agy's log the probe reads (and records): nothing else of the log."""
    return [line for line in log_text.splitlines() if any(w in line for w in _WANTED)]


def check_log(log_text: str, *, pid: int, port: int, version: str | None) -> list[Finding]:
    """The two lines discovery reads (§1), their form (§9) and what else §9 says is there."""
    scanner = LogScanner()
    scanner.feed(log_text + "\n")
    latest = scanner.latest
    expected = f"`{_LISTENING} <N> for HTTPS (gRPC)` naming agy's port"
    if latest is None:
        listening = Finding("log: listening line", FactVerdict.FAIL, expected, "no such line", "§1")
    else:
        ok = latest.port == port
        seen = f"port {latest.port}" + ("" if ok else f", but agy answers on {port}")
        listening = Finding(
            "log: listening line",
            FactVerdict.PASS if ok else FactVerdict.FAIL,
            expected,
            seen,
            "§1",
        )
    tree = process_tree(pid)
    if scanner.server_pid is None:
        starting = Finding(
            "log: starting line", FactVerdict.INFO, f"`{_STARTING} <pid>`", "no such line", "§1"
        )
    else:
        ours = scanner.server_pid in tree
        starting = Finding(
            "log: starting line",
            FactVerdict.PASS if ours else FactVerdict.INFO,
            f"`{_STARTING} <pid>` naming agy's process",
            f"pid {scanner.server_pid}" + ("" if ours else f", not agy's (pid {pid})"),
            "§1",
        )
    return [listening, starting, _form(log_text), *_section9(scanner, version)]


def _form(log_text: str) -> Finding:
    lines = [line for line in log_text.splitlines() if _STARTING in line or _LISTENING in line]
    expected = "glog lines (`I1202 05:12:00.123456  4242 server.go:123] …`)"
    if not lines:
        return Finding("log: line form", FactVerdict.SKIP, expected, "no line to look at", "§9")
    glog = [line for line in lines if _GLOG.match(line)]
    if len(glog) == len(lines):
        return Finding("log: line form", FactVerdict.PASS, expected, "glog", "§9")
    # The plugin finds both messages anywhere on a line; omnigent's built-in harness does not.
    shown = lines[0].split(_STARTING)[0].split(_LISTENING)[0].strip() or "(no prefix)"
    seen = f"{len(lines) - len(glog)} of {len(lines)} lines not glog; a prefix: {shown[:40]!r}"
    return Finding("log: line form", FactVerdict.INFO, expected, seen, "§9")


def _section9(scanner: LogScanner, version: str | None) -> list[Finding]:
    """The lines one report says agy writes (§9), as discovery reads them (`rpc.agy_log`):
    its version and whether it is signed in."""
    expected = "`Language server version: 1.x.y`" + (f" ({version})" if version else "")
    logged = scanner.version
    if logged is None:
        shown_version = Finding(
            "log: version line", FactVerdict.INFO, expected, "no such line", "§9"
        )
    else:
        same = version is None or logged in version
        verdict = FactVerdict.PASS if same else FactVerdict.INFO
        shown_version = Finding("log: version line", verdict, expected, logged, "§9")
    seen = {True: "signed in", False: "signed out", None: "neither line"}[scanner.signed_in]
    verdict = FactVerdict.PASS if scanner.signed_in else FactVerdict.INFO
    sign_in = Finding("log: sign-in line", verdict, f"`{_SIGNED_IN}`", seen, "§9")
    return [shown_version, sign_in]


def check_process(pid: int, port: int) -> list[Finding]:
    """agy is one process named agy whose tree holds the TLS port N and the plain port N+1."""
    try:
        process = psutil.Process(pid)
        name = process.name()
        argv0 = Path(process.cmdline()[0]).name if process.cmdline() else name
    except (psutil.NoSuchProcess, psutil.AccessDenied) as exc:
        seen = f"cannot look at pid {pid}: {type(exc).__name__}"
        return [Finding("agy's process", FactVerdict.FAIL, "agy itself", seen, "§1")]
    shown = argv0 if argv0 == name else f"{argv0} ({name})"
    identity = Finding(
        "agy's process",
        FactVerdict.PASS if "agy" in (argv0, name) else FactVerdict.INFO,
        "one process named agy in the pane",
        f"{shown}, pid {pid}",
        "§1",
    )
    ownership = port_ownership(pid)
    held = sorted({listener.port for listener in ownership.ours})
    has_tls, has_plain = port in held, port + 1 in held
    ports = Finding(
        "agy's ports",
        FactVerdict.PASS
        if has_tls and has_plain
        else FactVerdict.FAIL
        if not has_tls
        else FactVerdict.INFO,
        f"its process tree holds N={port} (TLS) and N+1 (plain)",
        f"holds {', '.join(map(str, held)) or 'nothing'}",
        "§1",
    )
    return [identity, ports]
