"""The interaction bridge against agy-sim in tmux (real TLS HTTP/2), with a scripted person.

Each test runs one turn: a reader thread announces agy's gates, the bridge handles each one
with a `Person` (a scripted `HostPrompts` that records what it was shown), and what agy
received is checked on the simulator's side (`completedInteractions`, SimulatorSnapshot).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hookplugins import register
from simproc import FAST, Sim, plan_model, sim_launcher
from waiting import await_until, wait_until

from omnigent_agy.errors import InteractionDeliveryError
from omnigent_agy.interactions.bridge import InteractionBridge
from omnigent_agy.interactions.gates import (
    elicitation_payload,
    gate_of,
    permission_request_for,
    question_payload,
)
from omnigent_agy.interactions.outcome import InteractionOutcome, OutcomeStatus
from omnigent_agy.interactions.policy import (
    PermissionDecision,
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
    RequestKind,
    Verdict,
    parse_rules,
)
from omnigent_agy.interactions.prompts import (
    ElicitationAction,
    ElicitationAnswer,
    ElicitationCard,
    PermissionAnswer,
    PermissionCard,
    PolicyAction,
    PolicyVerdict,
    QuestionAnswer,
    QuestionAnswers,
    QuestionForm,
    answer_problem,
)
from omnigent_agy.plugins import hookimpl, new_plugin_manager
from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.reader import CascadeReader, ReaderEvent, ReaderSettings, TurnEnded
from omnigent_agy.reading.sink import HandoffSink
from omnigent_agy.reading.steps import (
    InteractionKind,
    Question,
    QuestionOption,
    RequestedInteraction,
    StepKey,
)
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient
from omnigent_agy.rpc.wire import encode_envelope

pytestmark = pytest.mark.tmux

QUICK = ReaderSettings(idle_timeout=1.0, poll_interval=0.1, reconnect_initial=0.05)
ASK = PolicyVerdict(PolicyAction.ASK)
WAITING = "CORTEX_STEP_STATUS_WAITING"
RETRY_TIMEOUT = 2.0  # seconds before the second simulator times a gate out and retries it


@pytest.fixture(scope="module")
def agy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_launcher(tmp_path_factory.mktemp("bridge-sim"), "agy-bridge") as launcher:
        yield launcher.launch(*FAST, "--sim-debug-rpc")


@pytest.fixture(scope="module")
def impatient_agy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """An agy that times a gate out after RETRY_TIMEOUT seconds and re-opens it (§6)."""
    root = tmp_path_factory.mktemp("bridge-sim-retry")
    with sim_launcher(root, "agy-bridge-retry") as launcher:
        yield launcher.launch(*FAST, "--sim-debug-rpc", "--sim-waiting-timeout", str(RETRY_TIMEOUT))


@pytest.fixture
def sim(agy: Sim) -> Iterator[Sim]:
    agy.clear_faults()
    yield agy
    agy.clear_faults()


@pytest.fixture(autouse=True)
def no_stray_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    wait_until(lambda: set(threading.enumerate()) <= before, timeout=5.0, what="threads to end")


def run[T](main: Callable[[], Awaitable[T]]) -> T:
    """Run `main` on a fresh loop and check it left no task behind."""

    async def checked() -> T:
        result = await main()
        stray = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not stray, f"tasks left behind: {stray}"
        return result

    return asyncio.run(checked())


# --- the scripted person ---------------------------------------------------------------------


@dataclass
class Person:
    """A `HostPrompts` that answers from scripts and records everything it was shown."""

    policy: PolicyVerdict = ASK
    permissions: list[PermissionAnswer | None] = field(default_factory=list)
    answers: list[QuestionAnswers | None] = field(default_factory=list)
    hold: bool = False  # never answer (until cancelled)
    before_answer: Callable[[], Awaitable[None]] | None = None
    evaluated: list[PermissionRequest] = field(default_factory=list)
    cards: list[PermissionCard] = field(default_factory=list)
    forms: list[QuestionForm] = field(default_factory=list)
    cancelled: int = 0
    shown: asyncio.Event = field(default_factory=asyncio.Event)

    async def evaluate_policy(self, request: PermissionRequest) -> PolicyVerdict:
        self.evaluated.append(request)
        return self.policy

    async def ask_permission(self, card: PermissionCard) -> PermissionAnswer | None:
        self.cards.append(card)
        return await self._reply(self.permissions)

    async def ask_questions(self, form: QuestionForm) -> QuestionAnswers | None:
        self.forms.append(form)
        return await self._reply(self.answers)

    async def ask_elicitation(self, card: ElicitationCard) -> ElicitationAnswer | None:
        raise AssertionError("the simulator asks no MCP elicitations")

    async def _reply[A](self, script: list[A]) -> A:
        self.shown.set()
        try:
            if self.hold:
                await asyncio.Event().wait()
            if self.before_answer is not None:
                await self.before_answer()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return script.pop(0)


def pick(*ids: str, write_in: str | None = None) -> QuestionAnswer:
    return QuestionAnswer(selected=ids, write_in=write_in)


def answers(*each: QuestionAnswer) -> QuestionAnswers:
    return QuestionAnswers(each)


# --- one turn on the simulator ---------------------------------------------------------------


class TurnOnSim:
    """A cascade with a reader, a client and a bridge on this loop; the executor's part."""

    def __init__(
        self,
        sim: Sim,
        person: Person,
        *,
        policy: PermissionPolicy | None = None,
        plugins: Any = None,
        auto: bool = True,
    ) -> None:
        self.sim, self.person, self.auto = sim, person, auto
        self.policy = policy or PermissionPolicy()
        self.plugins = plugins
        self.requests: list[InteractionRequested] = []
        self.tasks: list[asyncio.Task[InteractionOutcome]] = []
        self.events: list[ReaderEvent] = []

    async def __aenter__(self) -> TurnOnSim:
        self.client = RpcClient(port=self.sim.port, csrf_token=self.sim.token or "")
        self.cascade = await self.client.start_cascade()
        self.model = await plan_model(self.client)
        self.sink: HandoffSink[ReaderEvent] = HandoffSink()
        self.sink.bind()
        self.reader = CascadeReader(
            port=self.sim.port,
            csrf_token=self.sim.token or "",
            cascade_id=self.cascade,
            sink=self.sink,
            settings=QUICK,
        )
        self.reader.start()
        assert await asyncio.to_thread(self.reader.wait_ready, 20)
        self.link = FollowingClient(
            AgyEndpoint(port=self.sim.port, csrf_token=self.sim.token or "")
        )
        self.bridge = InteractionBridge(
            client=self.link,
            cascade_id=self.cascade,
            prompts=self.person,
            policy=self.policy,
            plugin_manager=self.plugins,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        assert await asyncio.to_thread(self.reader.stop)
        assert self.client.http_version == "HTTP/2"
        await self.client.aclose()
        await self.link.aclose()

    async def send(self, text: str) -> None:
        await self.client.send_user_cascade_message(self.cascade, text, plan_model=self.model)

    def spawn(self, request: InteractionRequested) -> asyncio.Task[InteractionOutcome]:
        task = asyncio.create_task(self.bridge.handle(request))
        self.tasks.append(task)
        return task

    async def until[E](
        self, kind: type[E], where: Callable[[E], bool] = lambda e: True, timeout: float = 30.0
    ) -> E:
        async with asyncio.timeout(timeout):
            while True:
                event = await self.sink.get()
                self.events.append(event)
                if isinstance(event, InteractionRequested):
                    self.requests.append(event)
                    if self.auto:
                        self.spawn(event)
                if isinstance(event, kind) and where(event):
                    return event

    async def finish(self) -> list[InteractionOutcome]:
        await self.until(TurnEnded)
        return list(await asyncio.gather(*self.tasks))

    async def step(self, index: int) -> dict[str, Any]:
        steps = await self.client.get_cascade_trajectory_steps(self.cascade, step_offset=index)
        return steps[0]

    async def delivered(self) -> list[dict[str, Any]]:
        """Every answer agy accepted for this cascade, as the simulator recorded it."""
        snapshot = await self.client.call("SimulatorSnapshot", {})
        return list(snapshot["cascades"][self.cascade]["interactions"])

    async def replies(self) -> list[str]:
        steps = await self.client.get_cascade_trajectory_steps(self.cascade)
        return [
            s["plannerResponse"].get("response", "")
            for s in steps
            if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
        ]


def response(step: dict[str, Any], nth: int = -1) -> dict[str, Any]:
    """What agy recorded as delivered to `step` (its `completedInteractions`, docs/wire.md §6)."""
    return dict(step["completedInteractions"][nth]["response"])


def one_turn(
    sim: Sim, person: Person, text: str, **kwargs: Any
) -> tuple[
    list[InteractionOutcome], list[InteractionRequested], dict[int, dict[str, Any]], list[str]
]:
    """Run a turn to its end; the outcomes, requests, gated steps as agy has them, replies."""

    async def main() -> Any:
        async with TurnOnSim(sim, person, **kwargs) as turn:
            await turn.send(text)
            outcomes = await turn.finish()
            steps = {r.key.step_index: await turn.step(r.key.step_index) for r in turn.requests}
            return outcomes, turn.requests, steps, await turn.replies()

    return run(main)  # type: ignore[no-any-return]


# --- permissions -----------------------------------------------------------------------------


def test_approve_once_shows_command_cwd_and_description_and_runs_it(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE])
    outcomes, requests, steps, _ = one_turn(sim, person, "run: echo hello")
    [outcome] = outcomes
    assert outcome.status is OutcomeStatus.ANSWERED
    assert outcome.delivered_to == requests[0].key
    assert outcome.decided_by == "person"
    [card] = person.cards
    assert card.subject == "echo hello"
    assert card.kind is RequestKind.COMMAND
    assert card.cwd == str(sim.workspace)
    assert card.action_description == "Running echo hello"
    step = steps[requests[0].key.step_index]
    assert response(step)["permission"] == {"allow": True}
    assert step["runCommand"]["combinedOutput"]["full"] == "hello\n"  # it ran
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert not step["runCommand"].get("userRejected")


