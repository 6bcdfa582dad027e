"""The interaction bridge: agy's WAITING steps → policy or a person → the answer back to agy.

One `InteractionBridge` per cascade. The reader announces each gate as an
`InteractionRequested`; `handle()` runs the whole flow for one gate:

1. **Re-read** the steps from the announced index (never the whole trajectory): a stale
   announcement (answered in the TUI, timed out without a retry) ends here as GONE.
2. **Decide.** A permission goes to the host's policy first (ALLOW / DENY decide, ASK goes
   on), then to the plugin's rules (`policy.decide`: deny rules, the `agy_permission_decision`
   hook, allow rules, the mode), then to the person as a card. Questions and MCP elicitations
   go to the person; answers are checked against the options offered and the person is asked
   again, with the valid options named, until they fit — nothing invalid is ever sent.
3. **Deliver** to the *freshest* WAITING step of that kind (`delivery.GateDelivery`: agy
   times a gate out and re-opens it at a higher step index, docs/wire.md §6). If the request
   changed meanwhile, the person is asked again.

A deny is an answer: agy receives ``allow: false`` and carries on (docs/decisions.md §1). Only a
dismissed prompt ends the turn (`InteractionOutcome.dismissed`); agy is sent a refusal first
so it is not left parked. Concurrent `handle()` calls for one gate — or for a gate and agy's
retry of it — are serialised: the later one waits, re-checks and usually finds nothing left.

`deny_pending()` is the interrupt: CancelCascadeSteps does nothing to a WAITING step
(docs/wire.md §3), so every gate is refused on the wire and every pending prompt is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from omnigent_agy.errors import InteractionDeliveryError, PromptUnavailableError, RpcError
from omnigent_agy.interactions.delivery import GateClaim, GateDelivery
from omnigent_agy.interactions.gates import (
    ANSWER_FIELDS,
    REFUSALS,
    elicitation_card,
    elicitation_payload,
    gate_of,
    permission_card,
    permission_payload,
    permission_request_for,
    question_payload,
)
from omnigent_agy.interactions.grants import ConversationGrants
from omnigent_agy.interactions.outcome import InteractionOutcome, OutcomeStatus
from omnigent_agy.interactions.policy import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    Scope,
    decide,
)
from omnigent_agy.interactions.prompts import (
    ElicitationAction,
    ElicitationAnswer,
    HostPrompts,
    PermissionAnswer,
    PolicyAction,
    PolicyVerdict,
    QuestionForm,
    answer_problem,
)
from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.steps import InteractionKind, StepKey
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.rpc.whereabouts import Whereabouts

if TYPE_CHECKING:
    import pluggy

__all__ = ["InteractionBridge"]

_logger = logging.getLogger(__name__)

_MAX_INVALID_ANSWERS: Final = 5  # then agy is told the question was cancelled
_MAX_REASKS: Final = 5  # the request changed while the person was deciding


class _Interrupted(Exception):  # noqa: N818 - a control-flow signal, not an error
    """deny_pending() took this gate over."""


@dataclass(eq=False, slots=True)
class _Handling(GateClaim):
    """One gate in the hands of `handle()`: its claim, and what an interrupt needs."""

    done: asyncio.Event = field(default_factory=asyncio.Event)
    # One delivery at a time per gate: the person's answer or an interrupt's refusal.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    host_task: asyncio.Task[Any] | None = None
    interrupted: bool = False


def _interrupted(handling: _Handling) -> bool:
    # A function, not the attribute inline: deny_pending() flips it while we await, which
    # attribute narrowing cannot know.
    return handling.interrupted


@dataclass(frozen=True, slots=True)
class _Answer:
    payload: Mapping[str, object]
    status: OutcomeStatus
    decided_by: str
    detail: str = ""


# --- the bridge ------------------------------------------------------------------------------


class InteractionBridge:
    """Answers agy's gates of a conversation; every call runs on the owner loop of `client`,
    which follows agy to a new port (`rpc.endpoint`). `cascade_id` is the session's
    `Whereabouts` (the conversation now, after a `/clear` too) or one fixed cascade."""

    def __init__(
        self,
        *,
        client: FollowingClient,
        cascade_id: str | Whereabouts,
        prompts: HostPrompts,
        policy: PermissionPolicy,
        plugin_manager: pluggy.PluginManager | None = None,
        log: logging.Logger | None = None,
        person_paths: Callable[[str], str] | None = None,
        grants: ConversationGrants | None = None,
    ) -> None:
        """`person_paths` rewrites agy's spelling of paths into the person's (a hidden
        workspace is reached through a link: agy/workspace.py) before a permission is judged
        or shown, so rules, policies and cards all see the paths the person knows."""
        self._paths = person_paths
        self._grants = grants or ConversationGrants()  # the person's, kept by the session
        self._client = client
        self._prompts = prompts
        self._policy = policy
        self._plugins = plugin_manager
        self._log = log or _logger
        self._handlings: list[_Handling] = []
        self._delivery = GateDelivery(
            client=client, cascade_id=cascade_id, claims=lambda: self._handlings, log=self._log
        )

    @property
    def cascade_id(self) -> str:
        """The conversation's cascade now."""
        return self._delivery.cascade_id

    @property
    def pending(self) -> int:
        """How many gates `handle()` is working on now."""
        return len(self._handlings)

    async def handle(self, request: InteractionRequested) -> InteractionOutcome:
        """The full flow for one announced gate. Cancellable; never leaves a task behind."""
        gate = gate_of(request)
        joined = False
        while (other := next((h for h in self._handlings if h.covers(gate)), None)) is not None:
            joined = True  # the same gate, or agy's retry of it: wait, then re-check
            await other.done.wait()
        handling = _Handling(origin=gate, current=gate)
        self._handlings.append(handling)
        try:
            outcome = await self._run(handling)
        except _Interrupted:
            outcome = InteractionOutcome(
                OutcomeStatus.INTERRUPTED, request, decided_by="interrupt", detail="turn stopped"
            )
        finally:
            self._handlings.remove(handling)
            handling.done.set()
        if joined and outcome.status is OutcomeStatus.GONE:
            return replace(outcome, status=OutcomeStatus.DUPLICATE)
        return outcome

    async def deny_pending(self, also: Sequence[str] = ()) -> bool:
        """Interrupt: refuse every gate on the wire (the sub-agents' cascades `also` too),
        cancel the prompts; True if any was."""
        handlings = list(self._handlings)
        for handling in handlings:
            handling.interrupted = True
            if handling.host_task is not None:
                handling.host_task.cancel()
        denied = False
        for handling in handlings:
            async with handling.lock:
                denied |= await self._refuse(handling)
        return await self._delivery.refuse_unclaimed(also) or denied

    # -- the flow ------------------------------------------------------------------------

    async def _run(self, handling: _Handling) -> InteractionOutcome:
        request = handling.origin.request
        if request.kind not in ANSWER_FIELDS:
            self._log.warning(
                "agy asks for an interaction of an unknown kind at step %d; it cannot be "
                "answered from here: answer it in agy's terminal",
                request.key.step_index,
            )
            return InteractionOutcome(OutcomeStatus.REFUSED, request, detail="unknown kind")
        live = await self._delivery.locate(handling)
        if live is None:
            return InteractionOutcome(
                OutcomeStatus.GONE, request, detail="agy is no longer waiting for this"
            )
        handling.current = live
        note: str | None = None
        for _ in range(_MAX_REASKS):
            answer = await self._decide(handling, note)
            async with handling.lock:
                if handling.interrupted:
                    raise _Interrupted
                result = await self._delivery.deliver(handling, answer.payload)
            if isinstance(result, StepKey):
                return InteractionOutcome(
                    answer.status,
                    request,
                    delivered_to=result,
                    payload=answer.payload,
                    decided_by=answer.decided_by,
                    detail=answer.detail,
                )
            if result is None:
                return InteractionOutcome(
                    OutcomeStatus.GONE,
                    request,
                    decided_by=answer.decided_by,
                    detail="agy stopped waiting before the answer arrived (and made no retry)",
                )
            handling.current = result
            note = "agy changed its request while you were deciding; please answer again"
        raise InteractionDeliveryError(
            f"agy's request at step {handling.current.key.step_index} kept changing; "
            "answer it in agy's terminal"
        )

    async def _decide(self, handling: _Handling, note: str | None) -> _Answer:
        kind = handling.current.request.kind
        if kind == InteractionKind.PERMISSION:
            return await self._decide_permission(handling, note)
        if kind == InteractionKind.ASK_QUESTION:
            return await self._ask_questions(handling, note)
        return await self._ask_elicitation(handling)

    async def _decide_permission(self, handling: _Handling, note: str | None) -> _Answer:
        # The live step re-read from agy; who asks (a sub-agent) is known from the announcement.
        asked_by = handling.origin.request.asked_by
        request = _for_person(replace(handling.current.request, asked_by=asked_by), self._paths)
        judged = permission_request_for(request)
        verdict = await self._host_verdict(handling, judged)
        if verdict.action is not PolicyAction.ASK:
            allow = verdict.action is PolicyAction.ALLOW
            why = f"host policy ({verdict.reason})" if verdict.reason else "host policy"
            self._log.info("permission %s by %s: %s", verdict.action.value, why, judged.summary())
            return _Answer(permission_payload(allow=allow), OutcomeStatus.ANSWERED, why)
        decision = self._plugin_decision(judged)
        if decision is not None:  # policy.decide has logged it with its rule
            why = decision.source + (f" {decision.rule!r}" if decision.rule else "")
            payload = permission_payload(
                allow=decision.allowed, for_conversation=decision.scope is Scope.CONVERSATION
            )
            return _Answer(payload, OutcomeStatus.ANSWERED, why, decision.reason)
        if self._grants.covers(request):  # "for this conversation" covers its sub-agents too
            allowed = permission_payload(allow=True, for_conversation=True)
            return _Answer(allowed, OutcomeStatus.ANSWERED, "person, for this conversation")
        card = permission_card(request, note)
        try:
            choice = await self._host(handling, self._prompts.ask_permission(card))
        except PromptUnavailableError as exc:
            self._log.warning("cannot ask about %s (%s): denied", judged.summary(), exc)
            return _Answer(permission_payload(allow=False), OutcomeStatus.REFUSED, "host", str(exc))
        if choice is None:
            return _Answer(permission_payload(allow=False), OutcomeStatus.DISMISSED, "person")
        if choice is PermissionAnswer.ALLOW_CONVERSATION:
            self._grants.grant(request)
        payload = permission_payload(
            allow=choice is not PermissionAnswer.DENY,
            for_conversation=choice is PermissionAnswer.ALLOW_CONVERSATION,
        )
        return _Answer(payload, OutcomeStatus.ANSWERED, "person", choice.value)

    async def _host_verdict(self, handling: _Handling, judged: PermissionRequest) -> PolicyVerdict:
        try:
            return await self._host(handling, self._prompts.evaluate_policy(judged))
        except _Interrupted:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing host policy must not allow; ask on
            self._log.warning("the host policy failed on %s (%s): asking", judged.summary(), exc)
            return PolicyVerdict(PolicyAction.ASK)

    def _plugin_decision(self, judged: PermissionRequest) -> PermissionDecision | None:
        try:
            return decide(judged, self._policy, self._plugins)
        # A broken policy plugin: the person decides instead; it never turns into "allow".
        except Exception:  # noqa: BLE001
            self._log.exception("the permission policy failed on %s: asking", judged.summary())
            return None

    async def _ask_questions(self, handling: _Handling, note: str | None) -> _Answer:
        request = handling.current.request
        form = QuestionForm(
            request.call_id,
            request.wanted.questions,
            note=note,
            asked_by=handling.origin.request.asked_by,
        )
        for _ in range(_MAX_INVALID_ANSWERS):
            try:
                answers = await self._host(handling, self._prompts.ask_questions(form))
            except PromptUnavailableError as exc:
                self._log.warning("cannot show agy's question (%s): cancelled", exc)
                cancel = REFUSALS[InteractionKind.ASK_QUESTION]
                return _Answer(cancel, OutcomeStatus.REFUSED, "host", str(exc))
            if answers is None:
                cancel = REFUSALS[InteractionKind.ASK_QUESTION]
                return _Answer(cancel, OutcomeStatus.DISMISSED, "person")
            problem = answer_problem(form, answers)
            if problem is None:
                return _Answer(question_payload(form, answers), OutcomeStatus.ANSWERED, "person")
            self._log.info("answer refused, asking again: %s", problem)
            form = replace(form, error=problem)
        detail = f"no valid answer after {_MAX_INVALID_ANSWERS} tries"
        return _Answer(
            REFUSALS[InteractionKind.ASK_QUESTION], OutcomeStatus.REFUSED, "host", detail
        )

    async def _ask_elicitation(self, handling: _Handling) -> _Answer:
        card = elicitation_card(handling.current.request)
        try:
            answer = await self._host(handling, self._prompts.ask_elicitation(card))
        except PromptUnavailableError as exc:
            self._log.warning("cannot show %s's MCP form (%s): declined", card.server, exc)
            decline = elicitation_payload(ElicitationAnswer(ElicitationAction.DECLINE))
            return _Answer(decline, OutcomeStatus.REFUSED, "host", str(exc))
        if answer is None:
            cancel = REFUSALS[InteractionKind.ELICITATION]
            return _Answer(cancel, OutcomeStatus.DISMISSED, "person")
        return _Answer(elicitation_payload(answer), OutcomeStatus.ANSWERED, "person")

    async def _host[T](self, handling: _Handling, call: Coroutine[Any, Any, T]) -> T:
        """Await one host call as a task deny_pending() can cancel."""
        if handling.interrupted:
            call.close()
            raise _Interrupted
        task = asyncio.ensure_future(call)
        handling.host_task = task
        try:
            return await task  # if handle() is cancelled, asyncio cancels the task too
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if _interrupted(handling) and (current is None or current.cancelling() == 0):
                raise _Interrupted from None
            raise
        finally:
            handling.host_task = None

    # -- interrupting ----------------------------------------------------------------------

    async def _refuse(self, handling: _Handling) -> bool:
        refusal = REFUSALS.get(handling.current.request.kind)
        if refusal is None:
            return False
        try:
            result = await self._delivery.deliver(handling, refusal)
        except (RpcError, InteractionDeliveryError) as exc:
            self._log.warning("refusing agy's pending %s failed: %s", handling.origin.key, exc)
            return False
        if isinstance(result, StepKey):
            self._log.info("interrupt: refused agy's gate at step %d", result.step_index)
            return True
        return False


def _for_person(
    request: InteractionRequested, paths: Callable[[str], str] | None
) -> InteractionRequested:
    """The request with the person's paths where agy wrote its own (see `person_paths`)."""
    if paths is None:
        return request

    def mapped(value: str | None) -> str | None:
        return None if value is None else paths(value)

    wanted = request.wanted
    return replace(
        request,
        command_line=mapped(request.command_line),
        cwd=mapped(request.cwd),
        wanted=replace(
            wanted,
            target=mapped(wanted.target),
            action_description=mapped(wanted.action_description),
            suggested_persist_pattern=mapped(wanted.suggested_persist_pattern),
        ),
    )
