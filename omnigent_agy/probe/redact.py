"""What leaves a person's machine in a probe recording: nothing secret, nothing of theirs.

A recording is meant for a public bug report, so before anything is written:

- the CSRF token and every other secret the probe knows (the person's sign-in tokens, e-mail
  and Google Cloud project, `held`) is replaced wherever it appears, in any form agy or a
  URL could give it: any case, percent-encoded (once or twice, any character or all),
  JSON-, Python- or HTML-escaped, and base64 (standard or URL-safe, at any alignment);
- values under keys that name credentials or the account (``email``, ``accessToken``,
  ``password``, ``oauth…``, …) are replaced whatever they hold, and an answer about the account
  (``GetUserStatus``) keeps only its shape (`account_shape`);
- e-mail addresses (their ``@`` written plainly or escaped) and OAuth-looking tokens are
  replaced anywhere in any text;
- the scratch workspace becomes ``/home/user/project`` (the fixtures' convention,
  fixtures/recorded_steps/README.md), agy's private state ``<agy-state>``, and every other
  absolute or ``~/`` path ``<path>`` (agy's own default ``~/.gemini`` is kept: it is the same
  for everyone); the person's user and host names are replaced as whole words, in any case.

`leaks` is the last look before a recording is kept: it names any file that still holds one
of those things, in any of those forms (never the thing itself).
"""

from __future__ import annotations

