"""`raf validate` and `raf run` make one check: every bad document is reported by one with
the located message the other refuses it with; the report is bounded and each document
is parsed once; `--model` replaces the document's model and its connection settings;
`--tools` and the `raf.tools` entry point group bind function tools."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from raf.cli.main import main
from raf.decl.documents import source

BAD = {
    "all_at_once.yaml": (
        "name: a\ninstructions: hi\nbogus: 1\nmodel:\n  provider: opanai\n  id: gpt-4o\n"
        "tools:\n  - kind: fil\n",
        [
            "all_at_once.yaml:3:1 bogus: unknown key 'bogus'",
            "all_at_once.yaml:5:3 model: unknown model provider 'opanai': did you mean 'openai'?",
            "all_at_once.yaml:8:11 tools[0].kind: unknown tool kind 'fil'; did you mean 'file'?",
        ],
    ),
    "graph_shape.yaml": (
        "kind: workflow\nname: g\nstart_node_id: a\nnodes: {a: 1}\nedges: yes\n",
        [
            "graph_shape.yaml:4:8 nodes: a graph needs a list of nodes, got a mapping",
            "graph_shape.yaml:5:8 edges: expected a list of edges, got true",
        ],
    ),
    "teleport.yaml": (
        "kind: workflow\nname: g\nstart_node_id: a\nnodes:\n  - {id: a, type: teleport}\n",
        ["teleport.yaml:5:19 nodes[0].type: unknown node type 'teleport'"],
    ),
    "edge_to_nowhere.yaml": (
        "kind: workflow\nname: g\nstart_node_id: a\nnodes:\n  - {id: a, type: approval}\n"
        "edges:\n  - {source: a, target: b}\n",
        ["edge_to_nowhere.yaml:7:25 edges[0].target: no node 'b'"],
    ),
    "rounds.toml": (
        'name = "a"\ninstructions = "hi"\nmaxToolRounds = 100000000000000000000000000\n',
        ["rounds.toml:3:1 maxToolRounds: expected a whole number from 0 to 1000000, got"],
    ),
    "rounds.yaml": (
        "name: a\ninstructions: hi\nmaxToolRounds: 100000000000000000000000000\n",
        ["rounds.yaml:3:16 maxToolRounds: expected a whole number from 0 to 1000000, got"],
    ),
    "turns.yaml": (
        "kind: workflow\nname: w\nmaxTurns: 100000000000000000000000000\ntrigger:\n"
        "  kind: OnConversationStart\n  id: t\n  actions:\n"
        "    - {kind: SendActivity, id: s, activity: hi}\n",
        ["turns.yaml:3:11 maxTurns: maxTurns is a whole number from 1 to 1000000"],
    ),
    "tokens.yaml": (
        "name: a\ninstructions: hi\nmodel:\n  id: gpt-4o\n  provider: openai\n"
        "  options: {maxTokens: 99999999999}\nusageLimits: {requests: 0}\n",
        [
            "tokens.yaml:6:24 model.options.maxTokens: expected a whole number from 1 to "
            "2147483647, got 99999999999",
            "tokens.yaml:7:25 usageLimits.requests: expected a whole number from 1 to 1000000, "
            "got 0",
        ],
    ),
}
"""Documents `raf run` refuses, with the located errors both commands give."""

WORKFLOW_AGENT = """kind: workflow
name: w
agents:
  writer:
    instructions: Write.
    model: {id: gpt-4o, provider: openai, connection: {kind: key, key: =Env.RAF_TEST_UNSET_KEY}}
trigger:
  kind: OnConversationStart
  id: t
  actions:
    - {kind: InvokeAgent, id: a, agent: {name: writer}}
