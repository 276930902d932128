"""One document per action kind, each run on a scripted model, asserting what happened."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from raf import AgentBuilder
from raf.core.contents import ApprovalRequestContent
from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient
from raf.tools.mcp.client import McpClient
from raf.workflow import Workflow, WorkflowRunResult
from raf.workflow.errors import WorkflowRunError
from tests.decl.workflow.helpers import DATA, variables
from tests.tools.peers import py_server_cmd

ACTIONS = DATA / "actions"


def build(kind: str, model: ScriptedChatClient | None = None, **extra: Any) -> Workflow:
    builder = DeclWorkflowBuilder().from_file(ACTIONS / f"{kind}.yaml")
    builder.with_chat_client(model or ScriptedChatClient([]))
    for key, value in extra.items():
        getattr(builder, f"with_{key}")(value)
    return builder.build()


async def run(
    kind: str, message: Any, model: ScriptedChatClient | None = None
) -> WorkflowRunResult:
    return await build(kind, model).run(message)


def test_every_action_kind_has_a_document() -> None:
    from raf.decl.workflow import ACTION_KINDS

    kinds = set(ACTION_KINDS) - {"SetValue"}
    assert {p.stem for p in ACTIONS.glob("*.yaml")} == kinds


async def test_set_variable() -> None:
    workflow = build("SetVariable")
    result = await workflow.run("hey")
    assert result.outputs == ["HEY 7"]
    assert variables(workflow)["Global"] == {"shout": "HEY"}


async def test_set_multiple_variables() -> None:
    workflow = build("SetMultipleVariables")
    result = await workflow.run("abcdef")
    assert result.outputs == ["abc/6"]
    assert variables(workflow)["Workflow"]["Outputs"] == {"list": ["a", "b"]}


async def test_set_text_variable() -> None:
    result = await run("SetTextVariable", "Ada")
    assert result.outputs == ["Dear Ada, you are 3 letters long."]


async def test_reset_variable() -> None:
    assert (await run("ResetVariable", "")).outputs == ["forgotten"]


async def test_clear_all_variables() -> None:
    workflow = build("ClearAllVariables")
    result = await workflow.run("")
    assert result.outputs == ["true true kept"]
    assert variables(workflow)["Local"] == {}


async def test_parse_value() -> None:
    result = await run("ParseValue", '{"item": "tea", "qty": 3}')
    assert result.outputs == ["tea x6"]


async def test_parse_value_refuses_text_that_is_not_a_record() -> None:
    from raf.workflow import WorkflowRunError

    with pytest.raises(WorkflowRunError, match="cannot parse 'tea' as record"):
        await run("ParseValue", "tea")


async def test_if() -> None:
    assert (await run("If", "Please help")).outputs == ["gladly"]
    assert (await run("If", "help!")).outputs == ["say please"]


@pytest.mark.parametrize(("score", "grade"), [("95", "A"), ("50", "B"), ("12", "F")])
async def test_condition_group(score: str, grade: str) -> None:
    assert (await run("ConditionGroup", score)).outputs == [grade]


async def test_foreach() -> None:
    result = await run("Foreach", "to be or")
    assert result.outputs == ["0:TO", "1:BE", "2:OR"]


async def test_break_loop() -> None:
    workflow = build("BreakLoop")
    result = await workflow.run("")
    assert result.outputs == ["odd 3", "odd 5", "first even 8"]
    assert variables(workflow)["Local"]["n"] == 8


async def test_continue_loop() -> None:
    assert (await run("ContinueLoop", "")).outputs == ["todo b (1)", "todo c (2)"]


async def test_goto_action() -> None:
    assert (await run("GotoAction", "")).outputs == ["reached 32"]


async def test_send_activity() -> None:
    result = await run("SendActivity", "hello")
    assert result.outputs == ["Welcome!", "You wrote 5 characters.", "Echo: hello"]


async def test_invoke_agent() -> None:
    model = ScriptedChatClient(["Tides turn twice a day."])
    result = await run("InvokeAgent", "the sea", model)
    assert result.outputs == ["~ Tides turn twice a day. ~"]
    request = model.requests[0]
    assert request.messages[-1].text == "Topic: the sea"
    assert "one line of verse" in request.messages[0].text


def _refund_tools(calls: list[dict[str, Any]]) -> list[Any]:
    from raf import tool

    @tool
    def price_of(item: str) -> float:
        """The price of an item."""
        calls.append({"price_of": item})
        return 4.5

    @tool
    def refund(item: str, amount: float) -> dict[str, Any]:
        """Refund an item."""
        calls.append({"refund": item, "amount": amount})
        return {"item": item, "amount": amount}

    return [price_of, refund]


@pytest.mark.parametrize(("approved", "said"), [(True, "refunded 4.5"), (False, "refund declined")])
async def test_invoke_function_tool_asks_for_approval(approved: bool, said: str) -> None:
    calls: list[dict[str, Any]] = []
    builder = DeclWorkflowBuilder().from_file(ACTIONS / "InvokeFunctionTool.yaml")
    for made in _refund_tools(calls):
        builder.with_tool(made)
    workflow = builder.build()
    paused = await workflow.run("kettle")
    assert paused.status == "paused"
    assert calls == [{"price_of": "kettle"}]
    (request,) = paused.requests
    assert isinstance(request.data, ApprovalRequestContent)
    assert request.data.name == "refund"
    assert request.data.arguments == {"item": "kettle", "amount": 4.5}
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: approved}
    )
    assert done.status == "completed"
    assert done.outputs == [said]
    refunded = [c for c in calls if "refund" in c]
    assert refunded == ([{"refund": "kettle", "amount": 4.5}] if approved else [])


async def test_execute_code_runs_in_the_sandbox() -> None:
    result = await run("ExecuteCode", "4")
    assert result.outputs == ["sum of squares below 4 is 14"]


async def test_invoke_mcp_tool() -> None:
    cmd = py_server_cmd()
    client = McpClient({"name": "calc", "command": cmd[0], "args": cmd[1:]})
    try:
        builder = DeclWorkflowBuilder().from_file(ACTIONS / "InvokeMcpTool.yaml")
        workflow = builder.with_mcp_server("calc", client).build()
        result = await workflow.run("40")
    finally:
        await client.aclose()
    assert result.outputs == ["the server says 42"]


class _Orders(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []  # noqa: RUF012

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Orders.seen.append({"path": self.path, "team": self.headers["X-Team"], "body": body})
        data = json.dumps({"id": 17, **body}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def orders_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Orders)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def test_http_request_action(orders_server: str) -> None:
    _Orders.seen.clear()
    workflow = build("HttpRequestAction", http_allow_hosts=["127.0.0.1"])
    result = await workflow.run(orders_server)
    assert result.outputs == ["order 17 for 2 tea"]
    assert _Orders.seen == [
        {"path": "/orders", "team": "workflows", "body": {"item": "tea", "qty": 2}}
    ]
    assert variables(workflow)["Local"]["headers"]["Content-Type"] == "application/json"


async def test_question_pauses_and_resumes_with_the_answer() -> None:
    workflow = build("Question")
    paused = await workflow.run("hi")
    assert paused.status == "paused" and paused.outputs == []
    (request,) = paused.requests
    assert request.data == "What is your name?"
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: "Lin"}
    )
    assert done.outputs == ["Nice to meet you, Lin!"]


async def test_question_takes_its_default_for_an_empty_answer() -> None:
    workflow = build("Question")
    paused = await workflow.run("hi")
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={paused.requests[0].request_id: ""}
    )
    assert done.outputs == ["Nice to meet you, stranger!"]


async def test_request_external_input() -> None:
    workflow = build("RequestExternalInput")
    paused = await workflow.run("")
    (request,) = paused.requests
    assert request.data == "Ticket number?"
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: "T-9"}
    )
    assert done.outputs == ["tracking ticket T-9"]


async def test_end_workflow() -> None:
    assert (await run("EndWorkflow", "stop")).outputs == ["stopping"]
    assert (await run("EndWorkflow", "go")).outputs == ["carrying on"]


async def test_end_conversation() -> None:
    result = await run("EndConversation", "")
    assert result.status == "completed"
    assert result.outputs == ["Goodbye."]


async def test_create_conversation_keeps_the_agent_apart() -> None:
    model = ScriptedChatClient(["too long"])
    result = await run("CreateConversation", "my essay", model)
    assert result.outputs == ["critic: too long"]
    texts = [m.text for m in model.requests[0].messages]
    assert texts[-1] == "my essay"
    assert len(texts) == 2  # instructions and the one message of the new conversation


async def test_add_conversation_message_is_seen_by_the_agent() -> None:
    model = ScriptedChatClient(["At 9am."])
    result = await run("AddConversationMessage", "When do you open?", model)
    assert result.outputs == ["At 9am."]
    texts = [m.text for m in model.requests[0].messages[1:]]
    assert texts == ["When do you open?", "Known facts: the shop opens at 9am."]


async def test_invoke_agent_surfaces_the_agents_tool_approvals_one_by_one() -> None:
    from raf import AgentBuilder, tool
    from raf.testing import call, reply

    refunded: list[str] = []

    @tool(approval_required=True)
    def refund(item: str) -> str:
        """Refund an item."""
        refunded.append(item)
        return f"refunded {item}"

    model = ScriptedChatClient(
        [
            reply("", call("refund", {"item": "kettle"}), call("refund", {"item": "toaster"})),
            "Refunded the kettle; the toaster was refused.",
        ]
    )
    clerk = AgentBuilder("clerk").with_chat_client(model).with_tool(refund).build()
    workflow = (
        DeclWorkflowBuilder()
        .from_file(ACTIONS / "InvokeAgent.yaml")
        .with_agent("poet", clerk)
        .build()
    )
    first = await workflow.run("refunds")
    (ask_kettle,) = first.requests
    assert isinstance(ask_kettle.data, ApprovalRequestContent)
    assert ask_kettle.data.arguments == {"item": "kettle"}
    second = await workflow.run(
        checkpoint_id=first.checkpoint_id, responses={ask_kettle.request_id: True}
    )
    (ask_toaster,) = second.requests
    assert ask_toaster.data.arguments == {"item": "toaster"}
    assert refunded == []
    done = await workflow.run(
        checkpoint_id=second.checkpoint_id, responses={ask_toaster.request_id: False}
    )
    assert done.status == "completed"
    assert refunded == ["kettle"]
    assert done.outputs == ["~ Refunded the kettle; the toaster was refused. ~"]


async def test_agent_framework_http_then_agent_document(orders_server: str) -> None:
    model = ScriptedChatClient(["Order 17 is one cake."])
    workflow = (
        DeclWorkflowBuilder()
        .from_file(DATA / "maf_http_agent.yaml")
        .with_agent(
            "OrderAgent",
            AgentBuilder("OrderAgent").with_chat_client(model).build(),
        )
        .with_http_allow_hosts(["127.0.0.1"])  # the URL is computed from the inputs
        .build()
    )
    result = await workflow.run({"base": orders_server, "message": "What did I order?"})
    assert result.outputs == ["Order 17 is one cake."]
    seen = [m.text for m in model.requests[0].messages]
    assert seen[0] == "What did I order?"
    assert '"id": 17' in seen[1]
    # an agent's output messages are kept as MAF shapes them: a table of messages
    (answer,) = variables(workflow)["Local"]["Answer"]
    assert (answer["Role"], answer["Text"]) == ("assistant", "Order 17 is one cake.")


async def test_mcp_servers_declared_in_the_document() -> None:
    from raf.decl.workflow import close_services

    cmd = py_server_cmd()
    text = (ACTIONS / "InvokeMcpTool.yaml").read_text(encoding="utf-8")
    declared = (
        f"mcpServers:\n  calc:\n    command: {json.dumps(cmd[0])}\n"
        f"    args: {json.dumps(cmd[1:])}\n"
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(declared + text).build()
    try:
        result = await workflow.run("1")
    finally:
        await close_services(workflow)
    assert result.outputs == ["the server says 3"]


async def test_copy_conversation_messages_both_shapes() -> None:
    result = await run("CopyConversationMessages", "")
    assert result.outputs == ["assistant:second"]


async def test_retrieve_conversation_messages_as_records() -> None:
    result = await run("RetrieveConversationMessages", "")
    assert result.outputs == ["assistant=two,user=one"]


async def test_retrieve_one_conversation_message_by_id() -> None:
    result = await run("RetrieveConversationMessage", "")
    assert result.outputs == ["remember me"]


async def test_edit_table_operations() -> None:
    result = await run("EditTable", "")
    assert result.outputs == ["Ab"]


async def test_edit_table_v2_both_shapes() -> None:
    result = await run("EditTableV2", "")
    assert result.outputs == ['[{"id": 4, "name": "four"}] {"id": 7}']


async def test_question_skips_a_variable_with_a_value_only_when_asked_to() -> None:
    text = """
