"""A folder of datasets: cases added one at a time, never overwriting a name, never
losing what a file holds, never writing outside the folder."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from raf.core.errors import ValidationProblems
from raf.evals import Case, Contains, Dataset, ExpectedCall, ToolCalls
from raf.evals.folder import (
    BadNameError,
    CaseExistsError,
    DatasetFolder,
    UnknownDatasetError,
    default_datasets_dir,
)

COMMENTED = """\
# capitals of Europe: keep this comment
$schema: https://raf.dev/schemas/eval-dataset.json
name: capitals
description: Known answers.
evaluators: [contains]
cases:
  # the first one
  - name: france
    input: What is the capital of France?
    expected_output: Paris
"""


def recorded(name: str = "oslo") -> Case:
    return Case(
        name=name,
        input="Weather in Oslo?",
        expected_output="Sunny in Oslo.",
        expected_tool_calls=[ExpectedCall(name="lookup", arguments={"city": "Oslo"})],
        evaluators=[ToolCalls()],
    )


def test_a_case_makes_a_new_dataset_that_reads_back(tmp_path: Path) -> None:
    folder = DatasetFolder(tmp_path / "datasets")
    added = folder.add_case("weather", recorded(), answer_check=Contains())
    info = added.dataset
    assert info.file == tmp_path / "datasets" / "weather.yaml" and info.cases == 1
    dataset = Dataset.from_file(info.file)
    assert dataset.name == "weather"
    (case,) = dataset.cases
    assert case.input == "Weather in Oslo?" and case.expected_output == "Sunny in Oslo."
    assert [c.to_dict() for c in case.expected_tool_calls] == [
        {"name": "lookup", "arguments": {"city": "Oslo"}}
    ]
    # the recorded answer is checked too, besides the trajectory
    assert [e.name for e in case.evaluators] == ["tool_calls", "contains"]
    assert [e.name for e in added.case.evaluators] == ["tool_calls", "contains"]
    assert oct(info.file.stat().st_mode & 0o777) == oct(0o600)  # it holds the turn's text
    assert [d.to_dict()["name"] for d in folder.list()] == ["weather"]


def test_a_yaml_file_keeps_its_comments_keys_and_cases(tmp_path: Path) -> None:
    path = tmp_path / "capitals.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    path.chmod(0o600)
    info = DatasetFolder(tmp_path).add_case("capitals", recorded(), answer_check=Contains()).dataset
    text = path.read_text(encoding="utf-8")
    assert text.startswith(COMMENTED)  # appended: nothing before it changed
    assert info.cases == 2 and info.description == "Known answers."
    dataset = Dataset.from_file(path)
    assert [c.name for c in dataset.cases] == ["france", "oslo"]
    # the dataset compares answers already: no second check on the case
    assert [e.name for e in dataset.cases[1].evaluators] == ["tool_calls"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_yaml_file_whose_cases_do_not_end_it_is_written_again_whole(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "cases: [{name: one, input: hi, expected_output: hello}]\nname: flow\n", encoding="utf-8"
    )
    DatasetFolder(tmp_path).add_case("flow", recorded())
    dataset = Dataset.from_file(path)
    assert dataset.name == "flow" and [c.name for c in dataset.cases] == ["one", "oslo"]


def test_a_json_file_keeps_its_keys_and_cases(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    data = {
        "$schema": "https://raf.dev/schemas/eval-dataset.json",
        "name": "tools",
        "cases": [{"name": "a", "input": "x", "metadata": {"owner": "me"}}],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    info = DatasetFolder(tmp_path).add_case("tools", recorded()).dataset
    assert info.file == path and not (tmp_path / "tools.yaml").exists()
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["$schema"] == data["$schema"]
    assert written["cases"][0] == data["cases"][0]
    assert written["cases"][1]["name"] == "oslo"


def test_a_name_already_there_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    path = tmp_path / "capitals.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    with pytest.raises(CaseExistsError, match="'capitals' already has a case named 'france'"):
        DatasetFolder(tmp_path).add_case("capitals", recorded("  france "))
    assert path.read_text(encoding="utf-8") == COMMENTED
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "capitals.yaml"]


@pytest.mark.parametrize("name", ["../outside", "a/b", ".hidden", "x.yaml", "", "é", "a" * 81])
def test_a_dataset_name_that_is_not_a_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    folder = DatasetFolder(tmp_path / "datasets")
    with pytest.raises(BadNameError, match="is not valid: use 1-80 letters") as caught:
        folder.add_case(name, recorded())
    assert caught.value.what == "dataset"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "   ", "two\nlines", "x" * 201])
def test_a_case_name_must_be_one_short_line(tmp_path: Path, name: str) -> None:
    with pytest.raises(BadNameError, match="case name .* is not valid") as caught:
        DatasetFolder(tmp_path).add_case("d", recorded(name))
    assert caught.value.what == "case"


def test_a_file_that_is_not_a_dataset_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\ncases:\n  - input: no name\n", encoding="utf-8")
    with pytest.raises(ValidationProblems, match="'name' is required"):
        DatasetFolder(tmp_path).add_case("broken", recorded())
    assert path.read_text(encoding="utf-8") == "name: broken\ncases:\n  - input: no name\n"
    (listed,) = DatasetFolder(tmp_path).list()
    assert listed.name == "broken" and listed.error and "'name' is required" in listed.error


def test_cases_added_at_once_are_all_kept(tmp_path: Path) -> None:
    folder = DatasetFolder(tmp_path)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: folder.add_case("busy", recorded(f"case-{n}")), range(16)))
    names = sorted(c.name for c in Dataset.from_file(tmp_path / "busy.yaml").cases)
    assert names == sorted(f"case-{n}" for n in range(16))


def test_load_names_a_missing_dataset(tmp_path: Path) -> None:
    with pytest.raises(UnknownDatasetError, match=f"no dataset named 'nope' in {tmp_path}"):
        DatasetFolder(tmp_path).load("nope")


def test_the_default_folder_is_beside_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAF_EVAL_DATASETS_DIR", raising=False)
    monkeypatch.setenv("RAF_EVALS_DIR", "/tmp/x-evals")
    assert default_datasets_dir() == Path("/tmp/x-evals/datasets")
    monkeypatch.setenv("RAF_EVAL_DATASETS_DIR", "/tmp/x-datasets")
    assert default_datasets_dir() == Path("/tmp/x-datasets")