def test_allow_for_this_conversation_is_delivered_with_conversation_scope(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_CONVERSATION])
    _, requests, steps, _ = one_turn(sim, person, "run: pwd")
    assert person.cards[0].persist_pattern == "pwd"
    assert response(steps[requests[0].key.step_index])["permission"] == {
        "allow": True,
        "scope": "PERMISSION_SCOPE_CONVERSATION",
    }


def test_deny_is_delivered_and_the_turn_goes_on(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.DENY])
    outcomes, requests, steps, replies = one_turn(sim, person, "run: rm -rf build")
    [outcome] = outcomes
    assert outcome.status is OutcomeStatus.ANSWERED
    assert not outcome.dismissed  # a deny is an answer, not the end of the turn (§1)
    step = steps[requests[0].key.step_index]
    assert response(step)["permission"].get("allow") is not True  # protojson omits false
    assert step["runCommand"]["userRejected"] is True
    assert any("did not run" in reply for reply in replies), "agy should reply after a deny"


def test_a_dismissed_card_refuses_the_gate_and_says_the_turn_should_end(sim: Sim) -> None:
    person = Person(permissions=[None])
    outcomes, requests, steps, _ = one_turn(sim, person, "run: make deploy")
    [outcome] = outcomes
    assert outcome.dismissed
    assert outcome.delivered  # agy is not left parked on the gate
    assert response(steps[requests[0].key.step_index])["permission"].get("allow") is not True


