"""What of the person's the probe already holds, so that a recording carries none of it.

The probe seeds agy's private folder from the person's gemini dir (docs/wire.md §1b): the
sign-in's tokens (``antigravity-cli/antigravity-oauth-token``, tokens nested under
``token``; the older flat ``oauth_creds.json``), the signed-in e-mail
(``google_accounts.json``: ``active`` and the ``old`` list) and the settings' ``gcp`` block,
whose project names the person's Google Cloud project. agy can echo any of them (an error
naming the project, a URL with the e-mail in its query), so each is handed to the redactor
as a secret: replaced, and looked for by `redact.leaks`, in any form it could take.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from omnigent_agy.agy.gemini_home import CREDENTIAL_FILES, SETTINGS_FILE
from omnigent_agy.agy.gemini_source import GeminiSource, SeedReport
from omnigent_agy.doctor.gemini_checks import API_KEY_ENV

__all__ = ["ACCOUNTS_FILE", "PROJECT_ENV", "SECRET_ENV", "account_values", "held_values"]

ACCOUNTS_FILE: Final = Path("google_accounts.json")
#: Variables naming the person's Google Cloud project (agy and the gcloud tools read them).
PROJECT_ENV: Final = (
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_PROJECT_ID",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
)
#: Variables holding a key agy can sign in with (docs/wire.md §1b).
SECRET_ENV: Final = (API_KEY_ENV, "GOOGLE_API_KEY")
# A credential's value, by its key; ``token_type`` ("Bearer") and ``expiry`` are not secret,
# and replacing "Bearer" everywhere would ruin the recording.
_SECRET_KEY: Final = re.compile(r"token$|secret|password|api[-_]?key|^key$", re.IGNORECASE)
_PROJECT_KEY: Final = re.compile(r"project", re.IGNORECASE)
# An account answer's personal values (`GetUserStatus`): its e-mail and the person's names.
_PERSONAL_KEY: Final = re.compile(r"e-?mail|name|project", re.IGNORECASE)
_NOT_PERSONAL: Final = frozenset({"planName", "modelName", "tierName"})
_EMAIL: Final = re.compile(r"[^\s@\"]+@[^\s@\"]+\.[^\s@\"]+")
_SHORTEST_SECRET: Final = 8
_SHORTEST_NAME: Final = 3


def held_values(gemini_dir: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    """The person's tokens, e-mail addresses and project names the probe can see."""
    source = GeminiSource(gemini_dir, SeedReport())
    found: list[str] = []
    for relative in CREDENTIAL_FILES:
        for key, value in _strings(_json(source, relative)):
            secret = _SECRET_KEY.search(key) and len(value) >= _SHORTEST_SECRET
            if secret or _EMAIL.fullmatch(value):
                found.append(value)
    found += [value for _, value in _strings(_json(source, ACCOUNTS_FILE)) if "@" in value]
    settings = _json(source, SETTINGS_FILE)
    gcp = settings.get("gcp") if isinstance(settings, Mapping) else None
    found += [
        value
        for key, value in _strings(gcp)
        if _PROJECT_KEY.search(key) and len(value) >= _SHORTEST_NAME
    ]
    found += [env[name].strip() for name in (*PROJECT_ENV, *SECRET_ENV) if env.get(name)]
    return tuple(dict.fromkeys(value for value in found if value.strip()))


def account_values(answer: object) -> tuple[str, ...]:
    """The e-mail addresses, names and projects in an answer about the account."""
    found = [
        value
        for key, value in _strings(answer)
        if (_PERSONAL_KEY.search(key) and key not in _NOT_PERSONAL) or _EMAIL.fullmatch(value)
    ]
    return tuple(dict.fromkeys(v for v in found if len(v.strip()) >= _SHORTEST_NAME))


def _json(source: GeminiSource, relative: Path) -> object:
    """The file's JSON, or None: a file that is missing, a link out or not JSON holds nothing
    the probe could have copied as JSON (agy reads the same file)."""
    try:
        data = source.read(relative)
    except OSError:
        return None
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _strings(value: object, key: str = "") -> Iterator[tuple[str, str]]:
    """Every text in a JSON value with the key it is under (a list's items under the list's)."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            yield from _strings(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)
    elif isinstance(value, str):
        yield key, value
