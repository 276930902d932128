"""The embedded local model end to end: pulled by raf's own code, answering, calling tools."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.errors import BadRequestError, ContextOverflowError
from raf.clients.local.client import LocalChatClient, default_threads, read_chat_template
from raf.clients.local.model_store import DEFAULT_MODEL, is_pulled, pull_model_sync, verify
from raf.clients.local.tools import parse_constrained, text_messages, tool_schema
from raf.core.contents import FunctionCallContent, FunctionResultContent, TextContent
from raf.core.errors import ConfigurationError
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from raf.core.tools import BaseTool, ToolContext, ToolResult

CITIES: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather of a city.

    Args:
        city: the city name
    """
    CITIES.append(city)
    return f"It is sunny and 21 C in {city}."


@pytest.fixture(scope="session")
def model_file() -> Path:
    """The default model, fetched by raf's pull code into the user cache (once)."""
    path = pull_model_sync(progress=print)
    assert is_pulled() and path.stat().st_size == DEFAULT_MODEL.size
    return path


@pytest.fixture(scope="module")
def client(model_file: Path) -> LocalChatClient:
    return LocalChatClient(temperature=0.0, seed=7, max_tokens=48)


def test_pulled_model_matches_its_checksum(model_file: Path) -> None:
    assert verify()
    template = read_chat_template(model_file)
    assert template is not None and "<|im_start|>" in template and "tools" not in template


async def test_answers_a_question(client: LocalChatClient) -> None:
    response = await client.get_response(
        [
            ChatMessage.system("You are a helpful assistant."),
            ChatMessage.user("What is the capital of France?"),
        ],
        ChatOptions(max_tokens=24),
    )
    assert "Paris" in response.text
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.model_id == DEFAULT_MODEL.name


async def test_stream_folds_to_the_same_answer(client: LocalChatClient) -> None:
    messages = [ChatMessage.user("Name three colours.")]
    # The same prompt evaluated the same way both times (no KV-cache reuse), greedy.
    options = ChatOptions(max_tokens=20, additional={"cache_prompt": False})
    updates = [u async for u in client.get_streaming_response(messages, options)]
    assert sum(u.kind is UpdateKind.TEXT_DELTA for u in updates) > 1
    assert [u.kind for u in updates[-2:]] == [UpdateKind.USAGE, UpdateKind.FINISHED]
    assert len({u.message_id for u in updates}) == 1
    whole = await client.get_response(messages, options)
    assert fold_updates(updates).text == whole.text


async def test_agent_calls_a_tool_end_to_end(client: LocalChatClient) -> None:
    CITIES.clear()
    agent = (
        AgentBuilder("weather")
        .with_instructions("You are a helpful assistant. Use tools to get facts.")
        .with_chat_client(client)
        .with_tool(get_weather)
        .with_options(ChatOptions(max_tokens=48, tool_choice="required"))
        .with_max_tool_rounds(1)
        .build()
    )
    session = agent.create_session()
    response = await agent.run("What is the weather in Paris?", session=session)
    assert CITIES == ["Paris"]
    assert response.text  # the last round answers in text
    results = [
        c for m in session.messages for c in m.contents if isinstance(c, FunctionResultContent)
    ]
    assert results and "sunny" in results[0].as_text()


async def test_grammar_makes_every_answer_a_call_or_text(client: LocalChatClient) -> None:
    response = await client.get_response(
        [ChatMessage.user("What is the weather in Oslo?")],
        ChatOptions(tools=[get_weather], max_tokens=48),
    )
    contents = response.messages[0].contents
    assert len(contents) == 1
    content = contents[0]
    if isinstance(content, FunctionCallContent):
        assert content.name == "get_weather" and isinstance(content.arguments["city"], str)
        assert response.finish_reason is FinishReason.TOOL_CALLS
    else:
        assert isinstance(content, TextContent) and content.text


class Address(BaseModel):
    city: str
    country: str


@tool
def send_letter(to: Address) -> str:
    """Send a letter to an address."""
    return f"sent to {to.city}"


