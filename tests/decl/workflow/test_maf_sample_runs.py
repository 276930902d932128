"""Microsoft Agent Framework's workflow samples run end to end with scripted agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import AgentBuilder
from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "maf-samples"
DECLARATIVE = SAMPLES / "python" / "samples" / "03-workflows" / "declarative"


def _agent(name: str, replies: list[str]) -> tuple[str, object]:
    return name, AgentBuilder(name).with_chat_client(ScriptedChatClient(replies)).build()


async def test_student_teacher_runs_until_the_teacher_congratulates() -> None:
    builder = DeclWorkflowBuilder().from_file(DECLARATIVE / "student_teacher" / "workflow.yaml")
    for name, agent in (
        _agent("StudentAgent", ["2 + 2 = 5", "2 + 2 = 4"]),
        _agent("TeacherAgent", ["Not quite, try again.", "Congratulations! That is right."]),
    ):
        builder = builder.with_agent(name, agent)
    workflow = builder.build()
    result = await workflow.run("What is 2 + 2?")
    said = " ".join(str(o) for o in result.outputs)
    assert said.count("[Student]") == 2  # a second try after "Not quite"
    assert "2 + 2 = 4" in said
    assert said.rstrip().endswith("GOLD STAR! The student has demonstrated understanding.")


async def test_conditional_workflow_routes_by_age() -> None:
    workflow = (
        DeclWorkflowBuilder()
        .from_file(DECLARATIVE / "conditional_workflow" / "workflow.yaml")
        .build()
    )
    young = await workflow.run({"age": 10})
    old = await workflow.run({"age": 70})
    assert young.outputs != old.outputs


WORKFLOW_SAMPLES = SAMPLES / "declarative-agents" / "workflow-samples"


async def test_simple_workflow_greets_from_its_inputs() -> None:
    workflow = (
        DeclWorkflowBuilder().from_file(DECLARATIVE / "simple_workflow" / "workflow.yaml").build()
    )
    result = await workflow.run({"name": "Ada"})
    assert result.outputs == ["Hello, Ada!"]


async def test_human_in_loop_asks_three_times_and_sums_up() -> None:
    workflow = (
        DeclWorkflowBuilder().from_file(DECLARATIVE / "human_in_loop" / "workflow.yaml").build()
    )
    answers = iter(["Lin", "good", "Nice work"])
    result = await workflow.run({})
    while result.status == "paused":
        (request,) = result.requests
        result = await workflow.run(
            checkpoint_id=result.checkpoint_id, responses={request.request_id: next(answers)}
        )
    said = "\n".join(str(o) for o in result.outputs)
    assert "Nice to meet you, Lin!" in said
    assert "That's wonderful to hear! Let's continue." in said
    assert "Thank you, Lin! Your feedback: Nice work" in said


@pytest.mark.parametrize(
    "path",
    [WORKFLOW_SAMPLES / "Marketing.yaml", DECLARATIVE / "marketing" / "workflow.yaml"],
    ids=["declarative-agents", "python-sample"],
)
async def test_marketing_passes_the_conversation_through_three_agents(path: Path) -> None:
    builder = DeclWorkflowBuilder().from_file(path)
    clients = {}
    for name, reply in (
        ("AnalystAgent", "features: light"),
        ("WriterAgent", "Buy the light one."),
        ("EditorAgent", "Buy the light one!"),
    ):
        clients[name] = ScriptedChatClient([reply])
        builder = builder.with_agent(
            name, AgentBuilder(name).with_chat_client(clients[name]).build()
        )
    result = await builder.build().run("A bottle")
    assert result.outputs == ["features: light", "Buy the light one.", "Buy the light one!"]
    seen = [m.text for m in clients["EditorAgent"].requests[0].messages]
    assert "A bottle" in seen and "Buy the light one." in seen  # the shared conversation


async def test_math_chat_loops_until_congratulations() -> None:
    builder = DeclWorkflowBuilder().from_file(WORKFLOW_SAMPLES / "MathChat.yaml")
    for name, agent in (
        _agent("StudentAgent", ["It is 5.", "It is 4."]),
        _agent("TeacherAgent", ["Try again.", "CONGRATULATIONS, correct."]),
    ):
        builder = builder.with_agent(name, agent)
    result = await builder.build().run("What is 2 + 2?")
    said = [str(o) for o in result.outputs]
    # the teacher's replies are not sent (autoSend: false); the loop ends on its
    # CONGRATULATIONS and the workflow's closing line follows the second answer
    assert said == ["It is 5.", "It is 4.", "GOLD STAR!"]


async def test_invoke_function_tool_calls_both_functions() -> None:
    def get_weather(location: str, unit: str) -> dict[str, object]:
        return {"location": location, "temp": 71, "unit": unit}

    def format_message(template: str, data: dict[str, object]) -> str:
        return template.format(**data)

    workflow = (
        DeclWorkflowBuilder()
        .from_file(DECLARATIVE / "invoke_function_tool" / "workflow.yaml")
        .with_tool(get_weather)
        .with_tool(format_message)
        .build()
    )
    result = await workflow.run({"location": "Oslo"})
    assert result.outputs[-1] == "The weather in Oslo is 71°F"


async def test_invoke_mcp_tool_asks_approval_then_answers_from_the_conversation() -> None:
    import sys

    from raf.tools.mcp.client import McpClient

    server = Path(__file__).with_name("docs_mcp_server.py")
    client = McpClient({"name": "docs", "command": sys.executable, "args": [str(server)]})
    model = ScriptedChatClient(["Use the Agent Framework docs."])
    try:
        workflow = (
            DeclWorkflowBuilder()
            .from_file(DECLARATIVE / "invoke_mcp_tool" / "workflow.yaml")
            .with_mcp_server("MicrosoftLearnDocs", client)
            .with_agent("DocsAgent", AgentBuilder("DocsAgent").with_chat_client(model).build())
            .build()
        )
        paused = await workflow.run({"text": "agents", "requireApproval": True})
        assert paused.status == "paused"
        (request,) = paused.requests
        assert "microsoft_docs_search" in str(request.data)
        done = await workflow.run(
            checkpoint_id=paused.checkpoint_id, responses={request.request_id: True}
        )
    finally:
        await client.aclose()
    assert done.outputs == ["Use the Agent Framework docs."]
    seen = " ".join(m.text for m in model.requests[0].messages)
    assert "agents is documented here." in seen  # the tool's answer joined the conversation


async def _answer_all(workflow: object, first: object, answers: list[str]) -> object:
    run = getattr(workflow, "run")  # noqa: B009
    result = await run(first)
    replies = iter(answers)
    while result.status == "paused":
        (request,) = result.requests
        result = await run(
            checkpoint_id=result.checkpoint_id, responses={request.request_id: next(replies)}
        )
    return result


async def test_function_tools_external_loop_until_exit() -> None:
    model = ScriptedChatClient(["Soup is $4.", "Bread is $2.", "Bye!"])
    workflow = (
        DeclWorkflowBuilder()
        .from_file(DECLARATIVE / "function_tools" / "workflow.yaml")
        .with_agent("MenuAgent", AgentBuilder("MenuAgent").with_chat_client(model).build())
        .build()
    )
    result = await _answer_all(workflow, "What soup is there?", ["And bread?", "exit"])
    assert getattr(result, "outputs") == ["Soup is $4.", "Bread is $2.", "Bye!"]  # noqa: B009
    assert len(model.requests) == 3


async def test_customer_support_resolves_by_self_service() -> None:
    import json

    resolved = json.dumps(
        {
            "IsResolved": True,
            "NeedsTicket": False,
            "IssueDescription": "no wifi",
            "AttemptedResolutionSteps": "restart",
        }
    )
    pending = json.dumps(
        {
            "IsResolved": False,
            "NeedsTicket": False,
            "IssueDescription": "no wifi",
            "AttemptedResolutionSteps": "",
        }
    )
    builder = DeclWorkflowBuilder().from_file(WORKFLOW_SAMPLES / "CustomerSupport.yaml")
    service = ScriptedChatClient([pending, resolved])
    builder = builder.with_agent(
        "SelfServiceAgent", AgentBuilder("SelfServiceAgent").with_chat_client(service).build()
    )
    for name in (
        "TicketingAgent",
        "TicketRoutingAgent",
        "WindowsSupportAgent",
        "TicketResolutionAgent",
        "TicketEscalationAgent",
    ):
        builder = builder.with_agent(
            name, AgentBuilder(name).with_chat_client(ScriptedChatClient([])).build()
        )
    result = await _answer_all(builder.build(), "My wifi is down", ["I restarted it"])
    assert getattr(result, "status") == "completed"  # noqa: B009
    assert len(service.requests) == 2  # asked once more after the first, unresolved answer


async def test_devui_workflow_uses_the_turn_scope() -> None:
    path = SAMPLES / "python" / "samples" / "02-agents" / "devui" / "workflow_declarative"
    workflow = DeclWorkflowBuilder().from_file(path / "workflow.yaml").build()
    child = await workflow.run({"age": 9})
    adult = await workflow.run({"age": 40})
    assert "young one" in " ".join(str(o) for o in child.outputs)
    assert child.outputs != adult.outputs


async def test_agent_to_function_tool_passes_the_agent_s_json_on() -> None:
    import json

    order = {"items": [{"name": "cake", "price": 3.5, "quantity": 2}]}
    model = ScriptedChatClient([json.dumps(order)])

    def calculate_order_total(order_data: dict[str, object]) -> dict[str, float]:
        items = order_data["items"]
        assert isinstance(items, list)
        return {"total": sum(i["price"] * i["quantity"] for i in items)}

    def format_order_confirmation(
        order_data: dict[str, object], order_calculation: dict[str, float]
    ) -> str:
        return f"Order confirmed: total {order_calculation['total']:.2f}"

    workflow = (
        DeclWorkflowBuilder()
        .from_file(DECLARATIVE / "agent_to_function_tool" / "workflow.yaml")
        .with_agent(
            "OrderAnalysisAgent", AgentBuilder("OrderAnalysisAgent").with_chat_client(model).build()
        )
        .with_tool(calculate_order_total)
        .with_tool(format_order_confirmation)
        .build()
    )
    result = await workflow.run({"input": "two cakes please"})
    assert result.outputs == ["Order confirmed: total 7.00"]


async def test_foundry_toolbox_mcp_reads_its_tool_name_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from raf.tools.mcp.client import McpClient

    monkeypatch.setenv("FOUNDRY_TOOLBOX_DOCS_SERVER_LABEL", "docs")
    monkeypatch.setenv("FOUNDRY_TOOLBOX_MCP_SERVER_URL", "http://127.0.0.1:9/unused")
    server = Path(__file__).with_name("docs_mcp_server.py")
    client = McpClient({"name": "toolbox", "command": sys.executable, "args": [str(server)]})
    model = ScriptedChatClient(["See the workflows docs."])
    try:
        workflow = (
            DeclWorkflowBuilder()
            .from_file(DECLARATIVE / "invoke_foundry_toolbox_mcp" / "workflow.yaml")
            .with_mcp_server("foundry_toolbox", client)
            .with_agent(
                "FoundryToolboxMcpAgent",
                AgentBuilder("FoundryToolboxMcpAgent").with_chat_client(model).build(),
            )
            .build()
        )
        result = await workflow.run({"text": "workflows"})
    finally:
        await client.aclose()
    assert result.outputs == ["See the workflows docs."]
    seen = " ".join(m.text for m in model.requests[0].messages)
    assert "workflows is documented here." in seen


async def test_foundry_toolbox_mcp_reaches_its_server_url_over_loopback_http(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No server registered by the host: the sample's `serverUrl: =Env.…` is where raf
    connects, here a loopback MCP server speaking streamable HTTP."""
    import sys

    from raf.decl.workflow import close_services
    from tests.tools.peers import free_port, serve

    port = free_port()
    monkeypatch.setenv("FOUNDRY_TOOLBOX_DOCS_SERVER_LABEL", "docs")
    monkeypatch.setenv("FOUNDRY_TOOLBOX_MCP_SERVER_URL", f"http://127.0.0.1:{port}/mcp")
    server = Path(__file__).with_name("docs_mcp_server.py")
    model = ScriptedChatClient(["See the agents docs."])
    with serve([sys.executable, str(server), "http", str(port)], port):
        workflow = (
            DeclWorkflowBuilder()
            .from_file(DECLARATIVE / "invoke_foundry_toolbox_mcp" / "workflow.yaml")
            .with_agent(
                "FoundryToolboxMcpAgent",
                AgentBuilder("FoundryToolboxMcpAgent").with_chat_client(model).build(),
            )
            .build()
        )
        try:
            result = await workflow.run({"text": "agents"})
        finally:
            await close_services(workflow)
    assert result.outputs == ["See the agents docs."]
    seen = " ".join(m.text for m in model.requests[0].messages)
    assert "agents is documented here." in seen  # the tool's answer, fetched over HTTP