@pytest.mark.parametrize(
    ("host", "policy", "allowed", "asked", "decided_by"),
    [
        pytest.param(
            PolicyAction.ALLOW, PermissionPolicy(), True, False, "host policy", id="host-allow"
        ),
        pytest.param(
            PolicyAction.DENY, PermissionPolicy(), False, False, "host policy", id="host-deny"
        ),
        pytest.param(
            PolicyAction.DENY,
            PermissionPolicy(allow=parse_rules(["command(echo:*)"])),
            False,
            False,
            "host policy",
            id="host-deny-beats-allow-rule",
        ),
        pytest.param(
            PolicyAction.ASK,
            PermissionPolicy(allow=parse_rules(["command(echo:*)"])),
            True,
            False,
            "allow rule 'command(echo:*)'",
            id="ask-then-allow-rule",
        ),
        pytest.param(
            PolicyAction.ASK,
            PermissionPolicy(mode=PermissionMode.BYPASS, deny=parse_rules(["command(echo:*)"])),
            False,
            False,
            "deny rule 'command(echo:*)'",
            id="ask-then-deny-rule",
        ),
        pytest.param(
            PolicyAction.ASK,
            PermissionPolicy(mode=PermissionMode.BYPASS),
            True,
            False,
            "mode 'bypass'",
            id="ask-then-bypass-mode",
        ),
        pytest.param(
            PolicyAction.ASK,
            PermissionPolicy(mode=PermissionMode.PLAN),
            False,
            False,
            "mode 'plan'",
            id="ask-then-plan-mode",
        ),
        pytest.param(PolicyAction.ASK, PermissionPolicy(), True, True, "person", id="ask-person"),
    ],
)
def test_policy_precedence_host_then_rules_then_person(
    sim: Sim,
    caplog: pytest.LogCaptureFixture,
    host: PolicyAction,
    policy: PermissionPolicy,
    allowed: bool,
    asked: bool,
    decided_by: str,
) -> None:
    caplog.set_level(logging.INFO, logger="omnigent_agy")
    person = Person(
        policy=PolicyVerdict(host, "test verdict"), permissions=[PermissionAnswer.ALLOW_ONCE]
    )
    outcomes, requests, steps, replies = one_turn(sim, person, "run: echo policy", policy=policy)
    [outcome] = outcomes
    assert outcome.status is OutcomeStatus.ANSWERED
    assert outcome.decided_by.startswith(decided_by)
    assert bool(person.cards) is asked
    [evaluated] = person.evaluated  # the host's policy is always asked first
    assert evaluated.kind is RequestKind.COMMAND
    assert evaluated.command_line == "echo policy"
    step = steps[requests[0].key.step_index]
    assert (response(step)["permission"].get("allow") is True) is allowed
    assert len(replies) >= 2, "agy carries on after an automatic answer too"
    if not asked:  # every automatic decision is logged with what made it
        verdict = "allow" if allowed else "deny"
        assert any(
            r.getMessage().startswith(f"permission {verdict} by {decided_by}")
            for r in caplog.records
        ), [r.getMessage() for r in caplog.records]


