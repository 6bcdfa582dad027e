"""What the probe holds of the person's (the sign-in's tokens, the signed-in e-mail, the Google
Cloud project, the account's names) never reaches a recording, in any form agy, a URL or a
JSON encoder could give it: any case, percent-encoded, JSON-escaped, base64, inside a URL."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus, urlencode

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from omnigent_agy.errors import RecordingLeakError
from omnigent_agy.probe.held_values import held_values
from omnigent_agy.probe.recording import Recorder
from omnigent_agy.probe.redact import REDACTED, Redactor, leaks, secret_patterns

# Opaque on purpose: none of them looks like an OAuth token or an e-mail to the generic rules.
ACCESS = f"opaque-access-{secrets.token_hex(12)}"
REFRESH = f"opaque-refresh-{secrets.token_hex(12)}"
EMAIL = "Ada.Lovelace+agy@Example.org"
OLD_EMAIL = "countess@example.net"
PROJECT_ID = "analytical-engine-4711"
DISPLAY = "Augusta Ada King"
USER = "adalovelace"


@pytest.fixture
def gemini(tmp_path: Path) -> Path:
    home = tmp_path / "gemini"
    (home / "antigravity-cli").mkdir(parents=True)
    token = {
        "token": {
            "access_token": ACCESS,
            "refresh_token": REFRESH,
            "token_type": "Bearer",
            "expiry": "2026-12-07T04:00:00Z",
        }
    }
    (home / "antigravity-cli" / "antigravity-oauth-token").write_text(json.dumps(token))
    (home / "google_accounts.json").write_text(json.dumps({"active": EMAIL, "old": [OLD_EMAIL]}))
    settings_file = home / "antigravity-cli" / "settings.json"
    settings_file.write_text(
        json.dumps({"gcp": {"project": PROJECT_ID, "location": "us-central1"}, "theme": "dark"})
    )
    return home


def test_the_probe_knows_the_tokens_e_mails_and_project_it_copies(gemini: Path) -> None:
    held = held_values(gemini, {"GOOGLE_CLOUD_PROJECT": "other-project-1"})
    assert set(held) == {ACCESS, REFRESH, EMAIL, OLD_EMAIL, PROJECT_ID, "other-project-1"}
    # Not secret, and replacing them everywhere would ruin the recording.
    assert "Bearer" not in held
    assert "us-central1" not in held


def test_a_missing_or_broken_gemini_dir_holds_nothing(tmp_path: Path) -> None:
    assert held_values(tmp_path / "none", {}) == ()
    (tmp_path / "google_accounts.json").write_text("{not json")
    assert held_values(tmp_path, {}) == ()


def _json_escapes(text: str) -> str:
    """Every character as a JSON ``\\uXXXX`` escape (a surrogate pair beyond the BMP)."""
    units = text.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


FORMS: dict[str, Callable[[str], str]] = {
    "as is": lambda v: v,
    "upper case": str.upper,
    "lower case": str.lower,
    "percent-encoded": lambda v: quote(v, safe=""),
    "percent-encoded, lower hex": lambda v: quote(v, safe="").lower(),
    "percent-encoded twice": lambda v: quote(quote(v, safe=""), safe=""),
    "form-encoded": quote_plus,
    "every character percent-encoded": lambda v: "".join(f"%{b:02X}" for b in v.encode()),
    "JSON, ASCII only": lambda v: json.dumps(v)[1:-1].replace("@", "\\u0040"),
    "every character a JSON escape": _json_escapes,
    "HTML entities": lambda v: v.replace("@", "&#64;").replace(".", "&#x2e;"),
    "base64": lambda v: _b64(f"user:{v}"),
    "base64, shifted": lambda v: _b64(f"u:{v}!"),
    # A JWT's payload, as a token agy echoes could carry it (one encoding, not two).
    "base64url, no padding": lambda v: _b64url(f'{{"email":"{v}","sub":"1"}}'),
    "in a URL's query": lambda v: "https://example.org/cb?" + urlencode({"who": v, "x": "1"}),
}
VALUES = {
    "access token": ACCESS,
    "refresh token": REFRESH,
    "e-mail": EMAIL,
    "old e-mail": OLD_EMAIL,
    "project": PROJECT_ID,
    "display name": DISPLAY,
}


def _planted(value: str) -> list[str]:
    return [f"before {form(value)} after" for form in FORMS.values()]


def _record(recorder: Recorder, workspace: Path) -> None:
    """agy echoing the person's values everywhere, the account answer last (as in a run)."""
    echoed = [text for value in VALUES.values() for text in _planted(value)]
    name_forms = [USER.upper(), USER.capitalize(), f"/home/{USER.upper()}/x", DISPLAY.lower()]
    step = {
        "type": "CORTEX_STEP_TYPE_RUN_COMMAND",
        "runCommand": {"combinedOutput": {"full": "\n".join(echoed + name_forms)}},
        "cwd": str(workspace),
    }
    recorder.poll("plain", 0, [step])
    recorder.frame("plain", {"update": {"steps": [step]}})
    recorder.log_lines(echoed)
    recorder.call("GetUserStatus", {}, answer={"userStatus": {"displayName": DISPLAY, "x": 1}})