async def test_a_tool_with_a_nested_model_is_called(client: LocalChatClient) -> None:
    # Its schema refers to #/$defs/Address: the grammar must carry the definitions.
    response = await client.get_response(
        [ChatMessage.user("Send a letter to Paris, France.")],
        ChatOptions(tools=[send_letter], tool_choice="required", max_tokens=48),
    )
    call = response.messages[0].contents[0]
    assert isinstance(call, FunctionCallContent) and call.name == "send_letter"
    assert set(call.arguments["to"]) == {"city", "country"}


async def test_streaming_with_tools_emits_the_call_lifecycle(client: LocalChatClient) -> None:
    updates = [
        u
        async for u in client.get_streaming_response(
            [ChatMessage.user("Weather in Rome?")],
            ChatOptions(tools=[get_weather], tool_choice="get_weather", max_tokens=40),
        )
    ]
    kinds = [u.kind for u in updates]
    assert kinds[:3] == [
        UpdateKind.TOOL_CALL_STARTED,
        UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
        UpdateKind.TOOL_CALL_ENDED,
    ]
    ended = updates[2].content
    assert isinstance(ended, FunctionCallContent) and ended.name == "get_weather"


async def test_tool_choice_naming_no_offered_tool_is_refused(client: LocalChatClient) -> None:
    options = ChatOptions(tools=[get_weather], tool_choice="get_wether", max_tokens=8)
    with pytest.raises(BadRequestError, match=r"'get_wether' names no tool.*get_weather"):
        await client.get_response([ChatMessage.user("x")], options)


async def test_context_overflow_says_what_to_do(model_file: Path) -> None:
    small = LocalChatClient(n_ctx=256)
    with pytest.raises(ContextOverflowError, match="n_ctx"):
        await small.get_response([ChatMessage.user("hello " * 400)], ChatOptions(max_tokens=4))


async def test_missing_gguf_file_is_a_configuration_error(tmp_path: Path) -> None:
    client = LocalChatClient(tmp_path / "nope.gguf")
    with pytest.raises(ConfigurationError, match=r"nope\.gguf does not exist"):
        await client.get_response([ChatMessage.user("x")], ChatOptions())


async def test_a_file_that_is_not_a_model_is_a_configuration_error(
    model_file: Path, tmp_path: Path
) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(ConfigurationError, match="not a GGUF model file"):
        await LocalChatClient(text).get_response([ChatMessage.user("x")], ChatOptions())
    cut = tmp_path / "cut.gguf"
    with model_file.open("rb") as whole:
        cut.write_bytes(whole.read(1 << 20))  # the header survives, the weights do not
    with pytest.raises(ConfigurationError, match=r"could not load .*cut\.gguf.*damaged"):
        await LocalChatClient(cut).get_response([ChatMessage.user("x")], ChatOptions())


@pytest.mark.parametrize(
    "settings",
    [{"threads": 0}, {"n_ctx": -1}, {"max_tokens": 0}, {"threads": "4"}, {"tool_mode": "json"}],
)
def test_bad_settings_are_refused_up_front(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(settings))):
        LocalChatClient(**settings)


def test_tool_schema_offers_each_tool_and_an_answer() -> None:
    schema = tool_schema([get_weather], None)
    call, answer = schema["anyOf"]
    assert call["properties"]["tool"] == {"const": "get_weather"}
    assert call["properties"]["arguments"]["required"] == ["city"]
    assert answer["required"] == ["answer"]
    assert len(tool_schema([get_weather], "required")["anyOf"]) == 1


def test_parse_constrained_answers() -> None:
    contents, reason = parse_constrained('{"tool": "get_weather", "arguments": {"city": "Oslo"}}')
    assert reason is FinishReason.TOOL_CALLS
    assert isinstance(contents[0], FunctionCallContent) and contents[0].arguments == {
        "city": "Oslo"
    }
    contents, reason = parse_constrained('{"answer": "Hi there"}')
    assert contents == [TextContent(text="Hi there")] and reason is FinishReason.STOP
    contents, reason = parse_constrained('{"answer": "cut off mid')
    assert contents == [TextContent(text="cut off mid")] and reason is FinishReason.LENGTH


