"""A probe recording holds nothing of the person's: secrets planted everywhere agy could echo
them are gone from every file, what the checks need stays, and a leak the redactor missed
removes the whole recording."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from omnigent_agy.errors import Code, RecordingLeakError, RpcError
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.recording import Recorder
from omnigent_agy.probe.redact import PROJECT, Redactor, account_shape, leaks

TOKEN = secrets.token_urlsafe(32)
ACCESS = f"ya29.{secrets.token_hex(20)}"
REFRESH = f"1//{secrets.token_hex(20)}"
EMAIL = "ada.lovelace@example.org"
USER = "adalovelace"
HOST = "analytical-engine"


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "omnigent-agy-probe-x1"
    return {
        "workspace": root / "workspace",
        "state": root / "state",
        "home": Path(f"/home/{USER}"),
        "secret_project": Path(f"/home/{USER}/work/top-secret-project"),
    }


@pytest.fixture
def redactor(places: dict[str, Path]) -> Redactor:
    return Redactor(
        workspace=(places["workspace"],),
        agy_state=(places["state"],),
        secrets=(TOKEN,),
        names=(USER, HOST),
    )


def planted_step(places: dict[str, Path]) -> dict[str, object]:
    workspace, state = places["workspace"], places["state"]
    return {
        "type": "CORTEX_STEP_TYPE_RUN_COMMAND",
        "status": "CORTEX_STEP_STATUS_DONE",
        "metadata": {
            "sourceTrajectoryStepInfo": {"trajectoryId": "t-1", "stepIndex": 3},
            "modelUsage": {"inputTokens": "1200", "outputTokens": "80", "cacheReadTokens": "0"},
        },
        "runCommand": {
            "commandLine": f"cd {places['secret_project']} && echo {TOKEN}",
            "cwd": str(workspace),
            "combinedOutput": {
                "full": f"{ACCESS}\r\nmail {EMAIL} on {HOST} as {USER}\r\n{workspace}/a.txt\r\n"
            },
        },
        "userInput": {
            "userConfig": {
                "skillsPaths": [{"absolute": f"{state}/probe/gemini/antigravity-cli/skills"}],
                "workspaceUris": [f"file://{workspace}", f"file://{places['home']}/.ssh"],
                "default": "~/.gemini/antigravity-cli/skills",
            }
        },
        "accessToken": ACCESS,
        "oauth": {"refresh_token": REFRESH, "expiry": 1234},
        "userEmail": EMAIL,
        f"file://{places['secret_project']}": "a key that is a path",
    }


def record_everything(recorder: Recorder, places: dict[str, Path]) -> None:
    step = planted_step(places)
    recorder.call("GetCascadeTrajectorySteps", {"cascadeId": "c-1"}, answer={"steps": [step]})
    recorder.call(
        "GetUserStatus",
        {},
        answer={
            "userStatus": {
                "email": EMAIL,
                "name": "Ada Lovelace",
                "planStatus": {"planInfo": {"planName": "Pro", "tier": "TIER_PRO"}},
                "picture": f"https://example.org/{USER}.png",
            }
        },
    )
    recorder.call(
        "Heartbeat",
        {"token": TOKEN},
        error=RpcError(Code.UNAUTHENTICATED, f"bad token {TOKEN} from {places['home']}"),
    )
    frame = {"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"indices": [3], "steps": [step]}}}}
    recorder.frame("plain", frame)
    recorder.poll("plain", 3, [step])
    recorder.log_lines(
        [
            f"I1202 05:12:00.123456  4242 server.go:1] args --csrf_token={TOKEN} "
            f"--log-file {places['state']}/probe/agy.log",
            f"I1202 05:12:01.000000  4242 auth.go:9] OAuth: authenticated successfully {EMAIL}",
        ]
    )


def test_nothing_planted_reaches_the_recording(
    tmp_path: Path, places: dict[str, Path], redactor: Redactor
) -> None:
    recorder = Recorder(redactor)
    record_everything(recorder, places)
    finding = Finding(f"seen {places['home']}", FactVerdict.PASS, "x", f"{EMAIL} {TOKEN}", "§1")
    folder = recorder.write(
        tmp_path / "recording",
        agy_version=f"1.2.14 built by {USER}@{HOST}",
        findings=[finding],
        table=f"PASS  {TOKEN} {places['secret_project']}",
        private_paths=(places["workspace"].parent, places["home"], places["state"]),
    )
    written = "\n".join(p.read_text() for p in sorted(folder.iterdir()))
    for planted in (TOKEN, ACCESS, REFRESH, EMAIL, USER, HOST, "Ada Lovelace", "top-secret"):
        assert planted not in written, planted
    assert str(places["workspace"].parent) not in written
    assert "/home/" + USER not in written
    # What the checks and the conformance tests need stays.
    assert f"{PROJECT}/a.txt" in written
    assert f"file://{PROJECT}" in written
    assert "~/.gemini/antigravity-cli/skills" in written
    assert "<agy-state>/probe/gemini/antigravity-cli/skills" in written
    assert '"planName": "Pro"' in written
    assert "TIER_PRO" in written
    poll = json.loads((folder / "plain.poll.json").read_text())
    step = poll["steps"][0]["step"]
    assert poll["steps"][0]["idx"] == 3
    assert step["metadata"]["modelUsage"] == {
        "inputTokens": "1200",
        "outputTokens": "80",
        "cacheReadTokens": "0",
    }
    assert step["oauth"] == {"refresh_token": "<redacted>", "expiry": "<redacted>"}
    assert json.loads((folder / "plain.stream.json").read_text())[0]["update"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "calls.json",
        "log.txt",
        "plain.poll.json",
        "plain.stream.json",
        "probe.json",
    ]


class _BrokenRedactor(Redactor):
    """A redactor with a bug: it lets everything through."""

    def value(self, value: object) -> object:
        return value

    def text(self, text: str) -> str:
        return text

    def hide(self, text: str) -> str:
        return text


def test_a_leak_the_redactor_missed_removes_the_recording(
    tmp_path: Path, places: dict[str, Path]
) -> None:
    recorder = Recorder(_BrokenRedactor(workspace=(places["workspace"],), secrets=(TOKEN,)))
    record_everything(recorder, places)
    folder = tmp_path / "recording"
    with pytest.raises(RecordingLeakError) as caught:
        recorder.write(
            folder,
            agy_version="1.2.14",
            findings=[],
            table="",
            private_paths=(places["home"], places["state"]),
        )
    said = str(caught.value)
    for kind in ("a secret", "a private path", "an e-mail address", "an OAuth token"):
        assert f"calls.json holds {kind}" in said
    assert TOKEN not in said
    assert EMAIL not in said
    assert not folder.exists()


def test_leaks_names_kinds_never_the_secret(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(f'{{"x": "{TOKEN}", "m": "{EMAIL}", "t": "{ACCESS}"}}')
    (tmp_path / "b.json").write_text(f'"{PROJECT}/ok"')
    found = leaks(tmp_path, secrets=[TOKEN], paths=[Path("/home/user")])
    assert found == [
        "a.json holds a secret",
        "a.json holds an OAuth token",
        "a.json holds an e-mail address",
    ]
    assert all(TOKEN not in line for line in found)


def test_an_account_keeps_only_its_shape() -> None:
    shaped = account_shape(
        {"a": {"email": EMAIL, "planName": "Pro", "credits": 12.5, "on": True, "tier": "TIER_X"}}
    )
    assert shaped == {
        "a": {"email": "<redacted>", "planName": "Pro", "credits": 0, "on": True, "tier": "TIER_X"}
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://127.0.0.1:4242/exa.language_server_pb.LanguageServerService/Heartbeat", None),
        ("2026/01/02 15:04:05 Language server listening", None),
        ("src/main.py and a/b", None),
        ("ls /etc/passwd", "ls <path>"),
        ("~/notes/private.txt", "<path>"),
        ("~/.gemini/config/mcp_config.json", None),
        ("file:///opt/thing", "file://<path>"),
    ],
)
def test_paths(text: str, expected: str | None, redactor: Redactor) -> None:
    assert redactor.text(text) == (text if expected is None else expected)