class CorpPolicy:
    """An organisation's policy plugin: no `echo` from agents, whatever the rules say."""

    @hookimpl
    def agy_permission_decision(self, request: PermissionRequest) -> PermissionDecision | None:
        if (request.command_line or "").startswith("echo"):
            return PermissionDecision(Verdict.DENY, "plugin:corp", "no echo from agents")
        return None


def test_a_policy_plugin_overrides_the_allow_rules(sim: Sim) -> None:
    manager = new_plugin_manager(load_entry_points=False)
    plugin = CorpPolicy()
    register(manager, plugin, name="corp")
    try:
        policy = PermissionPolicy(mode=PermissionMode.BYPASS, allow=parse_rules(["command(*)"]))
        person = Person()
        outcomes, requests, steps, _ = one_turn(
            sim, person, "run: echo from a plugin", policy=policy, plugins=manager
        )
    finally:
        manager.unregister(plugin)
    assert outcomes[0].decided_by == "plugin:corp 'no echo from agents'"
    assert not person.cards
    step = steps[requests[0].key.step_index]
    assert response(step)["permission"].get("allow") is not True
    assert step["runCommand"]["userRejected"] is True


def test_chained_gates_are_each_asked_and_answered(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE, PermissionAnswer.DENY])
    outcomes, requests, steps, _ = one_turn(sim, person, "run: git status && git log -n 1")
    assert [c.subject for c in person.cards] == ["git status", "git log -n 1"]
    assert all(c.command_line == "git status && git log -n 1" for c in person.cards)
    assert [o.status for o in outcomes] == [OutcomeStatus.ANSWERED] * 2
    [index] = {r.key.step_index for r in requests}  # both gates on the same step (§6)
    step = steps[index]
    assert response(step, 0)["permission"] == {"allow": True}
    assert response(step, 1)["permission"].get("allow") is not True
    assert step["runCommand"]["userRejected"] is True


