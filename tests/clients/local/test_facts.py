"""The answer after a file tool's result: the facts the result states, the one the
question's words point to, and "does not mention" when the file never says the subject;
for real, the notes agent quotes what the tool returned and writes a file, not a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.clients.local.client import LocalChatClient
from raf.clients.local.facts import not_said, pointed, turn_facts
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage, Role
from raf.evals.notes_suite import make_notes, notes_agent


def turn(question: str, name: str, arguments: dict[str, Any], result: Any) -> list[ChatMessage]:
    """A turn in which the model called `name` and it returned `result`."""
    call = FunctionCallContent(call_id="c1", name=name, arguments=arguments)
    return [
        ChatMessage.user(question),
        ChatMessage(role=Role.ASSISTANT, contents=[call]),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c1", result=result)]),
    ]


READ_X = {
    "path": "notes/x.txt",
    "start_line": 1,
    "end_line": 4,
    "content": "alpha\nbeta\ngamma\ndelta\n",
}


def facts_for(question: str, result: Any = READ_X, name: str = "read_file") -> list[str]:
    found = turn_facts(turn(question, name, {"path": result.get("path", ".")}, result))
    assert found is not None
    return pointed(found, question)


def test_a_read_file_states_its_lines_count_size_and_what_it_says() -> None:
    found = turn_facts(turn("Read x.txt", "read_file", {"path": "notes/x.txt"}, READ_X))
    assert found is not None
    texts = [f.text for f in found]
    assert "notes/x.txt says: alpha; beta; gamma; delta" in texts
    assert "notes/x.txt has 4 lines" in texts
    assert "notes/x.txt, first line: alpha" in texts
    assert "notes/x.txt, last line: delta" in texts
    assert "notes/x.txt is 23 bytes" in texts


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is the last line of x.txt?", "notes/x.txt, last line: delta"),
        ("How many lines in x.txt?", "notes/x.txt has 4 lines"),
        ("How big is x.txt?", "notes/x.txt is 23 bytes"),
        ("Read x.txt for me.", "notes/x.txt says: alpha; beta; gamma; delta"),
    ],
)
def test_the_question_s_words_point_to_one_fact(question: str, answer: str) -> None:
    assert facts_for(question) == [answer]


def test_a_question_pointing_to_no_fact_leaves_every_fact_to_the_model() -> None:
    assert len(facts_for("Hmm, x.txt?")) == len(facts_for("Read x.txt")) + 8


def test_a_listing_is_the_folder_s_names() -> None:
    listing = {
        "path": "notes",
        "entries": [
            {"name": "todo.md", "type": "file", "size": 5},
            {"name": "old/", "type": "folder"},
        ],
    }
    assert facts_for("What files are in notes?", listing, "list_files") == [
        "notes has: todo.md, old/"
    ]


def test_an_inspection_states_size_and_lines() -> None:
    info = {"path": "notes/x.txt", "type": "text file", "size": 23, "lines": 4}
    assert facts_for("How many lines in x.txt?", info, "inspect_file") == [
        "notes/x.txt has 4 lines"
    ]
    assert facts_for("How big is x.txt?", info, "inspect_file") == ["notes/x.txt is 23 bytes"]


def test_a_write_s_message_is_the_answer_and_a_failure_is_said() -> None:
    wrote = turn(
        "Create hello.txt",
        "write_file",
        {"path": "hello.txt", "content": "hi"},
        "created hello.txt (2 bytes)",
    )
    found = turn_facts(wrote)
    assert found is not None and [f.text for f in found] == ["created hello.txt (2 bytes)"]
    call = FunctionCallContent(call_id="c1", name="read_file", arguments={"path": "nope.md"})
    failed = [
        ChatMessage.user("Read nope.md"),
        ChatMessage(role=Role.ASSISTANT, contents=[call]),
        ChatMessage(
            role=Role.TOOL,
            contents=[FunctionResultContent(call_id="c1", error="'nope.md' does not exist")],
        ),
    ]
    found = turn_facts(failed)
    assert found is not None and found[0].text == "read_file failed: 'nope.md' does not exist"


def test_a_result_not_about_a_path_is_answered_freely() -> None:
    assert turn_facts(turn("Weather in Paris?", "get_weather", {"city": "Paris"}, "sunny")) is None
    assert turn_facts([ChatMessage.user("Hello")]) is None


@pytest.mark.parametrize("nothing", [None, "", "  ", [], {}, "null"])
def test_any_tool_s_empty_result_is_said_not_to_answer(nothing: Any) -> None:
    found = turn_facts(
        turn("Weather in Paris?", "get_weather", {"city": "Paris", "days": 3}, nothing)
    )
    assert found is not None
    assert [f.text for f in found] == [
        'get_weather returned nothing for city="Paris", days=3, so it does not answer this'
    ]


def test_any_tool_s_failure_is_said() -> None:
    call = FunctionCallContent(call_id="c1", name="get_weather", arguments={"city": "Atlantis"})
    failed = [
        ChatMessage.user("Weather in Atlantis?"),
        ChatMessage(role=Role.ASSISTANT, contents=[call]),
        ChatMessage(
            role=Role.TOOL,
            contents=[FunctionResultContent(call_id="c1", error="no such city: Atlantis")],
        ),
    ]
    found = turn_facts(failed)
    assert found is not None and [f.text for f in found] == [
        "get_weather failed: no such city: Atlantis"
    ]
    # beside a result that holds something, the answer is written from that one freely
    both = [
        *failed[:2],
        ChatMessage(
            role=Role.TOOL,
            contents=[FunctionResultContent(call_id="c1", result={"temp": 21})],
        ),
    ]
    assert turn_facts(both) is None


async def test_the_local_model_says_an_empty_result_does_not_answer(tmp_path: Path) -> None:
    """Through a whole run on the real model: a tool that finds nothing gets no made-up
    answer, the answer says so."""
    from raf import AgentBuilder, tool

    @tool
    def find_flights(origin: str, destination: str) -> list[str]:
        """Find direct flights between two cities."""
        return []

    agent = (
        AgentBuilder()
        .with_chat_client(LocalChatClient(tool_mode="staged"))
        .with_tools([find_flights])
        .build()
    )
    response = await agent.run("Find me direct flights from Oslo to Lima")
    calls = [c for m in response.messages for c in m.contents if isinstance(c, FunctionCallContent)]
    assert [c.name for c in calls] == ["find_flights"]
    assert "returned nothing" in response.text and "does not answer" in response.text


TODO = {
    "path": "notes/todo.md",
    "start_line": 1,
    "end_line": 2,
    "content": "1. Call the dentist\n2. Buy oat milk\n",
}


def test_a_subject_the_file_never_mentions_is_said_so() -> None:
    asked = turn(
        "What does todo.md say about the car?", "read_file", {"path": "notes/todo.md"}, TODO
    )
    assert not_said(asked) == "notes/todo.md does not mention car."
    mentioned = turn(
        "What does todo.md say about the dentist?", "read_file", {"path": "notes/todo.md"}, TODO
    )
    assert not_said(mentioned) is None


@pytest.mark.parametrize(
    "question",
    [
        "What's the final line in todo.md?",
        "Open todo.md and tell me the first chore.",
        "What did I plan according to todo.md?",
        "Is there anything about todo.md in todo.md?",
    ],
)
def test_a_question_without_a_missing_subject_is_answered_from_the_facts(question: str) -> None:
    assert not_said(turn(question, "read_file", {"path": "notes/todo.md"}, TODO)) is None


@pytest.fixture(scope="module")
def client() -> LocalChatClient:
    return LocalChatClient(temperature=0.0, seed=7)


async def test_the_notes_agent_quotes_what_the_tool_returned(
    client: LocalChatClient, tmp_path: Path
) -> None:
    agent = notes_agent(client, make_notes(tmp_path))
    last = await agent.run("What is the last line of x.txt?")
    assert "delta" in last.text, last.text
    size = await agent.run("How big is groceries.txt?")
    assert "18" in size.text, size.text
    missing = await agent.run("Read todo.md: does it mention the car?")
    assert "does not mention car" in missing.text, missing.text


async def test_create_a_file_saying_hi_writes_a_file(
    client: LocalChatClient, tmp_path: Path
) -> None:
    agent = notes_agent(client, make_notes(tmp_path))
    answer = await agent.run("Create a file called hello.txt saying hi")
    assert (tmp_path / "hello.txt").is_file(), answer.text
    assert (tmp_path / "hello.txt").read_text(encoding="utf-8") == "hi"
    assert "hello.txt" in answer.text
