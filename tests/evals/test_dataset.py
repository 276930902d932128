"""Dataset files: YAML and JSON round trips, the published schema, and located errors."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from raf.core.errors import ConfigurationError, ValidationProblems
from raf.core.messages import ChatMessage, Role
from raf.evals import (
    Case,
    Contains,
    Dataset,
    ExpectedCall,
    Limits,
    LLMJudge,
    Price,
    Regex,
    ToolCalls,
    dataset_schema,
)
from raf.evals.case import Evaluator
from raf.evals.dataset import SCHEMA_FILE

GOOD = """\
name: demo
evaluators:
  - contains
cases:
  - name: capital
    input: What is the capital of France?
    expected_output: Paris
    tags: [plain]
  - name: weather
    input:
      - {role: system, content: Be brief.}
      - {role: user, content: Weather in Oslo?}
    expected_tool_calls:
      - name: get_weather
        arguments: {city: {contains: oslo}}
    evaluators:
      - tool_calls
      - {limits: {requests: 3, latency: 10}}
      - {regex: "(?i)oslo"}
"""


def write(tmp_path: Path, text: str, name: str = "data.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_yaml_dataset_reads_cases_messages_and_evaluators(tmp_path: Path) -> None:
    dataset = Dataset.from_file(write(tmp_path, GOOD))
    assert dataset.name == "demo" and [c.name for c in dataset.cases] == ["capital", "weather"]
    assert isinstance(dataset.evaluators[0], Contains)
    weather = dataset.cases[1]
    assert [m.role for m in weather.input] == [Role.SYSTEM, Role.USER]
    assert weather.expected_tool_calls == [
        ExpectedCall(name="get_weather", arguments={"city": {"contains": "oslo"}})
    ]
    assert [type(e) for e in weather.evaluators] == [ToolCalls, Limits, Regex]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_save_and_read_back_gives_the_same_dataset(tmp_path: Path, suffix: str) -> None:
    cases = [
        Case(name="a", input="2+2?", expected_output="4", tags=["math"], metadata={"level": 1}),
        Case(
            name="b",
            input=[ChatMessage.system("Be brief."), ChatMessage.user("hi")],
            expected_tool_calls=[ExpectedCall(name="t", arguments={"x": 1})],
            evaluators=[ToolCalls(order="exact", approvals=["t"])],
        ),
        Case(name="c", input={"n": 3}, expected_output={"double": 6}),
    ]
    evaluators: list[Evaluator] = [
        Contains(value=["4"], any_of=True),
        LLMJudge("Correct and brief.", model="openai:gpt-4o-mini"),
        Limits(cost=0.01, price=Price(input_per_million=1, output_per_million=2)),
    ]
    original = Dataset(cases=cases, evaluators=evaluators, name="round")
    path = original.save(tmp_path / f"round{suffix}")
    again = Dataset.from_file(path)
    assert again.to_dict() == original.to_dict()
    jsonschema.validate(original.to_dict(), dataset_schema())


def test_the_published_schema_file_is_current_and_validates_shipped_datasets() -> None:
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == dataset_schema()
    import yaml

    root = Path(__file__).resolve().parents[2]
    shipped = sorted((root / "src" / "raf" / "evals" / "datasets").glob("*.yaml"))
    assert shipped, "no shipped datasets found"
    for path in shipped:
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), dataset_schema())
        Dataset.from_file(path)


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        (
            "cases:\n  - name: a\n    input: hi\n    expectd_output: x\n",
            4,
            "cases[0].expectd_output",
            "unknown key 'expectd_output'",
        ),
        ("cases:\n  - name: a\n    tags: [x]\n", 2, "cases[0].input", "'input' is required"),
        (
            "cases:\n  - name: a\n    input: hi\n    evaluators:\n      - {regexp: x}\n",
            5,
            "cases[0].evaluators[0].regexp",
            "unknown evaluator 'regexp'",
        ),
        (
            "evaluators:\n  - limits: {cost: 1}\ncases:\n  - {name: a, input: hi}\n",
            2,
            "evaluators[0].limits",
            "a cost limit needs a price",
        ),
        (
            "cases:\n  - {name: a, input: hi}\n  - {name: a, input: ho}\n",
            3,
            "cases[1].name",
            "already used by case 0",
        ),
        (
            "cases:\n  - name: a\n    input: hi\n    evaluators:\n      - {typed_output: nope:X}\n",
            5,
            "cases[0].evaluators[0].typed_output",
            "cannot import 'nope'",
        ),
        ("cases: [\n", 2, None, "YAML syntax error"),
        ("- just a list\n", 1, None, "a dataset must be a mapping"),
    ],
)
def test_a_malformed_dataset_is_a_located_error(
    tmp_path: Path, text: str, line: int, key: str | None, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ValidationProblems) as caught:
        Dataset.from_file(path)
    problem = caught.value.problems[0]
    assert problem.file == str(path)
    assert problem.line == line
    assert problem.key_path == key
    assert message in problem.message
    assert f"{path}:{line}" in str(caught.value)


def test_a_json_dataset_error_is_located_too(tmp_path: Path) -> None:
    path = write(tmp_path, '{"cases": [{"name": "a",\n "input": "x", "tag": []}]}', "d.json")
    with pytest.raises(ValidationProblems) as caught:
        Dataset.from_file(path)
    problem = caught.value.problems[0]
    assert (problem.line, problem.key_path) == (2, "cases[0].tag")


def test_case_names_must_be_unique_in_code_too() -> None:
    with pytest.raises(ConfigurationError, match="repeated: a"):
        Dataset(cases=[Case(name="a", input="x"), Case(name="a", input="y")])


def test_select_by_tag() -> None:
    dataset = Dataset(
        cases=[Case(name="a", input="x", tags=["t"]), Case(name="b", input="y")], name="d"
    )
    assert [c.name for c in dataset.select(tags=["t"]).cases] == ["a"]