# --- questions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "given", "expected"),
    [
        pytest.param(
            "ask me a question",
            answers(pick("2")),
            [{"question": "Which color should the button be?", "selectedOptionIds": ["2"]}],
            id="single",
        ),
        pytest.param(
            "a multi choice please",
            answers(pick("1", "3")),
            [{"question": "Which checks should I run?", "selectedOptionIds": ["1", "3"]}],
            id="multi",
        ),
        pytest.param(
            "a survey please",
            answers(pick("2"), pick("1"), pick("1", "2")),
            [
                {"question": "Which language should the tool use?", "selectedOptionIds": ["2"]},
                {"question": "Which test framework?", "selectedOptionIds": ["1"]},
                {"question": "Which extras do you want?", "selectedOptionIds": ["1", "2"]},
            ],
            id="several",
        ),
        pytest.param(
            "write-in please",
            answers(pick(write_in="core_utils")),
            [
                {
                    "question": "What should the new module be called?",
                    "writeInResponse": "core_utils",
                }
            ],
            id="write-in",
        ),
    ],
)
def test_questions_are_answered_with_option_ids(
    sim: Sim, text: str, given: QuestionAnswers, expected: list[dict[str, Any]]
) -> None:
    person = Person(answers=[given])
    outcomes, requests, steps, replies = one_turn(sim, person, text)
    [outcome] = outcomes
    assert outcome.status is OutcomeStatus.ANSWERED
    [form] = person.forms
    assert len(form.questions) == len(expected)
    assert all(option.id.isdigit() for q in form.questions for option in q.options)
    assert response(steps[requests[0].key.step_index])["askQuestion"]["responses"] == expected
    assert any(reply.startswith("Thanks! Your answers") for reply in replies)


def test_an_invalid_option_is_refused_with_the_valid_ones_named_then_asked_again(sim: Sim) -> None:
    person = Person(answers=[answers(pick("7")), answers(pick("1", "2")), answers(pick("3"))])

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person) as turn:
            await turn.send("ask me a question")
            outcomes = await turn.finish()
            return outcomes, await turn.delivered()

    outcomes, delivered = run(main)
    assert outcomes[0].status is OutcomeStatus.ANSWERED
    first, second, third = person.forms
    assert first.error is None
    assert second.error is not None
    assert "'7'" in second.error
    assert "valid options: 1 (Red), 2 (Blue), 3 (Green)" in second.error
    assert third.error is not None
    assert "takes one option" in third.error
    # Nothing invalid ever reached agy: one delivery, the valid one.
    [only] = delivered
    assert only["askQuestion"]["responses"][0]["selectedOptionIds"] == ["3"]


# What a person could type: shell and tmux syntax, quotes, a newline, control characters, a
# right-to-left override, 4 KB of it: agy gets it exactly, nothing runs.
HOSTILE_WRITE_IN = (
    "core_$(touch pwned)_`id`_#(touch pwned)_#{pane_id}; 'q' \"q\"\n"
    "second line\t\u202eevil\x1b[2J\x00 " + "x" * 4096
)


def test_a_typed_answer_reaches_agy_exactly_and_half_a_surrogate_is_asked_again(
    sim: Sim,
) -> None:
    person = Person(
        answers=[answers(pick(write_in="core\ud800")), answers(pick(write_in=HOSTILE_WRITE_IN))]
    )

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person) as turn:
            await turn.send("write-in please")
            outcomes = await turn.finish()
            return outcomes, await turn.delivered()

    outcomes, delivered = run(main)
    assert outcomes[0].status is OutcomeStatus.ANSWERED
    first, second = person.forms
    assert first.error is None
    assert second.error is not None
    assert "not text (U+D800): type it again" in second.error
    [only] = delivered
    [answer] = only["askQuestion"]["responses"]
    assert answer == {
        "question": "What should the new module be called?",
        "writeInResponse": HOSTILE_WRITE_IN,
    }
    assert not list(sim.workspace.rglob("pwned"))


def test_a_dismissed_question_is_cancelled_on_the_wire(sim: Sim) -> None:
    person = Person(answers=[None])
    outcomes, requests, steps, replies = one_turn(sim, person, "ask me a question")
    assert outcomes[0].dismissed
    assert response(steps[requests[0].key.step_index])["askQuestion"] == {"cancelled": True}
    assert any("cancelled" in reply for reply in replies)