kind: Workflow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - {kind: SetVariable, id: set, variable: Local.name, value: Ada}
    - {kind: Question, id: ask, variable: Local.name, prompt: Name?, alwaysPrompt: false}
    - {kind: SendActivity, id: greet, activity: "hi {Local.name}"}
"""
    workflow = DeclWorkflowBuilder().from_yaml_str(text).build()
    result = await workflow.run("")
    assert result.outputs == ["hi Ada"]


_SANDBOXED = """
kind: Workflow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: ExecuteCode
      id: run
      code: print(6 * 7)
      sandbox: {sandbox}
      output: Local.out
    - {{kind: SendActivity, id: say, activity: "{{Local.out}}"}}
"""


async def test_execute_code_sandbox_settings() -> None:
    workflow = DeclWorkflowBuilder().from_yaml_str(
        _SANDBOXED.format(sandbox="{timeout: 20, memory_mb: 256, network: false}")
    )
    result = await workflow.build().run("")
    assert result.outputs == ["42"]


async def test_execute_code_refuses_to_run_outside_the_sandbox() -> None:
    workflow = DeclWorkflowBuilder().from_yaml_str(_SANDBOXED.format(sandbox="false")).build()
    with pytest.raises(WorkflowRunError, match="raf runs code only in its sandbox"):
        await workflow.run("")


async def test_send_message_and_topic_variables() -> None:
    result = await run("SendMessage", "")
    assert result.outputs == ["The cat says meow."]


async def test_clear_all_variables_reads_maf_scope_names() -> None:
    text = """
kind: Workflow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - {kind: SetVariable, id: a, variable: Local.a, value: 1}
    - {kind: SetVariable, id: b, variable: Global.b, value: 2}
    - {kind: ClearAllVariables, id: c, variables: ConversationScopedVariables}
    - {kind: SendActivity, id: d, activity: "=Local.a & Global.b"}
    - {kind: ClearAllVariables, id: e, variables: AllGlobalVariables}
    - {kind: SendActivity, id: f, activity: "=IsBlank(Global.b)"}
"""
    result = await DeclWorkflowBuilder().from_yaml_str(text).build().run("")
    assert result.outputs == ["2", "true"]