def test_no_form_of_what_the_probe_holds_reaches_the_recording(
    tmp_path: Path, gemini: Path
) -> None:
    workspace = tmp_path / "probe" / "workspace"
    redactor = Redactor(
        workspace=(workspace,), secrets=held_values(gemini, {}), names=(USER, "engine-host")
    )
    recorder = Recorder(redactor)
    _record(recorder, workspace)
    folder = recorder.write(
        tmp_path / "recording",
        agy_version="1.2.14",
        findings=[],
        table="",
        private_paths=(tmp_path / "probe",),
    )
    written = "\n".join(p.read_text() for p in sorted(folder.iterdir())).lower()
    for what, value in VALUES.items():
        for form, encode in FORMS.items():
            assert encode(value).lower() not in written, f"the {what}, {form}"
    assert USER not in written
    account = json.loads((folder / "calls.json").read_text())[0]["answer"]
    assert account == {"userStatus": {"displayName": REDACTED, "x": 0}}
    assert "before <redacted> after" in written  # what is around a secret stays


class _Forgetful(Redactor):
    """A redactor with a bug: it hides nothing."""

    def value(self, value: object) -> object:
        return value

    def text(self, text: str) -> str:
        return text

    def hide(self, text: str) -> str:
        return text


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("what", list(VALUES))
def test_the_last_look_finds_each_form(tmp_path: Path, gemini: Path, what: str, form: str) -> None:
    secret_values = (*held_values(gemini, {}), DISPLAY)
    recorder = Recorder(_Forgetful(workspace=(tmp_path / "w",), secrets=secret_values))
    recorder.log_lines([f"agy said {FORMS[form](VALUES[what])} then"])
    with pytest.raises(RecordingLeakError, match=r"log\.txt holds a secret"):
        recorder.write(tmp_path / "r", agy_version="1", findings=[], table="", private_paths=())
    assert not (tmp_path / "r").exists()


def test_an_e_mail_nobody_named_is_found_percent_encoded_or_escaped(tmp_path: Path) -> None:
    redactor = Redactor(workspace=(tmp_path,))
    for text in ("a.b%40c.org", "a.b%2540c.org", "a.b\\u0040c.org", "mail=a%2Bb%40c.org"):
        assert "c.org" not in redactor.text(text), text
        (tmp_path / "f.txt").write_text(text)
        assert leaks(tmp_path, secrets=[], paths=[]) == ["f.txt holds an e-mail address"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    secret=st.text(min_size=8, max_size=64).filter(lambda s: s.strip()),
    form=st.sampled_from(sorted(FORMS)),
    before=st.text(max_size=12),
    after=st.text(max_size=12),
)
def test_any_secret_in_any_form_is_found_and_hidden(
    secret: str, form: str, before: str, after: str
) -> None:
    # Case forms only where a case is one character (``ß`` upper-cases to ``SS``); a secret
    # with the marker's brackets could meet the marker itself.
    assume(len(secret.upper()) == len(secret) == len(secret.lower()))
    assume(not {"<", ">"} & set(secret))
    text = f"{before}{FORMS[form](secret)}{after}"
    assert any(p.search(text) for p in secret_patterns([secret])), (form, text)
    hidden = Redactor(workspace=(Path("/nowhere"),), secrets=(secret,)).hide(text)
    assert not any(p.search(hidden) for p in secret_patterns([secret])), (form, hidden)
