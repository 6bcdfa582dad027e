"""Delivering an answer to agy: the freshest WAITING step of the same request, read just before.

agy times a gate out and re-opens it at a higher step index (docs/wire.md §6), so an answer is
never sent to the step it was asked for without looking again: `GateDelivery.deliver` reads
the steps from the gate's origin on, picks the live gate (the same request where it was, else
agy's freshest retry of it, else the freshest unclaimed gate of that kind) and sends there. If
the request changed meanwhile, the caller asks the person again. A failed call is told apart
by re-reading the step: no longer WAITING means it timed out (look for the retry), still
WAITING means agy refused the answer's shape (`InteractionDeliveryError`).

A `GateClaim` is one gate in someone's hands (the bridge's handlings): where it started and
the live gate it answers now. Gates claimed by another claim are never chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from omnigent_agy.errors import CsrfError, InteractionDeliveryError, RpcError
from omnigent_agy.interactions.gates import ANSWER_FIELDS, REFUSALS, Gate, gates_in
from omnigent_agy.reading.steps import JsonObject, StepKey, int64, obj, seq
from omnigent_agy.rpc.client import TRANSIENT_CODES
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.rpc.whereabouts import Whereabouts

__all__ = ["GateClaim", "GateDelivery", "InteractionDeliveryError"]

_MAX_DELIVERY_ATTEMPTS: Final = 6  # each one follows a timeout-and-retry or a transient error


@dataclass(eq=False, slots=True)
class GateClaim:
    """One gate being answered: where it started and the live gate it answers now."""

    origin: Gate
    current: Gate

    def claims(self, gate: Gate) -> bool:
        return gate.id in (self.origin.id, self.current.id)

    def covers(self, gate: Gate) -> bool:
        """`gate` is this one, or agy's retry of it at a higher index (docs/wire.md §6)."""
        return self.claims(gate) or (
            self.origin.same_kind(gate)
            and self.origin.subject == gate.subject
            and self.origin.key.step_index < gate.key.step_index
        )


