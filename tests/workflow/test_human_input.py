"""Requests for input: the run pauses with them in its checkpoint, answers resume it,
wrong answers are refused before anything runs, and agent tool approvals surface the
same way."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from raf import AgentBuilder, ApprovalRequestContent, ApprovalRequiredTool, tool
from raf.testing import ScriptedChatClient, call, reply
from raf.workflow import (
    Executor,
    InMemoryCheckpointStore,
    InputRequested,
    InputResponse,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowError,
    WorkflowPaused,
    WorkflowRunError,
    executor,
    handler,
)


@dataclass(kw_only=True, slots=True)
class Review:
    """A structured answer."""

    approved: bool
    comment: str


class Editor(Executor):
    """Asks for a review of each draft and sends the verdict on."""

    def __init__(self) -> None:
        super().__init__("editor")

    @handler
    async def draft(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"draft": text}, Review)

    @handler
    async def reviewed(self, answer: InputResponse[Review], ctx: WorkflowContext[str]) -> None:
        review = answer.response
        verdict = "approved" if review.approved else "rejected"
        await ctx.send_message(f"{answer.data['draft']}: {verdict} ({review.comment})")


@executor
def publish(text: str) -> str:
    return f"published {text}"


def editorial() -> tuple[Editor, InMemoryCheckpointStore]:
    return Editor(), InMemoryCheckpointStore()


async def test_a_request_pauses_the_run_and_its_answer_resumes_it() -> None:
    editor, store = editorial()
    workflow = (
        WorkflowBuilder("ed", start=editor)
        .add_edge(editor, publish)
        .with_checkpoint_store(store)
        .build()
    )
    paused = await workflow.run("essay")
    assert paused.status == "paused" and paused.outputs == []
    (request,) = paused.requests
    assert request.node == "editor" and request.data == {"draft": "essay"}
    asked = [e for e in paused.events if isinstance(e, InputRequested)]
    assert asked[0].request_id == request.request_id
    assert isinstance(paused.events[-1], WorkflowPaused)
    stored = await store.load(paused.checkpoint_id or "")
    assert stored.status == "paused" and stored.requests[0]["request_id"] == request.request_id

    # A dict is turned into the requested dataclass.
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: {"approved": True, "comment": "fine"}},
    )
    assert done.status == "completed"
    assert done.outputs == ["published essay: approved (fine)"]


async def test_wrong_or_unknown_answers_are_refused_before_anything_runs() -> None:
    editor, store = editorial()
    workflow = WorkflowBuilder("ed", start=editor).with_checkpoint_store(store).build()
    paused = await workflow.run("essay")
    (request,) = paused.requests
    before = len(await store.list())
    with pytest.raises(WorkflowError, match="must be Review, not str"):
        await workflow.run(checkpoint_id=paused.checkpoint_id, responses={request.request_id: "ok"})
    with pytest.raises(WorkflowError, match="not a valid Review"):
        await workflow.run(
            checkpoint_id=paused.checkpoint_id, responses={request.request_id: {"approved": 1}}
        )
    with pytest.raises(WorkflowError, match="no pending request 'req_x'"):
        await workflow.run(checkpoint_id=paused.checkpoint_id, responses={"req_x": True})
    with pytest.raises(WorkflowError, match="waits for input"):
        await workflow.run(checkpoint_id=paused.checkpoint_id)
    assert len(await store.list()) == before
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: Review(approved=False, comment="too long")},
    )
    assert done.outputs == ["essay: rejected (too long)"]


async def test_other_branches_run_on_while_a_request_waits() -> None:
    editor = Editor()

    @executor
    def start(text: str) -> str:
        return text

    @executor
    def index(text: str) -> str:
        return f"indexed {text}"

    workflow = WorkflowBuilder("b", start=start).add_fan_out(start, [editor, index]).build()
    paused = await workflow.run("essay")
    assert paused.status == "paused" and paused.outputs == ["indexed essay"]


async def test_a_node_without_a_response_handler_cannot_ask() -> None:
    class Rude(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.request_input("why?")

    with pytest.raises(WorkflowRunError, match="'rude' asked for input but has no handler"):
        await WorkflowBuilder("r", start=Rude()).build().run("x")


async def test_a_response_type_the_graph_does_not_declare_is_refused() -> None:
    class Odd(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.request_input("rate it", Review)

        @handler
        async def answer(self, a: InputResponse[str], ctx: WorkflowContext[str]) -> None:
            return None

    with pytest.raises(WorkflowRunError, match="handler for InputResponse\\[Review\\]"):
        await WorkflowBuilder("o", start=Odd()).build().run("x")


RAN: list[str] = []


@tool
def wire_money(amount: int) -> str:
    """Send money (needs approval)."""
    RAN.append(f"wire {amount}")
    return f"sent {amount}"


def banker(script: list[object]) -> tuple[object, ScriptedChatClient]:
    model = ScriptedChatClient(script)  # type: ignore[arg-type]
    agent = (
        AgentBuilder()
        .with_name("banker")
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(wire_money))
        .build()
    )
    return agent, model


@pytest.mark.parametrize(("approved", "final"), [(True, "done, sent"), (False, "not sent")])
async def test_agent_tool_approvals_surface_as_requests_and_resume_the_agent(
    approved: bool, final: str
) -> None:
    RAN.clear()
    agent, model = banker([reply("", call("wire_money", amount=5, call_id="w1")), final])

    workflow = WorkflowBuilder("bank", start=agent).build()
    paused = await workflow.run("pay 5")
    (request,) = paused.requests
    assert request.node == "banker" and request.response_type == "bool"
    assert isinstance(request.data, ApprovalRequestContent)
    assert request.data.name == "wire_money" and request.data.arguments == {"amount": 5}
    assert RAN == []
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: approved}
    )
    assert done.output.text == final
    assert (["wire 5"] if approved else []) == RAN
    # The model saw the tool's outcome on the resumed turn.
    results = [c for m in model.requests[-1].messages for c in m.function_results]
    assert results[0].call_id == "w1" and results[0].is_error is (not approved)


async def test_two_approvals_wait_until_both_are_answered() -> None:
    RAN.clear()
    agent, _ = banker(
        [
            reply(
                "",
                call("wire_money", amount=1, call_id="a"),
                call("wire_money", amount=2, call_id="b"),
            ),
            "both handled",
        ]
    )
    workflow = WorkflowBuilder("bank", start=agent).build()
    paused = await workflow.run("pay twice")
    first, second = paused.requests
    half = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={first.request_id: True}
    )
    assert half.status == "paused" and [r.request_id for r in half.requests] == [second.request_id]
    assert RAN == []
    done = await workflow.run(
        checkpoint_id=half.checkpoint_id, responses={second.request_id: False}
    )
    assert done.output.text == "both handled" and RAN == ["wire 1"]


async def test_a_generic_response_type_is_checked_by_its_origin() -> None:
    class Pick(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.request_input("pick tags", list[str])

        @handler
        async def picked(self, answer: InputResponse[list[str]], ctx: WorkflowContext[str]) -> None:
            await ctx.yield_output(",".join(answer.response))

    workflow = WorkflowBuilder("p", start=Pick()).build()
    paused = await workflow.run("x")
    (request,) = paused.requests
    assert request.response_type == "list"
    with pytest.raises(WorkflowError, match="must be list, not str"):
        await workflow.run(checkpoint_id=paused.checkpoint_id, responses={request.request_id: "a"})
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: ["a", "b"]}
    )
    assert done.outputs == ["a,b"]