RUN_TESTED = {
    "declarative-agents/workflow-samples/CustomerSupport.yaml",
    "declarative-agents/workflow-samples/DeepResearch.yaml",
    "declarative-agents/workflow-samples/Marketing.yaml",
    "declarative-agents/workflow-samples/MathChat.yaml",
    "python/packages/declarative/tests/workflows/http_request.yaml",
    "python/samples/02-agents/devui/workflow_declarative/workflow.yaml",
    "python/samples/03-workflows/declarative/agent_to_function_tool/workflow.yaml",
    "python/samples/03-workflows/declarative/conditional_workflow/workflow.yaml",
    "python/samples/03-workflows/declarative/customer_support/workflow.yaml",
    "python/samples/03-workflows/declarative/function_tools/workflow.yaml",
    "python/samples/03-workflows/declarative/human_in_loop/workflow.yaml",
    "python/samples/03-workflows/declarative/invoke_foundry_toolbox_mcp/workflow.yaml",
    "python/samples/03-workflows/declarative/invoke_function_tool/workflow.yaml",
    "python/samples/03-workflows/declarative/invoke_http_request/workflow.yaml",
    "python/samples/03-workflows/declarative/invoke_mcp_tool/workflow.yaml",
    "python/samples/03-workflows/declarative/marketing/workflow.yaml",
    "python/samples/03-workflows/declarative/simple_workflow/workflow.yaml",
    "python/samples/03-workflows/declarative/student_teacher/workflow.yaml",
    "python/samples/04-hosting/foundry-hosted-agents/responses/"
    "declarative_customer_support/workflow.yaml",
}
"""The workflow samples a test of this file or of test_maf_http_samples.py runs."""