def test_text_messages_render_calls_and_results_for_plain_templates() -> None:
    history = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Weather in Oslo?"),
        ChatMessage.assistant(
            calls=[
                FunctionCallContent(call_id="c1", name="get_weather", arguments={"city": "Oslo"})
            ]
        ),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c1", result="rain")]),
    ]
    with_tools = text_messages(history, [get_weather])
    assert with_tools[0]["role"] == "system" and "get_weather" in with_tools[0]["content"]
    assert with_tools[2] == {
        "role": "assistant",
        "content": '{"tool": "get_weather", "arguments": {"city": "Oslo"}}',
    }
    assert with_tools[3] == {"role": "user", "content": "Result of get_weather: rain"}
    without = text_messages(history)
    assert [m["role"] for m in without] == ["system", "user"]
    assert without[1]["content"] == "Weather in Oslo?\nResult of get_weather: rain"


def _fake_machine(
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    *,
    cpus: int,
    smt: int = 1,
    cgroup: str = "0::/",
    files: Mapping[str, str] | None = None,
) -> None:
    """CPUs 0..cpus-1 (SMT siblings share a core), a /proc/self/cgroup and cgroup files."""
    from raf.clients.local import threads as local_threads

    monkeypatch.delenv("RAF_LOCAL_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    monkeypatch.setattr(local_threads, "_SYS", root / "sys")
    monkeypatch.setattr(local_threads, "_PROC", root / "proc")
    for cpu in range(cpus):
        topology = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
        topology.mkdir(parents=True)
        (topology / "core_id").write_text(f"{cpu // smt}\n")
        (topology / "physical_package_id").write_text("0\n")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text(cgroup + "\n")
    for name, text in (files or {}).items():
        (root / "sys/fs/cgroup" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "sys/fs/cgroup" / name).write_text(text)


def test_default_threads_leave_a_core_free(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_machine(monkeypatch, tmp_path / "a", cpus=2)
    assert default_threads() == 1
    _fake_machine(monkeypatch, tmp_path / "b", cpus=1)
    assert default_threads() == 1
    _fake_machine(monkeypatch, tmp_path / "c", cpus=8)
    assert default_threads() == 7
    monkeypatch.setenv("RAF_LOCAL_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("RAF_LOCAL_THREADS", "many")
    with pytest.raises(ConfigurationError, match="RAF_LOCAL_THREADS"):
        default_threads()


def test_the_default_answer_length_is_the_environments_cap_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAF_LOCAL_MAX_TOKENS", raising=False)
    assert LocalChatClient(auto_pull=False).max_tokens == 512
    monkeypatch.setenv("RAF_LOCAL_MAX_TOKENS", "96")
    assert LocalChatClient(auto_pull=False).max_tokens == 96
    assert LocalChatClient(auto_pull=False, max_tokens=300).max_tokens == 300  # given wins
    for bad in ("many", "0", "-4"):
        monkeypatch.setenv("RAF_LOCAL_MAX_TOKENS", bad)
        with pytest.raises(ConfigurationError, match="RAF_LOCAL_MAX_TOKENS"):
            LocalChatClient(auto_pull=False)


def test_default_threads_count_physical_cores_and_container_quotas(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # 16 logical CPUs on 8 cores: SMT siblings share a core's arithmetic units.
    _fake_machine(monkeypatch, tmp_path / "smt", cpus=16, smt=2)
    assert default_threads() == 8
    # A container limited to 2 CPUs still sees all 64 in its affinity mask (cgroup v2).
    _fake_machine(
        monkeypatch,
        tmp_path / "v2",
        cpus=64,
        cgroup="0::/docker/abc",
        files={"docker/abc/cpu.max": "200000 100000\n", "docker/cpu.max": "max 100000\n"},
    )
    assert default_threads() == 1
    # cgroup v1: a quota of 4.5 CPUs leaves 4 threads.
    _fake_machine(
        monkeypatch,
        tmp_path / "v1",
        cpus=32,
        cgroup="4:cpu,cpuacct:/docker/abc",
        files={
            "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "450000\n",
            "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        },
    )
    assert default_threads() == 4
    # No quota ("max", or -1 in v1): the CPUs decide.
    _fake_machine(monkeypatch, tmp_path / "none", cpus=4, files={"cpu.max": "max 100000\n"})
    assert default_threads() == 3


async def test_generation_runs_off_the_event_loop(client: LocalChatClient) -> None:
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await client.get_response(
        [ChatMessage.user("Count from one to twenty.")], ChatOptions(max_tokens=40)
    )
    elapsed = time.perf_counter() - started
    done = True
    await task
    assert ticks >= max(3, int(elapsed / 0.01) // 4), (ticks, elapsed)


async def test_any_gguf_path_works(model_file: Path) -> None:
    from raf.clients.models import resolve_model

    client = resolve_model(f"local:{model_file}")
    assert isinstance(client, LocalChatClient) and client.path == model_file
    response = await client.get_response(
        [ChatMessage.system("You are a helpful assistant."), ChatMessage.user("Say hello.")],
        ChatOptions(max_tokens=8),
    )
    assert response.text and response.model_id == model_file.stem


class BrokenSchemaTool(BaseTool):
    name = "broken"
    description = "A tool whose schema points nowhere."
    parameters = {"type": "object", "properties": {"a": {"$ref": "#/nope"}}}  # noqa: RUF012

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.ok()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_schema_llama_cpp_cannot_use_is_a_raf_error(model_file: Path, stream: bool) -> None:
    # the one-grammar mode hands the tool's schema to llama.cpp as it is (the staged
    # choice keeps only required arguments and the values the context offers)
    client = LocalChatClient(temperature=0.0, max_tokens=8, tool_mode="grammar")
    options = ChatOptions(tools=[BrokenSchemaTool()], max_tokens=8)
    messages = [ChatMessage.user("hi")]
    with pytest.raises(BadRequestError, match="simplify it"):
        if stream:
            async for _ in client.get_streaming_response(messages, options):
                pass
        else:
            await client.get_response(messages, options)


class Capital(BaseModel):
    city: str
    country: str


async def test_an_output_type_is_decoded_by_a_schema_grammar(client: LocalChatClient) -> None:
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_instructions("Answer with the capital city and its country.")
        .with_output_type(Capital, retries=0)  # no second chance: the grammar must hold
        .build()
    )
    response = await agent.run("What is the capital of France?")
    assert isinstance(response.value, Capital)
    assert "Paris" in response.value.city
    body = client.wire.request(
        [ChatMessage.user("x")],
        ChatOptions(output_schema=agent.output_type.schema if agent.output_type else None),
        model="m",
        stream=False,
    )
    assert body["json_schema"]["required"] == ["city", "country"]


async def test_an_output_type_with_tools_shares_one_grammar(client: LocalChatClient) -> None:
    CITIES.clear()
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_tool(get_weather)
        .with_output_type(Capital, retries=0)
        .build()
    )
    updates = [u async for u in agent.run_stream("Use get_weather for Paris, then answer.")]
    final = updates[-1]
    assert isinstance(final.value, Capital)
    assert CITIES, "the tool was called before the answer"
    schema = tool_schema([get_weather], None, {"type": "object", "properties": {}})
    answer = schema["anyOf"][-1]["properties"]["answer"]
    assert answer == {"type": "object", "properties": {}}


def test_greedy_decoding_is_the_default_temperature() -> None:
    from raf.clients.local.client import DEFAULT_TEMPERATURE

    assert DEFAULT_TEMPERATURE == 0.0
    assert LocalChatClient(auto_pull=False).temperature == 0.0
    assert LocalChatClient(auto_pull=False, temperature=0.7).temperature == 0.7


async def test_a_looping_answer_ends_after_its_first_copy(model_file: Path) -> None:
    """Greedy, the default model describes a tide pool in a loop until its token limit;
    the repetition stop ends the same answer after the first copy, and sooner. (Its second
    copy ends near token 195; the limit leaves a margin past that, the tokens after it
    would only repeat the loop.)"""
    messages = [
        ChatMessage.system("You are a helpful assistant."),
        ChatMessage.user("Describe a tide pool."),
    ]
    options = ChatOptions(additional={"cache_prompt": False})
    looping = LocalChatClient(temperature=0.0, max_tokens=300, stop_repeats=False)
    loop = await looping.get_response(messages, options)
    assert loop.finish_reason is FinishReason.LENGTH
    assert _loops(loop.text)

    answer = await LocalChatClient(temperature=0.0, max_tokens=300).get_response(messages, options)
    assert answer.finish_reason is FinishReason.STOP
    assert answer.text and loop.text.startswith(answer.text)
    assert len(answer.text) < len(loop.text) and not _loops(answer.text)


def _loops(text: str) -> bool:
    from raf.clients.local.repeats import RepeatStop

    watch = RepeatStop()
    watch.feed(text)
    return watch.looped
