"""`--tools module:function` in every command that loads a document: `raf serve` (a real
server on loopback, a scripted model that calls the bound function), `raf eval`, and the
same usage error (exit 2, the same words) from `serve`, `ui`, `acp`, `eval`, `mcp serve`,
`chat`, `run` and `validate` for a spec that cannot be loaded."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .helpers import TIMEOUT, raf, raf_env, script

DOCUMENT = """\
name: weather
instructions: Answer with the weather tool.
tools:
  - kind: function
    name: get_weather
    description: The weather in a city.
"""

TOOLS = '''\
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"
'''

CALLS_THE_TOOL = [
    {"calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "w1"}]},
    "It is sunny in Oslo.",
]


def _folder(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "weather.yaml").write_text(DOCUMENT, encoding="utf-8")
    (tmp_path / "weather_tools.py").write_text(TOOLS, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    env = {**raf_env(tmp_path), **_folder(tmp_path)}
    model = script(tmp_path, CALLS_THE_TOOL)
    command = [sys.executable, "-m", "raf.cli", "serve", "weather.yaml", "--port", "0"]
    command += ["--model", model, "--tools", "weather_tools:get_weather"]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+) \(auth", line)
        assert found, line + process.stderr.read()
        yield found.group(1)
    finally:
        process.kill()
        process.wait(timeout=10)


def test_raf_serve_binds_a_function_tool_the_model_then_calls(served: str) -> None:
    with httpx.Client(base_url=served, timeout=TIMEOUT) as client:
        done = client.post("/agents/weather/runs", json={"messages": "Weather in Oslo?"})
        assert done.status_code == 200, done.text
        body = done.json()
    assert body["text"] == "It is sunny in Oslo." and "error" not in body
    results = [c for m in body["messages"] for c in m["contents"] if c["type"] == "function_result"]
    assert "sunny in Oslo" in json.dumps(results)


def test_raf_eval_binds_a_function_tool(tmp_path: Path) -> None:
    env = _folder(tmp_path)
    (tmp_path / "cases.yaml").write_text(
        "name: w\nevaluators: [contains]\n"
        "cases:\n  - {name: oslo, input: Weather in Oslo?, expected_output: sunny}\n",
        encoding="utf-8",
    )
    model = script(tmp_path, CALLS_THE_TOOL)
    done = raf(
        tmp_path,
        "eval",
        "cases.yaml",
        "weather.yaml",
        "--model",
        model,
        "--tools",
        "weather_tools:get_weather",
        "--no-save",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "1/1 runs passed" in done.stdout


@pytest.mark.parametrize(
    ("command", "program"),
    [
        (["serve", "weather.yaml", "--port", "0"], "raf serve"),
        (["ui", "weather.yaml", "--port", "0"], "raf ui"),
        (["acp", "weather.yaml"], "raf acp"),
        (["mcp", "serve", "weather.yaml"], "raf mcp"),
        (["eval", "cases.yaml", "weather.yaml"], "raf"),
        (["chat", "weather.yaml"], "raf"),
        (["run", "weather.yaml", "hi"], "raf"),
        (["validate", "weather.yaml"], "raf"),
    ],
)
def test_a_spec_that_cannot_be_loaded_is_a_usage_error_everywhere(
    tmp_path: Path, command: list[str], program: str
) -> None:
    env = _folder(tmp_path)
    (tmp_path / "cases.yaml").write_text("name: w\ncases: [{input: hi}]\n", encoding="utf-8")
    done = raf(tmp_path, *command, "--tools", "weather_tools:get_wether", env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"{program}: error: --tools 'weather_tools:get_wether': module 'weather_tools' has "
        "no attribute 'get_wether'\n"
    )
