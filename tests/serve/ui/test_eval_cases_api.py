"""Saving a turn of a session as an eval case through the UI's API: the case written into
the caller's own datasets (another token neither sees nor collides with them), the
caller's sessions only, a taken name refused, bad turns and dataset names named, the
dataset's other cases kept, and the written dataset run again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from raf import AgentBuilder, tool
from raf.evals import Dataset
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.tenancy import owner_of
from raf.serve.ui import ServeUI
from raf.serve.ui.evals import owned_folder
from raf.testing import ScriptedChatClient, call, reply

TOKEN_A = "cases-token-a-0123456789abcdef"
TOKEN_B = "cases-token-b-0123456789abcdef"
EXISTING = """\
# kept as it is
name: weather
cases:
  - name: lima
    input: Weather in Lima?
    expected_output: Rainy.
"""


@tool(name="lookup", description="The weather of a city.")
def lookup(city: str) -> str:
    return f"sunny in {city}"


def turns() -> list[Any]:
    """What the model says in each served conversation: a greeting, then a tool call."""
    return ["Hello <b>there</b>.", reply("", call("lookup", city="Oslo")), "Sunny in Oslo."]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("eval-cases") / "datasets"
    model = ScriptedChatClient(turns() * 30)
    agent = AgentBuilder().with_name("weather").with_chat_client(model).with_tool(lookup).build()
    host = AgentHost([agent])
    ui = ServeUI.attach(host, tracing=False, datasets=folder)
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    with serve_in_thread(create_app(host, security, ui=ui)) as url:
        yield url, folder


def own(folder: Path, token: str = TOKEN_A) -> Path:
    """The folder of the datasets `token` saves."""
    return owned_folder(folder, owner_of(token))


def client(url: str, token: str = TOKEN_A) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def conversation(http: httpx.Client) -> str:
    """A session of two turns: a greeting, then a question answered with a tool."""
    sid: str = http.post("/agents/weather/sessions").json()["id"]
    for text in ("Hi", "Weather in Oslo?"):
        done = http.post(f"/agents/weather/sessions/{sid}/runs", json={"messages": text})
        assert done.status_code == 200, done.text
    return sid


def save(http: httpx.Client, sid: str, **body: Any) -> httpx.Response:
    return http.post(f"/ui/api/agents/weather/sessions/{sid}/eval-cases", json=body)


def test_a_turn_is_saved_as_a_case_that_runs_again(served: tuple[str, Path]) -> None:
    url, folder = served
    with client(url) as http:
        sid = conversation(http)
        listed = http.get(f"/ui/api/agents/weather/sessions/{sid}/turns").json()["turns"]
        assert listed == [
            {"turn": 0, "input": "Hi", "answer": "Hello <b>there</b>.", "tool_calls": []},
            {
                "turn": 1,
                "input": "Weather in Oslo?",
                "answer": "Sunny in Oslo.",
                "tool_calls": ["lookup"],
            },
        ]
        saved = save(http, sid, dataset="oslo", name="oslo weather")  # the last turn
        assert saved.status_code == 201, saved.text
        answer = saved.json()
        assert answer["turn"] == 1
        assert answer["dataset"]["name"] == "oslo" and answer["dataset"]["cases"] == 1
        assert answer["case"] == {
            "name": "oslo weather",
            "input": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello <b>there</b>."},
                {"role": "user", "content": "Weather in Oslo?"},
            ],
            "expected_output": "Sunny in Oslo.",
            "expected_tool_calls": [{"name": "lookup", "arguments": {"city": "Oslo"}}],
            "evaluators": ["tool_calls", "contains"],
        }
        first = save(http, sid, dataset="oslo", name="greeting", turn=0).json()
        assert first["case"]["input"] == "Hi" and first["case"]["evaluators"] == ["contains"]
        shown = http.get("/ui/api/evals/datasets/oslo").json()
        assert [c["name"] for c in shown["cases"]] == ["oslo weather", "greeting"]
        assert http.get("/ui/api/evals/datasets").json()["datasets"][0]["cases"] == 2

    path = own(folder) / "oslo.yaml"
    # relative to the data folder: the server's absolute layout is not the caller's business
    assert answer["dataset"]["file"] == path.relative_to(folder.parent).as_posix()
    assert not answer["dataset"]["file"].startswith("/")
    assert not (folder / "oslo.yaml").exists()
    dataset = Dataset.from_file(path)
    again = ScriptedChatClient([*turns()[1:], "Hello <b>there</b>."])
    agent = AgentBuilder().with_name("weather").with_chat_client(again).with_tool(lookup).build()
    report = asyncio.run(dataset.evaluate(agent, concurrency=1, progress=False))
    assert [r.status for r in report.results] == ["passed", "passed"], report.table()
    wrong = ScriptedChatClient([reply("", call("lookup", city="Lima")), "Rain.", "Bye."])
    agent = AgentBuilder().with_name("weather").with_chat_client(wrong).with_tool(lookup).build()
    report = asyncio.run(dataset.evaluate(agent, concurrency=1, progress=False))
    assert [r.status for r in report.results] == ["failed", "failed"], report.table()


def test_another_tokens_session_is_the_same_404_as_a_missing_one(
    served: tuple[str, Path],
) -> None:
    url, folder = served
    with client(url) as http:
        sid = conversation(http)
    with client(url, TOKEN_B) as other:
        foreign = save(other, sid, dataset="stolen", name="x")
        missing = save(other, "no-such-session", dataset="stolen", name="x")
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json()["error"]["code"] == missing.json()["error"]["code"]
        assert foreign.json()["error"]["message"] == f"no session named {sid!r}"
        assert other.get(f"/ui/api/agents/weather/sessions/{sid}/turns").status_code == 404
    assert not (folder / "stolen.yaml").exists()
    assert not (own(folder, TOKEN_B) / "stolen.yaml").exists()


def test_a_tokens_datasets_are_its_own_and_the_projects_are_shared(
    served: tuple[str, Path],
) -> None:
    url, folder = served
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.yaml").write_text(EXISTING.replace("weather", "project"), "utf-8")
    with client(url) as http:
        sid = conversation(http)
        assert save(http, sid, dataset="private", name="mine").status_code == 201
        listed = {
            d["name"]: d["shared"] for d in http.get("/ui/api/evals/datasets").json()["datasets"]
        }
        assert listed["private"] is False and listed["project"] is True
    with client(url, TOKEN_B) as other:
        names = [d["name"] for d in other.get("/ui/api/evals/datasets").json()["datasets"]]
        assert "private" not in names and "project" in names
        hidden = other.get("/ui/api/evals/datasets/private")
        missing = other.get("/ui/api/evals/datasets/no-such")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["code"] == missing.json()["error"]["code"]
        assert hidden.json()["error"]["message"] == "no dataset named 'private'"
        # the same dataset and case name is B's own: no 409 tells B what A saved
        sid_b = conversation(other)
        assert save(other, sid_b, dataset="private", name="mine").status_code == 201
        assert other.get("/ui/api/evals/datasets/project").status_code == 200
    assert [c.name for c in Dataset.from_file(own(folder) / "private.yaml").cases] == ["mine"]
    assert (own(folder, TOKEN_B) / "private.yaml").is_file()
    # saving never writes into the project's datasets
    assert [c.name for c in Dataset.from_file(folder / "project.yaml").cases] == ["lima"]


def test_a_name_already_in_the_dataset_is_refused_and_kept(served: tuple[str, Path]) -> None:
    url, folder = served
    own(folder).mkdir(parents=True, exist_ok=True)
    path = own(folder) / "weather.yaml"
    path.write_text(EXISTING, encoding="utf-8")
    with client(url) as http:
        sid = conversation(http)
        taken = save(http, sid, dataset="weather", name="lima")
        assert taken.status_code == 409
        error = taken.json()["error"]
        assert error["code"] == "case_exists" and error["case"] == "lima"
        assert "dataset 'weather' already has a case named 'lima'" in error["message"]
        assert path.read_text(encoding="utf-8") == EXISTING
        # a new name is added after the cases there, the file's comment kept
        assert save(http, sid, dataset="weather", name="oslo").status_code == 201
    text = path.read_text(encoding="utf-8")
    assert text.startswith(EXISTING)
    assert [c.name for c in Dataset.from_file(path).cases] == ["lima", "oslo"]


def test_a_turn_out_of_range_is_named(served: tuple[str, Path]) -> None:
    url, _ = served
    with client(url) as http:
        sid = conversation(http)
        beyond = save(http, sid, dataset="d", name="x", turn=2)
        assert beyond.status_code == 422
        assert beyond.json()["error"] == {
            "code": "invalid_turn",
            "message": f"turn 2: session {sid!r} has 2 turn(s), numbered from 0",
        }
        negative = save(http, sid, dataset="d", name="x", turn=-1)
        assert negative.status_code == 422 and "turn" in negative.json()["error"]["message"]
        empty = http.post("/agents/weather/sessions").json()["id"]
        none = save(http, empty, dataset="d", name="x")
        assert none.status_code == 422 and "has no turn yet" in none.json()["error"]["message"]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".hidden", "x.yaml", "%2e%2e"])
def test_a_dataset_outside_the_folder_is_refused(served: tuple[str, Path], name: str) -> None:
    url, folder = served
    with client(url) as http:
        sid = conversation(http)
        refused = save(http, sid, dataset=name, name="x")
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "invalid_dataset_name"
        assert f"dataset name {name!r} is not valid" in error["message"]
        assert http.get(f"/ui/api/evals/datasets/{name}").status_code == 404
    assert not (folder.parent / "escape.yaml").exists()


def test_bad_bodies_and_case_names_are_named(served: tuple[str, Path]) -> None:
    url, _ = served
    with client(url) as http:
        sid = conversation(http)
        blank = save(http, sid, dataset="d", name="  ")
        assert blank.status_code == 400
        assert blank.json()["error"]["code"] == "invalid_case_name"
        missing = save(http, sid, name="x")
        assert missing.status_code == 422 and "dataset" in missing.json()["error"]["message"]
        extra = save(http, sid, dataset="d", name="x", overwrite=True)
        assert extra.status_code == 422 and "overwrite" in extra.json()["error"]["message"]
        # a form post (what another site could make a browser send) is not read at all
        form = http.post(
            f"/ui/api/agents/weather/sessions/{sid}/eval-cases",
            content="dataset=d&name=x",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 415


def test_an_unreadable_dataset_is_left_as_it_is(served: tuple[str, Path]) -> None:
    url, folder = served
    own(folder).mkdir(parents=True, exist_ok=True)
    path = own(folder) / "broken.yaml"
    path.write_text("cases: [{input: no name}]\n", encoding="utf-8")
    with client(url) as http:
        sid = conversation(http)
        refused = save(http, sid, dataset="broken", name="x")
        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "dataset_unreadable"
        assert "'name' is required" in refused.json()["error"]["message"]
        listed = http.get("/ui/api/evals/datasets").json()["datasets"]
        assert any(d["name"] == "broken" and d["error"] for d in listed)
    assert path.read_text(encoding="utf-8") == "cases: [{input: no name}]\n"
