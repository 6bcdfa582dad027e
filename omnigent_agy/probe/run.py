"""One probe run: agy started the plugin's way in a scratch workspace, every check, clean-up.

`run_probe` never raises for what it finds: each check is a `facts.Finding`, and a step that
cannot go on (agy not found, agy never answering) ends the run with that finding and SKIP for
the rest. Whatever happens, the probe's agys, its tmux server and its scratch folder are gone
when it returns; the recording (redacted, `recording`) is written last.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from omnigent_agy.agy.gemini_home import person_gemini_dir
from omnigent_agy.config.agy_versions import TESTED_TEXT
from omnigent_agy.config.executable import resolve_executable
from omnigent_agy.config.settings import AgyConfig
from omnigent_agy.doctor.checks import DoctorLine, Status, read_agy_version
from omnigent_agy.errors import (
    AgyError,
    AgyNotFoundError,
    DiscoveryError,
    ProbeError,
    RecordingLeakError,
    RpcError,
)
from omnigent_agy.probe import extras, identity, methods, transport, unconfirmed
from omnigent_agy.probe.changelog import read_changelog
from omnigent_agy.probe.facts import FactVerdict, Finding, Seen
from omnigent_agy.probe.gate_checks import check_command, check_deny, check_question
from omnigent_agy.probe.held_values import held_values
from omnigent_agy.probe.hidden import check_hidden_workspace
from omnigent_agy.probe.observations import Observations
from omnigent_agy.probe.probe_turns import ProbeCascade, RecordingClient
from omnigent_agy.probe.recording import Recorder
from omnigent_agy.probe.redact import Redactor
from omnigent_agy.probe.scratch import ProbeAgy, Scratch, Started
from omnigent_agy.probe.subagent_checks import check_subagent_gate
from omnigent_agy.probe.turn_checks import (
    PLANS,
    Context,
    TurnPlan,
    check_interrupt,
    check_plain,
    stream_start,
)

__all__ = ["ProbeReport", "ProbeSettings", "run_probe"]

_logger = logging.getLogger(__name__)

type Say = Callable[[str], None]

_CHECKS: dict[str, Callable[[Context, TurnPlan], Awaitable[list[Finding]]]] = {
    "plain": check_plain,
    "command": check_command,
    "deny": check_deny,
    "question": check_question,
    "subagent": check_subagent_gate,
    "interrupt": check_interrupt,
}
# What each turn would have shown, for the field table's SKIP lines.
_SHOWS: dict[str, tuple[Seen, ...]] = {
    "plain": (Seen.PLANNER_GENERATING, Seen.PLANNER_DONE, Seen.USER_INPUT, Seen.LISTING),
    "command": (Seen.COMMAND_WAITING, Seen.COMMAND_ALLOWED, Seen.LISTING_WAITING),
    "deny": (Seen.COMMAND_DENIED,),
    "question": (Seen.QUESTION_WAITING, Seen.QUESTION_ANSWERED),
}


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    """What to probe: the agy the configuration names, which turns the person agreed to."""

    config: AgyConfig
    env: Mapping[str, str]
    turns: tuple[str, ...] = ()
    """Names of `turn_checks.PLANS` to run (each costs a model call)."""
    resume: bool = False
    """Restart agy on a copy of the conversation (no turn, about as long as agy's start)."""
    declined: str = "not run: no turns were agreed to"
    model: str | None = None
    record: Path | None = None
    ready_timeout: float = 90.0
    turn_timeout: float = 180.0


@dataclass(frozen=True, slots=True)
class ProbeReport:
    executable: str
    version: str
    findings: tuple[Finding, ...]
    recording: Path | None = None

    @property
    def failed(self) -> bool:
        return any(f.verdict is FactVerdict.FAIL for f in self.findings)


@dataclass(slots=True)
class _Run:
    settings: ProbeSettings
    say: Say
    findings: list[Finding] = field(default_factory=list)
    observations: Observations = field(default_factory=Observations)
    recorder: Recorder | None = None
    version: str = "unknown"
    changelog: tuple[str, ...] = ()


def _from_check(
    result: DoctorLine, section: str, expected: str = "as the plugin needs it"
) -> Finding:
    verdict = {
        Status.OK: FactVerdict.PASS,
        Status.FAIL: FactVerdict.FAIL,
        Status.WARN: FactVerdict.INFO,
        Status.SKIP: FactVerdict.SKIP,
    }[result.status]
    return Finding(result.name, verdict, expected, result.summary, section)


async def run_probe(settings: ProbeSettings, say: Say) -> ProbeReport:
    """Every check against the agy `settings.config` names; see the module doc."""
    run = _Run(settings, say)
    try:
        executable = resolve_executable(settings.config, settings.env)
    except AgyNotFoundError as exc:
        seen = str(exc.args[0])
        run.findings.append(Finding("agy executable", FactVerdict.FAIL, "agy found", seen, "§1"))
        return ProbeReport("not found", run.version, tuple(run.findings))
    version = await asyncio.to_thread(read_agy_version, executable, env=settings.env)
    run.version = version.shown or "unknown"
    tested = f"a version the plugin is tested with: agy {TESTED_TEXT} (1.2.2 at least)"
    run.findings.append(_from_check(version.result, "§1, §10", tested))
    changelog = await asyncio.to_thread(read_changelog, executable, settings.env)
    run.findings.append(changelog.finding)
    run.changelog = changelog.lines
    command = (str(executable), *settings.config.args)
    recording = await _with_scratch(run, command)
    return ProbeReport(str(executable), run.version, tuple(run.findings), recording)


async def _with_scratch(run: _Run, command: tuple[str, ...]) -> Path | None:
    settings = run.settings
    try:
        scratch = Scratch.create()
    except (ProbeError, OSError) as exc:
        run.findings.append(Finding("scratch workspace", FactVerdict.FAIL, "made", str(exc), ""))
        return None
    agys = ProbeAgy(
        scratch,
        command=command,
        config=settings.config,
        env=settings.env,
        ready_timeout=settings.ready_timeout,
    )
    gemini_dir = person_gemini_dir(settings.config.gemini_home, settings.env)
    redactor = Redactor(
        workspace=(scratch.workspace, scratch.workspace.resolve()),
        agy_state=(scratch.root / "state", (scratch.root / "state").resolve()),
        # What the probe copies into agy's folder, agy can echo: never recorded.
        secrets=held_values(gemini_dir, settings.env),
        names=(getpass.getuser(), socket.gethostname()),
    )
    run.recorder = Recorder(redactor)
    run.recorder.printed("agy changelog", run.changelog)
    try:
        await _with_agy(run, agys)
    finally:
        await agys.close()
        scratch.remove()
    if settings.record is None:
        return None
    return _write(run, scratch, redactor)


def _write(run: _Run, scratch: Scratch, redactor: Redactor) -> Path | None:
    recorder = run.recorder
    assert recorder is not None
    assert run.settings.record is not None
    from omnigent_agy.probe.report import render_table  # noqa: PLC0415 - no cycle at import

    try:
        folder = recorder.write(
            run.settings.record,
            agy_version=run.version,
            findings=run.findings,
            table=render_table(run.findings, width=100),
            private_paths=(scratch.root, Path.home(), *redactor.agy_state),
        )
    except (RecordingLeakError, OSError) as exc:
        run.findings.append(
            Finding("recording", FactVerdict.FAIL, "written, redacted", str(exc), "")
        )
        return None
    return folder


async def _with_agy(run: _Run, agys: ProbeAgy) -> None:
    state = agys.scratch.state("probe")
    run.findings += [_from_check(r, "§1b") for r in agys.seed(state)]
    run.say("starting agy as the plugin does (a fresh token, a private folder, tmux)…")
    began = time.monotonic()
    try:
        started = await agys.start("probe")
    except (DiscoveryError, ProbeError, AgyError) as exc:
        run.findings.append(Finding("agy starts", FactVerdict.FAIL, "ready", str(exc), "§1"))
        if agys.first_look is not None:
            run.findings.append(agys.first_look)  # why the plugin's client got nowhere
        return
    seconds = time.monotonic() - began
    seen = f"port {started.agy.port}, Heartbeat 200 after {seconds:.1f} s"
    run.findings.append(
        Finding("agy starts", FactVerdict.PASS, "Heartbeat 200 with our token", seen, "§1")
    )
    assert run.recorder is not None
    run.recorder.add_secret(started.agy.csrf_token)
    await _local_checks(run, started)
    client = RecordingClient(
        recorder=run.recorder,
        port=started.agy.port,
        csrf_token=started.agy.csrf_token,
        certificate=started.pin.certificate,
    )
    try:
        resumable = await _rpc_checks(run, client, started)
    finally:
        await client.aclose()
    if run.settings.resume and resumable is not None:
        run.say("starting agy again on a copy of the conversation (--conversation)…")
        cascade, steps = resumable
        found, resumed = await extras.check_resume(agys, started, cascade, steps)
        run.findings += found
        if resumed is not None:
            await agys.stop(resumed)
    elif run.settings.resume:
        why = "the conversation has no turn to bring back"
        run.findings.append(
            Finding("resume: --conversation on a copy", FactVerdict.SKIP, "", why, "§7, §9")
        )
    run.say("starting agy in a hidden folder and in a dot-free link to it…")
    run.findings += await check_hidden_workspace(agys)
    run.findings += run.observations.field_findings()


async def _local_checks(run: _Run, started: Started) -> None:
    agy, pin = started.agy, started.pin
    log_text = agy.log_file.read_text(encoding="utf-8", errors="replace")
    assert run.recorder is not None
    run.recorder.log_lines(identity.log_lines(log_text))
    run.findings += identity.check_process(agy.pid, agy.port)
    run.findings += identity.check_log(log_text, pid=agy.pid, port=agy.port, version=run.version)
    run.say("checking agy's port: TLS, HTTP versions, CSRF…")
    run.findings.append(await transport.check_tls(agy.port, pin.certificate))
    run.findings.append(await transport.check_http1(agy.port, pin.certificate, agy.csrf_token))
    run.findings += await transport.check_csrf(agy.port, pin.certificate, agy.csrf_token)
    run.findings.append(
        await transport.check_unknown_method(agy.port, pin.certificate, agy.csrf_token)
    )
    run.findings.append(await transport.check_plain_port(agy.port))


async def _rpc_checks(
    run: _Run, client: RecordingClient, started: Started
) -> tuple[str, int] | None:
    """The methods, the turns, `/clear`; the conversation and its length for the resume."""
    cascade, catalog = await _methods(run, client, started)
    if cascade is None:
        return None
    steps = 0
    if catalog is not None and catalog.plan is not None:
        assert run.recorder is not None
        conversation = ProbeCascade(
            client,
            cascade,
            plan_model=catalog.plan.enum,
            recorder=run.recorder,
            model_names={e.enum: e.display_name for e in catalog.catalog.entries},
        )
        steps = await _turns(run, conversation)
    else:
        _declined(run, "not run: agy offered no model to send a turn with")
    await _unconfirmed(run, client, cascade)
    run.say("typing /clear in agy's terminal…")
    run.findings += await extras.check_clear(client, started, cascade)
    return (cascade, steps) if steps else None


async def _methods(
    run: _Run, client: RecordingClient, started: Started
) -> tuple[str | None, methods.Catalog | None]:
    """The methods that cost no turn; the conversation the plugin would bind (the TUI's,
    else one started over RPC) and agy's catalog."""
    run.say("asking the methods the plugin uses (no turn)…")
    findings = run.findings
    findings.append(await methods.check_heartbeat(client))
    catalog_finding, catalog = await methods.check_catalog(
        client, run.observations, run.settings.model
    )
    findings.append(catalog_finding)
    listing_finding, cascade = await methods.check_listing(client)
    findings.append(listing_finding)
    findings += await methods.check_start_and_stop(client, run.observations)
    if cascade is None:
        try:
            cascade = await client.start_cascade()
        except RpcError as exc:
            findings.append(Finding("a conversation", FactVerdict.FAIL, "one", str(exc), "§3"))
            return None, catalog
    agy = started.agy
    findings += await methods.check_metadata(
        client,
        cascade,
        run.observations,
        port=agy.port,
        certificate=started.pin.certificate,
        token=agy.csrf_token,
    )
    findings.append(await methods.check_retired(client))
    findings += await methods.check_quota(client, run.observations)
    return cascade, catalog


async def _turns(run: _Run, conversation: ProbeCascade) -> int:
    """The turns the person agreed to, in the order of `PLANS`; the conversation's length."""
    ctx = Context(conversation, run.observations, run.settings.turn_timeout, run.say)
    chosen = [plan for plan in PLANS if plan.name in run.settings.turns]
    for plan in PLANS:
        if plan not in chosen:
            _declined(run, run.settings.declined, only=plan.name)
    for number, plan in enumerate(chosen, start=1):
        run.say(f"turn {number} of {len(chosen)}: {plan.shows}…")
        check = _CHECKS[plan.name]
        try:
            run.findings += await check(ctx, plan)
        except RpcError as exc:
            seen = f"the turn broke off: {exc}"
            run.findings.append(
                Finding(f"turn: {plan.name}", FactVerdict.FAIL, plan.shows, seen, "")
            )
    run.findings.append(stream_start(conversation))
    if not chosen:
        return 0
    try:
        listing = await conversation.client.get_all_cascade_trajectories()
    except RpcError as exc:
        run.findings.append(
            Finding("the listing after turns", FactVerdict.FAIL, "", str(exc), "§3")
        )
    else:
        summaries = listing.get("trajectorySummaries")
        mine = (
            {conversation.cascade_id: summaries.get(conversation.cascade_id)}
            if isinstance(summaries, dict) and conversation.cascade_id in summaries
            else {}
        )
        run.observations.add(Seen.LISTING, "after the turns", {"trajectorySummaries": mine})
    return conversation.length


def _declined(run: _Run, why: str, *, only: str | None = None) -> None:
    for plan in PLANS:
        if only is not None and plan.name != only:
            continue
        run.findings.append(Finding(f"turn: {plan.name}", FactVerdict.SKIP, plan.shows, why, ""))
        for seen in _SHOWS.get(plan.name, ()):
            run.observations.not_seen(seen, f"the {plan.name} turn was not run")


async def _unconfirmed(run: _Run, client: RecordingClient, cascade: str) -> None:
    asked = await unconfirmed.ask_trajectory(client, cascade)
    answers: list[tuple[str, object]] = [asked] if asked is not None else []
    generator = await unconfirmed.ask_generator_metadata(client, cascade)
    if generator is None:
        run.observations.not_seen(Seen.GENERATOR, "agy does not have the method")
    else:
        answers.append(generator)
        run.observations.add(Seen.GENERATOR, *generator)
    recorder = run.recorder
    assert recorder is not None
    answers += recorder.answers()
    run.findings.append(unconfirmed.context_estimate(answers))
    polls = [doc for label, doc in answers if label == "GetCascadeTrajectorySteps"]
    # The longest poll holds every model call once (the polls overlap).
    whole = max(polls, key=lambda doc: len(unconfirmed.usages_in(doc)), default=None)
    usages = unconfirmed.usages_in(whole) if whole is not None else []
    run.findings.append(unconfirmed.cached_tokens(usages))
    listings = [
        (label, doc)
        for label, doc in answers
        if label in ("GetAllCascadeTrajectories", "GetConversationMetadata")
    ]
    run.findings.append(unconfirmed.title(listings))