# --- timeouts, duplicates, stale announcements -----------------------------------------------


def test_a_late_answer_reaches_agys_retry_of_the_gate(impatient_agy: Sim) -> None:
    sim = impatient_agy
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE])

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person) as turn:

            async def after_the_retry() -> None:  # the person answers after agy timed out
                first = turn.requests[0].key.step_index
                await await_until(
                    lambda: turn.client.get_cascade_trajectory_steps(
                        turn.cascade, step_offset=first
                    ),
                    until=lambda steps: (
                        steps[0]["status"] == "CORTEX_STEP_STATUS_ERROR"
                        and any(s["status"] == WAITING for s in steps[1:])
                    ),
                    timeout=RETRY_TIMEOUT * 5,
                    what="agy to time the gate out and ask again",
                )

            person.before_answer = after_the_retry
            await turn.send("run: echo late")
            outcomes = await turn.finish()
            original = await turn.step(turn.requests[0].key.step_index)
            return outcomes, turn.requests, original, await turn.delivered()

    outcomes, requests, original, delivered = run(main)
    assert len(person.cards) == 1, "the retry must not ask the person a second time"
    assert len(requests) == 2
    first, retry = requests
    assert retry.key.step_index > first.key.step_index
    assert [o.status for o in outcomes] == [OutcomeStatus.ANSWERED, OutcomeStatus.DUPLICATE]
    assert outcomes[0].delivered_to == retry.key
    assert original["status"] == "CORTEX_STEP_STATUS_ERROR"
    assert "completedInteractions" not in original
    [only] = delivered
    assert only["stepIndex"] == retry.key.step_index
    assert only["permission"] == {"allow": True}


def test_concurrent_handles_of_one_gate_ask_once(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE])

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person, auto=False) as turn:
            await turn.send("run: echo twice")
            gate = await turn.until(InteractionRequested)
            turn.spawn(gate), turn.spawn(gate)
            outcomes = await turn.finish()
            late = await turn.bridge.handle(gate)  # a stale re-announcement after the fact
            return outcomes, late, await turn.delivered()

    outcomes, late, delivered = run(main)
    assert len(person.cards) == 1
    assert sorted(o.status for o in outcomes) == [OutcomeStatus.ANSWERED, OutcomeStatus.DUPLICATE]
    assert late.status is OutcomeStatus.GONE
    assert len(delivered) == 1


# --- delivery failures -----------------------------------------------------------------------


def test_a_transient_failure_while_still_waiting_is_sent_again(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE])
    fault = {
        "kind": "http_error",
        "method": "HandleCascadeUserInteraction",
        "status": 503,
        "times": 1,
    }

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person) as turn:
            await turn.send("run: echo flaky")
            await turn.until(InteractionRequested)
            sim.set_faults({**fault, "id": turn.cascade}, restart=len(sim.ports_logged()) - 1)
            outcomes = await turn.finish()
            return outcomes, await turn.delivered()

    outcomes, delivered = run(main)
    assert outcomes[0].status is OutcomeStatus.ANSWERED
    assert [d["permission"] for d in delivered] == [{"allow": True}]


def test_a_refused_answer_on_a_still_waiting_step_is_a_typed_error(sim: Sim) -> None:
    person = Person(permissions=[PermissionAnswer.ALLOW_ONCE])
    fault = {"kind": "http_error", "method": "HandleCascadeUserInteraction", "status": 500}

    async def main() -> BaseException | None:
        async with TurnOnSim(sim, person, auto=False) as turn:
            await turn.send("run: echo refused")
            gate = await turn.until(InteractionRequested)
            sim.set_faults({**fault, "id": turn.cascade}, restart=len(sim.ports_logged()) - 1)
            try:
                await turn.bridge.handle(gate)
            except InteractionDeliveryError as exc:
                error: BaseException | None = exc
            else:
                error = None
            sim.clear_faults()
            assert await turn.bridge.deny_pending()  # the interrupt frees agy afterwards
            await turn.until(TurnEnded)
            return error

    error = run(main)
    assert isinstance(error, InteractionDeliveryError)
    assert error.cause is not None
    assert "still waiting" in str(error)


