"""What leaves a person's machine in a probe recording: nothing secret, nothing of theirs.

A recording is meant for a public bug report, so before anything is written:

- the CSRF token (and any other secret the probe knows) is replaced wherever it appears;
- values under keys that name credentials or the account (``email``, ``accessToken``,
  ``password``, ``oauth…``, …) are replaced whatever they hold, and an answer about the account
  (``GetUserStatus``) keeps only its shape (`account_shape`);
- e-mail addresses and OAuth-looking tokens are replaced anywhere in any text;
- the scratch workspace becomes ``/home/user/project`` (the fixtures' convention,
  fixtures/recorded_steps/README.md), agy's private state ``<agy-state>``, and every other
  absolute or ``~/`` path ``<path>`` (agy's own default ``~/.gemini`` is kept: it is the same
  for everyone); the person's user and host names are replaced as whole words.

`leaks` is the last look before a recording is kept: it names any file that still holds one
of those things (never the thing itself).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["PROJECT", "REDACTED", "Redactor", "account_shape", "leaks"]

PROJECT: Final = "/home/user/project"
REDACTED: Final = "<redacted>"
AGY_STATE: Final = "<agy-state>"
OTHER_PATH: Final = "<path>"
_AGY_DEFAULT = "~/.gemini"

_SECRET_KEY = re.compile(
    r"e-?mail|passw(or)?d|secret|cookie|credential|api[-_]?key|oauth|csrf|authoriz"
    r"|(access|refresh|id|session|bearer)[-_]?token|^token$|phone|given[-_]?name"
    r"|family[-_]?name|full[-_]?name|username|^user$|^account(name|id)?$|picture|avatar",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_OAUTH = re.compile(r"ya29\.[\w.-]+|1//[\w.-]{16,}|eyJ[\w-]+\.[\w-]+\.[\w-]+|AIza[\w-]{30,}")
# An absolute path or a file URI, or a `~/` path; not the second slash of `https://`, not
# `2026/01/02` and not `a/b`.
_PATH = re.compile(
    r"file://(?P<uri>/[^\s\"'`<>|;,()\[\]{}]*)"
    r"|(?<![\w:/.~<>-])(?P<path>(?:/|~/)[^\s\"'`<>|;,()\[\]{}]*)"
)
_ENUM = re.compile(r"^[A-Z][A-Z0-9_]+$")
_KEEP_IN_ACCOUNT = frozenset({"planName", "window", "displayName"})


@dataclass(frozen=True, slots=True)
class Redactor:
    """Redacts JSON values and text for one probe run."""

    workspace: tuple[Path, ...]
    """The scratch workspace, as given and resolved (a temporary folder may be a link)."""
    agy_state: tuple[Path, ...] = ()
    """The probe's state folder (agy's gemini dir and log): shown as `<agy-state>`."""
    secrets: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    """The person's user and host names: replaced as whole words."""
    _names: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        patterns = tuple(
            re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
            for name in self.names
            if len(name) >= 3
        )
        object.__setattr__(self, "_names", patterns)

    def value(self, value: object) -> object:
        """A JSON value with every secret, account detail and foreign path replaced."""
        if isinstance(value, Mapping):
            out: dict[str, object] = {}
            for key, item in value.items():
                name = self.text(str(key))
                out[name] = _blank(item) if _SECRET_KEY.search(str(key)) else self.value(item)
            return out
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        """`text` with secrets, e-mails, tokens, paths and the person's names replaced."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, REDACTED)
        text = _OAUTH.sub(REDACTED, text)
        text = _EMAIL.sub("<e-mail>", text)
        text = _PATH.sub(self._path, text)
        for pattern in self._names:
            text = pattern.sub("<name>", text)
        return text

    def _path(self, match: re.Match[str]) -> str:
        uri = match.group("uri")
        if uri is not None:
            return f"file://{self._known(uri)}"
        return self._known(match.group("path"))

    def _known(self, path: str) -> str:
        if path == _AGY_DEFAULT or path.startswith(_AGY_DEFAULT + "/"):
            return path
        for root, stand_in in self._roots():
            text = str(root)
            if path == text or path.startswith(text.rstrip("/") + "/"):
                return stand_in + path[len(text.rstrip("/")) :]
        return OTHER_PATH

    def _roots(self) -> Iterable[tuple[Path, str]]:
        # Longest first: a workspace inside the scratch folder beats the folder.
        roots = [(p, PROJECT) for p in self.workspace] + [(p, AGY_STATE) for p in self.agy_state]
        return sorted(roots, key=lambda item: len(str(item[0])), reverse=True)


def _blank(value: object) -> object:
    """A credential's value: containers keep their shape, scalars (but booleans) go."""
    if isinstance(value, Mapping):
        return {str(key): _blank(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_blank(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    return REDACTED


def account_shape(value: object, key: str = "") -> object:
    """An answer about the account (`GetUserStatus`): its shape, its enum values and the
    plan's name; every other text and number replaced."""
    if isinstance(value, Mapping):
        return {str(k): account_shape(item, str(k)) for k, item in value.items()}
    if isinstance(value, list):
        return [account_shape(item, key) for item in value]
    if isinstance(value, str):
        keep = key in _KEEP_IN_ACCOUNT or _ENUM.fullmatch(value)
        return _EMAIL.sub("<e-mail>", value) if keep else REDACTED
    if isinstance(value, bool) or value is None:
        return value
    return 0


def leaks(folder: Path, *, secrets: Iterable[str], paths: Iterable[Path]) -> list[str]:
    """What a written recording still holds that it must not: a file and the kind of thing
    (never the thing itself). Empty: nothing."""
    forbidden = [("a secret", s) for s in secrets if s]
    forbidden += [("a private path", str(p)) for p in paths if str(p) not in ("", "/")]
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        content = path.read_text(encoding="utf-8", errors="replace")
        # The workspace's stand-in is not the person's: a home of /home/user is.
        bare = content.replace(PROJECT, "")
        kinds = {kind for kind, needle in forbidden if needle in bare}
        if _EMAIL.search(content):
            kinds.add("an e-mail address")
        if _OAUTH.search(content):
            kinds.add("an OAuth token")
        found += [f"{path.name} holds {kind}" for kind in sorted(kinds)]
    return found