def test_every_workflow_sample_has_a_run_test() -> None:
    from raf.decl.workflow import is_workflow_file

    workflows = {
        str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.yaml") if is_workflow_file(p)
    }
    assert workflows == RUN_TESTED  # a new workflow sample needs a run test here
    here = Path(__file__)
    tests = here.read_text() + here.with_name("test_maf_http_samples.py").read_text()
    for name in RUN_TESTED:  # each one named where a test builds it
        path = Path(name)
        needle = path.parent.name if path.name == "workflow.yaml" else path.name
        assert f'"{needle}"' in tests, name


async def test_customer_support_python_sample_routes_a_ticket_to_windows_support() -> None:
    import json

    service = json.dumps(
        {
            "IsResolved": False,
            "NeedsTicket": True,
            "IssueDescription": "blue screen",
            "AttemptedResolutionSteps": "rebooted",
        }
    )
    ticket = json.dumps({"TicketId": "T-7", "TicketSummary": "blue screen"})
    route = json.dumps({"TeamName": "Windows Support"})
    support = json.dumps(
        {"IsResolved": True, "NeedsEscalation": False, "ResolutionSummary": "driver updated"}
    )
    scripts = {
        "SelfServiceAgent": [service],
        "TicketingAgent": [ticket],
        "TicketRoutingAgent": [route],
        "WindowsSupportAgent": [support],
        "TicketResolutionAgent": ["Ticket T-7 closed."],
        "TicketEscalationAgent": [],
    }
    clients = {name: ScriptedChatClient(replies) for name, replies in scripts.items()}
    builder = DeclWorkflowBuilder().from_file(DECLARATIVE / "customer_support" / "workflow.yaml")
    for name, client in clients.items():
        builder = builder.with_agent(name, AgentBuilder(name).with_chat_client(client).build())
    result = await _answer_all(builder.build(), "My PC crashes", [])
    said = " ".join(str(o) for o in getattr(result, "outputs"))  # noqa: B009
    assert "Created ticket #T-7" in said
    assert "Routing to Windows Support" in said
    assert not clients["TicketEscalationAgent"].requests  # resolved, never escalated
    ticketing_saw = " ".join(m.text for m in clients["TicketingAgent"].requests[0].messages)
    assert "IssueDescription: blue screen" in ticketing_saw  # input.arguments reached it
    resolution_saw = " ".join(m.text for m in clients["TicketResolutionAgent"].requests[0].messages)
    assert "ResolutionSummary: driver updated" in resolution_saw


