"""An orchestration's agent is a workflow node like any agent: it answers, and a member's
approval becomes the workflow's request for input, answered from a checkpoint."""

from __future__ import annotations

from raf.core.responses import AgentResponse
from raf.orchestrations import SequentialOrchestration
from raf.testing import call, reply
from raf.workflow import AgentExecutor, FunctionExecutor, InMemoryCheckpointStore, WorkflowBuilder

from .helpers import member


def text_of(response: AgentResponse) -> str:
    return response.text


async def test_an_orchestration_runs_as_a_node_and_pauses_the_workflow_for_approval():
    editor, ec = member("editor", "checked")
    publisher, pc = member(
        "publisher", reply("", call("publish", call_id="p1")), "published", approve="publish"
    )
    team = SequentialOrchestration([editor, publisher], name="team").as_agent()
    node = AgentExecutor(team)
    done = FunctionExecutor(text_of, id="done")
    store = InMemoryCheckpointStore()
    workflow = WorkflowBuilder("flow", start=node).add_edge(node, done).build()
    paused = await workflow.run("release it", checkpoint_store=store)
    assert paused.status == "paused"
    (request,) = paused.requests
    assert request.data.call_id == "p1"
    finished = await workflow.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: True},
        checkpoint_store=store,
    )
    assert finished.status == "completed"
    assert finished.outputs == ["published"]
    assert (len(ec.requests), len(pc.requests)) == (1, 2)  # no finished turn runs again
