"""TestModel, agent.override(model=...) and typed dependencies (RunContext[Deps]),
through real agent runs; the typing of deps is checked by running mypy on a sample."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from raf import AgentBuilder, RafError
from raf.core.function_tool import tool
from raf.core.responses import UpdateKind
from raf.core.run_context import RunContext
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient, TestModel, example_value

ROOT = Path(__file__).resolve().parents[2]
seen_calls: list[tuple[object, ...]] = []


class Window(BaseModel):
    start: int
    end: int


@tool
def forecast(city: str, days: int, unit: Literal["C", "F"], window: Window) -> str:
    """Forecast for a city."""
    seen_calls.append((city, days, unit, window))
    return f"{city}: sunny for {days} days in {unit}"


@tool
def headlines(topics: list[str], limit: int = 3) -> list[str]:
    """Headlines on topics."""
    seen_calls.append((topics, limit))
    return [f"news on {t}" for t in topics]


def test_example_values_follow_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 3},
            "age": {"type": "integer", "minimum": 18},
            "mail": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "kind": {"enum": ["b", "c"]},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
            "inner": {"$ref": "#/$defs/Inner"},
        },
        "$defs": {"Inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
    }
    assert example_value(schema) == {
        "name": "aaa",
        "age": 18,
        "mail": "a@example.com",
        "tags": ["a", "a"],
        "kind": "b",
        "maybe": 0.0,
        "inner": {"ok": False},
    }


async def test_every_tool_is_called_once_then_summarised() -> None:
    seen_calls.clear()
    model = TestModel()
    agent = AgentBuilder().with_chat_client(model).with_tools([forecast, headlines]).build()
    answer = await agent.run("what is new?")
    assert seen_calls == [("a", 0, "C", Window(start=0, end=0)), (["a"], 0)]
    assert (
        answer.text == '{"forecast": "a: sunny for 0 days in C", "headlines": "[\\"news on a\\"]"}'
    )
    assert len(model.requests) == 2
    # a second turn calls them again, once
    await agent.run("and now?", session=None)
    assert len(seen_calls) == 4


async def test_call_tools_limits_the_calls_and_streaming_works() -> None:
    seen_calls.clear()
    agent = (
        AgentBuilder()
        .with_chat_client(TestModel(call_tools=["headlines"]))
        .with_tools([forecast, headlines])
        .build()
    )
    updates = [u async for u in agent.run_stream("news")]
    assert seen_calls == [(["a"], 0)]
    assert "".join(u.text for u in updates) == '{"headlines": "[\\"news on a\\"]"}'
    assert updates[-1].kind is UpdateKind.FINISHED


async def test_an_output_type_gets_json_from_its_schema() -> None:
    agent = AgentBuilder().with_chat_client(TestModel()).with_output_type(Window).build()
    assert (await agent.run("when?")).value == Window(start=0, end=0)
    plain = AgentBuilder().with_chat_client(TestModel()).build()
    assert (await plain.run("hi")).text == "success (no tool calls)"


async def test_override_swaps_the_model_for_a_block() -> None:
    scripted = ScriptedChatClient(["from the script"])
    agent = AgentBuilder().with_chat_client(scripted).with_tool(headlines).build()
    with agent.override(model=TestModel(custom_output_text="from the test model")):
        assert (await agent.run("hi")).text == "from the test model"
    assert scripted.remaining == 1
    assert (await agent.run("hi")).text == "from the script"
    with pytest.raises(RuntimeError), agent.override(model=TestModel()):
        raise RuntimeError("the block fails")
    assert agent.leaf_client is scripted


async def test_override_on_a_document_built_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used-0123456789")
    agent = (
        DeclAgentBuilder()
        .from_yaml_str("name: helper\ninstructions: Help.\nmodel: openai:gpt-4o-mini\n")
        .build()
    )
    with agent.override(model=TestModel(custom_output_text="offline")):
        assert (await agent.run("hi")).text == "offline"


@dataclass
class Deps:
    prefix: str


@tool
def greet(ctx: RunContext[Deps], name: str) -> str:
    """Greet someone."""
    return f"{ctx.deps.prefix} {name}"


async def test_deps_reach_the_tool_and_stay_out_of_its_schema() -> None:
    assert list(greet.parameters["properties"]) == ["name"]
    agent = AgentBuilder(deps_type=Deps).with_chat_client(TestModel()).with_tool(greet).build()
    first = await agent.run("hi", deps=Deps(prefix="Hello"))
    second = await agent.run("hi", deps=Deps(prefix="Goodbye"))
    assert first.text == '{"greet": "Hello a"}' and second.text == '{"greet": "Goodbye a"}'
    with pytest.raises(RafError, match="takes deps of type Deps, got str"):
        await agent.run("hi", deps="oops")  # type: ignore[arg-type]


def test_mypy_checks_deps_on_both_sides(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass

            from raf import AgentBuilder
            from raf.core.function_tool import tool
            from raf.core.run_context import RunContext
            from raf.testing import TestModel


            @dataclass
            class Deps:
                prefix: str


            @tool
            def greet(ctx: RunContext[Deps], name: str) -> str:
                return ctx.deps.prefix + str(ctx.deps.missing)


            agent = AgentBuilder(deps_type=Deps).with_chat_client(TestModel()).build()
            agent.run_sync("hi", deps=Deps(prefix="Hello"))
            agent.run_sync("hi", deps="not deps")
            """
        ),
        encoding="utf-8",
    )
    # To reach the sample, mypy reads raf and everything raf imports (7 000 modules, 20 s
    # cold). It starts from a copy of the cache that the project's own `mypy` run leaves
    # (scripts/test.sh runs it before pytest), under the same configuration so that the
    # cache applies; mypy checks each cached module against its source and reads again
    # what changed, so the verdicts are a cold run's. Without that cache it starts cold.
    cache = tmp_path / "cache"
    try:
        shutil.copytree(ROOT / ".mypy_cache", cache)
    except OSError:  # none yet, or a mypy run is writing it now: start cold
        shutil.rmtree(cache, ignore_errors=True)
    config = str(ROOT / "pyproject.toml")
    try:
        found = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--config-file", config,
             "--cache-dir", str(cache), str(sample)],
            capture_output=True, text=True, timeout=300, cwd=ROOT,
        )  # fmt: skip
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # 150 MB
    errors = [line for line in found.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, found.stdout
    assert 'sample.py:17: error: "Deps" has no attribute "missing"' in errors[0]
    assert 'sample.py:22: error: Argument "deps"' in errors[1] and '"Deps | None"' in errors[1]