class GateDelivery:
    """Reads agy's waiting gates and sends answers to the live one.

    A gate is answered in its own cascade (its step's key); what "the conversation now" is
    (for refusing every waiting gate at an interrupt) is asked of `cascade_id` at that
    moment when it is the session's `Whereabouts`, so a `/clear` needs no new delivery.
    `claims` lists the gates in hands now (read at each use, so a claim that moved to agy's
    retry is seen at once).
    """

    def __init__(
        self,
        *,
        client: FollowingClient,
        cascade_id: str | Whereabouts,
        claims: Callable[[], Iterable[GateClaim]],
        log: logging.Logger,
    ) -> None:
        self._where = cascade_id
        self._client = client
        self._claims = claims
        self._log = log

    @property
    def cascade_id(self) -> str:
        """The conversation's cascade now."""
        where = self._where
        if isinstance(where, str):
            return where
        cascade = where.cascade_id
        if cascade is None:
            raise InteractionDeliveryError("no conversation is bound to agy yet")
        return cascade

    async def waiting_gates(self, offset: int, cascade: str | None = None) -> list[Gate]:
        """Every WAITING gate of `cascade` (default: the conversation's now) from `offset` on,
        read with one GetCascadeTrajectorySteps."""
        cascade = cascade or self.cascade_id
        steps = await self._client.run(
            lambda c: c.get_cascade_trajectory_steps(cascade, step_offset=offset)
        )
        gates: list[Gate] = []
        for position, step in enumerate(steps):
            gates.extend(gates_in(step, offset + position, cascade_id=cascade))
        return gates

    async def locate(self, claim: GateClaim) -> Gate | None:
        """The live gate `claim` should answer: the same request where it was, else agy's
        freshest retry of it, else the freshest unclaimed gate of that kind; None if none."""
        current = claim.current
        others = [other for other in self._claims() if other is not claim]
        gates = [
            gate
            for gate in await self.waiting_gates(
                claim.origin.key.step_index, claim.origin.key.cascade_id
            )
            if gate.same_kind(current) and not any(other.claims(gate) for other in others)
        ]
        same = [gate for gate in gates if gate.subject == current.subject]
        here = [gate for gate in same if gate.key.step_index == current.key.step_index]
        candidates = here or same or gates
        return max(candidates, key=lambda gate: gate.key.step_index, default=None)

    async def deliver(
        self, claim: GateClaim, payload: Mapping[str, object]
    ) -> StepKey | Gate | None:
        """Send `payload` to the live gate: its key, the changed gate to ask about, or None.

        `claim.current` follows the live gate as it is found.
        """
        asked = claim.current.subject
        for _ in range(_MAX_DELIVERY_ATTEMPTS):
            live = await self.locate(claim)
            if live is None:
                return None
            if live.subject != asked:
                return live
            claim.current = live
            try:
                await self.send(live, payload)
            except CsrfError:
                raise
            except RpcError as exc:
                if not await self._failed_meanwhile(live, exc):
                    continue
                raise InteractionDeliveryError(
                    f"agy refused the answer to step {live.key.step_index} while still waiting "
                    f"for it ({exc}); please report this with `omnigent-agy doctor` output",
                    cause=exc,
                ) from exc
            return live.key
        raise InteractionDeliveryError(
            f"could not deliver the answer to step {claim.current.key.step_index} after "
            f"{_MAX_DELIVERY_ATTEMPTS} attempts; answer it in agy's terminal"
        )

    async def _failed_meanwhile(self, gate: Gate, exc: RpcError) -> bool:
        """After a failed send: True when the failure is the answer's own fault.

        agy answers 500 "input not registered" both for a malformed answer and for a step
        that timed out meanwhile (docs/wire.md §6): only the step's status tells them apart. A
        still-waiting step after a transient failure never got the answer, so sending again
        is safe although the call is not idempotent.
        """
        index, cascade = gate.key.step_index, gate.key.cascade_id
        steps = await self._client.run(
            lambda c: c.get_cascade_trajectory_steps(cascade, step_offset=index)
        )
        step: JsonObject = steps[0] if steps else {}
        still = gates_in(step, gate.key.step_index, cascade_id=cascade)
        still = [g for g in still if g.id == gate.id]
        if not still:
            self._log.info(
                "step %d stopped waiting while the answer was on its way (%s): looking for "
                "agy's retry",
                gate.key.step_index,
                exc.connect_code.value,
            )
            return False
        return exc.connect_code not in TRANSIENT_CODES

    async def send(self, gate: Gate, payload: Mapping[str, object]) -> None:
        """One answer to one gate. Never sent twice by the client: after a failure that may
        have reached agy, `deliver` re-reads the step and decides (agy may have moved to a
        new port meanwhile; the next call follows it)."""
        answer = {ANSWER_FIELDS[gate.request.kind]: payload}
        await self._client.run(
            lambda c: c.handle_cascade_user_interaction(
                gate.key.cascade_id,
                trajectory_id=gate.key.trajectory_id,
                step_index=gate.key.step_index,
                **answer,
            ),
            resend_safe=False,
        )

    async def refuse_unclaimed(self, also: Sequence[str] = ()) -> bool:
        """Refuse the gates nobody claims (announced, not yet handled) in the conversation and
        in the cascades `also` names (its running sub-agents'); True if any was."""
        gates: list[Gate] = []
        try:
            summaries = await self._client.run(lambda c: c.get_all_cascade_trajectories())
            for cascade in (self.cascade_id, *also):
                summary = obj(obj(summaries.get("trajectorySummaries")).get(cascade))
                indices = [
                    int64(obj(w).get("stepIndex")) or 0 for w in seq(summary.get("waitingSteps"))
                ]
                gates += await self.waiting_gates(min(indices), cascade) if indices else []
        except RpcError as exc:
            self._log.warning("interrupt: could not list agy's waiting steps: %s", exc)
            return False
        denied = False
        for gate in gates:
            refusal = REFUSALS.get(gate.request.kind)
            if refusal is None or any(claim.claims(gate) for claim in self._claims()):
                continue
            try:
                await self.send(gate, refusal)
            except RpcError as exc:
                self._log.warning(
                    "interrupt: refusing step %d failed: %s", gate.key.step_index, exc
                )
                continue
            self._log.info("interrupt: refused agy's gate at step %d", gate.key.step_index)
            denied = True
        return denied