HOSTED = SAMPLES / "python" / "samples" / "04-hosting" / "foundry-hosted-agents" / "responses"


@pytest.mark.parametrize(
    ("triage", "expected"),
    [
        ({"Category": "Billing", "NeedsClarification": False}, "refund is on its way"),
        ({"Category": "Technical", "NeedsClarification": False}, "restart the router"),
        ({"NeedsClarification": True, "ClarificationQuestion": "Which order?"}, "Which order?"),
        ({"Category": "Other", "NeedsClarification": False, "Reply": "Hello!"}, "Hello!"),
    ],
)
async def test_hosted_customer_support_triage_routes(
    triage: dict[str, object], expected: str
) -> None:
    import json

    replies = {
        "TriageAgent": [json.dumps(triage)],
        "TechSupportAgent": ["Please restart the router."],
        "BillingAgent": ["Your refund is on its way."],
    }
    builder = DeclWorkflowBuilder().from_file(
        HOSTED / "declarative_customer_support" / "workflow.yaml"
    )
    for name, script in replies.items():
        builder = builder.with_agent(
            name, AgentBuilder(name).with_chat_client(ScriptedChatClient(script)).build()
        )
    result = await builder.build().run("I need help")
    assert expected in " ".join(str(o) for o in result.outputs)


def _ledger(*, satisfied: bool, speaker: str = "", instruction: str = "") -> str:
    import json

    def answer(value: object) -> dict[str, object]:
        return {"reason": "because", "answer": value}

    return json.dumps(
        {
            "is_request_satisfied": answer(satisfied),
            "is_in_loop": answer(False),
            "is_progress_being_made": answer(True),
            "next_speaker": answer(speaker),
            "instruction_or_question": answer(instruction),
        }
    )


