"""The simulator engine, driven through its RPC handlers in one asyncio loop (no network)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from agy_sim.cascade import TranscriptEvent
from agy_sim.connect_app import ConnectHandlerError
from agy_sim.engine import SimEngine
from agy_sim.engine_config import EngineSettings
from agy_sim.handlers import RpcHandlers
from agy_sim.triggers import choose

MODEL = "MODEL_PLACEHOLDER_M20"
DEADLINE = 10.0
UI, CH, PR, RC, AQ = (
    "USER_INPUT",
    "CONVERSATION_HISTORY",
    "PLANNER_RESPONSE",
    "RUN_COMMAND",
    "ASK_QUESTION",
)


def short(step: dict[str, Any]) -> tuple[str, str]:
    return step["type"].removeprefix("CORTEX_STEP_TYPE_"), step["status"].removeprefix(
        "CORTEX_STEP_STATUS_"
    )


class Sim:
    """An engine plus helpers; every helper goes through the wire handlers."""

    def __init__(self, workspace: Path, **settings: Any) -> None:
        settings.setdefault("token_interval", 0.0)
        self.engine = SimEngine(EngineSettings(**settings), workspace=workspace)
        handlers = RpcHandlers(self.engine)
        self.unary = handlers.unary()
        self.streams = handlers.streams()
        self.events: list[TranscriptEvent] = []
        self.engine.add_listener(self.events.append)

    async def call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.unary[method](body)

    async def start(self) -> str:
        reply = await self.call("StartCascade", {"source": "CORTEX_TRAJECTORY_SOURCE_CLI"})
        return str(reply["cascadeId"])

    async def send(self, cid: str, text: str, *, model: str | None = MODEL, **extra: Any) -> None:
        config = {"plannerConfig": {"planModel": model}} if model else {}
        body = {"cascadeId": cid, "items": [{"text": text}], "cascadeConfig": config, **extra}
        await self.call("SendUserCascadeMessage", body)

    async def steps(self, cid: str, offset: int | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"cascadeId": cid}
        if offset is not None:
            body["stepOffset"] = offset
        return list((await self.call("GetCascadeTrajectorySteps", body)).get("steps", []))

    async def until(self, cid: str, predicate: Callable[[], bool]) -> None:
        """Wait for a state change that makes ``predicate`` true, with a deadline."""
        cascade = self.engine.cascades[cid]
        async with asyncio.timeout(DEADLINE):
            while True:
                changed = cascade.change_event
                if predicate():
                    return
                await changed.wait()

    def status(self, cid: str) -> str:
        return self.engine.cascades[cid].status.removeprefix("CASCADE_RUN_STATUS_")

    async def idle(self, cid: str) -> list[dict[str, Any]]:
        await self.until(cid, lambda: self.status(cid) == "IDLE" and not self._running(cid))
        return await self.steps(cid)

    def _running(self, cid: str) -> bool:
        return self.engine.cascades[cid].running

    async def waiting(self, cid: str, after: int = -1) -> tuple[int, dict[str, Any]]:
        cascade = self.engine.cascades[cid]
        await self.until(cid, lambda: any(i > after for i in cascade.waiting_indices()))
        index = max(cascade.waiting_indices())
        return index, (await self.steps(cid))[index]

    async def answer(self, cid: str, index: int, **answer: Any) -> dict[str, Any]:
        trajectory = self.engine.cascades[cid].trajectory_id
        interaction = {"trajectoryId": trajectory, "stepIndex": index, **answer}
        return await self.call(
            "HandleCascadeUserInteraction", {"cascadeId": cid, "interaction": interaction}
        )


def run_sim(
    workspace: Path, body: Callable[[Sim], Coroutine[Any, Any, None]], **settings: Any
) -> None:
    async def main() -> None:
        sim = Sim(workspace, **settings)
        try:
            await body(sim)
        finally:
            await sim.engine.aclose()

    asyncio.run(main())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nhello file content\n")
    (root / "empty.txt").write_text("")
    return root


# -- plain turns and the model ------------------------------------------------------------
def test_plain_answer_steps_and_shapes(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "Say hello")
        steps = await sim.idle(cid)
        assert [short(s) for s in steps] == [
            (UI, "DONE"),
            (CH, "DONE"),
            (PR, "DONE"),
            ("CHECKPOINT", "DONE"),
        ]
        user, _, planner, _ = steps
        assert "stepIndex" not in user["metadata"]["sourceTrajectoryStepInfo"]
        assert user["metadata"]["source"] == "CORTEX_STEP_SOURCE_USER_EXPLICIT"
        assert user["userInput"]["items"] == [{"text": "Say hello"}]
        assert user["userInput"]["userResponse"] == "Say hello"
        assert user["userInput"]["userConfig"]["plannerConfig"]["planModel"] == MODEL
        response = planner["plannerResponse"]
        assert response["response"] == response["modifiedResponse"]
        assert "You said: Say hello" in response["response"]
        assert "thinking" not in response
        assert response["thinkingSignature"]
        usage = planner["metadata"]["modelUsage"]
        assert usage["model"] == MODEL
        assert planner["metadata"]["generatorModel"] == MODEL
        assert all(isinstance(usage[k], str) for k in ("inputTokens", "outputTokens"))
        assert int(usage["outputTokens"]) == int(usage["thinkingOutputTokens"]) + int(
            usage["responseOutputTokens"]
        )
        assert planner["metadata"]["sourceTrajectoryStepInfo"]["stepIndex"] == 2
        assert planner["metadata"]["executionId"] == user["metadata"]["executionId"]
        # A second turn: new execution, no second checkpoint, the summary tracks the input.
        await sim.send(cid, "again")
        steps = await sim.idle(cid)
        assert [short(s) for s in steps[4:]] == [(UI, "DONE"), (CH, "DONE"), (PR, "DONE")]
        assert steps[4]["metadata"]["executionId"] != user["metadata"]["executionId"]
        summary = (await sim.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"][cid]
        assert summary["status"] == "CASCADE_RUN_STATUS_IDLE"
        assert summary["stepCount"] == 7
        assert summary["lastUserInputStepIndex"] == 4
        assert summary["lastUserInputTime"] == steps[4]["metadata"]["createdAt"]

    run_sim(workspace, body)


def test_plan_model_is_honoured_and_reported(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "hi", model="MODEL_PLACEHOLDER_M69")
        planner = (await sim.idle(cid))[2]
        assert planner["metadata"]["generatorModel"] == "MODEL_PLACEHOLDER_M69"
        assert planner["metadata"]["requestedModel"] == {"model": "MODEL_PLACEHOLDER_M69"}
        assert "Gemini 3.1 Pro (Low)" in planner["plannerResponse"]["response"]
        # The older requestedModel form is accepted too.
        request = {
            "cascadeId": cid,
            "items": [{"text": "x"}],
            "cascadeConfig": {"plannerConfig": {"requestedModel": {"model": MODEL}}},
        }
        await sim.call("SendUserCascadeMessage", request)
        assert (await sim.idle(cid))[-1]["metadata"]["generatorModel"] == MODEL
        snap = sim.engine.snapshot()["cascades"][cid]
        assert snap["planModels"] == ["MODEL_PLACEHOLDER_M69", MODEL]

    run_sim(workspace, body)


def test_missing_plan_model_fails_the_turn(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        assert (
            await sim.call("SendUserCascadeMessage", {"cascadeId": cid, "items": [{"text": "x"}]})
            == {}
        )
        steps = await sim.idle(cid)
        assert [short(s) for s in steps] == [(UI, "DONE"), (CH, "DONE"), ("ERROR_MESSAGE", "DONE")]
        error = steps[-1]["errorMessage"]["error"]
        assert error["userErrorMessage"] == "neither PlanModel nor RequestedModel specified"

    run_sim(workspace, body)


def test_request_errors(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        with pytest.raises(ConnectHandlerError, match="invalid value for enum") as bad_model:
            await sim.send(cid, "x", model="MODEL_NOT_A_THING")
        assert (bad_model.value.code, bad_model.value.http_status) == ("invalid_argument", 400)
        with pytest.raises(ConnectHandlerError, match="items"):
            await sim.call("SendUserCascadeMessage", {"cascadeId": cid, "text": "flat field"})
        with pytest.raises(ConnectHandlerError, match="deliveryStrategy"):
            await sim.send(cid, "x", deliveryStrategy="SOON")
        for method, body in (
            ("GetConversationMetadata", {"conversationId": "nope"}),
            ("GetCascadeTrajectorySteps", {"cascadeId": "nope"}),
            ("SendUserCascadeMessage", {"cascadeId": "nope", "items": [{"text": "x"}]}),
        ):
            with pytest.raises(ConnectHandlerError, match="trajectory not found") as missing:
                await sim.call(method, body)
            assert missing.value.http_status == 500
        assert sim.engine.cascades[cid].steps == []  # nothing was recorded by bad calls

    run_sim(workspace, body)


def test_methods_registered_like_agy(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        for absent in ("GetCascadeId", "ListCascadeIds", "GetCascadeStatus", "SimulatorSnapshot"):
            assert absent not in sim.unary
            assert absent not in sim.streams
        assert "lastExtensionHeartbeat" in await sim.call("Heartbeat", {})
        with pytest.raises(ConnectHandlerError, match="reactive state is deprecated"):
            async for _ in sim.streams["StreamCascadeReactiveUpdates"]({}):
                pass
        debug = SimEngine(EngineSettings(debug_rpc=True), workspace=workspace)
        assert "tuiCascadeId" in await RpcHandlers(debug).unary()["SimulatorSnapshot"]({})

    run_sim(workspace, body)


def test_available_models_catalog(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        reply = (await sim.call("GetAvailableModels", {}))["response"]
        models = reply["models"]
        names = {m["displayName"] for m in models.values()}
        assert {"Gemini 3 Pro (Low)", "Gemini 3 Pro (Medium)", "Gemini 3 Pro (High)"} <= names
        assert models[reply["defaultAgentModelId"]]["model"] == MODEL
        assert models[reply["defaultAgentModelId"]]["recommended"] is True
        assert all(m["model"] != key for key, m in models.items())  # keys are not enums
        assert all(m.get("supportsThinking") in (True, None) for m in models.values())

    run_sim(workspace, body)


def test_conversation_metadata_and_start_cascade(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        meta = (await sim.call("GetConversationMetadata", {"conversationId": cid}))["metadata"]
        assert meta["rootConversationId"] == cid
        assert "parentConversationId" not in meta
        assert meta["workspaceUris"] == [workspace.as_uri()]
        assert cid != sim.engine.tui_cascade_id  # StartCascade is not the TUI's cascade
        again = await sim.call("StartCascade", {"cascadeId": cid})
        assert again == {"cascadeId": cid}

    run_sim(workspace, body)


def test_send_agent_message_records_a_system_message(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.call("SendAgentMessage", {"cascadeId": cid, "message": "note to agent"})
        steps = await sim.steps(cid)
        assert [short(s) for s in steps] == [("SYSTEM_MESSAGE", "DONE")]
        assert steps[0]["systemMessage"] == {"message": "note to agent"}
        assert sim.status(cid) == "IDLE"
        assert not sim.engine.cascades[cid].running

    run_sim(workspace, body)


def test_poll_with_step_offset(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "hello")
        steps = await sim.idle(cid)
        assert await sim.steps(cid, 2) == steps[2:]
        assert await sim.steps(cid, 99) == []
        with pytest.raises(ConnectHandlerError, match="stepOffset"):
            await sim.steps(cid, -1)

    run_sim(workspace, body)


# -- the stream ---------------------------------------------------------------------------
class Subscriber:
    def __init__(self, sim: Sim, cid: str, **request: Any) -> None:
        self.frames: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self._stream = sim.streams["StreamAgentStateUpdates"]({"conversationId": cid, **request})
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for frame in self._stream:
            self.frames.append(frame)
            self.arrived.set()

    async def until(self, predicate: Callable[[list[dict[str, Any]]], bool]) -> None:
        async with asyncio.timeout(DEADLINE):
            while not predicate(self.frames):
                self.arrived.clear()
                await self.arrived.wait()

    def steps(self) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for frame in self.frames:
            update = frame["update"]["mainTrajectoryUpdate"]["stepsUpdate"]
            out.extend(zip(update.get("indices", []), update.get("steps", []), strict=True))
        return out


def test_stream_snapshot_then_sparse_cumulative_updates(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "first")
        await sim.idle(cid)
        sub = Subscriber(sim, cid)
        await sub.until(lambda f: len(f) >= 1)
        first = sub.frames[0]["update"]
        assert first["conversationId"] == cid
        assert first["status"] == "CASCADE_RUN_STATUS_IDLE"
        update = first["mainTrajectoryUpdate"]["stepsUpdate"]
        assert update["indices"] == [0, 1, 2, 3]
        assert update["totalLength"] == 4
        assert all(s["status"] == "CORTEX_STEP_STATUS_DONE" for s in update["steps"])
        await sim.send(cid, "second")
        await sim.idle(cid)
        await sub.until(
            lambda f: f[-1]["update"]["status"] == "CASCADE_RUN_STATUS_IDLE" and len(f) > 2
        )
        later = sub.steps()[4:]
        assert min(i for i, _ in later) == 4  # sparse: prior steps are not re-sent
        planner = [s for i, s in later if i == 6]
        texts = [s["plannerResponse"].get("modifiedResponse", "") for s in planner]
        assert all(b.startswith(a) for a, b in itertools.pairwise(texts))  # grows
        for step in planner:
            if step["status"] == "CORTEX_STEP_STATUS_GENERATING":
                assert "response" not in step["plannerResponse"]
                assert "modelUsage" not in step["metadata"]
        done = planner[-1]
        assert done["status"] == "CORTEX_STEP_STATUS_DONE"
        assert done["plannerResponse"]["response"] == done["plannerResponse"]["modifiedResponse"]
        assert "modelUsage" in done["metadata"]
        # thinking streams before the answer text.
        first_text = next(
            n for n, s in enumerate(planner) if "modifiedResponse" in s["plannerResponse"]
        )
        assert any("thinking" in s["plannerResponse"] for s in planner[:first_text])
        sub.task.cancel()

    run_sim(workspace, body, token_interval=0.001)


def test_stream_page_bounds_and_tool_call_stripping(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "list the files")
        polled = await sim.idle(cid)
        assert "toolCalls" in polled[2]["plannerResponse"]
        assert "toolCall" in polled[3]["metadata"]
        sub = Subscriber(sim, cid, initialStepsPageBounds={"startIndex": 2, "endIndexExclusive": 4})
        await sub.until(lambda f: len(f) >= 1)
        update = sub.frames[0]["update"]["mainTrajectoryUpdate"]["stepsUpdate"]
        assert update["indices"] == [2, 3]
        assert update["totalLength"] == len(polled)
        planner, listing = update["steps"]
        assert "toolCalls" not in planner["plannerResponse"]
        assert "toolCall" not in listing["metadata"]
        assert "internalMetadata" not in listing["metadata"]
        assert listing["listDirectory"] == polled[3]["listDirectory"]
        sub.task.cancel()

    run_sim(workspace, body)


def test_no_frames_while_parked_on_waiting(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        sub = Subscriber(sim, cid)
        await sim.send(cid, "run: echo hi")
        index, _ = await sim.waiting(cid)
        await sub.until(lambda f: "waitingSteps" in f[-1]["update"]["mainTrajectoryUpdate"])
        parked = f = len(sub.frames)
        waiting = sub.frames[-1]["update"]["mainTrajectoryUpdate"]["waitingSteps"]
        assert waiting[0]["stepIndex"] == index
        assert "toolCall" not in waiting[0]["step"]["metadata"]
        assert sub.frames[-1]["update"]["status"] == "CASCADE_RUN_STATUS_RUNNING"
        for _ in range(50):  # let every ready task run: none may produce a frame
            await asyncio.sleep(0)
        assert len(sub.frames) == parked == f
        await sim.answer(cid, index, permission={"allow": True})
        await sub.until(lambda frames: frames[-1]["update"]["status"] == "CASCADE_RUN_STATUS_IDLE")
        assert len(sub.frames) > parked
        sub.task.cancel()

    run_sim(workspace, body)


def test_aclose_ends_open_streams(workspace: Path) -> None:
    async def main() -> None:
        sim = Sim(workspace)
        cid = await sim.start()
        sub = Subscriber(sim, cid)
        await sub.until(lambda f: len(f) == 1)
        await sim.engine.aclose()
        async with asyncio.timeout(DEADLINE):
            await sub.task

    asyncio.run(main())


# -- permission gates ---------------------------------------------------------------------
def test_approval_allow_runs_and_echoes(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "please run: echo hello")
        index, step = await sim.waiting(cid)
        assert short(step) == (RC, "WAITING")
        assert index == 3
        permission = step["requestedInteraction"]["permission"]
        assert permission["resource"] == {"action": "command", "target": "echo hello"}
        assert permission["actionDescription"]
        assert permission["suggestedPersistPattern"]
        assert step["metadata"]["toolCall"]["name"] == "run_command"  # poll shape keeps it
        summary = (await sim.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"][cid]
        assert summary["status"] == "CASCADE_RUN_STATUS_RUNNING"
        assert [w["stepIndex"] for w in summary["waitingSteps"]] == [index]
        assert await sim.answer(cid, index, permission={"allow": True}) == {}
        steps = await sim.idle(cid)
        done = steps[index]
        assert short(done) == (RC, "DONE")
        assert done["runCommand"]["exitCode"] == 0
        assert done["runCommand"]["combinedOutput"]["full"] == "hello\n"
        assert done["requestedInteraction"] == step["requestedInteraction"]  # stays after DONE
        assert done["completedInteractions"] == [
            {
                "request": step["requestedInteraction"],
                "response": {
                    "trajectoryId": sim.engine.cascades[cid].trajectory_id,
                    "stepIndex": index,
                    "permission": {"allow": True},
                },
            }
        ]
        assert done["permissions"]["permissionGrants"][0]["allow"] is True
        assert "exit code 0" in steps[index + 1]["plannerResponse"]["response"]

    run_sim(workspace, body)


def test_deny_does_not_end_the_turn(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "run the tests")
        index, _ = await sim.waiting(cid)
        scope = "PERMISSION_SCOPE_CONVERSATION"
        await sim.answer(cid, index, permission={"allow": False, "scope": scope})
        steps = await sim.idle(cid)
        denied = steps[index]
        assert short(denied) == (RC, "DONE")
        assert denied["runCommand"]["userRejected"] is True
        assert "exitCode" not in denied["runCommand"]
        assert denied["completedInteractions"][0]["response"]["permission"] == {"scope": scope}
        reply = steps[index + 1]
        assert short(reply) == (PR, "DONE")
        assert "did not run" in reply["plannerResponse"]["response"]

    run_sim(workspace, body)


def test_interaction_keying_rules(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "run: ls")
        index, _ = await sim.waiting(cid)
        trajectory = sim.engine.cascades[cid].trajectory_id
        bad_bodies = [
            # trajectoryId at the top level is dropped by agy: the step is not found.
            {
                "cascadeId": cid,
                "trajectoryId": trajectory,
                "interaction": {"stepIndex": index, "permission": {"allow": True}},
            },
            {
                "cascadeId": cid,
                "interaction": {
                    "trajectoryId": "other",
                    "stepIndex": index,
                    "permission": {"allow": True},
                },
            },
            {
                "cascadeId": cid,
                "interaction": {
                    "trajectoryId": trajectory,
                    "stepIndex": index - 1,
                    "permission": {"allow": True},
                },
            },
            {
                "cascadeId": cid,
                "interaction": {
                    "trajectoryId": trajectory,
                    "stepIndex": index,
                    "askQuestion": {"responses": []},
                },
            },
        ]
        for bad in bad_bodies:
            with pytest.raises(ConnectHandlerError) as error:
                await sim.call("HandleCascadeUserInteraction", bad)
            assert error.value.http_status == 500
            assert error.value.message.startswith("input not registered for step")
        with pytest.raises(ConnectHandlerError, match="scope") as bad_scope:
            await sim.answer(cid, index, permission={"allow": True, "scope": "FOREVER"})
        assert bad_scope.value.http_status == 400
        assert (await sim.steps(cid))[index]["status"] == "CORTEX_STEP_STATUS_WAITING"
        await sim.answer(cid, index, permission={"allow": True})
        with pytest.raises(ConnectHandlerError, match=f"input not registered for step {index}"):
            await sim.answer(cid, index, permission={"allow": True})  # already answered
        await sim.idle(cid)

    run_sim(workspace, body)


def test_chained_command_gates_twice_on_one_step(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "chain them")
        index, first = await sim.waiting(cid)
        assert first["requestedInteraction"]["permission"]["resource"]["target"] == "git status"
        await sim.answer(cid, index, permission={"allow": True})
        await sim.until(cid, lambda: index in sim.engine.cascades[cid].waiting_indices())
        second = (await sim.steps(cid))[index]
        assert second["requestedInteraction"]["permission"]["resource"]["target"].startswith(
            "git log"
        )
        assert len(second["completedInteractions"]) == 1
        await sim.answer(cid, index, permission={"allow": False})
        steps = await sim.idle(cid)
        done = steps[index]
        assert done["runCommand"]["userRejected"] is True
        assert [c["response"]["permission"] for c in done["completedInteractions"]] == [
            {"allow": True},
            {},
        ]

    run_sim(workspace, body)


# -- questions ----------------------------------------------------------------------------
def _questions(step: dict[str, Any]) -> list[dict[str, Any]]:
    return list(step["requestedInteraction"]["askQuestion"]["questions"])


def test_single_select_question(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "ask me a question")
        index, step = await sim.waiting(cid)
        assert short(step) == (AQ, "WAITING")
        [question] = _questions(step)
        assert [o["id"] for o in question["options"]] == ["1", "2", "3"]
        assert "isMultiSelect" not in question
        text = question["question"]
        for wrong in (["9"], ["1", "2"], []):
            with pytest.raises(ConnectHandlerError) as error:
                await sim.answer(
                    cid,
                    index,
                    askQuestion={"responses": [{"question": text, "selectedOptionIds": wrong}]},
                )
            assert error.value.http_status == 400
        answer = {"responses": [{"question": text, "selectedOptionIds": ["2"]}]}
        await sim.answer(cid, index, askQuestion=answer)
        steps = await sim.idle(cid)
        done = steps[index]
        assert short(done) == (AQ, "DONE")
        assert done["askQuestion"]["questions"][0]["selectedOptionIds"] == ["2"]
        assert done["completedInteractions"][0]["response"]["askQuestion"] == answer
        assert "Blue" in steps[index + 1]["plannerResponse"]["response"]

    run_sim(workspace, body)


def test_multi_several_and_write_in_questions(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "multi select please")
        index, step = await sim.waiting(cid)
        [question] = _questions(step)
        assert question["isMultiSelect"] is True
        await sim.answer(
            cid,
            index,
            askQuestion={
                "responses": [{"question": question["question"], "selectedOptionIds": ["1", "3"]}]
            },
        )
        steps = await sim.idle(cid)
        assert "Lint, Unit tests" in steps[-2]["plannerResponse"]["response"]  # then CHECKPOINT

        await sim.send(cid, "a few questions")
        index, step = await sim.waiting(cid, after=index)
        questions = _questions(step)
        assert len(questions) == 3
        with pytest.raises(ConnectHandlerError, match="response"):
            await sim.answer(
                cid,
                index,
                askQuestion={
                    "responses": [
                        {"question": questions[0]["question"], "selectedOptionIds": ["1"]}
                    ]
                },
            )
        responses = [  # out of order: matched by the question text
            {"question": questions[2]["question"], "selectedOptionIds": ["1", "2"]},
            {"question": questions[0]["question"], "selectedOptionIds": ["2"]},
            {"question": questions[1]["question"], "skipped": True},
        ]
        await sim.answer(cid, index, askQuestion={"responses": responses})
        steps = await sim.idle(cid)
        reply = steps[-1]["plannerResponse"]["response"]
        assert "→ Go" in reply
        assert "(skipped)" in reply
        assert "Docs, CI workflow" in reply

        await sim.send(cid, "write-in answer")
        index, step = await sim.waiting(cid, after=index)
        [question] = _questions(step)
        await sim.answer(
            cid,
            index,
            askQuestion={
                "responses": [{"question": question["question"], "writeInResponse": "toolbox"}]
            },
        )
        steps = await sim.idle(cid)
        done = steps[index]
        echoed = done["completedInteractions"][0]["response"]["askQuestion"]["responses"][0]
        assert echoed["writeInResponse"] == "toolbox"
        assert "toolbox" in steps[-1]["plannerResponse"]["response"]

    run_sim(workspace, body)


def test_cancelled_question(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "question")
        index, _ = await sim.waiting(cid)
        await sim.answer(cid, index, askQuestion={"cancelled": True})
        steps = await sim.idle(cid)
        assert steps[index]["completedInteractions"][0]["response"]["askQuestion"] == {
            "cancelled": True
        }
        assert "cancelled" in steps[-2]["plannerResponse"]["response"]

    run_sim(workspace, body)


def test_waiting_timeout_retries_at_a_higher_index(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "question")
        first, step = await sim.waiting(cid)
        fresh, retry = await sim.waiting(cid, after=first)
        steps = await sim.steps(cid)
        assert fresh > first
        assert steps[first]["status"] == "CORTEX_STEP_STATUS_ERROR"
        assert _questions(retry) == _questions(step)
        with pytest.raises(ConnectHandlerError, match=f"input not registered for step {first}"):
            await sim.answer(cid, first, askQuestion={"cancelled": True})
        await sim.answer(cid, fresh, askQuestion={"cancelled": True})
        await sim.idle(cid)

    run_sim(workspace, body, waiting_timeout=0.05, waiting_retries=5)


def test_waiting_gives_up_after_its_retries(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "run: pwd")
        steps = await sim.idle(cid)
        assert [short(s) for s in steps[3:]] == [
            (RC, "ERROR"),
            (RC, "ERROR"),
            ("ERROR_MESSAGE", "DONE"),
        ]

    run_sim(workspace, body, waiting_timeout=0.01, waiting_retries=1)


# -- cancel and stop ----------------------------------------------------------------------
def test_cancel_stops_generation(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "a long answer please")
        cascade = sim.engine.cascades[cid]
        await sim.until(
            cid,
            lambda: (
                len(cascade.steps) > 2 and "modifiedResponse" in cascade.steps[2]["plannerResponse"]
            ),
        )
        assert await sim.call("CancelCascadeSteps", {"cascadeId": cid}) == {}
        steps = await sim.steps(cid)
        assert sim.status(cid) == "IDLE"
        planner = steps[2]
        assert short(planner) == (PR, "CANCELED")
        assert "response" not in planner["plannerResponse"]
        assert sim.engine.snapshot()["cascades"][cid]["cancelRequests"][-1]["effect"] == "stopped"

    run_sim(workspace, body, long_answer_chunks=10_000, long_token_interval=0.001)


def test_cancel_is_a_no_op_while_waiting_but_force_stop_is_not(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "run: pwd")
        index, _ = await sim.waiting(cid)
        await sim.call("CancelCascadeSteps", {"cascadeId": cid, "stepIndices": [index]})
        assert (await sim.steps(cid))[index]["status"] == "CORTEX_STEP_STATUS_WAITING"
        assert sim.status(cid) == "RUNNING"
        record = sim.engine.snapshot()["cascades"][cid]["cancelRequests"][-1]
        assert record["effect"].startswith("ignored")
        reply = await sim.call("ForceStopCascadeTree", {"conversationId": cid})
        assert reply == {"stoppedConversationIds": [cid]}
        assert (await sim.steps(cid))[index]["status"] == "CORTEX_STEP_STATUS_CANCELED"
        assert sim.status(cid) == "IDLE"
        assert sim.engine.cascades[cid].gates == {}
        assert await sim.call("ForceStopCascadeTree", {"conversationId": cid}) == {}

    run_sim(workspace, body)


def test_cancel_a_running_command(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "slow command")
        index, _ = await sim.waiting(cid)
        await sim.answer(cid, index, permission={"allow": True})
        cascade = sim.engine.cascades[cid]
        await sim.until(cid, lambda: "combinedOutput" in cascade.steps[index]["runCommand"])
        await sim.call("CancelCascadeSteps", {"cascadeId": cid})
        step = (await sim.steps(cid))[index]
        assert short(step) == (RC, "CANCELED")
        assert step["error"]["shortError"] == "context canceled by user"

    run_sim(workspace, body, slow_command_seconds=60.0)


# -- other scenarios ----------------------------------------------------------------------
def test_view_file_and_list_directory(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "please read README.md")
        steps = await sim.idle(cid)
        view = steps[3]
        assert short(view) == ("VIEW_FILE", "DONE")
        assert view["viewFile"]["absolutePathUri"] == (workspace / "README.md").as_uri()
        assert view["viewFile"]["content"] == "# Demo\nhello file content\n"
        assert view["viewFile"]["numLines"] == 2
        await sim.send(cid, "ls")
        steps = await sim.idle(cid)
        listing = next(s for s in steps if s["type"].endswith("LIST_DIRECTORY"))
        assert listing["listDirectory"]["results"] == [
            {"name": "README.md", "sizeBytes": str((workspace / "README.md").stat().st_size)},
            {"name": "empty.txt"},
            {"name": "src", "isDir": True},
        ]

    run_sim(workspace, body)


def test_model_error_scenario(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "simulate a model error")
        steps = await sim.idle(cid)
        error = steps[2]
        assert short(error) == ("ERROR_MESSAGE", "DONE")
        assert error["metadata"]["source"] == "CORTEX_STEP_SOURCE_SYSTEM"
        assert "retryable error" in error["errorMessage"]["error"]["userErrorMessage"]

    run_sim(workspace, body)


def test_subagent_child_cascade(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "use a sub-agent")
        steps = await sim.idle(cid)
        invoke = next(s for s in steps if s["type"].endswith("INVOKE_SUBAGENT"))
        assert invoke["status"] == "CORTEX_STEP_STATUS_DONE"
        summaries = (await sim.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
        [child] = [
            k
            for k, v in summaries.items()
            if v["trajectoryMetadata"].get("parentConversationId") == cid
        ]
        assert summaries[child]["trajectoryMetadata"]["rootConversationId"] == cid
        roots = await sim.call("GetAllCascadeTrajectories", {"excludeSubtrajectories": True})
        assert child not in roots["trajectorySummaries"]
        assert cid in roots["trajectorySummaries"]
        meta = (await sim.call("GetConversationMetadata", {"conversationId": child}))["metadata"]
        assert meta["parentConversationId"] == cid
        child_steps = await sim.idle(child)
        report = child_steps[-1]["plannerResponse"]["response"]
        assert invoke["invokeSubagent"]["results"] == [{"conversationId": child, "summary": report}]
        assert invoke["invokeSubagent"]["subagents"][0]["role"] == "Workspace Surveyor"
        assert report in steps[-2]["plannerResponse"]["response"]  # before the checkpoint

    run_sim(workspace, body)


def test_force_stop_tree_stops_the_sub_agent(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "sub-agent")
        await sim.until(
            cid, lambda: any(c.parent_id == cid and c.running for c in sim.engine.cascades.values())
        )
        child = next(c.cascade_id for c in sim.engine.cascades.values() if c.parent_id == cid)
        reply = await sim.call("ForceStopCascadeTree", {"conversationId": cid})
        assert set(reply["stoppedConversationIds"]) == {cid, child}
        assert sim.status(cid) == "IDLE"
        assert sim.status(child) == "IDLE"

    run_sim(workspace, body, token_interval=0.01)


def test_delivery_strategies_while_running(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        cascade = sim.engine.cascades[cid]
        await sim.send(cid, "long answer")
        await sim.until(cid, lambda: len(cascade.steps) > 2)
        await sim.send(cid, "and also this", deliveryStrategy="MESSAGE_DELIVERY_STRATEGY_WHEN_IDLE")
        await sim.send(cid, "steer", deliveryStrategy="MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION")
        assert sim.engine.snapshot()["cascades"][cid]["queued"] == [[{"text": "and also this"}]]
        await sim.until(cid, lambda: cascade.turns_started == 2 and not cascade.running)
        steps = await sim.steps(cid)
        inputs = [(n, s) for n, s in enumerate(steps) if s["type"].endswith("USER_INPUT")]
        assert [s["userInput"]["userResponse"] for _, s in inputs] == [
            "long answer",
            "steer",
            "and also this",
        ]
        first_exec = steps[0]["metadata"]["executionId"]
        assert inputs[1][1]["metadata"]["executionId"] == first_exec  # joined the running turn
        assert inputs[2][1]["metadata"]["executionId"] != first_exec  # a turn of its own
        replies = [
            s["plannerResponse"].get("response", "") for s in steps if "plannerResponse" in s
        ]
        assert any("Noted your follow-up: steer" in r for r in replies)

    run_sim(workspace, body, long_answer_chunks=20, long_token_interval=0.001)


def test_tui_turns_and_clear(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        old = sim.engine.tui_cascade_id
        summaries = (await sim.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
        assert old in summaries  # the TUI's conversation exists from the start
        await sim.engine.submit_tui_text("hello from the terminal")
        steps = await sim.idle(old)
        assert steps[0]["userInput"]["userConfig"]["plannerConfig"]["planModel"] == MODEL
        await sim.engine.submit_tui_text("/clear")
        new = sim.engine.tui_cascade_id
        assert new != old
        assert old in sim.engine.cascades
        assert await sim.steps(old) == steps  # still reachable
        assert any(e.kind == "cleared" and e.cascade_id == new for e in sim.events)
        assert any(e.kind == "answer" and e.cascade_id == old for e in sim.events)
        await sim.engine.submit_tui_text("run: pwd")
        await sim.waiting(new)
        assert "permission to run: pwd" in [e.text for e in sim.events if e.kind == "waiting"]
        assert await sim.engine.answer_tui({"permission": {"allow": True}}) == "answered step 3"
        assert (await sim.idle(new))[3]["runCommand"]["exitCode"] == 0
        assert await sim.engine.answer_tui({"permission": {"allow": True}}) == (
            "nothing is waiting for an answer"
        )

    run_sim(workspace, body)


def test_tui_model_comes_from_settings(workspace: Path) -> None:
    engine = SimEngine(EngineSettings(default_model="Claude Sonnet 4.5"), workspace=workspace)
    assert engine.tui_model.model == "MODEL_CLAUDE_4_5_SONNET"
    with pytest.raises(ValueError, match="unknown default model"):
        SimEngine(EngineSettings(default_model="nonsense"), workspace=workspace)


def test_mcp_calls_and_rules_have_their_triggers() -> None:
    assert choose('please use github/search_issues {"q": "bug"}')[0] == "mcp_tool"
    assert choose("what do your rules say?")[0] == "rules"
    assert choose("what are your instructions")[0] == "rules"


def test_a_command_allowed_for_the_conversation_is_not_asked_again(workspace: Path) -> None:
    async def body(sim: Sim) -> None:
        cid = await sim.start()
        await sim.send(cid, "run: echo again")
        index, _ = await sim.waiting(cid)
        scope = "PERMISSION_SCOPE_CONVERSATION"
        await sim.answer(cid, index, permission={"allow": True, "scope": scope})
        await sim.idle(cid)
        await sim.send(cid, "run: echo again")
        steps = await sim.idle(cid)
        commands = [s for s in steps if short(s)[0] == "RUN_COMMAND"]
        assert [short(c) for c in commands] == [("RUN_COMMAND", "DONE")] * 2
        assert "requestedInteraction" not in commands[1]
        assert not commands[1]["runCommand"].get("userRejected")
        # Allowed once only: the next one asks again.
        await sim.send(cid, "run: echo other")
        index, _ = await sim.waiting(cid)
        await sim.answer(cid, index, permission={"allow": True})
        await sim.idle(cid)
        await sim.send(cid, "run: echo other")
        await sim.waiting(cid)

    run_sim(workspace, body)


def test_the_probes_prompts_pick_their_scenarios() -> None:
    """`omnigent-agy probe`'s turns are plain requests a real model follows; agy-sim's triggers
    must read each as the probe means it (docs/probe.md)."""
    from omnigent_agy.probe.turn_checks import PLANS  # noqa: PLC0415 - the plugin's side

    wanted = {
        "plain": "plain_answer",
        "command": "approval_command",
        "deny": "approval_command",
        "question": "single_question",
        "subagent": "subagent",
        "interrupt": "long_answer",
    }
    assert {plan.name: choose(plan.prompt)[0] for plan in PLANS} == wanted