import base64
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
# An `@` as it is written in a URL (once or twice percent-encoded), in JSON or Python text, in
# HTML; the local part may hold percent-encoded characters too.
_AT = r"(?:@|%(?:25)?40|\\u0040|\\x40|&#0*64;|&#x0*40;)"
_EMAIL = re.compile(rf"[\w.+%-]+{_AT}[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_OAUTH = re.compile(r"ya29\.[\w.-]+|1//[\w.-]{16,}|eyJ[\w-]+\.[\w-]+\.[\w-]+|AIza[\w-]{30,}")
# An absolute path or a file URI, or a `~/` path; not the second slash of `https://`, not
# `2026/01/02` and not `a/b`.
_PATH = re.compile(
    r"file://(?P<uri>/[^\s\"'`<>|;,()\[\]{}]*)"
    r"|(?<![\w:/.~<>-])(?P<path>(?:/|~/)[^\s\"'`<>|;,()\[\]{}]*)"
)
_ENUM = re.compile(r"^[A-Z][A-Z0-9_]+$")
_KEEP_IN_ACCOUNT = frozenset({"planName", "window"})
# What every encoded form of a character but its case holds (see `written`).
_ENCODED = re.compile(r"[%\\&+]")
_SHORT_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f", "\0": "0"}
_SHORTEST_BASE64 = 6  # a shorter value's base64 is a few letters any text may hold


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
    _plain_names: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _secrets: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _plain_secrets: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [name for name in self.names if len(name) >= 3]
        for field_name, form in (("_names", written), ("_plain_names", re.escape)):
            patterns = tuple(
                re.compile(rf"(?<![\w-]){form(name)}(?![\w-])", re.IGNORECASE) for name in names
            )
            object.__setattr__(self, field_name, patterns)
        object.__setattr__(self, "_secrets", secret_patterns(self.secrets))
        object.__setattr__(self, "_plain_secrets", secret_patterns(self.secrets, plain=True))

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
        text = self.hide(text)
        text = _OAUTH.sub(REDACTED, text)
        text = _EMAIL.sub("<e-mail>", text)
        text = _PATH.sub(self._path, text)
        for pattern in self._names if _ENCODED.search(text) else self._plain_names:
            text = pattern.sub("<name>", text)
        return text

    def hide(self, text: str) -> str:
        """`text` with only the known secrets replaced, in whatever form they were written."""
        # Without a %, \\, & or + no encoded form can be there: the case-blind literal is
        # several times faster than the pattern of every character's forms.
        patterns = self._secrets if _ENCODED.search(text) else self._plain_secrets
        for pattern in patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def hide_all(self, value: object) -> object:
        """A JSON value (keys too) with only the known secrets replaced: for what was
        recorded before a secret became known."""
        if isinstance(value, Mapping):
            return {self.hide(str(key)): self.hide_all(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.hide_all(item) for item in value]
        return self.hide(value) if isinstance(value, str) else value

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


def written(value: str) -> str:
    """A pattern for `value` however a URL, JSON, Python or HTML could write it: each character
    as itself or percent-encoded (once or twice), ``\\uXXXX`` (a pair of them beyond the
    BMP), ``\\xXX``, ``&#N;``/``&#xN;``, backslash-escaped, a space as ``+``. Compile it with
    IGNORECASE: the case of the value and of the hex digits is anyone's."""
    parts: list[str] = []
    for char in value:
        code = ord(char)
        utf8 = char.encode("utf-8", "surrogatepass")
        forms = [re.escape(char), rf"\\{re.escape(char)}"]
        forms.append("".join(f"%(?:25)?{byte:02x}" for byte in utf8))
        if code < 0x10000:
            forms.append(rf"\\u{code:04x}")
        else:
            high, low = divmod(code - 0x10000, 0x400)
            forms.append(rf"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        if code < 0x100:
            forms.append(rf"\\x{code:02x}")
        forms.append(rf"&#(?:0*{code}|x0*{code:x});")
        if char == " ":
            forms.append(r"\+")
        if char in _SHORT_ESCAPES:
            forms.append(rf"\\{_SHORT_ESCAPES[char]}")
        parts.append(f"(?:{'|'.join(forms)})")
    return "".join(parts)


def base64_forms(value: str) -> list[str]:
    """The base64 text every encoding of a text holding `value` contains: for each of the
    three alignments, the characters that come from `value`'s bytes alone, in the standard
    and the URL-safe alphabet."""
    data = value.encode("utf-8", "surrogatepass")
    forms: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        # The first character holding a bit of `value`, and the last holding only its bits.
        start, end = -(-offset * 4 // 3), (offset + len(data)) * 4 // 3
        stable = encoded[start:end]
        forms += [stable, stable.replace("+", "-").replace("/", "_")]
    return [form for form in dict.fromkeys(forms) if len(form) >= _SHORTEST_BASE64]


def secret_patterns(secrets: Iterable[str], *, plain: bool = False) -> tuple[re.Pattern[str], ...]:
    """Patterns finding each secret in any of its forms (`written`, `base64_forms`); `plain`:
    only in any case and in base64, for a text with nothing encoded in it."""
    patterns: list[re.Pattern[str]] = []
    for secret in dict.fromkeys(s for s in secrets if s):
        shown = re.escape(secret) if plain else written(secret)
        patterns.append(re.compile(shown, re.IGNORECASE))
        if len(secret) >= _SHORTEST_BASE64:
            # Case matters in base64: another case is another value.
            forms = sorted(base64_forms(secret), key=len, reverse=True)
            if forms:
                patterns.append(re.compile("|".join(map(re.escape, forms))))
    return tuple(patterns)


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
    hidden = secret_patterns(secrets)
    forbidden = [("a private path", str(p)) for p in paths if str(p) not in ("", "/")]
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        content = path.read_text(encoding="utf-8", errors="replace")
        # The workspace's stand-in is not the person's: a home of /home/user is.
        bare = content.replace(PROJECT, "")
        kinds = {kind for kind, needle in forbidden if needle in bare}
        if any(pattern.search(content) for pattern in hidden):
            kinds.add("a secret")
        if _EMAIL.search(content):
            kinds.add("an e-mail address")
        if _OAUTH.search(content):
            kinds.add("an OAuth token")
        found += [f"{path.name} holds {kind}" for kind in sorted(kinds)]
    return found
