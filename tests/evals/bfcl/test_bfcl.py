"""BFCL in raf.evals: the data read in place from the installed bfcl-eval, the AST check
by BFCL's rules, and a scripted model run over real items and through `raf eval --bfcl`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.evals.bfcl import DeclaredTool, check, evenly_spaced, load, run_bfcl
from raf.evals.bfcl.data import BfclDataError, json_schema
from raf.testing import FunctionChatClient, call, reply

AREA: dict[str, Any] = {
    "name": "geometry.area",
    "description": "Area of a rectangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "width": {"type": "float", "description": "Width."},
            "height": {"type": "integer", "description": "Height."},
            "unit": {"type": "string", "description": "Unit."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
        },
        "required": ["width", "height"],
    },
}
ANSWER: list[dict[str, dict[str, list[Any]]]] = [
    {"geometry.area": {"width": [2.0], "height": [3], "unit": ["square meters", ""], "tags": [""]}}
]


def verdict(arguments: dict[str, Any], category: str = "simple_python") -> Any:
    return check(category, [AREA], [{"geometry_area": arguments}], ANSWER)


def test_a_call_with_the_accepted_values_is_right() -> None:
    assert verdict({"width": 2.0, "height": 3}).valid
    # an int for a float; a string compared without case, spaces or punctuation
    assert verdict({"width": 2, "height": 3, "unit": "Square-Meters"}).valid


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"width": 2.0}, "simple_function_checker:missing_required"),
        ({"width": 2.0, "height": 4}, "value_error:others"),
        ({"width": 2.0, "height": 3.0}, "type_error:simple"),
        ({"width": 2.0, "height": 3, "unit": "feet"}, "value_error:string"),
        ({"width": 2.0, "height": 3, "color": "red"}, "simple_function_checker:unexpected_param"),
        ({"width": 2.0, "height": 3, "tags": ["a"]}, "value_error:list/tuple"),
    ],
)
def test_a_wrong_call_is_wrong_for_bfcls_reason(arguments: dict[str, Any], kind: str) -> None:
    result = verdict(arguments)
    assert not result.valid
    assert result.kind == kind


def test_an_answer_without_an_empty_choice_must_be_given() -> None:
    answer: list[dict[str, dict[str, list[Any]]]] = [
        {"geometry.area": {"width": [2.0], "height": [3], "unit": ["m2"]}}
    ]
    result = check("simple_python", [AREA], [{"geometry_area": {"width": 2, "height": 3}}], answer)
    assert result.kind == "simple_function_checker:missing_optional"


def test_the_wrong_function_or_count_is_wrong_and_irrelevance_wants_no_call() -> None:
    assert check("multiple", [AREA], [], ANSWER).kind == "multiple_function_checker:wrong_count"
    two = [{"geometry_area": {"width": 2, "height": 3}}] * 2
    assert not check("simple_python", [AREA], two, ANSWER).valid
    other = [{"volume": {"width": 2, "height": 3}}]
    assert check("simple_python", [AREA], other, ANSWER).kind.endswith("wrong_func_name")
    assert check("irrelevance", [AREA], [], []).valid
    assert not check("irrelevance", [AREA], [{"geometry_area": {}}], []).valid


def test_bfcl_types_become_json_schema_and_the_original_is_kept() -> None:
    schema = json_schema(AREA["parameters"])
    assert schema["type"] == "object"
    assert schema["properties"]["width"]["type"] == "number"
    assert schema["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Tags.",
    }
    assert AREA["parameters"]["type"] == "dict"
    tool = DeclaredTool(AREA)
    assert tool.name == "geometry_area"
    assert tool.parameters["required"] == ["width", "height"]


def test_the_categories_are_read_from_the_installed_package() -> None:
    simple, multiple, irrelevance = (load(c) for c in ("simple_python", "multiple", "irrelevance"))
    assert (len(simple), len(multiple), len(irrelevance)) == (400, 200, 240)
    assert simple[0].id == "simple_python_0"
    assert "triangle" in simple[0].question
    assert all(item.answers for item in simple + multiple)
    assert all(len(item.functions) > 1 for item in multiple)
    assert [i.id for i in evenly_spaced(simple, 4)] == [
        "simple_python_0",
        "simple_python_100",
        "simple_python_200",
        "simple_python_300",
    ]
    with pytest.raises(BfclDataError, match="unknown BFCL category"):
        load("sql")


def test_an_offset_sample_is_held_out_from_the_sample_it_moves() -> None:
    """Samples of one size with different offsets share no item, so a rule tuned on one
    can be checked on another; an offset past the distance between picks is refused."""
    simple = load("simple_python")
    tuned = {i.id for i in evenly_spaced(simple, 40)}
    held_out = [i.id for i in evenly_spaced(simple, 20, offset=5)]
    assert held_out[:3] == ["simple_python_5", "simple_python_25", "simple_python_45"]
    assert len(held_out) == 20 and not tuned & set(held_out)
    assert [i.id for i in evenly_spaced(simple, 40, offset=9)][-1] == "simple_python_399"
    with pytest.raises(ValueError, match="offset 10 must be below 10"):
        evenly_spaced(simple, 40, offset=10)
    with pytest.raises(ValueError, match="needs a limit"):
        evenly_spaced(simple, None, offset=1)
    with pytest.raises(ValueError, match="0 or more"):
        evenly_spaced(simple, 40, offset=-1)


def test_an_items_own_answer_passes_the_check() -> None:
    """BFCL's ground truth, written as a call, is right by the check: the check reads the
    answers the way BFCL writes them (a sample of real items with flat arguments)."""
    for category in ("simple_python", "multiple"):
        for item in evenly_spaced(load(category), 40):
            ((name, params),) = item.answers[0].items()
            if any(isinstance(v[0], dict | list) for v in params.values() if v):
                continue
            arguments = {k: v[0] for k, v in params.items() if v and v[0] != ""}
            calls = [{name.replace(".", "_"): arguments}]
            if not set(item.functions[0]["parameters"].get("required", [])) <= set(arguments):
                continue  # a few items name a required parameter the answer does not
            result = check(category, item.functions, calls, item.answers)
            assert result.valid, (item.id, result)


def _answering(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
    """A scripted model that calls the first tool with BFCL's first accepted values when
    the question is one of the first items, and otherwise answers in words."""
    question = messages[-1].text
    for item in ANSWERED:
        if item.question == question:
            ((name, params),) = item.answers[0].items()
            arguments = {k: v[0] for k, v in params.items() if v and v[0] != ""}
            return reply("", call(name.replace(".", "_"), arguments))
    return reply("No function fits.")


ANSWERED = [load("simple_python")[0], load("multiple")[0]]


def test_a_scripted_model_is_scored_per_category() -> None:
    client = FunctionChatClient(_answering)
    report = asyncio.run(
        run_bfcl(client, ["simple_python", "multiple", "irrelevance"], limit=2, model="scripted")
    )
    assert report.by_category() == {
        "simple_python": (1, 2),
        "multiple": (1, 2),
        "irrelevance": (2, 2),
    }
    table = report.table()
    assert "| simple_python | 1 | 2 | 50% |" in table
    assert "| irrelevance | 2 | 2 | 100% |" in table
    wrong = report.failures("simple_python")[0]
    assert wrong.id == "simple_python_200"
    assert wrong.verdict.kind.endswith("wrong_count")
    # the functions are offered as tools, names as function-calling APIs take them
    assert [t.name for t in client.requests[0].tools] == ["calculate_triangle_area"]


def test_raf_eval_bfcl_prints_a_table_per_category(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["No function fits."] * 4))
    out = tmp_path / "bfcl.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "raf.cli",
            "eval",
            "--bfcl",
            "irrelevance,simple_python",
            "--limit",
            "2",
            "--model",
            f"scripted:{script}",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| irrelevance | 2 | 2 | 100% |" in done.stdout
    assert "| simple_python | 0 | 2 | 0% |" in done.stdout
    assert json.loads(out.read_text())["by_category"]["irrelevance"] == [2, 2]
    bad = subprocess.run(
        [sys.executable, "-m", "raf.cli", "eval", "--bfcl", "sql"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2
    assert "unknown BFCL category sql" in bad.stderr
    # a held-out sample through the same command; a bad offset is refused before a model loads
    held = subprocess.run(
        [
            *(sys.executable, "-m", "raf.cli", "eval", "--bfcl", "irrelevance"),
            *("--limit", "2", "--offset", "3", "--model", f"scripted:{script}"),
            *("--json", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert held.returncode == 0, held.stderr
    assert [r["id"] for r in json.loads(out.read_text())["results"]] == [
        "irrelevance_3",
        "irrelevance_123",
    ]
    far = subprocess.run(
        [
            *(sys.executable, "-m", "raf.cli", "eval", "--bfcl", "irrelevance", "--limit", "2"),
            *("--offset", "500", "--model", "scripted:/nonexistent.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert far.returncode == 2
    assert "--offset 500 for irrelevance: offset 500 must be below 120" in far.stderr
