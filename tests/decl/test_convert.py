"""`raf convert`: a document written in the other dialect reads back as the same agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raf.cli.main import main
from raf.decl import load_file
from raf.decl.convert import convert, dump, read_as_raf
from raf.decl.documents.output_schema import as_json_schema
from raf.decl.documents.schema import AgentDecl
from tests.decl.documents.dialects.test_dialects import DATA, DOCUMENTS, ENV


def meaning(decl: Any) -> dict[str, Any]:
    """What a declaration means: schemas compared as the JSON Schema they stand for."""
    out: dict[str, Any] = decl.model_dump(exclude={"sub_agents", "output_schema", "tools"})
    out["output_schema"] = decl.output_json_schema()
    out["tools"] = []
    for tool in decl.tools:
        dumped = tool.model_dump()
        if dumped.get("parameters") is not None:
            dumped["parameters"] = as_json_schema(dumped["parameters"])
        out["tools"].append(dumped)
    out["sub_agents"] = [meaning(s) if isinstance(s, AgentDecl) else s for s in decl.sub_agents]
    return out


def same_agent(first: Path, second: Path) -> None:
    a = load_file(first, environ=ENV, check_extras=False).decl
    b = load_file(second, environ=ENV, check_extras=False).decl
    assert meaning(a) == meaning(b)


@pytest.mark.parametrize("name", DOCUMENTS)
@pytest.mark.parametrize("first", ["raf", "maf"])
def test_round_trip(tmp_path, name, first):
    source = DATA / name
    data, _ = read_as_raf(source)
    second = "maf" if first == "raf" else "raf"
    one = tmp_path / f"one{source.suffix}"
    one.write_text(dump(convert(data, first), "json" if source.suffix == ".json" else "yaml"))
    back, warnings = read_as_raf(one)
    two = tmp_path / f"two{source.suffix}"
    two.write_text(dump(convert(back, second), "json" if source.suffix == ".json" else "yaml"))
    assert not warnings, "a converted document reads without warnings"
    if (source.parent / "skills").is_dir():  # relative folders resolve beside the copies
        (tmp_path / "skills").symlink_to(source.parent / "skills")
    same_agent(one, two)
    if first == "raf":  # raf's spelling is a fixed point
        assert back == data


def test_maf_spelling(tmp_path):
    data, _ = read_as_raf(DATA / "original" / "prompt_agent.yaml")
    maf = convert(data, "maf")
    assert maf["kind"] == "Prompt"
    assert maf["model"]["options"]["maxOutputTokens"] == 800
    assert list(maf["outputSchema"]["properties"]) == ["city", "days", "advice"]
    legacy, _ = read_as_raf(DATA / "original" / "legacy.json")
    assert convert(legacy, "maf")["model"]["connection"] == {
        "key": "=Env.LEGACY_KEY",
        "kind": "key",
    }


def test_mcp_tool_written_the_maf_way():
    data, _ = read_as_raf(DATA / "original" / "coding_team.yaml")
    tool = convert(data, "maf")["tools"][0]
    assert tool["url"] == "http://127.0.0.1:9/mcp"
    assert tool["allowedTools"] == ["list_issues"]
    assert tool["requireApproval"] == {"kind": "always"}
    assert "config" not in tool


def test_cli_convert_writes_a_file(tmp_path, capsys):
    out = tmp_path / "weather.raf.json"
    assert main(["convert", str(DATA / "maf" / "weather.yaml"), "--to", "raf", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kind"] == "prompt" and data["model"]["options"]["maxTokens"] == 500
    assert data["model"]["connection"]["apiKey"] == "=Env.WEATHER_API_KEY"  # never resolved
    assert "model.publisher" in capsys.readouterr().err


def test_cli_validate_strict(tmp_path, capsys):
    document = DATA / "maf" / "weather.yaml"
    args = ["validate", "--no-extras", str(document)]
    env = pytest.MonkeyPatch()
    for key, value in ENV.items():
        env.setenv(key, value)
    try:
        assert main(args) == 0
        assert "warning:" in capsys.readouterr().err
        assert main([*args[:1], "--strict", *args[1:]]) == 1
        assert "error:" in capsys.readouterr().err
    finally:
        env.undo()


def test_cli_convert_refuses_an_invalid_document(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: a\ninstructions: hi\nmodel:\n  id: m\n  temprature: 1\n", encoding="utf-8"
    )
    out = tmp_path / "out.yaml"
    assert main(["convert", str(bad), "--to", "maf", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml:5:3 model.temprature: unknown key 'temprature'" in err
    assert not out.exists()


def test_convert_keeps_unset_environment_references(tmp_path, monkeypatch):
    monkeypatch.delenv("RAF_TEST_UNSET_KEY", raising=False)
    doc = tmp_path / "env.yaml"
    doc.write_text(
        "name: a\ninstructions: hi\nmodel:\n  id: openai:gpt-4o\n"
        "  connection:\n    kind: key\n    key: =Env.RAF_TEST_UNSET_KEY\n",
        encoding="utf-8",
    )
    data, _ = read_as_raf(doc)
    assert "RAF_TEST_UNSET_KEY" in str(data)


def test_convert_keeps_a_workflow_agents_unset_environment_references(tmp_path, monkeypatch):
    monkeypatch.delenv("RAF_TEST_UNSET_KEY", raising=False)
    doc = tmp_path / "flow.yaml"
    doc.write_text(
        "kind: Workflow\nname: w\nagents:\n  helper:\n    instructions: hi\n"
        "    model:\n      id: openai:gpt-4o\n      connection:\n        kind: key\n"
        "        key: ${RAF_TEST_UNSET_KEY}\n"
        "trigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"
        "    - kind: InvokeAgent\n      id: a\n      agent: helper\n",
        encoding="utf-8",
    )
    data, warnings = read_as_raf(doc)
    assert data["agents"]["helper"]["model"]["connection"]["key"] == "${RAF_TEST_UNSET_KEY}"
    assert any("RAF_TEST_UNSET_KEY is not set" in w.message for w in warnings)


_MEMBER = "{{kind: prompt, name: {0}, instructions: Go., model: {{id: openai:gpt-4o-mini}}}}"
_TEAMS = {
    "fixed": (
        "mode: group_chat\n    selector: fixed\n    order: [critic, writer]\n    maxRounds: 4",
        {"mode": "groupChat", "selector": "fixedOrder", "speakerOrder": [2, 1], "maxRounds": 4},
    ),
    "coordinator": (
        "mode: group_chat\n    selector: coordinator",
        {"mode": "groupChat", "selector": "llmCoordinator"},
    ),
    "named coordinator": (
        "mode: group_chat\n    selector: coordinator\n    coordinator: chair",
        {"mode": "groupChat", "selector": "llmCoordinator", "coordinator": "chair"},
    ),
    "weights": (
        "mode: vote\n    method: weighted\n    weights: {critic: 3, chair: 2}",
        # the document's agent does not vote in raf: said so, as the original would add it
        {"mode": "vote", "aggregator": "weighted", "weights": [2, 1.0, 3], "includeSelf": False},
    ),
}


@pytest.mark.parametrize("team", _TEAMS)
def test_convert_writes_the_originals_selectors_and_lists(tmp_path, team):
    """What names sub-agents is written by place, as the original reads it (its selectors
    `fixedOrder` with `speakerOrder` and `llmCoordinator`, a vote's weights as a list in
    voter order); the converted document reads back as the same orchestration."""
    options, expected = _TEAMS[team]
    members = "\n".join(f"  - {_MEMBER.format(n)}" for n in ("chair", "writer", "critic"))
    source = tmp_path / "team.yaml"
    source.write_text(
        "name: team\ninstructions: Lead.\nmodel: {id: openai:gpt-4o-mini}\n"
        f"metadata:\n  orchestration:\n    {options}\nsubAgents:\n{members}\n",
        encoding="utf-8",
    )
    data, _ = read_as_raf(source)
    original = convert(data, "original", base_dir=tmp_path)
    assert original["metadata"]["orchestration"] == expected
    out = tmp_path / "original.yaml"
    out.write_text(dump(original, "yaml"), encoding="utf-8")
    first = load_file(source, environ=ENV, check_extras=False).orchestration
    again = load_file(out, environ=ENV, check_extras=False).orchestration
    assert first is not None and again is not None
    if team == "weights":  # a voter not named weighs 1, now written out
        first = first.model_copy(update={"weights": {"chair": 2, "writer": 1, "critic": 3}})
    assert again == first


def test_convert_names_file_sub_agents_by_their_documents(tmp_path):
    """A sub-agent given by file is counted by the name its document gives."""
    (tmp_path / "writer.yaml").write_text(
        "name: writer\ninstructions: Write.\nmodel: {id: openai:gpt-4o-mini}\n", encoding="utf-8"
    )
    source = tmp_path / "team.yaml"
    source.write_text(
        "name: team\ninstructions: Lead.\nmodel: {id: openai:gpt-4o-mini}\n"
        "metadata:\n  orchestration: {mode: group_chat, selector: fixed, order: [critic, writer]}\n"
        f"subAgents:\n  - file: writer.yaml\n  - {_MEMBER.format('critic')}\n",
        encoding="utf-8",
    )
    data, _ = read_as_raf(source)
    written = convert(data, "original", base_dir=tmp_path)["metadata"]["orchestration"]
    assert written["speakerOrder"] == [1, 0]