async def test_deep_research_plans_delegates_and_summarises() -> None:
    scripts = {
        "ResearchAgent": ["Facts: Seattle is rainy."],
        "PlannerAgent": ["Plan: ask the weather agent."],
        "ManagerAgent": [
            _ledger(satisfied=False, speaker="WeatherAgent", instruction="Weather in Seattle?"),
            _ledger(satisfied=True),
        ],
        "WeatherAgent": ["Rain, 12°C."],
        "SummaryAgent": ["It is raining in Seattle (12°C)."],
        "CoderAgent": [],
        "KnowledgeAgent": [],
    }
    clients = {name: ScriptedChatClient(replies) for name, replies in scripts.items()}
    builder = DeclWorkflowBuilder().from_file(WORKFLOW_SAMPLES / "DeepResearch.yaml")
    for name, client in clients.items():
        builder = builder.with_agent(name, AgentBuilder(name).with_chat_client(client).build())
    result = await builder.build().run("What is the weather in Seattle?")
    said = "\n".join(str(o) for o in result.outputs)
    assert "Rain, 12°C." in said
    assert said.rstrip().endswith("It is raining in Seattle (12°C).")
    weather_saw = [m.text for m in clients["WeatherAgent"].requests[0].messages]
    assert "Weather in Seattle?" in weather_saw
    # the task instructions list the team (Concat over ForAll with $"" strings) and the
    # research agent's facts (MessageText of its output messages)
    assert "- WeatherAgent: Able to retrieve weather information" in said
    assert "Consider this initial fact sheet:\n\nFacts: Seattle is rainy." in said


def test_unset_environment_in_a_workflow_is_a_validation_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from raf.decl.workflow import load_workflow_file

    monkeypatch.delenv("FOUNDRY_TOOLBOX_MCP_SERVER_URL", raising=False)
    monkeypatch.delenv("FOUNDRY_TOOLBOX_DOCS_SERVER_LABEL", raising=False)
    loaded = load_workflow_file(DECLARATIVE / "invoke_foundry_toolbox_mcp" / "workflow.yaml")
    unset = [w for w in loaded.warnings if "is not set" in str(w)]
    named = {(w.line, w.message.split()[2]) for w in unset}
    assert named == {
        (25, "FOUNDRY_TOOLBOX_MCP_SERVER_URL"),
        (27, "FOUNDRY_TOOLBOX_DOCS_SERVER_LABEL"),
    }


async def test_running_with_an_unset_environment_variable_names_it_and_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from raf.workflow.errors import WorkflowRunError

    monkeypatch.delenv("RAF_TEST_UNSET_VAR", raising=False)
    path = tmp_path / "flow.yaml"
    path.write_text(
        "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"
        "    - kind: SendActivity\n      id: say\n      activity: =Env.RAF_TEST_UNSET_VAR\n",
        encoding="utf-8",
    )
    workflow = DeclWorkflowBuilder().from_file(path).build()
    with pytest.raises(WorkflowRunError) as caught:
        await workflow.run("")
    shown = str(caught.value)
    assert "environment variable RAF_TEST_UNSET_VAR is not set" in shown
    assert f"{path}:6:7" in shown