# --- interrupt -------------------------------------------------------------------------------


def test_interrupt_during_a_pending_approval_denies_it_and_cancels_the_card(sim: Sim) -> None:
    person = Person(hold=True)

    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, person) as turn:
            await turn.send("run: sleep 1000")
            gate = await turn.until(InteractionRequested)
            await asyncio.wait_for(person.shown.wait(), 10)
            assert turn.bridge.pending == 1
            assert await turn.bridge.deny_pending()
            [outcome] = await asyncio.gather(*turn.tasks)
            assert turn.bridge.pending == 0
            await turn.client.cancel_cascade_steps(turn.cascade)
            await turn.until(TurnEnded)
            return outcome, await turn.step(gate.key.step_index), await turn.delivered()

    outcome, step, delivered = run(main)
    assert outcome.status is OutcomeStatus.INTERRUPTED
    assert person.cancelled == 1, "the pending card must be cancelled"
    assert step["runCommand"]["userRejected"] is True
    assert response(step)["permission"].get("allow") is not True
    assert len(delivered) == 1


def test_interrupt_refuses_a_gate_nobody_is_handling_yet(sim: Sim) -> None:
    async def main() -> tuple[Any, ...]:
        async with TurnOnSim(sim, Person(), auto=False) as turn:
            await turn.send("ask me a question")
            gate = await turn.until(InteractionRequested)
            denied = await turn.bridge.deny_pending()
            await turn.until(TurnEnded)
            again = await turn.bridge.deny_pending()
            return denied, again, await turn.step(gate.key.step_index)

    denied, again, step = run(main)
    assert denied
    assert not again, "nothing is left to deny"
    assert response(step)["askQuestion"] == {"cancelled": True}


def test_a_cancelled_handle_cancels_its_prompt_and_leaves_nothing_running(sim: Sim) -> None:
    person = Person(hold=True)

    async def main() -> int:
        async with TurnOnSim(sim, person) as turn:
            await turn.send("run: echo never")
            await turn.until(InteractionRequested)
            await asyncio.wait_for(person.shown.wait(), 10)
            [task] = turn.tasks
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert turn.bridge.pending == 0
            assert await turn.bridge.deny_pending()  # the gate itself is still open: refuse it
            await turn.until(TurnEnded)
            return len(await turn.delivered())

    assert run(main) == 1
    assert person.cancelled == 1


# --- pure mapping (no simulator) -------------------------------------------------------------


def gate_request(
    index: int = 5,
    *,
    kind: InteractionKind = InteractionKind.PERMISSION,
    action: str | None = "command",
    target: str | None = "git status",
    step_type: str = "CORTEX_STEP_TYPE_RUN_COMMAND",
    questions: tuple[Question, ...] = (),
) -> InteractionRequested:
    raw: dict[str, Any] = {"permission": {"resource": {"action": action, "target": target}}}
    if kind is InteractionKind.ASK_QUESTION:
        raw = {"askQuestion": {"questions": [{"question": q.text} for q in questions]}}
    return InteractionRequested(
        key=StepKey("c", "t", index),
        call_id=f"agy:t:{index}",
        step_type=step_type,
        wanted=RequestedInteraction(
            kind=kind, raw=raw, action=action, target=target, questions=questions
        ),
        command_line="git status && git log",
        cwd="/w",
    )


@pytest.mark.parametrize(
    ("step_type", "action", "target", "kind", "field_", "value"),
    [
        (
            "CORTEX_STEP_TYPE_RUN_COMMAND",
            "command",
            "git status",
            RequestKind.COMMAND,
            "command_line",
            "git status",
        ),
        (
            "CORTEX_STEP_TYPE_RUN_COMMAND",
            None,
            None,
            RequestKind.COMMAND,
            "command_line",
            "git status && git log",
        ),
        (
            "CORTEX_STEP_TYPE_VIEW_FILE",
            "read_file",
            "/w/a.py",
            RequestKind.READ,
            "paths",
            ("/w/a.py",),
        ),
        (
            "CORTEX_STEP_TYPE_CODE_ACTION",
            "write_file",
            "src/b.py",
            RequestKind.EDIT,
            "paths",
            ("src/b.py",),
        ),
        (
            "CORTEX_STEP_TYPE_MCP_TOOL",
            "mcp_tool",
            "github/create_pr",
            RequestKind.MCP,
            "mcp_tool",
            "github/create_pr",
        ),
        (
            "CORTEX_STEP_TYPE_SOMETHING_NEW",
            "teleport",
            "moon",
            RequestKind.OTHER,
            "paths",
            ("moon",),
        ),
    ],
)
def test_a_permission_gate_becomes_a_policy_request(
    step_type: str,
    action: str | None,
    target: str | None,
    kind: RequestKind,
    field_: str,
    value: object,
) -> None:
    request = permission_request_for(
        gate_request(action=action, target=target, step_type=step_type)
    )
    assert request.kind is kind
    assert getattr(request, field_) == value
    assert request.cwd == "/w"


