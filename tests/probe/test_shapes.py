"""Where a field of the probe's table is missing, named with real keys and positions."""

from __future__ import annotations

import pytest

from omnigent_agy.probe.facts import FactVerdict, Finding, Seen
from omnigent_agy.probe.observations import Observations
from omnigent_agy.probe.shapes import gaps

SUMMARIES = {"trajectorySummaries": {"c1": {"status": "IDLE"}, "c2": {}}}


@pytest.mark.parametrize(
    ("document", "path", "expected"),
    [
        ({"a": {"b": 1}}, "a.b", []),
        ({"a": {}}, "a.b", ["a.b"]),
        ({"a": 3}, "a.b", ["a.b"]),
        (SUMMARIES, "trajectorySummaries.*.status", ["trajectorySummaries.c2.status"]),
        ({"trajectorySummaries": {}}, "trajectorySummaries.*.status", ["trajectorySummaries.*"]),
        ({"q": [{"o": [{"id": "1"}, {}]}]}, "q[].o[].id", ["q[0].o[1].id"]),
        ({"q": []}, "q[].id", ["q[]"]),
        ({"m": [[{"x": 1}], [{}]]}, "m[][].x", ["m[1][0].x"]),
        ({"p": {"response": "hi"}}, "p.modifiedResponse|p.response", []),
        ({"p": {}}, "p.modifiedResponse|p.response", ["p.modifiedResponse"]),
    ],
)
def test_gaps(document: object, path: str, expected: list[str]) -> None:
    assert gaps(document, path) == expected


def test_a_missing_field_fails_with_its_reader_and_place() -> None:
    observations = Observations()
    observations.add(Seen.START, "StartCascade", {"cascadeid": "x"})
    (finding,) = [f for f in observations.field_findings() if f.fact == "fields: StartCascade"]
    assert finding.verdict is FactVerdict.FAIL
    assert "MISSING cascadeId (read by rpc/client.py): StartCascade at cascadeId" in finding.seen


def test_optional_fields_absent_pass_and_say_so() -> None:
    observations = Observations()
    observations.add(Seen.FORCE_STOP, "ForceStopCascadeTree", {})
    (finding,) = [f for f in observations.field_findings() if "ForceStop" in f.fact]
    assert finding == Finding(
        "fields: ForceStopCascadeTree",
        FactVerdict.PASS,
        "(optional fields only)",
        "1 seen; all there; absent but optional: stoppedConversationIds",
        "§3",
    )


def test_a_place_never_seen_is_skipped_with_the_reason() -> None:
    observations = Observations()
    observations.not_seen(Seen.QUESTION_WAITING, "the question turn was not run")
    by_fact = {f.fact: f for f in observations.field_findings()}
    skipped = by_fact["fields: ASK_QUESTION WAITING"]
    assert skipped.verdict is FactVerdict.SKIP
    assert skipped.seen == "the question turn was not run"
    assert by_fact["fields: StartCascade"].seen == "the probe saw none"
