"""What a person may be shown: text without secrets, clipped to an error card's length.

An error message may quote a command line or a header, and agy's command line and its
environment carry the CSRF token (docs/wire.md §1). :func:`scrub` removes known secrets by
value, the values of settings named like secrets and long random-looking strings; conversation
ids (UUIDs), model names and paths stay.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

__all__ = ["REDACTED", "clip", "scrub"]

_MAX_MESSAGE = 1500

# ``--csrf_token=T``, ``ANTIGRAVITY_CSRF_TOKEN=T``, ``x-codeium-csrf-token: T``, JSON keys.
# With a colon the name must be compound (``-``/``_``): "the CSRF token: another agy…" is prose.
_ASSIGNED = re.compile(
    r"""(?ix)
    (?P<name>[\w.-]*(?:csrf|token|secret|password|passwd|api[_-]?key)[\w.-]*)
    (?P<sep>['"]?\s*(?P<op>[=:])\s*['"]?)
    (?P<value>[^\s'",;)}\]]+)
    """
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",;)}\]]+")
_CANDIDATE = re.compile(r"[A-Za-z0-9_\-]{20,}")
_PART = re.compile(r"[A-Za-z0-9]{10,}")
# Words as code spells them: UPPER, lower, camelCase, CamelCase with short acronyms, and a
# short number. Random mixed case almost never fits (it needs two lower-case letters after
# every capital run); hex and base32 fail the letter/digit test instead.
_WORDLIKE = re.compile(r"[A-Z0-9]+|[a-z0-9]+|[a-z]*(?:[A-Z]{1,6}[a-z]{2,})*[A-Z]{0,6}[0-9]{0,4}")
# Cascade and conversation ids are UUIDs: useful in a report, and not secrets.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_MIN_SWITCHES = 4  # letter/digit alternations that identifiers and slugs rarely reach
REDACTED = "[redacted]"


def _looks_random(text: str) -> bool:
    """A token (``secrets.token_urlsafe``/``token_hex``), not an identifier, slug or UUID."""
    if _UUID.fullmatch(text):
        return False
    if all(any(test(c) for c in text) for test in (str.isupper, str.islower, str.isdigit)):
        return True
    kinds = [c.isdigit() for c in text if c.isalnum()]
    if sum(a != b for a, b in itertools.pairwise(kinds)) >= _MIN_SWITCHES:
        return True
    return any(not _WORDLIKE.fullmatch(part) for part in _PART.findall(text))


def _redact_assignment(match: re.Match[str]) -> str:
    name, value = match["name"], match["value"]
    if value == REDACTED or (match["op"] == ":" and not any(c in name for c in "-_")):
        return match[0]
    return f"{name}{match['sep']}{REDACTED}"


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without ``secrets``, values of secret-named settings or random-looking strings."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _ASSIGNED.sub(_redact_assignment, text)
    text = _BEARER.sub(lambda m: f"{m[1]}{REDACTED}", text)
    return _CANDIDATE.sub(lambda m: REDACTED if _looks_random(m[0]) else m[0], text)


def clip(text: str) -> str:
    """``text`` on one line, cut to what an error card shows."""
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
