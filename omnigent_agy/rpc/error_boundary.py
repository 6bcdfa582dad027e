"""Where failures on agy's port become RpcErrors (see `errors` for the tree).

One boundary for everything the transport (`connection.RpcConnection`) can meet: foreign
exceptions (httpx, h2, ssl, sockets; most specific first, always ``raise … from exc``), an
unsuccessful HTTP answer (connect's error JSON, else its status), and an answer of the wrong
media type.
"""

from __future__ import annotations

import contextlib
import http
import json
import ssl
from collections.abc import Iterator
from typing import Final

import h2.exceptions
import httpx

from omnigent_agy.errors import Code, CsrfError, ProtocolError, RpcError, code_from_http_status
from omnigent_agy.rpc.unary_connection import Answer
from omnigent_agy.rpc.wire import error_from_json

__all__ = ["CONNECT_JSON", "JSON", "error_from_answer", "expect_media_type", "translate_errors"]

JSON: Final = "application/json"
CONNECT_JSON: Final = "application/connect+json"


@contextlib.contextmanager
def translate_errors(method: str, secret: str = "") -> Iterator[None]:
    """The one boundary where foreign errors become RpcErrors; none leaves with ``secret``
    (the CSRF token) in its text, whatever the server's answer echoed (docs/decisions.md §9)."""
    try:
        with _translate_foreign(method):
            yield
    except RpcError as exc:
        if exc.method is None:
            exc.method = method
        exc.redact(secret)
        raise


@contextlib.contextmanager
def _translate_foreign(method: str) -> Iterator[None]:
    """Foreign errors as RpcErrors (most specific first)."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise RpcError(Code.DEADLINE_EXCEEDED, _describe(exc), method=method) from exc
    except httpx.DecodingError as exc:
        raise ProtocolError(_describe(exc), method=method) from exc
    except httpx.TransportError as exc:  # connect/read/write errors, HTTP/2 protocol errors
        raise RpcError(Code.UNAVAILABLE, _describe(exc), method=method) from exc
    except h2.exceptions.H2Error as exc:  # h2 errors httpcore lets through
        raise RpcError(Code.UNAVAILABLE, _describe(exc), method=method) from exc
    except TimeoutError as exc:  # an OSError subclass: before OSError
        raise RpcError(Code.DEADLINE_EXCEEDED, _describe(exc), method=method) from exc
    except ssl.SSLError as exc:
        raise RpcError(Code.UNAVAILABLE, _describe(exc), method=method) from exc
    except OSError as exc:
        raise RpcError(Code.UNAVAILABLE, _describe(exc), method=method) from exc


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def error_from_answer(answer: Answer) -> RpcError:
    """The error an unsuccessful HTTP answer describes (connect error JSON, else its status)."""
    status = answer.status
    error: RpcError | None = None
    if answer.media_type == JSON:
        with contextlib.suppress(ValueError):
            body = json.loads(answer.body)
            if isinstance(body, dict) and ("code" in body or "message" in body):
                # A body without a code: the status says, as for a body that is not JSON.
                missing = code_from_http_status(status)
                error = error_from_json(body, http_status=status, code_missing=missing)
    if error is None:
        text = answer.body[:200].decode("utf-8", "replace").strip()
        error = RpcError(code_from_http_status(status), text or _reason(status), http_status=status)
    if status in (401, 403):
        # The only credential agy checks is the CSRF token (docs/wire.md §1), so these are it.
        return CsrfError(
            error.connect_code, error.message, http_status=status, details=error.details
        )
    return error


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def expect_media_type(got: str, expected: str, *, status: int) -> None:
    """ProtocolError unless an answer's media type is the one its protocol requires."""
    if got != expected:
        raise ProtocolError(
            f"expected content type {expected}, got {got or 'none'}", http_status=status
        )