def test_chained_gates_on_one_step_are_different_gates_and_a_retry_is_the_same_subject() -> None:
    first, second = gate_request(5, target="git status"), gate_request(5, target="git log")
    retry = gate_request(9, target="git status")
    assert gate_of(first).id != gate_of(second).id
    assert gate_of(first).subject != gate_of(second).subject
    assert gate_of(retry).subject == gate_of(first).subject
    assert gate_of(retry).id != gate_of(first).id


COLOR = Question("Which color?", (QuestionOption("1", "Red"), QuestionOption("2", "Blue")), False)
CHECKS = Question(
    "Which checks?", (QuestionOption("1", "Lint"), QuestionOption("2", "Tests")), True
)
FORM = QuestionForm("c", (COLOR, CHECKS))


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        pytest.param(answers(pick("2"), pick("1", "2")), None, id="valid"),
        pytest.param(
            answers(pick(write_in="teal"), QuestionAnswer(skipped=True)),
            None,
            id="write-in-and-skip",
        ),
        pytest.param(
            answers(pick("3"), pick("1")),
            "has no option '3': type a number from 1 to 2; valid options: 1 (Red), 2 (Blue)",
            id="unknown",
        ),
        pytest.param(
            answers(pick("1", "2"), pick("1")),
            "takes one option, 2 were chosen",
            id="two-for-single",
        ),
        pytest.param(answers(pick("1"), pick("1", "1")), "the same option twice", id="twice"),
        pytest.param(
            answers(pick("1"), QuestionAnswer(write_in="  ")), "empty written answer", id="blank"
        ),
        pytest.param(answers(pick("1")), "expected answers to 2 question(s), got 1", id="too-few"),
    ],
)
def test_answers_are_checked_against_the_offered_options(
    given: QuestionAnswers, problem: str | None
) -> None:
    found = answer_problem(FORM, given)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


def test_question_payload_sends_ids_write_ins_and_skips() -> None:
    payload = question_payload(FORM, answers(pick(write_in="teal"), QuestionAnswer(skipped=True)))
    assert payload == {
        "responses": [
            {"question": "Which color?", "writeInResponse": "teal"},
            {"question": "Which checks?", "skipped": True},
        ]
    }


def test_an_mcp_form_typed_with_half_a_surrogate_pair_can_still_be_sent() -> None:
    typed = {"repo": "a/b\ud800", "note": "é $(id) \x1b[2J"}
    payload = elicitation_payload(ElicitationAnswer(ElicitationAction.ACCEPT, typed))
    envelope = encode_envelope({"elicitation": payload})  # the wire's own encoder
    sent = json.loads(envelope[5:].decode("utf-8"))["elicitation"]["contentJson"]
    assert json.loads(sent) == typed
    # Text without one goes as it is (readable in agy's log).
    plain = elicitation_payload(ElicitationAnswer(ElicitationAction.ACCEPT, {"n": "é"}))
    assert plain["contentJson"] == '{"n": "é"}'


def test_elicitation_payloads_carry_content_only_when_accepted() -> None:
    accepted = ElicitationAnswer(ElicitationAction.ACCEPT, {"repo": "a/b"})
    assert elicitation_payload(accepted) == {"action": "accept", "contentJson": '{"repo": "a/b"}'}
    assert elicitation_payload(ElicitationAnswer(ElicitationAction.DECLINE)) == {
        "action": "decline"
    }