"""

NEEDS_SUPPLY = {
    "ghost_agent.yaml": (
        "kind: workflow\nname: g\nstart_node_id: a\nnodes:\n  - {id: a, agent: ghost}\n",
        "ghost_agent.yaml:5:20 nodes[0].agent: no agent 'ghost' (known: none); "
        "declare it under agents:",
    ),
    "unbound.yaml": (
        "name: a\ninstructions: hi\ntools:\n  - {kind: function, name: get_weather}\n",
        "unbound.yaml:4:28 tools[0].name: function tool 'get_weather' is not bound",
    ),
    "unset_env.yaml": (
        "name: a\ninstructions: hi\nmodel:\n  id: gpt-4o\n  provider: openai\n"
        "  connection: {kind: key, key: =Env.RAF_TEST_UNSET_KEY}\n",
        "unset_env.yaml:6:32 model.connection.key: environment variable RAF_TEST_UNSET_KEY "
        "is not set (set it before building or running)",
    ),
    "workflow_agent_env.yaml": (
        WORKFLOW_AGENT,
        "workflow_agent_env.yaml:6:72 agents.writer.model.connection.key: environment "
        "variable RAF_TEST_UNSET_KEY is not set (set it before building or running)",
    ),
}
"""Valid documents whose names or variables the machine or command line must supply:
`raf validate` warns (an error under --strict), `raf run` refuses, in the same words."""


@pytest.fixture(autouse=True)
def _private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAF_DATA_DIR", str(tmp_path / "data"))
    for name in ("RAF_MODEL", "RAF_SESSION_STORE", "RAF_TEST_UNSET_KEY", "AZURE_ENDPOINT_X"):
        monkeypatch.delenv(name, raising=False)


def _script(tmp_path: Path, replies: Sequence[object]) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_document_is_reported_by_validate_and_refused_by_run_alike(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = BAD[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, _, validated = _cli(capsys, "validate", "--no-extras", name)
    assert code == 1
    run_code, _, ran = _cli(capsys, "run", name, "hi", "--model", _script(tmp_path, ["no"]))
    assert run_code == 1
    for message in expected:
        assert f"  error: {message}" in validated, validated
        assert f"  error: {message}" in ran, ran
    errors = [line for line in validated.splitlines() if line.startswith("  error: ")]
    assert errors == [line for line in ran.splitlines() if line.startswith("  error: ")]


@pytest.mark.parametrize("name", sorted(NEEDS_SUPPLY))
def test_what_the_command_line_must_supply_is_a_warning_to_validate_and_refused_by_run(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, message = NEEDS_SUPPLY[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, validated = _cli(capsys, "validate", "--no-extras", name)
    assert code == 0 and f"{name}: ok" in out
    assert f"  warning: {message}" in validated
    strict, _, under_strict = _cli(capsys, "validate", "--no-extras", "--strict", name)
    assert strict == 1 and f"  error: {message}" in under_strict
    run_code, _, ran = _cli(capsys, "run", name, "hi")
    assert run_code == 1
    assert f"  error: {message}" in ran


def test_a_graph_node_naming_an_agent_is_refused_at_every_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = [{"id": f"n{i}", "agent": "ghost"} for i in range(300)]
    data = {"kind": "workflow", "name": "g", "start_node_id": "n0", "nodes": nodes}
    (tmp_path / "many.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    code, _, ran = _cli(capsys, "run", "many.yaml", "hi")
    assert code == 1
    assert "many.yaml: 300 problem(s)" in ran
    assert ran.count("no agent 'ghost'") == 21  # 20 shown, and the line that counts the rest
    assert "… and 280 more errors like \"no agent 'ghost'" in ran


def test_the_report_is_bounded_per_kind_of_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data: dict[str, object] = {"name": "a", "instructions": "hi"}
    data.update({f"unknown{i}": i for i in range(5000)})
    data["maxToolRounds"] = -1
    (tmp_path / "keys.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    code, _, err = _cli(capsys, "validate", "--no-extras", "keys.yaml")
    assert code == 1
    lines = err.splitlines()
    assert lines[0] == "keys.yaml: 5001 problem(s)"
    assert len(lines) == 1 + 20 + 1 + 1  # 20 unknown keys, their count, the range problem
    assert "maxToolRounds: expected a whole number from 0 to 1000000, got -1" in err
    assert "… and 4980 more errors like \"unknown key 'unknown0'" in err


class _Reads:
    """Counts the YAML documents parsed (every reader goes through `_load_yaml`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = source._load_yaml

        def counted(text: str, doc: source.Document) -> None:
            self.count += 1
            real(text, doc)

        monkeypatch.setattr(source, "_load_yaml", counted)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("agent.yaml", "name: a\ninstructions: hi\nmodel: openai:gpt-4o\n"),
        (
            "flow.yaml",
            "kind: workflow\nname: g\nstart_node_id: a\nnodes: [{id: a, type: approval}]\n",
        ),
        (
            "actions.yaml",
            "kind: workflow\nname: w\ntrigger:\n  kind: OnConversationStart\n  id: t\n"
            "  actions:\n    - {kind: SendActivity, id: s, activity: hi}\n",
        ),
    ],
)
def test_each_document_is_parsed_once(
    name: str,
    text: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    reads = _Reads(monkeypatch)
    code, out, err = _cli(capsys, "validate", "--no-extras", name)
    assert code == 0, err
    assert f"{name}: ok" in out
    assert reads.count == 1
    reads.count = 0
    code, out, err = _cli(capsys, "run", name, "hi", "--model", _script(tmp_path, ["Hi."]))
    assert reads.count == 1, err


MAF_AGENT = """kind: Prompt
name: Weather
instructions: Answer with the weather tool.
model:
  id: gpt-4o
  connection:
    kind: remote
    endpoint: =Env.AZURE_ENDPOINT_X
tools:
  - kind: function
    name: get_weather
    description: The weather in a city.
"""

WEATHER = '''
from raf import tool


def get_weather(city: str) -> str:
    """The weather."""
    return f"sunny in {city}"


NOT_CALLABLE = 42


@tool(name="forecast")
def tomorrow(city: str) -> str:
    """Tomorrow's weather."""
    return f"rain in {city}"
'''


@pytest.fixture()
def weather_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "pkgs"
    folder.mkdir()
    (folder / "raf_test_weather.py").write_text(WEATHER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "raf_test_weather", raising=False)
    return "raf_test_weather"


def test_model_on_the_command_line_replaces_the_documents_connection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weather_module: str
) -> None:
    (tmp_path / "weather.yaml").write_text(MAF_AGENT, encoding="utf-8")
    tools = f"{weather_module}:get_weather"
    code, _, err = _cli(capsys, "run", "weather.yaml", "Oslo?", "--tools", tools)
    assert code == 1
    assert "weather.yaml:8:15 model.connection.endpoint: environment variable " in err
    replies = [{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, "Sunny."]
    model = _script(tmp_path, replies)
    code, out, err = _cli(
        capsys, "run", "weather.yaml", "Oslo?", "--model", model, "--tools", tools
    )
    assert code == 0, err
    assert "Sunny." in out
    assert "AZURE_ENDPOINT_X" not in err


def test_tools_binds_by_name_and_says_what_is_wrong(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    weather_module: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "weather.yaml").write_text(MAF_AGENT, encoding="utf-8")
    model = _script(tmp_path, ["Sunny."])
    for spec, message in [
        ("no_such_module_x:get_weather", "cannot import 'no_such_module_x'"),
        (f"{weather_module}:get_wether", f"module '{weather_module}' has no attribute"),
        (f"{weather_module}:NOT_CALLABLE", "'NOT_CALLABLE' is a int, not a function or Tool"),
        ("get_weather", "write it as module:function (or NAME=module:function)"),
    ]:
        code, _, err = _cli(capsys, "run", "weather.yaml", "hi", "--model", model, "--tools", spec)
        assert code == 2, spec
        assert message in err, err
        code, _, err = _cli(capsys, "validate", "weather.yaml", "--tools", spec)
        assert code == 2 and message in err
    # a Tool binds under its own name ('forecast'); NAME= binds a function under another
    monkeypatch.setenv("AZURE_ENDPOINT_X", "http://127.0.0.1:9/v1")
    renamed = f"{weather_module}:tomorrow"
    code, _, err = _cli(
        capsys, "validate", "--no-extras", "--strict", "weather.yaml", "--tools", renamed
    )
    assert code == 1 and "function tool 'get_weather' is not bound" in err  # it is 'forecast'
    replies = [{"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, "Wet."]
    renamed = f"get_weather={weather_module}:get_weather"
    code, out, err = _cli(
        capsys,
        "run",
        "weather.yaml",
        "hi",
        "--model",
        _script(tmp_path, replies),
        "--tools",
        renamed,
    )
    assert code == 0, err
    assert "sunny in Oslo" in err + out


def test_an_installed_entry_point_binds_a_function_tool(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    weather_module: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dist = tmp_path / "pkgs" / "raf_test_weather-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: raf-test-weather\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        f"[raf.tools]\nget_weather = {weather_module}:get_weather\n", encoding="utf-8"
    )
    (tmp_path / "weather.yaml").write_text(MAF_AGENT, encoding="utf-8")
    code, _, err = _cli(capsys, "validate", "--no-extras", "--strict", "weather.yaml")
    assert "get_weather" not in err
    replies = [{"calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}, "Fine."]
    code, out, err = _cli(
        capsys, "run", "weather.yaml", "hi", "--model", _script(tmp_path, replies)
    )
    assert code == 0, err
    assert "sunny in Rome" in err + out


def test_a_graph_function_node_is_bound_with_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weather_module: str
) -> None:
    (tmp_path / "graph.yaml").write_text(
        "kind: workflow\nname: g\nstart_node_id: w\noutput_node_ids: [w]\n"
        "nodes:\n  - {id: w, type: function, function: get_weather}\n",
        encoding="utf-8",
    )
    code, _, err = _cli(capsys, "run", "graph.yaml", "Paris")
    assert code == 1
    assert "graph.yaml:6:39 nodes[0].function: function node 'get_weather' is not bound" in err
    tools = f"{weather_module}:get_weather"
    code, out, err = _cli(capsys, "run", "graph.yaml", "Paris", "--tools", tools)
    assert code == 0, err
    assert "sunny in Paris" in out


@pytest.mark.slow
def test_chat_binds_tools_too(tmp_path: Path, weather_module: str) -> None:
    from .helpers import raf

    (tmp_path / "weather.yaml").write_text(MAF_AGENT, encoding="utf-8")
    replies = [{"calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}]}, "Warm."]
    done = raf(
        tmp_path,
        "chat",
        "weather.yaml",
        "--model",
        _script(tmp_path, replies),
        "--tools",
        f"{weather_module}:get_weather",
        stdin="Weather?\n/quit\n",
        env={"PYTHONPATH": str(tmp_path / "pkgs")},
    )
    assert done.returncode == 0, done.stderr
    assert "get_weather: sunny in Lima" in done.stdout
    assert "Warm." in done.stdout


def test_model_on_the_command_line_replaces_a_workflow_agents_connection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "flow.yaml").write_text(WORKFLOW_AGENT, encoding="utf-8")
    code, out, err = _cli(capsys, "run", "flow.yaml", "hi", "--model", _script(tmp_path, ["Done."]))
    assert code == 0, err
    assert "Done." in out
    assert "RAF_TEST_UNSET_KEY" not in err


def test_an_unbound_tool_is_reported_with_the_documents_other_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "both.yaml").write_text(
        "name: a\ninstructions: hi\nbogus: 1\ntools:\n  - {kind: function, name: get_weather}\n",
        encoding="utf-8",
    )
    unbound = "both.yaml:5:28 tools[0].name: function tool 'get_weather' is not bound"
    code, _, validated = _cli(capsys, "validate", "--no-extras", "both.yaml")
    assert code == 1
    assert "  error: both.yaml:3:1 bogus: unknown key 'bogus'" in validated
    assert f"  warning: {unbound}" in validated
    code, _, ran = _cli(capsys, "run", "both.yaml", "hi", "--model", _script(tmp_path, ["x"]))
    assert code == 1
    assert "both.yaml: 2 problem(s)" in ran
    assert f"  error: {unbound}" in ran
