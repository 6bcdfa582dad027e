"""How agy's port talks: TLS and HTTP versions, the CSRF header, unknown methods (§1).

These checks talk to agy's port the way no well-behaved client does (no token, a wrong one,
HTTP/1.1 for a unary call), so they use raw HTTP requests rather than the plugin's client.
Every connection trusts only the certificate discovery pinned (`rpc.pinning`); nothing here
goes anywhere but loopback. No request, answer or error text shown carries the token: what a
finding says comes from the status and the connect code.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Final

import httpx

from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.rpc.connection import CSRF_HEADER, SERVICE
from omnigent_agy.rpc.pinning import client_context

__all__ = [
    "RawAnswer",
    "check_csrf",
    "check_http1",
    "check_plain_port",
    "check_tls",
    "check_unknown_method",
    "raw_call",
]

HOST: Final = "127.0.0.1"
_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class RawAnswer:
    status: int
    media_type: str
    body: bytes
    http_version: str

    def json(self) -> object | None:
        try:
            value: object = json.loads(self.body)
        except ValueError:
            return None
        return value

    def describe(self) -> str:
        """``401 unauthenticated`` (the connect code) or ``403 text/plain`` — never the body."""
        body = self.json()
        code = body.get("code") if isinstance(body, dict) else None
        kind = code if isinstance(code, str) else self.media_type or "no body"
        return f"{self.status} {kind} over {self.http_version}"


async def raw_call(
    port: int,
    certificate: bytes | None,
    method: str,
    body: object,
    *,
    token: str | None,
    http2: bool = True,
) -> RawAnswer:
    """One unary call as agy's clients make it, with `token` (None: no CSRF header)."""
    headers = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
    if token is not None:
        headers[CSRF_HEADER] = token
    async with httpx.AsyncClient(
        http1=not http2, http2=http2, verify=client_context(certificate), timeout=_TIMEOUT
    ) as client:
        response = await client.post(
            f"https://{HOST}:{port}/{SERVICE}/{method}", json=body, headers=headers
        )
    media = str(response.headers.get("content-type", "")).split(";", 1)[0].strip().lower()
    return RawAnswer(response.status_code, media, response.content, response.http_version)


def _failed(exc: BaseException) -> str:
    return f"no answer: {type(exc).__name__}"


async def check_tls(port: int, certificate: bytes | None) -> Finding:
    """agy's port speaks TLS and picks HTTP/2 when offered both (ALPN)."""
    context = client_context(certificate)
    context.set_alpn_protocols(["h2", "http/1.1"])
    expected = "TLS, ALPN picks h2 of h2 and http/1.1"
    try:
        async with asyncio.timeout(_TIMEOUT):
            _, writer = await asyncio.open_connection(HOST, port, ssl=context, server_hostname="")
    except (OSError, ssl.SSLError, TimeoutError) as exc:
        return Finding("TLS and HTTP/2", FactVerdict.FAIL, expected, _failed(exc), "§1")
    try:
        tls = writer.get_extra_info("ssl_object")
        version = tls.version() if tls is not None else None
        alpn = tls.selected_alpn_protocol() if tls is not None else None
    finally:
        writer.transport.abort()
    seen = f"{version or 'no TLS'}, ALPN {alpn or 'none'}"
    verdict = FactVerdict.PASS if alpn == "h2" else FactVerdict.FAIL
    return Finding("TLS and HTTP/2", verdict, expected, seen, "§1")


async def check_http1(port: int, certificate: bytes | None, token: str) -> Finding:
    """What a call over HTTP/1.1 gets: the plugin's streams speak HTTP/1.1 where agy takes it
    and HTTP/2 from the first 501 on (rpc/connection.py)."""
    expected = "200 (streams may use HTTP/1.1) or 501 (streams use HTTP/2)"
    try:
        answer = await raw_call(port, certificate, "Heartbeat", {}, token=token, http2=False)
    except (httpx.HTTPError, OSError, ssl.SSLError) as exc:
        return Finding("HTTP/1.1", FactVerdict.FAIL, expected, _failed(exc), "§1")
    verdict = FactVerdict.PASS if answer.status in (200, 501) else FactVerdict.FAIL
    return Finding("HTTP/1.1", verdict, expected, answer.describe(), "§1")


async def check_csrf(port: int, certificate: bytes | None, token: str) -> list[Finding]:
    """No CSRF header → 401, a wrong token → 403 (agy from 1.2.2, §1)."""
    wrong = "x" * len(token) if token else "not-the-token"
    cases = (
        ("CSRF: no header", None, 401, "401 unauthenticated"),
        ("CSRF: a wrong token", wrong, 403, "403 (Invalid CSRF token)"),
    )
    findings = []
    for fact, sent, status, expected in cases:
        try:
            answer = await raw_call(port, certificate, "Heartbeat", {}, token=sent)
        except (httpx.HTTPError, OSError, ssl.SSLError) as exc:
            findings.append(Finding(fact, FactVerdict.FAIL, expected, _failed(exc), "§1"))
            continue
        seen = answer.describe()
        if answer.status == 200:
            seen += ": agy checks no token, so any local program can drive it"
        verdict = FactVerdict.PASS if answer.status == status else FactVerdict.FAIL
        findings.append(Finding(fact, verdict, expected, seen, "§1"))
    return findings


async def check_unknown_method(port: int, certificate: bytes | None, token: str) -> Finding:
    """A method agy does not have answers 404 (§1): how the plugin tells an agy without the
    quota methods."""
    expected = "404"
    try:
        answer = await raw_call(port, certificate, "OmnigentAgyProbeNoSuchMethod", {}, token=token)
    except (httpx.HTTPError, OSError, ssl.SSLError) as exc:
        return Finding("an unknown method", FactVerdict.FAIL, expected, _failed(exc), "§1")
    verdict = FactVerdict.PASS if answer.status == 404 else FactVerdict.INFO
    return Finding("an unknown method", verdict, expected, answer.describe(), "§1")


async def check_plain_port(port: int) -> Finding:
    """agy's second port, N+1, answers plain HTTP with 404 or 401 (§1); the plugin never
    talks to it (discovery skips it: it fails the TLS handshake)."""
    expected = f"plain HTTP on {port + 1} answering 404 or 401"
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            response = await client.get(f"http://{HOST}:{port + 1}/")
    except (httpx.HTTPError, OSError) as exc:
        return Finding("the plain port N+1", FactVerdict.INFO, expected, _failed(exc), "§1")
    verdict = FactVerdict.PASS if response.status_code in (401, 404) else FactVerdict.INFO
    seen = f"{response.status_code} over {response.http_version}"
    return Finding("the plain port N+1", verdict, expected, seen, "§1")
